// Tensor methods under tinygrad's names and signatures: movement, nn functional, scans, sorting, scatter,
// selection, resizing and statistics. Conversion only, as in module.cpp: every op is the C++ one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.hpp"
#include "nn/losses.hpp"
#include "nn/optim.hpp"
#include "tensor/multi.hpp"

namespace tgpy {

namespace {

// tinygrad's argfix: f((2, 3)) and f(2, 3) both name (2, 3).
py::tuple argfix(py::handle first, const py::args& rest) {
  if (rest.empty() && (py::isinstance<py::tuple>(first) || py::isinstance<py::list>(first)))
    return py::tuple(py::reinterpret_borrow<py::object>(first));
  py::list l;
  l.append(first);
  for (py::handle h : rest) l.append(h);
  return py::tuple(l);
}

tg::Dims to_dims(py::handle h) {
  tg::Dims d;
  for (py::handle i : h) d.push_back(i.cast<int>());
  return d;
}

// tinygrad's pad forms: (before, after) or None per axis, or flat ints from the last axis (PyTorch's order).
std::vector<std::pair<int64_t, int64_t>> pad_pairs(const Tensor& x, const py::sequence& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  bool flat = p.size() > 0 && py::isinstance<py::int_>(p[0]);
  if (!flat) {
    for (py::handle e : p)
      out.push_back(e.is_none() ? std::pair<int64_t, int64_t>{0, 0} : e.cast<std::pair<int64_t, int64_t>>());
    return out;
  }
  if (p.size() % 2 != 0 || static_cast<int>(p.size() / 2) > x.ndim())
    throw py::value_error("[pad] flat padding needs an even count of at most 2 * ndim ints");
  out.assign(static_cast<size_t>(x.ndim()), {0, 0});
  for (size_t i = 0; i < p.size() / 2; i++)
    out[static_cast<size_t>(x.ndim()) - 1 - i] = {p[2 * i].cast<int64_t>(), p[2 * i + 1].cast<int64_t>()};
  return out;
}

tg::PadMode pad_mode(const std::string& m) {
  if (m == "constant") return tg::PadMode::CONSTANT;
  if (m == "reflect") return tg::PadMode::REFLECT;
  if (m == "replicate") return tg::PadMode::REPLICATE;
  if (m == "circular") return tg::PadMode::CIRCULAR;
  throw py::value_error("[pad] mode must be 'constant', 'reflect', 'replicate' or 'circular', got " + m);
}

// A pool's or conv's padding with n spatial axes: an int, one per axis, 2n flat ints (last axis first) or a
// mode.
tg::Padding spatial_padding(const py::object& o, int n) {
  if (py::isinstance<py::str>(o) || py::isinstance<py::int_>(o)) return to_padding(o);
  auto v = o.cast<std::vector<int64_t>>();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (v.size() == static_cast<size_t>(2 * n)) {
    for (int i = 0; i < n; i++)
      pairs.emplace_back(v[static_cast<size_t>(2 * (n - 1 - i))],
                         v[static_cast<size_t>(2 * (n - 1 - i) + 1)]);
    return pairs;
  }
  return to_padding(o);
}

OptDType opt_dtype(const py::object& o) { return o.is_none() ? OptDType() : OptDType(o.cast<DType>()); }
Tensor in_dtype(const Tensor& x, const OptDType& d) { return d ? x.cast(*d) : x; }
py::tuple pair(std::pair<Tensor, Tensor> p) { return py::make_tuple(p.first, p.second); }

}  // namespace

void bind_tensor_more(py::class_<Tensor>& t) {
  // ---- movement ----
  t.def(
      "reshape",
      [](const Tensor& x, py::object s, const py::args& a) { return x.reshape(to_shape(argfix(s, a))); },
      py::arg("shape"));
  t.def(
      "view",
      [](const Tensor& x, py::object s, const py::args& a) { return x.reshape(to_shape(argfix(s, a))); },
      py::arg("shape"));
  t.def(
      "expand",
      [](const Tensor& x, py::object s, const py::args& a) { return x.expand(to_shape(argfix(s, a))); },
      py::arg("shape"));
  t.def(
      "permute",
      [](const Tensor& x, py::object o, const py::args& a) { return x.permute(to_dims(argfix(o, a))); },
      py::arg("order"));
  t.def(
      "flip", [](const Tensor& x, py::object o, const py::args& a) { return x.flip(to_dims(argfix(o, a))); },
      py::arg("axis"));
  t.def(
      "repeat",
      [](const Tensor& x, py::object r, const py::args& a) { return x.repeat(to_shape(argfix(r, a))); },
      py::arg("repeats"));
  t.def(
      "pad",
      [](const Tensor& x, const py::sequence& p, const std::string& mode, py::object value) {
        return x.pad(pad_pairs(x, p), pad_mode(mode), to_number(value));
      },
      py::arg("padding"), py::arg("mode") = "constant", py::arg("value") = 0.0);
  t.def(
      "pad_to",
      [](const Tensor& x, py::object s, const py::args& a, py::object value) {
        if (to_number(value).to_double() != 0) throw py::value_error("[pad_to] only value=0 is supported");
        return x.pad_to(to_shape(argfix(s, a)));
      },
      py::arg("shape"), py::kw_only(), py::arg("value") = 0);
  t.def(
      "shrink_to",
      [](const Tensor& x, py::object s, const py::args& a) { return x.shrink_to(to_shape(argfix(s, a))); },
      py::arg("shape"));
  t.def(
      "shrink",
      [](const Tensor& x, std::vector<std::optional<std::pair<int64_t, int64_t>>> b) {
        tg::ShapePairs sp;
        for (size_t i = 0; i < b.size(); i++)
          sp.emplace_back(b[i] ? tg::sint(b[i]->first) : tg::sint(0),
                          b[i] ? tg::sint(b[i]->second) : x.shape(static_cast<int>(i)));
        return x.shrink(sp);
      },
      py::arg("arg"));
  t.def("transpose", &Tensor::transpose, py::arg("dim0") = 1, py::arg("dim1") = 0);
  t.def_property_readonly("T", [](const Tensor& x) { return x.transpose(1, 0); });
  t.def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  t.def(
      "unflatten", [](const Tensor& x, int dim, py::object s) { return x.unflatten(dim, to_shape(s)); },
      py::arg("dim"), py::arg("sizes"));
  t.def("squeeze", &Tensor::squeeze, py::arg("dim") = py::none());
  t.def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"));
  t.def(
      "cat", [](const Tensor& x, const py::args& a, int dim) { return Tensor::cat(tensor_args(x, a), dim); },
      py::arg("dim") = 0);
  t.def(
      "stack",
      [](const Tensor& x, const py::args& a, int dim) { return Tensor::stack(tensor_args(x, a), dim); },
      py::arg("dim") = 0);
  t.def(
      "split",
      [](const Tensor& x, py::object s, int dim) {
        return py::isinstance<py::int_>(s) ? x.split(s.cast<int64_t>(), dim) : x.split(to_shape(s), dim);
      },
      py::arg("sizes"), py::arg("dim") = 0);
  t.def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0);
  t.def(
      "roll",
      [](const Tensor& x, py::object shifts, py::object dims) {
        std::vector<int64_t> s = py::isinstance<py::int_>(shifts)
                                     ? std::vector<int64_t>{shifts.cast<int64_t>()}
                                     : shifts.cast<std::vector<int64_t>>();
        tg::Dims d = dims.is_none()                   ? tg::Dims{}
                     : py::isinstance<py::int_>(dims) ? tg::Dims{dims.cast<int>()}
                                                      : to_dims(dims);
        return x.roll(s, d);
      },
      py::arg("shifts"), py::arg("dims") = py::none());
  t.def("repeat_interleave", &Tensor::repeat_interleave, py::arg("repeats"), py::arg("dim") = py::none());
  t.def("unfold", &Tensor::unfold, py::arg("dim"), py::arg("size"), py::arg("step"));
  t.def("diag", [](const Tensor& x) { return x.diag(); });
  t.def("diagonal", &Tensor::diagonal, py::arg("offset") = 0, py::arg("dim1") = 0, py::arg("dim2") = 1);
  t.def("tril", &Tensor::tril, py::arg("diagonal") = 0);
  t.def("triu", &Tensor::triu, py::arg("diagonal") = 0);
  t.def(
      "rearrange",
      [](const Tensor& x, std::string_view f, const py::kwargs& kw) {
        std::vector<std::pair<std::string, int64_t>> sizes;
        for (auto [k, v] : kw) sizes.emplace_back(k.cast<std::string>(), v.cast<int64_t>());
        return x.rearrange(f, sizes);
      },
      py::arg("formula"));
  t.def(
      "meshgrid",
      [](const Tensor& x, const py::args& a, std::string_view indexing) {
        return py::tuple(py::cast(Tensor::meshgrid(tensor_args(x, a), indexing)));
      },
      py::kw_only(), py::arg("indexing") = "ij");

