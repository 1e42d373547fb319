// tinygrad_cpp.onnx: the ONNX runner (modules/onnx) as tinygrad's OnnxRunner: OnnxRunner(path)(feeds).
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "convert.hpp"
#include "onnx/runner.hpp"

namespace tgpy {
namespace {

tg::onnx::Value to_value(py::handle h, const std::string& device) {
  if (h.is_none()) return std::monostate{};
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    tg::onnx::Sequence seq;
    for (py::handle item : h) seq.push_back(make_tensor(item, std::nullopt, device));
    return seq;
  }
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  return make_tensor(h, std::nullopt, device);
}

py::object from_value(const tg::onnx::Value& v) {
  if (const Tensor* t = std::get_if<Tensor>(&v)) return py::cast(*t);
  if (const auto* s = std::get_if<tg::onnx::Sequence>(&v)) return py::cast(*s);
  return py::none();
}

}  // namespace

void bind_onnx(py::module_& m) {
  py::module_ o = m.def_submodule("_onnx", "ONNX models (tinygrad_cpp.onnx)");
  py::class_<tg::onnx::Runner>(o, "OnnxRunner")
      .def(py::init([](const std::filesystem::path& path, const OptDev& device) {
             return tg::onnx::Runner::load(path, std::string(dev(device)));
           }),
           py::arg("model_path"), py::arg("device") = py::none())
      .def_property_readonly("inputs",
                             [](const tg::onnx::Runner& r) {
                               py::dict d;
                               for (const auto& i : r.inputs()) d[py::str(i.name)] = tg::onnx::describe(i);
                               return d;
                             })
      .def_property_readonly("outputs",
                             [](const tg::onnx::Runner& r) {
                               py::list l;
                               for (const auto& i : r.outputs()) l.append(i.name);
                               return l;
                             })
      .def(
          "__call__",
          [](const tg::onnx::Runner& r, const py::dict& feeds) {
            std::map<std::string, tg::onnx::Value> in;
            for (auto [k, v] : feeds) in[k.cast<std::string>()] = to_value(v, r.device());
            std::map<std::string, tg::onnx::Value> out;
            {
              py::gil_scoped_release release;
              out = r.run(in);
            }
            py::dict d;
            for (const auto& name : r.outputs()) d[py::str(name.name)] = from_value(out.at(name.name));
            return d;
          },
          py::arg("inputs"));
}

}  // namespace tgpy
