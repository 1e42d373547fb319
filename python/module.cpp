// The tinygrad_cpp extension: tg::Tensor, dtypes, devices, nn and the JIT under tinygrad's Python names.
// Conversion only: every op is the C++ one; Python objects become Number/Operand/Index/Shape and back.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdint>
#include <sstream>

#include "base/env.hpp"
#include "base/error.hpp"
#include "engine/jit.hpp"
#include "nn/datasets.hpp"
#include "nn/layers.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "runtime/beam.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"
#include "uop/print.hpp"

namespace py = pybind11;
using tg::DType;
using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace {

using nogil = py::call_guard<py::gil_scoped_release>;
using OptDType = std::optional<DType>;
using OptDev = std::optional<std::string>;

std::string_view dev(const OptDev& d) { return d ? std::string_view(*d) : std::string_view(); }

template <typename T>
std::string repr(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A Python scalar keeps its kind (bool, int, float): that decides its dtype next to a tensor.
tg::Number to_number(py::handle h) {
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return h.cast<int64_t>();
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::hasattr(h, "item") && py::hasattr(h, "dtype")) return to_number(h.attr("item")());  // numpy scalar
  throw py::type_error("expected a number, got " + std::string(py::str(py::type::of(h))));
}

// pybind11 before 2.12 reads a dtype's item size from numpy 1's struct layout, which numpy 2 changed: sizes,
// byte counts and default strides are taken from Python's attributes and our own dtypes instead.
size_t numpy_itemsize(const py::dtype& d) { return d.attr("itemsize").cast<size_t>(); }

// Row-major strides in bytes of shape, for elements of itemsize bytes.
std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, size_t itemsize) {
  std::vector<py::ssize_t> strides(shape.size());
  auto stride = static_cast<py::ssize_t>(itemsize);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

DType from_numpy(const py::dtype& d) {
  char k = d.kind();
  size_t n = numpy_itemsize(d);
  if (k == 'b') return dtypes::bool_;
  if (k == 'f') return n == 2 ? dtypes::float16 : n == 4 ? dtypes::float32 : dtypes::float64;
  if (k == 'i') return n == 1 ? dtypes::int8 : n == 2 ? dtypes::int16 : n == 4 ? dtypes::int32 : dtypes::int64;
  if (k == 'u')
    return n == 1 ? dtypes::uint8 : n == 2 ? dtypes::uint16 : n == 4 ? dtypes::uint32 : dtypes::uint64;
  throw py::type_error("[Tensor] numpy dtype " + std::string(py::repr(d)) + " has no tinygrad dtype");
}

py::dtype to_numpy(DType d) {
  switch (d.scalar()) {
    case tg::Scalar::BOOL: return py::dtype("bool");
    case tg::Scalar::INT8: return py::dtype("int8");
    case tg::Scalar::UINT8: return py::dtype("uint8");
    case tg::Scalar::INT16: return py::dtype("int16");
    case tg::Scalar::UINT16: return py::dtype("uint16");
    case tg::Scalar::INT32: return py::dtype("int32");
    case tg::Scalar::UINT32: return py::dtype("uint32");
    case tg::Scalar::INT64: return py::dtype("int64");
    case tg::Scalar::UINT64: return py::dtype("uint64");
    case tg::Scalar::FLOAT16: return py::dtype("float16");
    case tg::Scalar::FLOAT32: return py::dtype("float32");
    case tg::Scalar::FLOAT64: return py::dtype("float64");
    default: throw py::type_error("[numpy] " + std::string(d.name()) + " has no numpy dtype");
  }
}

// A size: an int, or a bound Variable (symbolic).
tg::sint to_sint(py::handle h) {
  if (py::isinstance<tg::sint>(h)) return h.cast<tg::sint>();
  return h.cast<int64_t>();
}

tg::Shape to_shape(py::handle h) {
  tg::Shape s;
  for (py::handle d : h) s.push_back(to_sint(d));
  return s;
}
// Tensor.ones(2, 3) and Tensor.ones((2, 3)) both name the shape (2, 3).
tg::Shape shape_args(const py::args& a) {
  if (a.size() == 1 && (py::isinstance<py::tuple>(a[0]) || py::isinstance<py::list>(a[0]))) return to_shape(a[0]);
  return to_shape(a);
}

// A Python object kept by C++ (a numpy array under a tensor): dropped with the GIL, from whatever thread.
std::shared_ptr<const void> keep_alive(py::object o) {
  return std::shared_ptr<const void>(new py::object(std::move(o)), [](const py::object* p) {
    if (!Py_IsInitialized()) return;  // at exit: the interpreter is gone, leave the reference
    py::gil_scoped_acquire g;
    delete p;
  });
}

// numpy array (its own dtype) or nested lists (tinygrad's defaults: float32, int32, bool) -> a tensor. A
// C-contiguous, aligned, native-order array is used in place (Tensor::from_blob, read-only: the tensor never
// writes it, a write moves the tensor to a copy) and kept alive by a reference; on a device without host
// memory in place it is copied at the first realize. Any other array is copied once.
Tensor from_array(py::array a, const OptDType& dtype, const OptDev& device) {
  if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  DType src = from_numpy(a.dtype());
  std::string d = device ? tg::engine::canonical_device(*device) : tg::engine::default_device_name();
  tg::Shape shape;
  for (py::ssize_t i = 0; i < a.ndim(); i++) shape.push_back(static_cast<int64_t>(a.shape(i)));
  auto address = reinterpret_cast<uintptr_t>(a.data());
  Tensor t;
  if ((a.flags() & py::array::c_style) != 0 && address % src.itemsize() == 0) {
    t = Tensor::from_blob(const_cast<void*>(a.data()), shape, src,
                          {.device = d, .owner = keep_alive(a), .read_only = true});
  } else {
    py::array c = py::array::ensure(a, py::array::c_style);
    tg::engine::RealizedBuffer b = tg::engine::buffer_from_host(
        d, src, std::span(static_cast<const std::byte*>(c.data()), static_cast<size_t>(c.size()) * src.itemsize()));
    t = Tensor(tg::engine::realized_view(b.buffer, shape), d, {b.hold});
  }
  return dtype && *dtype != src ? t.cast(*dtype) : t;
}

Tensor make_tensor(py::handle data, const OptDType& dtype, const OptDev& device) {
  if (py::isinstance<Tensor>(data)) {
    Tensor t = data.cast<Tensor>();
    t = dtype ? t.cast(*dtype) : t;
    return device ? t.to(*device) : t;
  }
  if (py::isinstance<py::array>(data)) return from_array(data.cast<py::array>(), dtype, device);
  if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
    py::array a = py::module_::import("numpy").attr("array")(data);
    char k = a.dtype().kind();
    if (a.size() == 0) a = a.attr("astype")("float32");
    else if (k == 'f') a = a.attr("astype")("float32");
    else if (k == 'i' || k == 'u') a = a.attr("astype")("int32");
    return from_array(a, dtype, device);
  }
  return Tensor(to_number(data), dtype, dev(device));
}

