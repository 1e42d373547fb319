#pragma once
// Python objects to the C++ API's argument types and back (module.cpp), shared by the binding files.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace py = pybind11;
using tg::DType;
using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace tgpy {

using nogil = py::call_guard<py::gil_scoped_release>;
using OptDType = std::optional<DType>;
using OptDev = std::optional<std::string>;

inline std::string_view dev(const OptDev& d) { return d ? std::string_view(*d) : std::string_view(); }

tg::Number to_number(py::handle h);       // a Python scalar keeps its kind (bool, int, float)
tg::sint to_sint(py::handle h);           // an int or a bound Variable
tg::Shape to_shape(py::handle h);         // a sequence of sizes
tg::Shape shape_args(const py::args& a);  // f(2, 3) and f((2, 3)) both name (2, 3)
Tensor make_tensor(py::handle data, const OptDType& dtype, const OptDev& device);
tg::Operand to_operand(py::handle h);  // a tensor, a number, or a list/array made a tensor
std::vector<tg::Index> to_indices(py::handle h);
tg::Axes to_axes(py::handle h);           // None (all), an int or a sequence
tg::Sizes to_sizes(const py::object& o);  // None (the default), an int or a sequence
tg::Padding to_padding(const py::object& o);
std::vector<Tensor> tensor_args(const Tensor& first, const py::args& rest);
py::array to_numpy_array(const Tensor& t);
tg::Reduction to_reduction(const std::string& r);

void bind_nn(py::module_& m);
void bind_onnx(py::module_& m);  // onnx.cpp
void bind_tensor_more(py::class_<Tensor>& t);  // tensor_more.cpp
void add_text_signatures(py::module_ m);       // signatures.cpp

}  // namespace tgpy