  // ---- indexing, selection ----
  t.def("gather", &Tensor::gather, py::arg("dim"), py::arg("index"));
  t.def("one_hot", &Tensor::one_hot, py::arg("num_classes"));
  t.def(
      "masked_fill",
      [](const Tensor& x, const Tensor& mask, py::object v) { return x.masked_fill(mask, to_operand(v)); },
      py::arg("mask"), py::arg("value"));
  t.def(
      "scatter",
      [](const Tensor& x, int dim, const Tensor& index, py::object src, std::optional<std::string> reduce) {
        if (!reduce) return x.scatter(dim, index, to_operand(src));
        if (*reduce != "add" && *reduce != "multiply")
          throw py::value_error("[scatter] reduce must be 'add' or 'multiply'");
        Tensor s = py::isinstance<Tensor>(src) ? src.cast<Tensor>()
                                               : x.full_like(to_number(src)).shrink_to(index.shape());
        return x.scatter_reduce(dim, index, s, *reduce == "add" ? "sum" : "prod", true);
      },
      py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce") = py::none());
  t.def(
      "scatter_reduce",
      [](const Tensor& x, int dim, const Tensor& index, const Tensor& src, std::string_view reduce,
         bool include_self) { return x.scatter_reduce(dim, index, src, reduce, include_self); },
      py::arg("dim"), py::arg("index"), py::arg("src"), py::arg("reduce"), py::arg("include_self") = true);
  t.def(
      "masked_select",
      [](const Tensor& x, const Tensor& mask, py::object size, py::object) {
        if (!size.is_none()) throw py::value_error("[masked_select] size= is not supported yet");
        return x.masked_select(mask);
      },
      py::arg("mask"), py::arg("size") = py::none(), py::arg("fill_value") = 0);
  t.def(
      "nonzero",
      [](const Tensor& x, py::object size, py::object) {
        if (!size.is_none()) throw py::value_error("[nonzero] size= is not supported yet");
        return x.nonzero();
      },
      py::arg("size") = py::none(), py::arg("fill_value") = 0);

  // ---- scans, sorting, statistics ----
  t.def("cumsum", &Tensor::cumsum, py::arg("axis") = 0);
  t.def("cumprod", &Tensor::cumprod, py::arg("axis"));
  t.def(
      "cummax", [](const Tensor& x, int axis) { return pair(x.cummax(axis)); }, py::arg("axis") = 0);
  t.def(
      "cummin", [](const Tensor& x, int axis) { return pair(x.cummin(axis)); }, py::arg("axis") = 0);
  t.def("logcumsumexp", &Tensor::logcumsumexp, py::arg("axis") = 0);
  t.def(
      "sort", [](const Tensor& x, int dim, bool desc) { return pair(x.sort(dim, desc)); },
      py::arg("dim") = -1, py::arg("descending") = false);
  t.def("argsort", &Tensor::argsort, py::arg("dim") = -1, py::arg("descending") = false);
  t.def(
      "topk",
      [](const Tensor& x, int64_t k, int dim, bool largest, bool sorted) {
        if (!sorted) throw py::value_error("[topk] sorted_=False is not supported");
        return pair(x.topk(k, dim, largest));
      },
      py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted_") = true);
  for (auto [name, fn] : std::initializer_list<
           std::pair<const char*, std::pair<Tensor, Tensor> (Tensor::*)(tg::Axes, bool, double) const>>{
           {"std_mean", &Tensor::std_mean}, {"var_mean", &Tensor::var_mean}})
    t.def(
        name,
        [fn = fn](const Tensor& x, py::object axis, bool keepdim, double c) {
          return pair((x.*fn)(to_axes(axis), keepdim, c));
        },
        py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1);
  t.def(
      "isclose",
      [](const Tensor& x, py::object o, double rtol, double atol, bool nan) {
        return x.isclose(to_operand(o), rtol, atol, nan);
      },
      py::arg("other"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::arg("equal_nan") = false);
  t.def(
      "allclose",
      [](const Tensor& x, py::object o, double rtol, double atol, bool nan) {
        return x.allclose(to_operand(o), rtol, atol, nan);
      },
      py::arg("other"), py::arg("rtol") = 1e-5, py::arg("atol") = 1e-8, py::arg("equal_nan") = false);
  t.def("normalize", &Tensor::normalize, py::arg("p") = 2.0, py::arg("dim") = 1, py::arg("eps") = 1e-12);
  t.def(
      "copysign", [](const Tensor& x, py::object o) { return x.copysign(to_operand(o)); }, py::arg("other"));
  t.def(
      "lerp",
      [](const Tensor& x, py::object e, py::object w) { return x.lerp(to_operand(e), to_operand(w)); },
      py::arg("end"), py::arg("weight"));
  t.def("multinomial", &Tensor::multinomial, py::arg("num_samples") = 1, py::arg("replacement") = false);
  t.def("qr", [](const Tensor& x) { return pair(x.qr()); });
  t.def(
      "svd",
      [](const Tensor& x, bool full) {
        if (full && x.shape(-1) != x.shape(-2))
          throw py::value_error("[svd] full_matrices=True needs a square matrix here");
        auto [u, s, vh] = x.svd();
        return py::make_tuple(u, s, vh);
      },
      py::arg("full_matrices") = true);

  // ---- activations with tinygrad's parameters ----
  t.def(
      "hardsigmoid",
      [](const Tensor& x, double alpha, double beta) {
        return alpha == 1.0 / 6 && beta == 0.5 ? x.hardsigmoid() : x.mul(alpha).add(beta).clamp(0.0, 1.0);
      },
      py::arg("alpha") = 1.0 / 6, py::arg("beta") = 0.5);
  t.def(
      "selu",
      [](const Tensor& x, double alpha, double gamma) {
        return alpha == 1.67326 && gamma == 1.0507 ? x.selu() : x.elu(alpha).mul(gamma);
      },
      py::arg("alpha") = 1.67326, py::arg("gamma") = 1.0507);
  t.def(
      "softmax",
      [](const Tensor& x, int axis, py::object d) { return in_dtype(x, opt_dtype(d)).softmax(axis); },
      py::arg("axis") = -1, py::arg("dtype") = py::none());
  t.def(
      "log_softmax",
      [](const Tensor& x, int axis, py::object d) { return in_dtype(x, opt_dtype(d)).log_softmax(axis); },
      py::arg("axis") = -1, py::arg("dtype") = py::none());
  t.def(
      "softmin",
      [](const Tensor& x, int axis, py::object d) { return in_dtype(x, opt_dtype(d)).softmin(axis); },
      py::arg("axis") = -1, py::arg("dtype") = py::none());

  // ---- linear algebra, nn functional ----
  t.def("dot", &Tensor::dot, py::arg("w"), py::arg("dtype") = py::none());
  t.def(
      "matmul",
      [](const Tensor& a, const Tensor& b, bool reverse, OptDType d) {
        return reverse ? b.matmul(a, d) : a.matmul(b, d);
      },
      py::arg("x"), py::arg("reverse") = false, py::arg("dtype") = py::none());
  t.def_static(
      "einsum",
      [](std::string_view f, const py::args& ops, OptDType d) {
        std::vector<Tensor> ts;
        for (py::handle h : ops)
          if (py::isinstance<Tensor>(h))
            ts.push_back(h.cast<Tensor>());
          else
            for (py::handle e : h) ts.push_back(e.cast<Tensor>());
        return Tensor::einsum(f, ts, d);
      },
      py::arg("formula"), py::kw_only(), py::arg("dtype") = py::none());
  t.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, OptDType dtype) {
        return x.linear(w, b.value_or(Tensor()), dtype);
      },
      py::arg("weight"), py::arg("bias") = py::none(), py::arg("dtype") = py::none());
  t.def(
      "layernorm",
      [](const Tensor& x, py::object axis, double eps) { return x.layernorm(to_axes(axis), eps); },
      py::arg("axis") = -1, py::arg("eps") = 1e-5);
  t.def(
      "batchnorm",
      [](const Tensor& x, std::optional<Tensor> w, std::optional<Tensor> b, const Tensor& mean,
         const Tensor& invstd,
         int axis) { return x.batchnorm(w.value_or(Tensor()), b.value_or(Tensor()), mean, invstd, axis); },
      py::arg("weight"), py::arg("bias"), py::arg("mean"), py::arg("invstd"), py::arg("axis") = 1);
  t.def(
      "sparse_categorical_crossentropy",
      [](const Tensor& x, const Tensor& y, int64_t ignore, double ls, const std::string& r) {
        return x.sparse_categorical_crossentropy(y, ignore, ls, to_reduction(r));
      },
      py::arg("Y"), py::arg("ignore_index") = -1, py::arg("label_smoothing") = 0.0,
      py::arg("reduction") = "mean");
  t.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& y, const std::string& r, double ls) {
        return x.cross_entropy(y, to_reduction(r), ls);
      },
      py::arg("Y"), py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0);
  t.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& y, std::optional<Tensor> w, std::optional<int64_t> ignore,
         const std::string& r) {
        if (w) throw py::value_error("[nll_loss] weight= is not supported yet");
        return tg::nn::nll_loss(x, y, to_reduction(r),
                                ignore.value_or(-100));  // -100: no class index is negative
      },
      py::arg("Y"), py::arg("weight") = py::none(), py::arg("ignore_index") = py::none(),
      py::arg("reduction") = "mean");
  t.def(
      "binary_crossentropy",
      [](const Tensor& x, const Tensor& y, const std::string& r) {
        return x.binary_crossentropy(y, to_reduction(r));
      },
      py::arg("Y"), py::arg("reduction") = "mean");
  t.def(
      "binary_crossentropy_logits",
      [](const Tensor& x, const Tensor& y, const std::string& r, std::optional<Tensor> pw) {
        return pw ? tg::nn::binary_cross_entropy_with_logits(x, y, to_reduction(r), *pw)
                  : x.binary_crossentropy_logits(y, to_reduction(r));
      },
      py::arg("Y"), py::arg("reduction") = "mean", py::arg("pos_weight") = py::none());
  // Any number of spatial axes (weight.ndim - 2), as tinygrad's conv2d.
  t.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups, py::object stride,
         py::object dilation, py::object pad, OptDType dtype) {
        // dtype: the products and their sum in that dtype (tinygrad sums products of the inputs' dtype in
        // it: here they are computed in it too, as precise or more).
        Tensor xs = dtype ? x.cast(*dtype) : x, ws = dtype ? w.cast(*dtype) : w;
        return xs.conv(ws, b.value_or(Tensor()), to_sizes(stride), spatial_padding(pad, w.ndim() - 2),
                       to_sizes(dilation), groups, "conv2d");
      },
      py::arg("weight"), py::arg("bias") = py::none(), py::arg("groups") = 1, py::arg("stride") = 1,
      py::arg("dilation") = 1, py::arg("padding") = 0, py::arg("dtype") = py::none());
  t.def(
      "conv_transpose2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups, py::object stride,
         py::object dilation, py::object pad, py::object out_pad) {
        return x.conv_transpose(w, b.value_or(Tensor()), to_sizes(stride), to_sizes(pad), to_sizes(out_pad),
                                groups, to_sizes(dilation), "conv_transpose2d");
      },
      py::arg("weight"), py::arg("bias") = py::none(), py::arg("groups") = 1, py::arg("stride") = 1,
      py::arg("dilation") = 1, py::arg("padding") = 0, py::arg("output_padding") = 0);
  t.def(
      "max_pool2d",
      [](const Tensor& x, py::object k, py::object s, py::object d, py::object p, bool ceil, bool ri) {
        if (ri) throw py::value_error("[max_pool2d] return_indices=True is not supported yet");
        return x.max_pool2d(to_sizes(k), to_sizes(s), spatial_padding(p, 2), to_sizes(d), ceil);
      },
      py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("stride") = py::none(), py::arg("dilation") = 1,
      py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  t.def(
      "avg_pool2d",
      [](const Tensor& x, py::object k, py::object s, py::object d, py::object p, bool ceil, bool cip) {
        if (to_sizes(d).resolve(2, "avg_pool2d", "dilation") != std::vector<int64_t>{1, 1})
          throw py::value_error("[avg_pool2d] dilation other than 1 is not supported yet");
        return x.avg_pool2d(to_sizes(k), to_sizes(s), spatial_padding(p, 2), ceil, cip);
      },
      py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("stride") = py::none(), py::arg("dilation") = 1,
      py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  t.def(
      "max_unpool2d",
      [](const Tensor& x, const Tensor& idx, py::object k, py::object s, py::object d, py::object p,
         py::object out) {
        if (to_sizes(d).resolve(2, "max_unpool2d", "dilation") != std::vector<int64_t>{1, 1})
          throw py::value_error("[max_unpool2d] dilation other than 1 is not supported yet");
        return x.max_unpool2d(idx, to_sizes(k), to_sizes(s), to_sizes(p),
                              out.is_none() ? tg::Shape{} : to_shape(out));
      },
      py::arg("indices"), py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("stride") = py::none(),
      py::arg("dilation") = 1, py::arg("padding") = 0, py::arg("output_size") = py::none());
  t.def(
      "interpolate",
      [](const Tensor& x, py::object size, std::string_view mode, bool ac) {
        return x.interpolate(to_shape(size), mode, ac);
      },
      py::arg("size"), py::arg("mode") = "linear", py::arg("align_corners") = false);
  // enable_gqa: key and value heads (axis -3) repeat to the query's head count, as tinygrad does.
  t.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, Tensor k, Tensor v, std::optional<Tensor> mask, double p, bool causal, bool gqa) {
        if (gqa && k.shape(-3) != q.shape(-3)) {
          int64_t r = static_cast<int64_t>(q.shape(-3)) / static_cast<int64_t>(k.shape(-3));
          k = k.repeat_interleave(r, -3), v = v.repeat_interleave(r, -3);
        }
        return q.scaled_dot_product_attention(k, v, mask.value_or(Tensor()), causal, p);
      },
      py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(), py::arg("dropout_p") = 0.0,
      py::arg("is_causal") = false, py::arg("enable_gqa") = false);
  t.def(
      "dropout", [](const Tensor& x, double p) { return x.dropout(p, true); }, py::arg("p") = 0.5);

  // ---- creation, properties ----
  t.def_static(
      "normal",
      [](const py::args& a, double mean, double std, OptDev device, OptDType dtype, std::optional<bool> rg) {
        Tensor x =
            Tensor::normal(shape_args(a), mean, std, dtype.value_or(dtypes::default_float), dev(device));
        if (rg) x.requires_grad_(*rg);
        return x;
      },
      py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("device") = py::none(),
      py::arg("dtype") = py::none(), py::arg("requires_grad") = py::none());
  t.def_static(
      "kaiming_normal",
      [](const py::args& a, double sa, OptDType dtype, OptDev device) {
        return Tensor::kaiming_normal(shape_args(a), sa, dtype.value_or(dtypes::default_float), dev(device));
      },
      py::arg("a") = 0.01, py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static(
      "randperm",
      [](int64_t n, OptDev device, DType dtype, std::optional<bool> rg) {
        Tensor x = Tensor::randperm(n, dtype, dev(device));
        if (rg) x.requires_grad_(*rg);
        return x;
      },
      py::arg("n"), py::arg("device") = py::none(), py::arg_v("dtype", dtypes::int32, "'int'"), py::kw_only(),
      py::arg("requires_grad") = py::none());
  t.def(
      "size",
      [](const Tensor& x, std::optional<int> dim) -> py::object {
        if (dim) return py::cast(static_cast<int64_t>(x.shape(*dim)));
        return py::cast(x).attr("shape");
      },
      py::arg("dim") = py::none());
  t.def(
      "const_like", [](const Tensor& x, py::object b, OptDType d) { return x.full_like(to_number(b), d); },
      py::arg("b"), py::arg("dtype") = py::none());
  t.def("element_size", [](const Tensor& x) { return x.dtype().itemsize(); });
  t.def("nbytes", [](const Tensor& x) {
    return static_cast<int64_t>(x.numel()) * static_cast<int64_t>(x.dtype().itemsize());
  });
  t.def("is_floating_point", [](const Tensor& x) { return x.dtype().is_float(); });
  t.def("bfloat16", [](const Tensor& x) { return x.cast(dtypes::bfloat16); });
  t.def("short", [](const Tensor& x) { return x.cast(dtypes::int16); });
  t.def("threefry", &Tensor::threefry, py::arg("seed"));
  t.def(
      "shard",
      [](const Tensor& x, const std::vector<std::string>& d, std::optional<int> axis) {
        return x.shard(d, axis);
      },
      py::arg("devices"), py::arg("axis") = py::none());
  t.def(
      "shard_",
      [](Tensor& x, const std::vector<std::string>& d, std::optional<int> axis) { return x.shard_(d, axis); },
      py::arg("devices"), py::arg("axis") = py::none());
  t.def(
      "to_", [](Tensor& x, const std::string& d) { return x.replace(x.to(d).contiguous()); },
      py::arg("device"));
  // y's placement: split along y's axis over y's devices, or moved to y's one device.
  t.def(
      "shard_like",
      [](const Tensor& x, const Tensor& y) {
        if (y.device().find(',') == std::string::npos) return x.to(y.device());
        return x.shard(tg::split_devices(y.device()), tg::shard_axis(y));
      },
      py::arg("y"));
  t.def("contiguous_backward", &Tensor::contiguous_backward);
  t.def_static(
      "random_bits",
      [](const Tensor& key, const Tensor& counter, int64_t num) { return Tensor::random_bits(key, counter, num); },
      py::arg("key"), py::arg("counter"), py::arg("num"));
  t.def("max_numel", [](const Tensor& x) { return x.numel().max(); });
  t.def_property_readonly("max_shape", [](const Tensor& x) {
    py::list out;
    for (const tg::sint& d : x.shape()) out.append(d.max());
    return py::tuple(out);
  });
  t.def(
      "newton_schulz",
      [](const Tensor& x, int steps, std::vector<double> params, double eps) {
        return tg::nn::optim::newton_schulz(x, steps, params, eps);
      },
      py::arg("steps"), py::arg("params"), py::arg("eps") = 1e-7);
  t.def_static(
      "const", [](py::object b, OptDType dtype) { return make_tensor(b, dtype, {}); }, py::arg("b"),
      py::arg("dtype") = py::none());
  // Memory at ptr the caller keeps alive and in place as long as the tensor reads it (Tensor::from_blob).
  t.def_static(
      "from_blob",
      [](uintptr_t ptr, py::object shape, OptDType dtype, OptDev device) {
        tg::BlobOptions opts;
        if (device) opts.device = *device;
        return Tensor::from_blob(reinterpret_cast<void*>(ptr), to_shape(shape), dtype.value_or(dtypes::default_float),
                                 opts);
      },
      py::arg("ptr"), py::arg("shape"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
}

}  // namespace tgpy