tg::Operand to_operand(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (py::isinstance<py::list>(h) || py::isinstance<py::array>(h)) return make_tensor(h, {}, {});
  return to_number(h);
}

std::optional<int64_t> opt_int(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<int64_t>();
}
tg::Index to_index(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (py::isinstance<py::slice>(h))
    return tg::Slice{opt_int(h.attr("start")), opt_int(h.attr("stop")), opt_int(h.attr("step"))};
  if (h.is_none()) return tg::newaxis;
  if (h.is(py::ellipsis())) return tg::ellipsis;
  if (py::isinstance<py::list>(h) || py::isinstance<py::array>(h)) return make_tensor(h, {}, {});
  return h.cast<int64_t>();
}
std::vector<tg::Index> to_indices(py::handle h) {
  std::vector<tg::Index> out;
  if (py::isinstance<py::tuple>(h))
    for (py::handle i : h) out.push_back(to_index(i));
  else
    out.push_back(to_index(h));
  return out;
}

tg::Axes to_axes(py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<py::int_>(h)) return h.cast<int>();
  return h.cast<std::vector<int>>();
}

tg::Sizes to_sizes(const py::object& o) {
  if (o.is_none()) return {};
  if (py::isinstance<py::int_>(o)) return o.cast<int64_t>();
  return o.cast<std::vector<int64_t>>();
}
// An int, one int per axis (both sides), or "same"/"valid".
tg::Padding to_padding(const py::object& o) {
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  if (py::isinstance<py::int_>(o)) return o.cast<int64_t>();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t p : o.cast<std::vector<int64_t>>()) pairs.emplace_back(p, p);
  return pairs;
}

std::vector<Tensor> tensor_args(const Tensor& first, const py::args& rest) {
  std::vector<Tensor> ts{first};
  for (py::handle h : rest) ts.push_back(h.cast<Tensor>());
  return ts;
}

