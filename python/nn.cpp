// The nn bindings: layers (tg::nn modules), optimizers, LR schedulers, datasets and state dicts.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "convert.hpp"
#include "nn/datasets.hpp"
#include "nn/layers.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "nn/torch_load.hpp"
#include "nn/zip_reader.hpp"

namespace tgpy {

namespace {
template <typename M>
void def_layer_common(py::class_<M, tg::nn::Module, std::shared_ptr<M>>& c) {
  c.def_readwrite("weight", &M::weight);
  if constexpr (requires(M m) { m.bias; }) c.def_readwrite("bias", &M::bias);
}

}  // namespace

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
            return std::make_shared<C>(in, out, to_sizes(k), to_sizes(stride), to_padding(padding),
                                       to_sizes(dilation), groups, bias);
          }),
          py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
          py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("bias") = true);
  };
  conv_init(py::class_<nn::Conv1d, nn::ConvNd, std::shared_ptr<nn::Conv1d>>(n, "Conv1d"));
  conv_init(py::class_<nn::Conv2d, nn::ConvNd, std::shared_ptr<nn::Conv2d>>(n, "Conv2d"));
  py::class_<nn::BatchNorm, nn::Module, std::shared_ptr<nn::BatchNorm>> bn(n, "BatchNorm");
  bn.def(py::init([](int64_t sz, double eps, bool affine, bool track, std::optional<double> momentum) {
           return std::make_shared<nn::BatchNorm>(sz, eps, momentum, affine, track);
         }),
         py::arg("sz"), py::arg("eps") = 1e-5, py::arg("affine") = true,
         py::arg("track_running_stats") = true, py::arg("momentum") = 0.1)
      .def_readwrite("weight", &nn::BatchNorm::weight)
      .def_readwrite("bias", &nn::BatchNorm::bias)
      .def_readwrite("running_mean", &nn::BatchNorm::running_mean)
      .def_readwrite("running_var", &nn::BatchNorm::running_var)
      .def_readwrite("num_batches_tracked", &nn::BatchNorm::num_batches_tracked)
      .def(
          "calc_stats",
          [](const nn::BatchNorm& b, const Tensor& x) {
            auto [mean, var] = b.calc_stats(x);
            return py::make_tuple(mean, var);
          },
          py::arg("x"));
  n.attr("BatchNorm2d") = n.attr("BatchNorm");
  n.attr("BatchNorm3d") = n.attr("BatchNorm");  // statistics over every axis but 1, any rank
  py::class_<nn::RMSNorm, nn::Module, std::shared_ptr<nn::RMSNorm>>(n, "RMSNorm")
      .def(py::init([](int64_t dim, double eps, bool affine) {
             return std::make_shared<nn::RMSNorm>(tg::Shape{dim}, eps, affine);
           }),
           py::arg("dim"), py::arg("eps") = 1e-6, py::arg("elementwise_affine") = true)
      .def_readwrite("weight", &nn::RMSNorm::weight);
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
  emb.def(py::init<int64_t, int64_t>(), py::arg("vocab_size"), py::arg("embed_size"))
      .def("__call__", &nn::Module::forward, py::arg("idx"));
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
      .def(py::init([](const py::object& s, double eps, bool affine) {  // the channel count, or (channels,)
             int64_t c =
                 py::isinstance<py::int_>(s) ? s.cast<int64_t>() : s.cast<std::vector<int64_t>>().at(0);
             return std::make_shared<nn::LayerNorm2d>(c, eps, affine);
           }),
           py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true);
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
      py::arg("params"), py::arg("lr") = 0.001, py::arg("b1") = 0.9, py::arg("b2") = 0.999,
      py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  py::class_<optim::AdamW, optim::Adam>(o, "AdamW")
      .def(py::init([](std::vector<Tensor> p, double lr, double b1, double b2, double eps, double wd) {
             return new optim::AdamW(std::move(p), lr, b1, b2, eps, wd);
           }),
           py::arg("params"), py::arg("lr") = 0.001, py::arg("b1") = 0.9, py::arg("b2") = 0.999,
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.01);

  // tinygrad's order; nn/optim.py puts device= and fused= on top (tinygrad_cpp.nn.optim.LARS).
  py::class_<optim::LARS, optim::Optimizer>(o, "LARS").def(
      py::init([](std::vector<Tensor> p, double lr, double momentum, double wd, int ns_steps,
                  std::optional<std::vector<double>> ns_coefficients, bool nesterov, bool classic, bool pre_wd,
                  double tcoef) {
        return new optim::LARS(std::move(p), lr, momentum, wd, ns_steps, ns_coefficients.value_or(std::vector<double>{}),
                               nesterov, classic, pre_wd, tcoef);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("momentum") = 0.9, py::arg("weight_decay") = 1e-4,
      py::arg("ns_steps") = 0, py::arg("ns_coefficients") = py::none(), py::arg("nesterov") = false,
      py::arg("classic") = true, py::arg("pre_wd") = true, py::arg("tcoef") = 0.001);
  py::class_<optim::LAMB, optim::Adam>(o, "LAMB").def(
      py::init([](std::vector<Tensor> p, double lr, double b1, double b2, double eps, double wd, bool adam) {
        return new optim::LAMB(std::move(p), lr, b1, b2, eps, wd, adam);
      }),
      py::arg("params"), py::arg("lr") = 0.001, py::arg("b1") = 0.9, py::arg("b2") = 0.999, py::arg("eps") = 1e-6,
      py::arg("weight_decay") = 0.0, py::arg("adam") = false);
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
      .def(py::init<optim::Optimizer&, double, int64_t, double>(), py::keep_alive<1, 2>(),
           py::arg("optimizer"), py::arg("max_lr"), py::arg("total_steps"), py::arg("pct_start") = 0.3);
  py::class_<optim::CosineAnnealingLR, optim::LRScheduler>(o, "CosineAnnealingLR")
      .def(py::init<optim::Optimizer&, int64_t, double>(), py::keep_alive<1, 2>(), py::arg("optimizer"),
           py::arg("T_max"), py::arg("eta_min") = 0.0);

  py::module_ d = n.def_submodule("datasets", "Fashion-MNIST and a seeded batch sampler");
  d.def(
      "fashion_mnist",
      [](std::optional<std::filesystem::path> dir, OptDev device) {
        nn::FashionMnist f;
        {
          py::gil_scoped_release g;
          f = nn::fashion_mnist(dir, dev(device));
        }
        return py::make_tuple(f.X_train, f.Y_train, f.X_test, f.Y_test);
      },
      py::arg("dir") = py::none(), py::arg("device") = py::none());
  py::class_<nn::BatchSampler>(d, "BatchSampler")
      .def(py::init<int64_t, int64_t, bool, uint64_t, bool>(), py::arg("n"), py::arg("batch_size"),
           py::arg("shuffle") = true, py::arg("seed") = 0, py::arg("drop_last") = false)
      .def("__len__", &nn::BatchSampler::size)
      .def("set_epoch", &nn::BatchSampler::set_epoch)
      .def("batch", &nn::BatchSampler::batch)
      .def(
          "indices",
          [](const nn::BatchSampler& b, int64_t i, OptDev device) { return b.indices(i, dev(device)); },
          py::arg("i"), py::arg("device") = py::none());

  py::module_ s = n.def_submodule("_state", "safetensors and state dicts of C++ modules");
  s.def(
      "safe_save", [](const nn::StateDict& t, const std::filesystem::path& p) { nn::safe_save(t, p); },
      nogil(), py::arg("tensors"), py::arg("fn"));
  s.def(
      "safe_load", [](const std::filesystem::path& p) { return nn::safe_load(p); }, nogil(), py::arg("fn"));
  // A file's bytes (nn/state.py's accept_filename gives them from a path or a uint8 tensor).
  s.def(
      "torch_parse",
      [](py::bytes data, OptDev device) {
        std::string_view v = data;
        return nn::torch_parse(std::as_bytes(std::span(v.data(), v.size())), dev(device));
      },
      py::arg("data"), py::arg("device") = py::none());
  s.def(
      "zip_extract",
      [](py::bytes data) {
        std::string_view v = data;
        std::span<const std::byte> f = std::as_bytes(std::span(v.data(), v.size()));
        py::dict out;
        for (const nn::detail::ZipEntry& e : nn::detail::read_zip(f, "zip_extract")) {
          std::vector<std::byte> keep;
          std::span<const std::byte> b = nn::detail::entry_bytes("zip_extract", f, e, keep);
          const auto* u = reinterpret_cast<const uint8_t*>(b.data());
          out[py::str(e.name)] = Tensor(std::vector<uint8_t>(u, u + b.size()), tg::Shape{static_cast<int64_t>(b.size())});
        }
        return out;
      },
      py::arg("data"));
  s.def("module_state_dict", [](const nn::Module& mod) { return nn::state_dict(mod); });
  s.def("module_load_state_dict",
        [](nn::Module& mod, const nn::StateDict& sd, bool strict) { nn::load_state_dict(mod, sd, strict); });
}

}  // namespace tgpy