// The values as a numpy array. Where the device maps its buffers to host memory (CLANG) the array is a
// read-only view of the tensor's realized buffer, holding it alive: no copy, and it keeps its values, since a
// later write to the tensor (assign, an optimizer step, a JIT replay) moves the tensor to new memory first.
// Elsewhere, and for a symbolic tensor (its elements at the variables' bound values), the values are copied
// once into a new array. The GIL is released for the realize.
py::array to_numpy_array(const Tensor& t) {
  Tensor r;
  tg::engine::HostView v;
  {
    py::gil_scoped_release g;
    r = t.contiguous();
    r.realize();
    if (!tg::is_symbolic(r.shape())) v = r.host_view();
  }
  std::vector<py::ssize_t> shape;
  for (const tg::sint& s : r.shape()) shape.push_back(s.bound());
  if (v.bytes.data() != nullptr) {
    auto* hold = new std::shared_ptr<const void>(std::move(v.hold));
    py::capsule base(hold, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
    py::array out(to_numpy(r.dtype()), shape, c_strides(shape, r.dtype().itemsize()), v.bytes.data(), base);
    py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return out;
  }
  py::array out(to_numpy(r.dtype()), shape, c_strides(shape, r.dtype().itemsize()));
  size_t nbytes = static_cast<size_t>(out.size()) * r.dtype().itemsize();
  auto dst = std::span(static_cast<std::byte*>(out.mutable_data()), nbytes);
  py::gil_scoped_release g;
  if (tg::UOpRef b = tg::engine::realized_buffer(r.uop()); b && !tg::is_symbolic(r.shape())) {
    tg::engine::copy_to_host(b, dst);
  } else {
    std::vector<std::byte> bytes = r.to_bytes();
    std::copy(bytes.begin(), bytes.end(), dst.begin());
  }
  return out;
}

// A decorated function under tg::Jit: tensors in, a tensor or a tuple of tensors out.
struct TinyJit {
  py::function fn;
  bool single = true;
  tg::Jit jit;
  explicit TinyJit(py::function f)
      : fn(std::move(f)), jit([this](std::span<const Tensor> in) -> std::vector<Tensor> {
          py::gil_scoped_acquire g;
          py::tuple args(in.size());
          for (size_t i = 0; i < in.size(); i++) args[i] = py::cast(in[i]);
          py::object r = fn(*args);
          single = py::isinstance<Tensor>(r);
          return single ? std::vector<Tensor>{r.cast<Tensor>()} : r.cast<std::vector<Tensor>>();
        }) {}
  py::object call(const py::args& args) {
    std::vector<Tensor> in;
    for (py::handle h : args) in.push_back(h.cast<Tensor>());
    std::vector<Tensor> out;
    {
      py::gil_scoped_release g;
      out = jit(std::span<const Tensor>(in));
    }
    return single ? py::cast(out[0]) : py::object(py::tuple(py::cast(out)));
  }
};

tg::env::IntVar& context_var(const std::string& name) {
  for (tg::env::IntVar* v : {&tg::env::DEBUG, &tg::env::BEAM, &tg::env::NOOPT, &tg::env::VIZ, &tg::env::JIT,
                             &tg::env::CACHELEVEL, &tg::env::CONV_IM2COL, &tg::env::SCHEDULE_CACHE,
                             &tg::runtime::IGNORE_BEAM_CACHE})
    if (v->name() == name) return *v;
  throw tg::ValueError("Context", name + " is not a context variable");
}

// Sets IntVars for a `with` block, then restores them (tinygrad's Context).
struct Context {
  std::vector<std::pair<tg::env::IntVar*, int>> set, saved;
  explicit Context(const py::kwargs& kw) {
    for (auto [k, v] : kw) set.emplace_back(&context_var(k.cast<std::string>()), v.cast<int>());
  }
  void enter() {
    for (auto [var, v] : set) saved.emplace_back(var, var->value()), var->set(v);
  }
  void exit() {
    for (auto [var, v] : saved) var->set(v);
    saved.clear();
  }
};

template <typename M>
void def_layer_common(py::class_<M, tg::nn::Module, std::shared_ptr<M>>& c) {
  c.def_readwrite("weight", &M::weight);
  if constexpr (requires(M m) { m.bias; }) c.def_readwrite("bias", &M::bias);
}

void bind_nn(py::module_& m) {
  namespace nn = tg::nn;
  py::module_ n = m.def_submodule("nn", "layers, optimizers, state");
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(n, "Module")
      .def("__call__", &nn::Module::forward, py::arg("x"))
      .def("forward", &nn::Module::forward)
      .def("parameters", &nn::Module::parameters)
      .def("named_parameters", &nn::Module::named_parameters)
      .def("train", &nn::Module::train, py::arg("on") = true)
      .def("eval", &nn::Module::eval)
      .def_property_readonly("training", &nn::Module::is_training);
  py::class_<nn::Linear, nn::Module, std::shared_ptr<nn::Linear>> lin(n, "Linear");
  lin.def(py::init<int64_t, int64_t, bool>(), py::arg("in_features"), py::arg("out_features"),
          py::arg("bias") = true);
  def_layer_common(lin);
  py::class_<nn::ConvNd, nn::Module, std::shared_ptr<nn::ConvNd>> convnd(n, "_ConvNd");
  def_layer_common(convnd);
  auto conv_init = [](auto&& c) {
    using C = typename std::remove_reference_t<decltype(c)>::type;
    c.def(py::init([](int64_t in, int64_t out, const py::object& k, const py::object& stride,
                      const py::object& padding, const py::object& dilation, int64_t groups, bool bias) {
            return std::make_shared<C>(in, out, to_sizes(k), to_sizes(stride), to_padding(padding), to_sizes(dilation),
                                       groups, bias);
          }),
          py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
          py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("bias") = true);
  };
  conv_init(py::class_<nn::Conv1d, nn::ConvNd, std::shared_ptr<nn::Conv1d>>(n, "Conv1d"));
  conv_init(py::class_<nn::Conv2d, nn::ConvNd, std::shared_ptr<nn::Conv2d>>(n, "Conv2d"));
  py::class_<nn::BatchNorm, nn::Module, std::shared_ptr<nn::BatchNorm>> bn(n, "BatchNorm");
  bn.def(py::init<int64_t, double, std::optional<double>, bool, bool>(), py::arg("sz"), py::arg("eps") = 1e-5,
         py::arg("momentum") = 0.1, py::arg("affine") = true, py::arg("track_running_stats") = true)
      .def_readwrite("weight", &nn::BatchNorm::weight)
      .def_readwrite("bias", &nn::BatchNorm::bias)
      .def_readwrite("running_mean", &nn::BatchNorm::running_mean)
      .def_readwrite("running_var", &nn::BatchNorm::running_var)
      .def_readwrite("num_batches_tracked", &nn::BatchNorm::num_batches_tracked);
  n.attr("BatchNorm2d") = n.attr("BatchNorm");
  py::class_<nn::LayerNorm, nn::Module, std::shared_ptr<nn::LayerNorm>> ln(n, "LayerNorm");
  ln.def(py::init([](const py::object& s, double eps, bool affine) {
           tg::Shape shape = py::isinstance<py::int_>(s) ? tg::Shape{s.cast<int64_t>()} : to_shape(s);
           return std::make_shared<nn::LayerNorm>(shape, eps, affine);
         }),
         py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true);
  def_layer_common(ln);
  py::class_<nn::GroupNorm, nn::Module, std::shared_ptr<nn::GroupNorm>> gn(n, "GroupNorm");
  gn.def(py::init<int64_t, int64_t, double, bool>(), py::arg("num_groups"), py::arg("num_channels"),
         py::arg("eps") = 1e-5, py::arg("affine") = true);
  def_layer_common(gn);
  py::class_<nn::Embedding, nn::Module, std::shared_ptr<nn::Embedding>> emb(n, "Embedding");
  emb.def(py::init<int64_t, int64_t>(), py::arg("vocab_size"), py::arg("embed_size"));
  def_layer_common(emb);
  py::class_<nn::ConvTransposeNd, nn::Module, std::shared_ptr<nn::ConvTransposeNd>> convtnd(
      n, "_ConvTransposeNd");
  def_layer_common(convtnd);
  auto convt_init = [](auto&& c) {  // tinygrad's argument order (dilation before groups)
    using C = typename std::remove_reference_t<decltype(c)>::type;
    c.def(py::init([](int64_t in, int64_t out, const py::object& k, const py::object& stride,
                      const py::object& padding, const py::object& output_padding, const py::object& dilation,
                      int64_t groups, bool bias) {
            return std::make_shared<C>(in, out, to_sizes(k), to_sizes(stride), to_sizes(padding),
                                       to_sizes(output_padding), groups, bias, to_sizes(dilation));
          }),
          py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
          py::arg("padding") = 0, py::arg("output_padding") = 0, py::arg("dilation") = 1,
          py::arg("groups") = 1, py::arg("bias") = true);
  };
  convt_init(py::class_<nn::ConvTranspose1d, nn::ConvTransposeNd, std::shared_ptr<nn::ConvTranspose1d>>(
      n, "ConvTranspose1d"));
  convt_init(py::class_<nn::ConvTranspose2d, nn::ConvTransposeNd, std::shared_ptr<nn::ConvTranspose2d>>(
      n, "ConvTranspose2d"));
  py::class_<nn::InstanceNorm, nn::Module, std::shared_ptr<nn::InstanceNorm>> inorm(n, "InstanceNorm");
  inorm.def(py::init<int64_t, double, bool>(), py::arg("num_features"), py::arg("eps") = 1e-5,
            py::arg("affine") = true);
  def_layer_common(inorm);
  py::class_<nn::LayerNorm2d, nn::LayerNorm, std::shared_ptr<nn::LayerNorm2d>>(n, "LayerNorm2d")
      .def(py::init<int64_t, double, bool>(), py::arg("channels"), py::arg("eps") = 1e-5,
           py::arg("elementwise_affine") = true);
  py::class_<nn::LSTMCell, nn::Module, std::shared_ptr<nn::LSTMCell>>(n, "LSTMCell")
      .def(py::init<int64_t, int64_t, bool>(), py::arg("input_size"), py::arg("hidden_size"),
           py::arg("bias") = true)
      .def(
          "__call__",
          [](nn::LSTMCell& c, const Tensor& x, std::optional<nn::LSTMCell::State> hc) { return c(x, hc); },
          py::arg("x"), py::arg("hc") = py::none())
      .def_readwrite("weight_ih", &nn::LSTMCell::weight_ih)
      .def_readwrite("weight_hh", &nn::LSTMCell::weight_hh)
      .def_readwrite("bias_ih", &nn::LSTMCell::bias_ih)
      .def_readwrite("bias_hh", &nn::LSTMCell::bias_hh);

  namespace optim = tg::nn::optim;
  py::module_ o = n.def_submodule("optim", "optimizers");
  py::class_<optim::Optimizer>(o, "Optimizer")
      .def("zero_grad", &optim::Optimizer::zero_grad)
      .def("step", &optim::Optimizer::step, nogil())
      .def("schedule_step", &optim::Optimizer::schedule_step)
      .def_property_readonly("lr", [](optim::Optimizer& op) { return op.lr(); })
      .def("set_lr", &optim::Optimizer::set_lr)
      .def_property_readonly("params", &optim::Optimizer::params);
  py::class_<optim::SGD, optim::Optimizer>(o, "SGD").def(
      py::init([](std::vector<Tensor> p, double lr, double momentum, double wd, bool nesterov) {
        return new optim::SGD(std::move(p), lr, momentum, wd, nesterov);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("momentum") = 0.0, py::arg("weight_decay") = 0.0,
      py::arg("nesterov") = false);
  py::class_<optim::Adam, optim::Optimizer>(o, "Adam").def(
      py::init([](std::vector<Tensor> p, double lr, double b1, double b2, double eps, double wd) {
        return new optim::Adam(std::move(p), lr, b1, b2, eps, wd);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("b1") = 0.9, py::arg("b2") = 0.999, py::arg("eps") = 1e-8,
      py::arg("weight_decay") = 0.0);
  py::class_<optim::AdamW, optim::Adam>(o, "AdamW").def(
      py::init([](std::vector<Tensor> p, double lr, double b1, double b2, double eps, double wd) {
        return new optim::AdamW(std::move(p), lr, b1, b2, eps, wd);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("b1") = 0.9, py::arg("b2") = 0.999, py::arg("eps") = 1e-8,
      py::arg("weight_decay") = 0.01);

  py::class_<optim::LARS, optim::Optimizer>(o, "LARS").def(
      py::init([](std::vector<Tensor> p, double lr, double momentum, double wd, bool nesterov, bool classic,
                  double tcoef) {
        return new optim::LARS(std::move(p), lr, momentum, wd, nesterov, classic, tcoef);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("momentum") = 0.9, py::arg("weight_decay") = 1e-4,
      py::arg("nesterov") = false, py::arg("classic") = true, py::arg("tcoef") = 0.001);
  py::class_<optim::Muon, optim::LARS>(o, "Muon").def(
      py::init([](std::vector<Tensor> p, double lr, double momentum, double wd, int ns_steps,
                  std::vector<double> ns_coefficients, bool nesterov) {
        return new optim::Muon(std::move(p), lr, momentum, wd, ns_steps, std::move(ns_coefficients),
                               nesterov);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("momentum") = 0.95, py::arg("weight_decay") = 0.1,
      py::arg("ns_steps") = 5, py::arg("ns_coefficients") = std::vector<double>{3.4445, -4.775, 2.0315},
      py::arg("nesterov") = true);
  // The members stay alive with the group (the args tuple holds them).
  py::class_<optim::OptimizerGroup, optim::Optimizer>(o, "OptimizerGroup")
      .def(py::init([](const py::args& members) {
             std::vector<optim::Optimizer*> ptrs;
             for (py::handle m : members) ptrs.push_back(m.cast<optim::Optimizer*>());
             return new optim::OptimizerGroup(std::move(ptrs));
           }),
           py::keep_alive<1, 2>())
      .def(
          "__getitem__", [](const optim::OptimizerGroup& g, size_t i) -> optim::Optimizer& { return g[i]; },
          py::return_value_policy::reference_internal)
      .def("__len__", &optim::OptimizerGroup::size);

  py::class_<optim::LRScheduler>(o, "LRScheduler")
      .def("step", &optim::LRScheduler::step)
      .def("get_lr", &optim::LRScheduler::get_lr);
  py::class_<optim::OneCycleLR, optim::LRScheduler>(o, "OneCycleLR")
      .def(py::init<optim::Optimizer&, double, int64_t, double>(), py::keep_alive<1, 2>(), py::arg("optimizer"),
           py::arg("max_lr"), py::arg("total_steps"), py::arg("pct_start") = 0.3);
  py::class_<optim::CosineAnnealingLR, optim::LRScheduler>(o, "CosineAnnealingLR")
      .def(py::init<optim::Optimizer&, int64_t, double>(), py::keep_alive<1, 2>(), py::arg("optimizer"),
           py::arg("T_max"), py::arg("eta_min") = 0.0);

  py::module_ d = n.def_submodule("datasets", "Fashion-MNIST and a seeded batch sampler");
  d.def("fashion_mnist", [](std::optional<std::filesystem::path> dir, OptDev device) {
    nn::FashionMnist f;
    {
      py::gil_scoped_release g;
      f = nn::fashion_mnist(dir, dev(device));
    }
    return py::make_tuple(f.X_train, f.Y_train, f.X_test, f.Y_test);
  }, py::arg("dir") = py::none(), py::arg("device") = py::none());
  py::class_<nn::BatchSampler>(d, "BatchSampler")
      .def(py::init<int64_t, int64_t, bool, uint64_t, bool>(), py::arg("n"), py::arg("batch_size"),
           py::arg("shuffle") = true, py::arg("seed") = 0, py::arg("drop_last") = false)
      .def("__len__", &nn::BatchSampler::size)
      .def("set_epoch", &nn::BatchSampler::set_epoch)
      .def("batch", &nn::BatchSampler::batch)
      .def("indices", [](const nn::BatchSampler& b, int64_t i, OptDev device) { return b.indices(i, dev(device)); },
           py::arg("i"), py::arg("device") = py::none());

  py::module_ s = n.def_submodule("_state", "safetensors and state dicts of C++ modules");
  s.def("safe_save", [](const nn::StateDict& t, const std::filesystem::path& p) { nn::safe_save(t, p); },
        nogil());
  s.def("safe_load", [](const std::filesystem::path& p) { return nn::safe_load(p); }, nogil());
  s.def("module_state_dict", [](const nn::Module& mod) { return nn::state_dict(mod); });
  s.def("module_load_state_dict", [](nn::Module& mod, const nn::StateDict& sd, bool strict) {
    nn::load_state_dict(mod, sd, strict);
  });
}

}  // namespace

PYBIND11_MODULE(_tinygrad_cpp, m) {
  m.doc() = "tinygrad.cpp: lazy tensors, fused generated kernels, plugin devices";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tg::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const tg::DTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const tg::ShapeError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const tg::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const tg::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  py::class_<DType>(m, "DType")
      .def_property_readonly("name", [](DType d) { return std::string(d.name()); })
      .def_property_readonly("itemsize", &DType::itemsize)
      .def("is_float", &DType::is_float)
      .def("is_int", &DType::is_int)
      .def("__eq__", [](DType a, DType b) { return a == b; })
      .def("__hash__", [](DType d) { return static_cast<int>(d.scalar()); })
      .def("__repr__", [](DType d) { return d.str(); });
  py::module_ dt = m.def_submodule("dtypes", "tinygrad's dtype names");
  for (auto [name, d] : std::initializer_list<std::pair<const char*, DType>>{
           {"bool", dtypes::bool_},        {"int8", dtypes::int8},       {"uint8", dtypes::uint8},
           {"int16", dtypes::int16},       {"uint16", dtypes::uint16},   {"int32", dtypes::int32},
           {"uint32", dtypes::uint32},     {"int64", dtypes::int64},     {"uint64", dtypes::uint64},
           {"float16", dtypes::float16},   {"bfloat16", dtypes::bfloat16}, {"float32", dtypes::float32},
           {"float64", dtypes::float64},   {"half", dtypes::half},       {"float", dtypes::float_},
           {"double", dtypes::double_},    {"int", dtypes::int_},        {"long", dtypes::int64},
           {"char", dtypes::int8},         {"short", dtypes::int16},     {"uchar", dtypes::uint8},
           {"default_float", dtypes::default_float}, {"default_int", dtypes::default_int}})
    dt.attr(name) = d;
  dt.def("from_name", [](std::string_view n) { return tg::dtypes::from_name(n); });

  m.def("default_device", &tg::engine::default_device_name);
  m.def("canonical_device", &tg::engine::canonical_device);

  py::class_<tg::UOpRef>(m, "UOp")
      .def("__repr__", [](const tg::UOpRef& u) { return tg::print_tree(u); })
      .def_property_readonly("op", [](const tg::UOpRef& u) { return std::string(tg::op_name(u->op())); })
      .def_property_readonly("dtype", [](const tg::UOpRef& u) { return u->dtype(); })
      .def_property_readonly("src", [](const tg::UOpRef& u) { return std::vector<tg::UOpRef>(u->src().begin(), u->src().end()); });
  py::class_<tg::engine::ScheduleItemView>(m, "ScheduleItem")
      .def_readonly("ast", &tg::engine::ScheduleItemView::ast)
      .def_readonly("bufs", &tg::engine::ScheduleItemView::bufs)
      .def("__repr__", &repr<tg::engine::ScheduleItemView>);

  py::class_<tg::sint>(m, "SInt")
      .def("__repr__", &tg::sint::str)
      .def("__int__", [](const tg::sint& s) { return static_cast<int64_t>(s); })
      .def_property_readonly("min", &tg::sint::min)
      .def_property_readonly("max", &tg::sint::max);
  py::class_<tg::Variable>(m, "Variable")
      .def(py::init<std::string, int64_t, int64_t>(), py::arg("name"), py::arg("min"), py::arg("max"))
      .def("bind", &tg::Variable::bind, py::arg("value"))
      .def_property_readonly("name", &tg::Variable::name)
      .def_property_readonly("min", &tg::Variable::min)
      .def_property_readonly("max", &tg::Variable::max);

  py::class_<Context>(m, "Context")
      .def(py::init<const py::kwargs&>())
      .def("__enter__", [](Context& c) { c.enter(); return &c; }, py::return_value_policy::reference)
      .def("__exit__", [](Context& c, const py::args&) { c.exit(); });

  py::class_<TinyJit>(m, "TinyJit")
      .def(py::init<py::function>(), py::arg("fxn"))
      .def("__call__", &TinyJit::call)
      .def("reset", [](TinyJit& j) { j.jit.reset(); })
      .def_property_readonly("calls", [](TinyJit& j) { return j.jit.calls(); })
      .def_property_readonly("captures", [](TinyJit& j) { return j.jit.captures(); });

  py::class_<Tensor> t(m, "Tensor");
  t.def(py::init([](py::object data, OptDType dtype, OptDev device, std::optional<bool> requires_grad) {
          Tensor x = make_tensor(data, dtype, device);
          if (requires_grad) x.requires_grad_(*requires_grad);
          return x;
        }),
        py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = py::none());

  // ---- creation ----
  auto creator = [&](const char* name, Tensor (*fn)(tg::Shape, DType, std::string_view)) {
    t.def_static(name, [fn](const py::args& a, OptDType dtype, OptDev device, std::optional<bool> rg) {
      Tensor x = fn(shape_args(a), dtype.value_or(dtypes::default_float), dev(device));
      if (rg) x.requires_grad_(*rg);
      return x;
    }, py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("requires_grad") = py::none());
  };
  creator("empty", &Tensor::empty);
  creator("zeros", &Tensor::zeros);
  creator("ones", &Tensor::ones);
  creator("rand", &Tensor::rand);
  creator("randn", &Tensor::randn);
  creator("scaled_uniform", &Tensor::scaled_uniform);
  creator("glorot_uniform", &Tensor::glorot_uniform);
  t.def_static("kaiming_uniform", [](const py::args& a, double sa, OptDType dtype, OptDev device) {
    return Tensor::kaiming_uniform(shape_args(a), sa, dtype.value_or(dtypes::default_float), dev(device));
  }, py::arg("a") = 0.01, py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static("full", [](py::object shape, py::object fill, OptDType dtype, OptDev device) {
    tg::Shape s = py::isinstance<py::int_>(shape) ? tg::Shape{shape.cast<int64_t>()} : to_shape(shape);
    return Tensor::full(s, to_number(fill), dtype, dev(device));
  }, py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static("arange", [](py::object start, py::object stop, py::object step, OptDType dtype, OptDev device) {
    if (stop.is_none()) return Tensor::arange(to_number(start), dtype, dev(device));
    return Tensor::arange(to_number(start), to_number(stop), to_number(step), dtype, dev(device));
  }, py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1, py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
  t.def_static("linspace", [](py::object a, py::object b, int64_t n, OptDType dtype, OptDev device) {
    return Tensor::linspace(to_number(a), to_number(b), n, dtype.value_or(dtypes::default_float), dev(device));
  }, py::arg("start"), py::arg("stop"), py::arg("steps"), py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
  t.def_static("eye", [](int64_t n, std::optional<int64_t> mm, OptDType dtype, OptDev device) {
    return Tensor::eye(n, mm, dtype.value_or(dtypes::default_float), dev(device));
  }, py::arg("n"), py::arg("m") = py::none(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static("randint", [](const py::args& a, int64_t low, int64_t high, OptDType dtype, OptDev device) {
    return Tensor::randint(shape_args(a), low, high, dtype.value_or(dtypes::int32), dev(device));
  }, py::arg("low") = 0, py::arg("high") = 10, py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static("uniform", [](const py::args& a, double low, double high, OptDType dtype, OptDev device) {
    return Tensor::uniform(shape_args(a), low, high, dtype.value_or(dtypes::default_float), dev(device));
  }, py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static("manual_seed", &Tensor::manual_seed, py::arg("seed") = 0);
  t.def("zeros_like", &Tensor::zeros_like, py::arg("dtype") = py::none());
  t.def("ones_like", &Tensor::ones_like, py::arg("dtype") = py::none());
  t.def("empty_like", &Tensor::empty_like, py::arg("dtype") = py::none());
  t.def("rand_like", &Tensor::rand_like, py::arg("dtype") = py::none());
  t.def("randn_like", &Tensor::randn_like, py::arg("dtype") = py::none());
  t.def("full_like", [](const Tensor& x, py::object v, OptDType d) { return x.full_like(to_number(v), d); },
        py::arg("fill_value"), py::arg("dtype") = py::none());

  // ---- properties ----
  t.def_property_readonly("shape", [](const Tensor& x) {
    py::tuple s(x.shape().size());
    for (size_t i = 0; i < x.shape().size(); i++)  // a symbolic size stays an SInt, as tinygrad's UOp
      s[i] = x.shape()[i].is_number() ? py::cast(static_cast<int64_t>(x.shape()[i])) : py::cast(x.shape()[i]);
    return s;
  });
  t.def_property_readonly("ndim", &Tensor::ndim);
  t.def("numel", [](const Tensor& x) { return static_cast<int64_t>(x.numel()); });
  t.def("__len__", [](const Tensor& x) { return static_cast<int64_t>(x.shape(0)); });
  t.def_property_readonly("dtype", &Tensor::dtype);
  t.def_property_readonly("device", &Tensor::device);
  t.def_property_readonly("uop", &Tensor::uop);
  t.def_property("requires_grad", &Tensor::requires_grad,
                 [](Tensor& x, bool on) { x.requires_grad_(on); });
  t.def("requires_grad_", [](Tensor& x, bool on) { return x.requires_grad_(on); }, py::arg("requires_grad") = true);
  t.def_property("grad", [](const Tensor& x) -> std::optional<Tensor> {
    Tensor g = x.grad();
    return g.defined() ? std::optional(g) : std::nullopt;
  }, [](Tensor& x, std::optional<Tensor> g) { x.set_grad(g.value_or(Tensor())); });
  t.def_property_readonly("is_leaf", &Tensor::is_leaf);

  // ---- realization and values (kernels compile and run without the GIL) ----
  t.def("realize", [](Tensor& x, const py::args& more) {
    std::vector<Tensor> ts = tensor_args(x, more);
    py::gil_scoped_release g;
    Tensor::realize_all(ts);
    return x;
  });
  t.def("schedule", &Tensor::schedule, nogil());
  t.def("numpy", &to_numpy_array);
  t.def("__array__", [](const Tensor& x, const py::args&, const py::kwargs&) { return to_numpy_array(x); });
  t.def("tolist", [](const Tensor& x) { return to_numpy_array(x).attr("tolist")(); });
  t.def("item", [](const Tensor& x) {
    if (x.numel() != 1) x.item<double>();  // raises the C++ error
    return to_numpy_array(x).attr("item")();
  });
  t.def("data", [](const Tensor& x) { return py::memoryview(to_numpy_array(x)); });
  t.def("__repr__", [](const Tensor& x) {
    std::ostringstream os;
    os << "<Tensor " << tg::op_name(x.uop()->op()) << " on " << x.device() << " with grad "
       << (x.grad().defined() ? "defined" : "None") << ">";
    return os.str();
  });
  t.def("__str__", &Tensor::str, nogil());
  t.def("__bool__", [](const Tensor& x) { return x.item<bool>(); }, nogil());
  t.def("__int__", [](const Tensor& x) { return x.item<int64_t>(); }, nogil());
  t.def("__float__", [](const Tensor& x) { return x.item<double>(); }, nogil());

  // ---- dtype, graph ----
  t.def("cast", &Tensor::cast, py::arg("dtype"));
  t.def("bitcast", &Tensor::bitcast, py::arg("dtype"));
  t.def("float", [](const Tensor& x) { return x.cast(dtypes::float32); });
  t.def("half", [](const Tensor& x) { return x.cast(dtypes::float16); });
  t.def("int", [](const Tensor& x) { return x.cast(dtypes::int32); });
  t.def("bool", [](const Tensor& x) { return x.cast(dtypes::bool_); });
  t.def("long", [](const Tensor& x) { return x.cast(dtypes::int64); });
  t.def("double", [](const Tensor& x) { return x.cast(dtypes::float64); });
  t.def("detach", &Tensor::detach);
  t.def("contiguous", &Tensor::contiguous);
  t.def("clone", &Tensor::contiguous);  // a new buffer with the same values once realized
  t.def("to", &Tensor::to, py::arg("device"));
  t.def("backward", [](Tensor& x, std::optional<Tensor> g) { return x.backward(g.value_or(Tensor())); },
        py::arg("gradient") = py::none());
  t.def("gradient", [](const Tensor& x, const py::args& targets, std::optional<Tensor> g) {
    std::vector<Tensor> ts;
    for (py::handle h : targets) ts.push_back(h.cast<Tensor>());
    return x.gradient(ts, g.value_or(Tensor()));
  }, py::arg("gradient") = py::none());
  t.def("assign", [](Tensor& x, py::object v) { return x.assign(to_operand(v)); });
  t.def("replace", [](Tensor& x, const Tensor& v) { return x.replace(v); }, py::arg("x"));
  t.def("sequential", [](const Tensor& x, const py::iterable& layers) {
    py::object y = py::cast(x);
    for (py::handle f : layers) y = f(y);
    return y;
  });

  // ---- elementwise: methods and operators ----
  using Bin = Tensor (Tensor::*)(const tg::Operand&, bool) const;
  auto binary = [&](const char* name, const char* op, const char* rop, Bin fn) {
    t.def(name, [fn](const Tensor& a, py::object b, bool reverse) { return (a.*fn)(to_operand(b), reverse); },
          py::arg("x"), py::arg("reverse") = false);
    t.def(op, [fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b), false); }, py::is_operator());
    t.def(rop, [fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b), true); }, py::is_operator());
  };
  binary("add", "__add__", "__radd__", &Tensor::add);
  binary("sub", "__sub__", "__rsub__", &Tensor::sub);
  binary("mul", "__mul__", "__rmul__", &Tensor::mul);
  binary("mod", "__mod__", "__rmod__", &Tensor::mod);
  binary("pow", "__pow__", "__rpow__", &Tensor::pow);
  binary("bitwise_and", "__and__", "__rand__", &Tensor::bitwise_and);
  binary("bitwise_or", "__or__", "__ror__", &Tensor::bitwise_or);
  binary("bitwise_xor", "__xor__", "__rxor__", &Tensor::bitwise_xor);
  binary("lshift", "__lshift__", "__rlshift__", &Tensor::lshift);
  binary("rshift", "__rshift__", "__rrshift__", &Tensor::rshift);
  t.def("div", [](const Tensor& a, py::object b, std::optional<std::string> mode, bool reverse) {
    std::optional<tg::Rounding> r;
    if (mode == "trunc") r = tg::Rounding::TRUNC;
    else if (mode == "floor") r = tg::Rounding::FLOOR;
    else if (mode) throw py::value_error("[div] rounding_mode must be None, 'trunc' or 'floor'");
    return a.div(to_operand(b), r, reverse);
  }, py::arg("x"), py::arg("rounding_mode") = py::none(), py::arg("reverse") = false);
  t.def("__truediv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b)); }, py::is_operator());
  t.def("__rtruediv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b), {}, true); },
        py::is_operator());
  t.def("__floordiv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b), tg::Rounding::FLOOR); },
        py::is_operator());
  t.def("__rfloordiv__",
        [](const Tensor& a, py::object b) { return a.div(to_operand(b), tg::Rounding::FLOOR, true); },
        py::is_operator());
  using Cmp = Tensor (Tensor::*)(const tg::Operand&) const;
  for (auto [name, op, fn] : std::initializer_list<std::tuple<const char*, const char*, Cmp>>{
           {"lt", "__lt__", &Tensor::lt}, {"le", "__le__", &Tensor::le}, {"gt", "__gt__", &Tensor::gt},
           {"ge", "__ge__", &Tensor::ge}, {"eq", "__eq__", &Tensor::eq}, {"ne", "__ne__", &Tensor::ne},
           {"maximum", nullptr, &Tensor::maximum}, {"minimum", nullptr, &Tensor::minimum},
           {"logical_and", nullptr, &Tensor::logical_and}, {"logical_or", nullptr, &Tensor::logical_or},
           {"logical_xor", nullptr, &Tensor::logical_xor}, {"logaddexp", nullptr, &Tensor::logaddexp}}) {
    auto f = [fn = fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b)); };
    t.def(name, f);
    if (op) t.def(op, f, py::is_operator());
  }
  t.def("fmod", [](const Tensor& a, py::object b) { return a.fmod(to_operand(b)); });
  t.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");
  t.def("where", [](const Tensor& c, py::object x, py::object y) { return c.where(to_operand(x), to_operand(y)); });
  t.def("clamp", [](const Tensor& x, py::object lo, py::object hi) {
    if (py::isinstance<Tensor>(lo)) return x.clamp(lo.cast<Tensor>(), hi.cast<Tensor>());
    std::optional<tg::Number> a, b;
    if (!lo.is_none()) a = to_number(lo);
    if (!hi.is_none()) b = to_number(hi);
    return x.clamp(a, b);
  }, py::arg("min_") = py::none(), py::arg("max_") = py::none());
  t.attr("clip") = t.attr("clamp");
  t.def("__neg__", &Tensor::neg);
  t.def("__invert__", &Tensor::bitwise_not);
  t.def("__matmul__", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, py::is_operator());
  t.def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return b.matmul(a); }, py::is_operator());
  t.def("__getitem__", [](const Tensor& x, py::object i) {
    // A forward slice with a bound Variable as a bound is a shrink: C++ indexing takes only concrete sizes.
    auto plain = [](py::handle b) { return b.is_none() || (py::isinstance<py::int_>(b) && b.cast<int64_t>() >= 0); };
    auto symbolic = [](py::handle b) { return py::isinstance<tg::sint>(b); };
    if (py::isinstance<py::slice>(i) && i.attr("step").is_none() && x.ndim() > 0 &&
        (plain(i.attr("start")) || symbolic(i.attr("start"))) && (plain(i.attr("stop")) || symbolic(i.attr("stop"))) &&
        (symbolic(i.attr("start")) || symbolic(i.attr("stop")))) {
      tg::ShapePairs b;
      for (int d = 0; d < x.ndim(); d++) b.emplace_back(tg::sint(0), x.shape(d));
      if (!i.attr("start").is_none()) b[0].first = to_sint(i.attr("start"));
      if (!i.attr("stop").is_none()) b[0].second = to_sint(i.attr("stop"));
      return x.shrink(b);
    }
    return x.index(to_indices(i));
  });
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Tensor (Tensor::*)() const>>{
           {"neg", &Tensor::neg},         {"reciprocal", &Tensor::reciprocal}, {"sqrt", &Tensor::sqrt},
           {"rsqrt", &Tensor::rsqrt},     {"exp", &Tensor::exp},               {"exp2", &Tensor::exp2},
           {"log", &Tensor::log},         {"log2", &Tensor::log2},             {"sin", &Tensor::sin},
           {"cos", &Tensor::cos},         {"tan", &Tensor::tan},               {"tanh", &Tensor::tanh},
           {"sigmoid", &Tensor::sigmoid}, {"relu", &Tensor::relu},
           {"silu", &Tensor::silu},       {"swish", &Tensor::silu},            {"logsigmoid", &Tensor::logsigmoid},
           {"abs", &Tensor::abs},         {"sign", &Tensor::sign},             {"square", &Tensor::square},
           {"trunc", &Tensor::trunc},     {"floor", &Tensor::floor},           {"ceil", &Tensor::ceil},
           {"round", &Tensor::round},     {"isnan", &Tensor::isnan},           {"isfinite", &Tensor::isfinite},
           {"logical_not", &Tensor::logical_not}, {"bitwise_not", &Tensor::bitwise_not},
           {"asin", &Tensor::asin},       {"acos", &Tensor::acos},             {"atan", &Tensor::atan},
           {"sinh", &Tensor::sinh},       {"cosh", &Tensor::cosh},             {"asinh", &Tensor::asinh},
           {"acosh", &Tensor::acosh},     {"atanh", &Tensor::atanh},           {"erf", &Tensor::erf},
           {"log10", &Tensor::log10},     {"selu", &Tensor::selu},             {"mish", &Tensor::mish},
           {"hardsigmoid", &Tensor::hardsigmoid}, {"hardswish", &Tensor::hardswish},
           {"relu6", &Tensor::relu6},     {"softsign", &Tensor::softsign},     {"quick_gelu", &Tensor::quick_gelu}})
    t.def(name, fn);
  t.def("gelu", [](const Tensor& x, std::string approximate) { return x.gelu(approximate); },
        py::arg("approximate") = "tanh");
  t.def("elu", &Tensor::elu, py::arg("alpha") = 1.0);
  t.def("celu", &Tensor::celu, py::arg("alpha") = 1.0);
  t.def("hardtanh", &Tensor::hardtanh, py::arg("min_val") = -1.0, py::arg("max_val") = 1.0);
  t.def("softmin", &Tensor::softmin, py::arg("axis") = -1);
  t.def("leaky_relu", &Tensor::leaky_relu, py::arg("neg_slope") = 0.01);
  t.def("softplus", &Tensor::softplus, py::arg("beta") = 1.0);
  t.def("isinf", &Tensor::isinf, py::arg("detect_positive") = true, py::arg("detect_negative") = true);

  // ---- reduce ----
  using Red = Tensor (Tensor::*)(tg::Axes, bool) const;
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Red>>{
           {"max", &Tensor::max}, {"min", &Tensor::min}, {"mean", &Tensor::mean}, {"any", &Tensor::any},
           {"all", &Tensor::all}, {"logsumexp", &Tensor::logsumexp}})
    t.def(name, [fn = fn](const Tensor& x, py::object axis, bool keepdim) { return (x.*fn)(to_axes(axis), keepdim); },
          py::arg("axis") = py::none(), py::arg("keepdim") = false);
  t.def("sum", [](const Tensor& x, py::object axis, bool keepdim, OptDType d) {
    return x.sum(to_axes(axis), keepdim, d);
  }, py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def("prod", [](const Tensor& x, py::object axis, bool keepdim, OptDType d) {
    return x.prod(to_axes(axis), keepdim, d);
  }, py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def("var", [](const Tensor& x, py::object axis, bool keepdim, double c) { return x.var(to_axes(axis), keepdim, c); },
        py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1.0);
  t.def("std", [](const Tensor& x, py::object axis, bool keepdim, double c) { return x.std(to_axes(axis), keepdim, c); },
        py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1.0);
  t.def("argmax", &Tensor::argmax, py::arg("axis") = py::none(), py::arg("keepdim") = false);
  t.def("argmin", &Tensor::argmin, py::arg("axis") = py::none(), py::arg("keepdim") = false);
  t.def("cumsum", &Tensor::cumsum, py::arg("axis") = 0);

  // ---- movement ----
  t.def("reshape", [](const Tensor& x, const py::args& a) { return x.reshape(shape_args(a)); });
  t.def("view", [](const Tensor& x, const py::args& a) { return x.reshape(shape_args(a)); });
  t.def("expand", [](const Tensor& x, const py::args& a) { return x.expand(shape_args(a)); });
  t.def("permute", [](const Tensor& x, const py::args& a) {
    tg::Shape s = shape_args(a);
    return x.permute(tg::Dims(s.begin(), s.end()));
  });
  t.def("flip", [](const Tensor& x, py::object axis) { return x.flip(to_axes(axis).list()); }, py::arg("axis"));
  t.def("pad", [](const Tensor& x, std::vector<std::optional<std::pair<int64_t, int64_t>>> p, double value) {
    std::vector<std::pair<int64_t, int64_t>> pp;
    for (auto& e : p) pp.push_back(e.value_or(std::pair<int64_t, int64_t>{0, 0}));
    return x.pad(pp, tg::PadMode::CONSTANT, value);
  }, py::arg("padding"), py::arg("value") = 0.0);
  t.def("shrink", [](const Tensor& x, std::vector<std::optional<std::pair<int64_t, int64_t>>> b) {
    tg::ShapePairs sp;
    for (size_t i = 0; i < b.size(); i++)
      sp.emplace_back(b[i] ? tg::sint(b[i]->first) : tg::sint(0),
                      b[i] ? tg::sint(b[i]->second) : x.shape(static_cast<int>(i)));
    return x.shrink(sp);
  }, py::arg("arg"));
  t.def("transpose", &Tensor::transpose, py::arg("dim0") = 1, py::arg("dim1") = 0);
  t.def_property_readonly("T", [](const Tensor& x) { return x.transpose(1, 0); });
  t.def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  t.def("unflatten", [](const Tensor& x, int dim, py::object s) { return x.unflatten(dim, to_shape(s)); });
  t.def("squeeze", &Tensor::squeeze, py::arg("dim") = py::none());
  t.def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"));
  t.def("repeat", [](const Tensor& x, const py::args& a) { return x.repeat(shape_args(a)); });
  t.def("cat", [](const Tensor& x, const py::args& a, int dim) { return Tensor::cat(tensor_args(x, a), dim); },
        py::arg("dim") = 0);
  t.def("stack", [](const Tensor& x, const py::args& a, int dim) { return Tensor::stack(tensor_args(x, a), dim); },
        py::arg("dim") = 0);
  t.def("split", [](const Tensor& x, py::object s, int dim) {
    return py::isinstance<py::int_>(s) ? x.split(s.cast<int64_t>(), dim) : x.split(to_shape(s), dim);
  }, py::arg("sizes"), py::arg("dim") = 0);
  t.def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0);
  t.def("gather", &Tensor::gather, py::arg("dim"), py::arg("index"));
  t.def("one_hot", &Tensor::one_hot, py::arg("num_classes"));

  // ---- linear algebra, nn functional ----
  t.def("dot", &Tensor::dot, py::arg("w"), py::arg("dtype") = py::none());
  t.def("matmul", [](const Tensor& a, const Tensor& b, bool reverse, OptDType d) {
    return reverse ? b.matmul(a, d) : a.matmul(b, d);
  }, py::arg("x"), py::arg("reverse") = false, py::arg("dtype") = py::none());
  t.def_static("einsum", [](std::string_view f, const py::args& ops) {
    std::vector<Tensor> ts;
    for (py::handle h : ops)
      if (py::isinstance<Tensor>(h)) ts.push_back(h.cast<Tensor>());
      else for (py::handle e : h) ts.push_back(e.cast<Tensor>());
    return Tensor::einsum(f, ts);
  });
  t.def("linear", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
    return x.linear(w, b.value_or(Tensor()));
  }, py::arg("weight"), py::arg("bias") = py::none());
  t.def("softmax", &Tensor::softmax, py::arg("axis") = -1);
  t.def("log_softmax", &Tensor::log_softmax, py::arg("axis") = -1);
  t.def("layernorm", [](const Tensor& x, py::object axis, double eps) { return x.layernorm(to_axes(axis), eps); },
        py::arg("axis") = -1, py::arg("eps") = 1e-5);
  auto reduction = [](const std::string& r) {
    if (r == "mean") return tg::Reduction::MEAN;
    if (r == "sum") return tg::Reduction::SUM;
    if (r == "none") return tg::Reduction::NONE;
    throw py::value_error("[loss] reduction must be 'mean', 'sum' or 'none'");
  };
  t.def("sparse_categorical_crossentropy", [reduction](const Tensor& x, const Tensor& y, int64_t ignore,
                                                       double ls, const std::string& r) {
    return x.sparse_categorical_crossentropy(y, ignore, ls, reduction(r));
  }, py::arg("Y"), py::arg("ignore_index") = -1, py::arg("label_smoothing") = 0.0, py::arg("reduction") = "mean");
  t.def("cross_entropy", [reduction](const Tensor& x, const Tensor& y, const std::string& r, double ls) {
    return x.cross_entropy(y, reduction(r), ls);
  }, py::arg("Y"), py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0);
  t.def("binary_crossentropy", [reduction](const Tensor& x, const Tensor& y, const std::string& r) {
    return x.binary_crossentropy(y, reduction(r));
  }, py::arg("Y"), py::arg("reduction") = "mean");
  t.def("binary_crossentropy_logits", [reduction](const Tensor& x, const Tensor& y, const std::string& r) {
    return x.binary_crossentropy_logits(y, reduction(r));
  }, py::arg("Y"), py::arg("reduction") = "mean");
  t.def("conv2d", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t groups,
                                   py::object stride, py::object dilation, py::object pad) {
    return x.conv2d(w, b.value_or(Tensor()), to_sizes(stride), to_padding(pad), to_sizes(dilation), groups);
  }, py::arg("weight"), py::arg("bias") = py::none(), py::arg("groups") = 1, py::arg("stride") = 1,
     py::arg("dilation") = 1, py::arg("padding") = 0);
  t.def("max_pool2d", [](const Tensor& x, py::object k, py::object s, py::object d, py::object p,
                                       bool ceil) {
    return x.max_pool2d(to_sizes(k), to_sizes(s), to_padding(p), to_sizes(d), ceil);
  }, py::arg("kernel_size") = 2, py::arg("stride") = py::none(), py::arg("dilation") = 1, py::arg("padding") = 0,
     py::arg("ceil_mode") = false);
  t.def("avg_pool2d", [](const Tensor& x, py::object k, py::object s, py::object p, bool ceil,
                                       bool cip) {
    return x.avg_pool2d(to_sizes(k), to_sizes(s), to_padding(p), ceil, cip);
  }, py::arg("kernel_size") = 2, py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  t.def("scaled_dot_product_attention", [](const Tensor& q, const Tensor& k, const Tensor& v,
                                           std::optional<Tensor> mask, double p, bool causal) {
    return q.scaled_dot_product_attention(k, v, mask.value_or(Tensor()), causal, p);
  }, py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(), py::arg("dropout_p") = 0.0,
     py::arg("is_causal") = false);
  t.def("dropout", [](const Tensor& x, double p) { return x.dropout(p, true); }, py::arg("p") = 0.5);

  bind_nn(m);
}
