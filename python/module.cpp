// The tinygrad_cpp extension: tg::Tensor, dtypes, devices, nn and the JIT under tinygrad's Python names.
// Conversion only: every op is the C++ one; Python objects become Number/Operand/Index/Shape and back.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <sstream>
#include <tuple>

#include "base/env.hpp"
#include "base/error.hpp"
#include "convert.hpp"
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

namespace tgpy {

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
  if (k == 'i')
    return n == 1 ? dtypes::int8 : n == 2 ? dtypes::int16 : n == 4 ? dtypes::int32 : dtypes::int64;
  if (k == 'u')
    return n == 1 ? dtypes::uint8 : n == 2 ? dtypes::uint16 : n == 4 ? dtypes::uint32 : dtypes::uint64;
  throw py::type_error("[Tensor] numpy dtype " + std::string(py::repr(d)) + " has no tinygrad dtype");
}

py::dtype to_numpy(DType d) {
  switch (d.scalar()) {
    case tg::Scalar::BOOL:
      return py::dtype("bool");
    case tg::Scalar::INT8:
      return py::dtype("int8");
    case tg::Scalar::UINT8:
      return py::dtype("uint8");
    case tg::Scalar::INT16:
      return py::dtype("int16");
    case tg::Scalar::UINT16:
      return py::dtype("uint16");
    case tg::Scalar::INT32:
      return py::dtype("int32");
    case tg::Scalar::UINT32:
      return py::dtype("uint32");
    case tg::Scalar::INT64:
      return py::dtype("int64");
    case tg::Scalar::UINT64:
      return py::dtype("uint64");
    case tg::Scalar::FLOAT16:
      return py::dtype("float16");
    case tg::Scalar::FLOAT32:
      return py::dtype("float32");
    case tg::Scalar::FLOAT64:
      return py::dtype("float64");
    default:
      throw py::type_error("[numpy] " + std::string(d.name()) + " has no numpy dtype");
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
  if (a.size() == 1 && (py::isinstance<py::tuple>(a[0]) || py::isinstance<py::list>(a[0])))
    return to_shape(a[0]);
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
        d, src,
        std::span(static_cast<const std::byte*>(c.data()), static_cast<size_t>(c.size()) * src.itemsize()));
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
  // A file's bytes, mapped (tinygrad's Tensor(pathlib.Path) is a uint8 DISK tensor; dtype reinterprets them).
  if (py::isinstance(data, py::module_::import("pathlib").attr("PurePath"))) {
    py::module_ np = py::module_::import("numpy");
    std::string path = py::str(data);
    bool empty = py::module_::import("os").attr("path").attr("getsize")(path).cast<int64_t>() == 0;
    py::array bytes = empty ? np.attr("zeros")(0, "uint8") : np.attr("memmap")(path, "uint8", "r");
    Tensor t = from_array(bytes, {}, device);
    return dtype && *dtype != dtypes::uint8 ? t.bitcast(*dtype) : t;
  }
  if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
    py::array a = py::module_::import("numpy").attr("array")(data);
    char k = a.dtype().kind();
    if (a.size() == 0)
      a = a.attr("astype")("float32");
    else if (k == 'f')
      a = a.attr("astype")("float32");
    else if (k == 'i' || k == 'u')
      a = a.attr("astype")("int32");
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

tg::Reduction to_reduction(const std::string& r) {
  if (r == "mean") return tg::Reduction::MEAN;
  if (r == "sum") return tg::Reduction::SUM;
  if (r == "none") return tg::Reduction::NONE;
  throw py::value_error("[loss] reduction must be 'mean', 'sum' or 'none'");
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
  for (tg::env::IntVar* v :
       {&tg::env::DEBUG, &tg::env::BEAM, &tg::env::NOOPT, &tg::env::VIZ, &tg::env::JIT, &tg::env::CACHELEVEL,
        &tg::env::CONV_IM2COL, &tg::env::SCHEDULE_CACHE, &tg::runtime::IGNORE_BEAM_CACHE})
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

}  // namespace tgpy

PYBIND11_MODULE(_tinygrad_cpp, m) {
  using namespace tgpy;
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
      .def(py::init([](std::string_view n) {
        if (std::optional<DType> d = tg::dtypes::from_name(n)) return *d;
        throw py::type_error("[dtype] no dtype is named " + std::string(n));
      }))
      .def_property_readonly("name", [](DType d) { return std::string(d.name()); })
      .def_property_readonly("itemsize", &DType::itemsize)
      .def("is_float", &DType::is_float)
      .def("is_int", &DType::is_int)
      .def("is_unsigned", &DType::is_unsigned)
      .def("is_bool", &DType::is_bool)
      .def("__eq__", [](DType a, DType b) { return a == b; })
      .def("__hash__", [](DType d) { return static_cast<int>(d.scalar()); })
      .def("__repr__", [](DType d) { return d.str(); });
  py::implicitly_convertible<py::str, DType>();  // cast("float32") as tinygrad's DTypeLike
  py::module_ dt = m.def_submodule("dtypes", "tinygrad's dtype names");
  for (auto [name, d] :
       std::initializer_list<std::pair<const char*, DType>>{{"bool", dtypes::bool_},
                                                            {"int8", dtypes::int8},
                                                            {"uint8", dtypes::uint8},
                                                            {"int16", dtypes::int16},
                                                            {"uint16", dtypes::uint16},
                                                            {"int32", dtypes::int32},
                                                            {"uint32", dtypes::uint32},
                                                            {"int64", dtypes::int64},
                                                            {"uint64", dtypes::uint64},
                                                            {"float16", dtypes::float16},
                                                            {"bfloat16", dtypes::bfloat16},
                                                            {"float32", dtypes::float32},
                                                            {"float64", dtypes::float64},
                                                            {"half", dtypes::half},
                                                            {"float", dtypes::float_},
                                                            {"double", dtypes::double_},
                                                            {"int", dtypes::int_},
                                                            {"long", dtypes::int64},
                                                            {"uint", dtypes::uint32},
                                                            {"ulong", dtypes::uint64},
                                                            {"ushort", dtypes::uint16},
                                                            {"char", dtypes::int8},
                                                            {"short", dtypes::int16},
                                                            {"uchar", dtypes::uint8},
                                                            {"default_float", dtypes::default_float},
                                                            {"default_int", dtypes::default_int}})
    dt.attr(name) = d;
  dt.def("from_name", [](std::string_view n) { return tg::dtypes::from_name(n); });
  dt.attr("fp8e4m3") = dtypes::fp8e4m3;
  dt.attr("fp8e5m2") = dtypes::fp8e5m2;
  dt.attr("fp8_ocp") = py::make_tuple(dtypes::fp8e4m3, dtypes::fp8e5m2);
  // (exponent bits, mantissa bits) of a float dtype.
  dt.def(
      "finfo",
      [](DType d) {
        for (auto [f, e, m] : std::initializer_list<std::tuple<DType, int, int>>{{dtypes::float16, 5, 10},
                                                                               {dtypes::bfloat16, 8, 7},
                                                                               {dtypes::float32, 8, 23},
                                                                               {dtypes::float64, 11, 52},
                                                                               {dtypes::fp8e4m3, 4, 3},
                                                                               {dtypes::fp8e5m2, 5, 2}})
          if (d == f) return py::make_tuple(e, m);
        throw py::value_error(d.str() + " is not a floating point type");
      },
      py::arg("dtype"));
  // The dtype a Python value makes: bool, default_int for an int, default_float for a float (tinygrad's weak
  // dtypes, which tinygrad.cpp does not have, become these), the widest of a list's elements.
  dt.def(
      "from_py",
      [](py::handle x) {
        std::function<int(py::handle)> rank = [&](py::handle v) -> int {  // 0 bool, 1 int, 2 float
          if (py::isinstance<py::bool_>(v)) return 0;
          if (py::isinstance<py::float_>(v)) return 2;
          if (py::isinstance<py::int_>(v)) return 1;
          if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
            if (py::len(v) == 0) return 2;
            int r = 0;
            for (py::handle e : v) r = std::max(r, rank(e));
            return r;
          }
          throw std::runtime_error("Could not infer dtype of " + py::repr(v).cast<std::string>() + " with type " +
                                   py::repr(py::type::of(v)).cast<std::string>());
        };
        int r = rank(x);
        return r == 0 ? dtypes::bool_ : r == 1 ? dtypes::default_int : dtypes::default_float;
      },
      py::arg("x"));
  dt.attr("void") = DType(tg::Scalar::VOID);
  using D = std::vector<DType>;
  D uints{dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64};
  D sints{dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64};
  D floats{dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64};
  dt.attr("uints") = py::tuple(py::cast(uints));
  dt.attr("sints") = py::tuple(py::cast(sints));
  dt.attr("ints") = py::tuple(py::cast(uints)) + py::tuple(py::cast(sints));
  dt.attr("floats") = py::tuple(py::cast(floats));
  for (size_t i = 0; i < 4; i++)  // int8s = (uint8, int8), ... as tinygrad
    dt.attr(("int" + std::to_string(8 << i) + "s").c_str()) = py::make_tuple(uints[i], sints[i]);
  dt.attr("all") = py::make_tuple(dtypes::bool_) + dt.attr("ints") + dt.attr("floats");
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, bool (DType::*)() const>>{
           {"is_float", &DType::is_float},
           {"is_int", &DType::is_int},
           {"is_unsigned", &DType::is_unsigned},
           {"is_bool", &DType::is_bool}})
    dt.def(
        name, [fn = fn](DType d) { return (d.*fn)(); }, py::arg("x"));

  m.def("default_device", &tg::engine::default_device_name);
  m.def("canonical_device", &tg::engine::canonical_device);

  py::class_<tg::UOpRef>(m, "UOp")
      .def("__repr__", [](const tg::UOpRef& u) { return tg::print_tree(u); })
      .def_property_readonly("op", [](const tg::UOpRef& u) { return std::string(tg::op_name(u->op())); })
      .def_property_readonly("dtype", [](const tg::UOpRef& u) { return u->dtype(); })
      .def_property_readonly("src", [](const tg::UOpRef& u) {
        return std::vector<tg::UOpRef>(u->src().begin(), u->src().end());
      });
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
      .def(
          "__enter__",
          [](Context& c) {
            c.enter();
            return &c;
          },
          py::return_value_policy::reference)
      .def("__exit__", [](Context& c, const py::args&) { c.exit(); });

  py::class_<TinyJit>(m, "TinyJit")
      .def(py::init<py::function>(), py::arg("fxn"))
      .def("__call__", &TinyJit::call)
      .def("reset", [](TinyJit& j) { j.jit.reset(); })
      .def_property_readonly("calls", [](TinyJit& j) { return j.jit.calls(); })
      .def_property_readonly("captures", [](TinyJit& j) { return j.jit.captures(); });

  py::class_<Tensor> t(m, "Tensor");
  t.def(py::init([](py::object data, OptDev device, OptDType dtype, std::optional<bool> requires_grad) {
          Tensor x = make_tensor(data, dtype, device);
          if (requires_grad) x.requires_grad_(*requires_grad);
          return x;
        }),
        py::arg("data"), py::arg("device") = py::none(), py::arg("dtype") = py::none(),
        py::arg("requires_grad") = py::none());

  // ---- creation ----
  auto creator = [&](const char* name, Tensor (*fn)(tg::Shape, DType, std::string_view)) {
    t.def_static(
        name,
        [fn](const py::args& a, OptDev device, OptDType dtype, std::optional<bool> rg) {
          Tensor x = fn(shape_args(a), dtype.value_or(dtypes::default_float), dev(device));
          if (rg) x.requires_grad_(*rg);
          return x;
        },
        py::arg("device") = py::none(), py::arg("dtype") = py::none(), py::arg("requires_grad") = py::none());
  };
  creator("empty", &Tensor::empty);
  creator("zeros", &Tensor::zeros);
  creator("ones", &Tensor::ones);
  creator("randn", &Tensor::randn);
  creator("scaled_uniform", &Tensor::scaled_uniform);
  creator("glorot_uniform", &Tensor::glorot_uniform);
  // contiguous=False lets tinygrad leave the numbers lazy; ours are lazy until realized either way.
  t.def_static(
      "rand",
      [](const py::args& a, OptDev device, OptDType dtype, bool, std::optional<bool> rg) {
        Tensor x = Tensor::rand(shape_args(a), dtype.value_or(dtypes::default_float), dev(device));
        if (rg) x.requires_grad_(*rg);
        return x;
      },
      py::arg("device") = py::none(), py::arg("dtype") = py::none(), py::arg("contiguous") = true,
      py::arg("requires_grad") = py::none());
  t.def_static(
      "kaiming_uniform",
      [](const py::args& a, double sa, OptDType dtype, OptDev device) {
        return Tensor::kaiming_uniform(shape_args(a), sa, dtype.value_or(dtypes::default_float), dev(device));
      },
      py::arg("a") = 0.01, py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static(
      "full",
      [](py::object shape, py::object fill, OptDType dtype, OptDev device, bool) {
        tg::Shape s = py::isinstance<py::int_>(shape) ? tg::Shape{shape.cast<int64_t>()} : to_shape(shape);
        return Tensor::full(s, to_number(fill), dtype, dev(device));
      },
      py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("buffer") = true);
  t.def_static(
      "arange",
      [](py::object start, py::object stop, py::object step, OptDType dtype, OptDev device) {
        if (stop.is_none()) return Tensor::arange(to_number(start), dtype, dev(device));
        return Tensor::arange(to_number(start), to_number(stop), to_number(step), dtype, dev(device));
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  t.def_static(
      "linspace",
      [](py::object a, py::object b, int64_t n, OptDType dtype, OptDev device) {
        return Tensor::linspace(to_number(a), to_number(b), n, dtype.value_or(dtypes::default_float),
                                dev(device));
      },
      py::arg("start"), py::arg("stop"), py::arg("steps"), py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  t.def_static(
      "eye",
      [](int64_t n, std::optional<int64_t> mm, OptDType dtype, OptDev device) {
        return Tensor::eye(n, mm, dtype.value_or(dtypes::default_float), dev(device));
      },
      py::arg("n"), py::arg("m") = py::none(), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  t.def_static(
      "randint",
      [](const py::args& a, int64_t low, int64_t high, DType dtype, OptDev device) {
        return Tensor::randint(shape_args(a), low, high, dtype, dev(device));
      },
      py::arg("low") = 0, py::arg("high") = 10, py::arg_v("dtype", dtypes::int32, "'int'"),
      py::arg("device") = py::none());
  t.def_static(
      "uniform",
      [](const py::args& a, double low, double high, OptDType dtype, OptDev device) {
        return Tensor::uniform(shape_args(a), low, high, dtype.value_or(dtypes::default_float), dev(device));
      },
      py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("dtype") = py::none(),
      py::arg("device") = py::none());
  t.def_static("manual_seed", &Tensor::manual_seed, py::arg("seed") = 0);
  using Like = Tensor (Tensor::*)(std::optional<DType>) const;
  auto like = [](Like fn) {
    return [fn](const Tensor& x, OptDType d, OptDev device, std::optional<bool> rg) {
      Tensor y = (x.*fn)(d);
      if (device) y = y.to(*device);
      if (rg) y.requires_grad_(*rg);
      return y;
    };
  };
  for (auto [name, fn] :
       std::initializer_list<std::pair<const char*, Like>>{{"zeros_like", &Tensor::zeros_like},
                                                           {"ones_like", &Tensor::ones_like},
                                                           {"rand_like", &Tensor::rand_like}})
    t.def(name, like(fn), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
          py::arg("requires_grad") = py::none());
  t.def("empty_like", like(&Tensor::empty_like), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::kw_only(), py::arg("requires_grad") = py::none());
  t.def("randn_like", like(&Tensor::randn_like), py::arg("dtype") = py::none(), py::kw_only(),
        py::arg("device") = py::none(), py::arg("requires_grad") = py::none());
  t.def(
      "full_like",
      [](const Tensor& x, py::object v, OptDType d, OptDev device, bool) {
        Tensor y = x.full_like(to_number(v), d);
        return device ? y.to(*device) : y;
      },
      py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("buffer") = true);

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
  t.def_property("requires_grad", &Tensor::requires_grad, [](Tensor& x, bool on) { x.requires_grad_(on); });
  t.def(
      "requires_grad_", [](Tensor& x, bool on) { return x.requires_grad_(on); },
      py::arg("requires_grad") = true);
  t.def_property(
      "grad",
      [](const Tensor& x) -> std::optional<Tensor> {
        Tensor g = x.grad();
        return g.defined() ? std::optional(g) : std::nullopt;
      },
      [](Tensor& x, std::optional<Tensor> g) { x.set_grad(g.value_or(Tensor())); });
  t.def_property_readonly("is_leaf", &Tensor::is_leaf);

  // ---- realization and values (kernels compile and run without the GIL) ----
  t.def(
      "realize",
      [](Tensor& x, const py::args& more, bool) {
        std::vector<Tensor> ts = tensor_args(x, more);
        py::gil_scoped_release g;
        Tensor::realize_all(ts);
        return x;
      },
      py::arg("do_update_stats") = true);
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
  t.def(
      "__bool__", [](const Tensor& x) { return x.item<bool>(); }, nogil());
  t.def(
      "__int__", [](const Tensor& x) { return x.item<int64_t>(); }, nogil());
  t.def(
      "__float__", [](const Tensor& x) { return x.item<double>(); }, nogil());

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
  t.def("contiguous", [](const Tensor& x, const py::kwargs& kw) {
    if (!kw.empty()) throw py::type_error("[contiguous] tinygrad's UOp options are not supported here");
    return x.contiguous();
  });
  t.def(
      "clone",
      [](const Tensor& x, OptDev device) {  // a new buffer with the same values once realized
        return device ? x.contiguous().to(*device) : x.contiguous();
      },
      py::arg("device") = py::none());
  t.def("to", &Tensor::to, py::arg("device"));
  t.def(
      "backward", [](Tensor& x, std::optional<Tensor> g) { return x.backward(g.value_or(Tensor())); },
      py::arg("gradient") = py::none());
  t.def(
      "gradient",
      [](const Tensor& x, const py::args& targets, std::optional<Tensor> g) {
        std::vector<Tensor> ts;
        for (py::handle h : targets) ts.push_back(h.cast<Tensor>());
        return x.gradient(ts, g.value_or(Tensor()));
      },
      py::arg("gradient") = py::none());
  t.def(
      "assign", [](Tensor& x, py::object v) { return x.assign(to_operand(v)); }, py::arg("x"));
  t.def(
      "replace", [](Tensor& x, const Tensor& v) { return x.replace(v); }, py::arg("x"));
  t.def(
      "sequential",
      [](const Tensor& x, const py::iterable& layers) {
        py::object y = py::cast(x);
        for (py::handle f : layers) y = f(y);
        return y;
      },
      py::arg("ll"));

  // ---- elementwise: methods and operators ----
  using Bin = Tensor (Tensor::*)(const tg::Operand&, bool) const;
  auto binary = [&](const char* name, const char* op, const char* rop, Bin fn) {
    t.def(
        name, [fn](const Tensor& a, py::object b, bool reverse) { return (a.*fn)(to_operand(b), reverse); },
        py::arg("x"), py::arg("reverse") = false);
    t.def(
        op, [fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b), false); }, py::is_operator());
    t.def(
        rop, [fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b), true); }, py::is_operator());
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
  t.def(
      "div",
      [](const Tensor& a, py::object b, bool reverse, std::optional<std::string> mode) {
        std::optional<tg::Rounding> r;
        if (mode == "trunc")
          r = tg::Rounding::TRUNC;
        else if (mode == "floor")
          r = tg::Rounding::FLOOR;
        else if (mode)
          throw py::value_error("[div] rounding_mode must be None, 'trunc' or 'floor'");
        return a.div(to_operand(b), r, reverse);
      },
      py::arg("x"), py::arg("reverse") = false, py::arg("rounding_mode") = py::none());
  t.def(
      "__truediv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b)); }, py::is_operator());
  t.def(
      "__rtruediv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b), {}, true); },
      py::is_operator());
  t.def(
      "__floordiv__", [](const Tensor& a, py::object b) { return a.div(to_operand(b), tg::Rounding::FLOOR); },
      py::is_operator());
  t.def(
      "__rfloordiv__",
      [](const Tensor& a, py::object b) { return a.div(to_operand(b), tg::Rounding::FLOOR, true); },
      py::is_operator());
  using Cmp = Tensor (Tensor::*)(const tg::Operand&) const;
  for (auto [name, op, fn] : std::initializer_list<std::tuple<const char*, const char*, Cmp>>{
           {"lt", "__lt__", &Tensor::lt},
           {"le", "__le__", &Tensor::le},
           {"gt", "__gt__", &Tensor::gt},
           {"ge", "__ge__", &Tensor::ge},
           {"eq", "__eq__", &Tensor::eq},
           {"ne", "__ne__", &Tensor::ne},
           {"maximum", nullptr, &Tensor::maximum},
           {"minimum", nullptr, &Tensor::minimum},
           {"logical_and", nullptr, &Tensor::logical_and},
           {"logical_or", nullptr, &Tensor::logical_or},
           {"logical_xor", nullptr, &Tensor::logical_xor},
           {"logaddexp", nullptr, &Tensor::logaddexp}}) {
    auto f = [fn = fn](const Tensor& a, py::object b) { return (a.*fn)(to_operand(b)); };
    t.def(name, f, py::arg(std::string_view(name) == "logaddexp" ? "other" : "x"));
    if (op) t.def(op, f, py::is_operator());
  }
  t.def(
      "fmod", [](const Tensor& a, py::object b) { return a.fmod(to_operand(b)); }, py::arg("x"));
  t.attr("__hash__") = py::module_::import("builtins").attr("object").attr("__hash__");
  t.def(
      "where",
      [](const Tensor& c, py::object x, py::object y) { return c.where(to_operand(x), to_operand(y)); },
      py::arg("x"), py::arg("y"));
  t.def(
      "clamp",
      [](const Tensor& x, py::object lo, py::object hi) {
        if (py::isinstance<Tensor>(lo)) return x.clamp(lo.cast<Tensor>(), hi.cast<Tensor>());
        std::optional<tg::Number> a, b;
        if (!lo.is_none()) a = to_number(lo);
        if (!hi.is_none()) b = to_number(hi);
        return x.clamp(a, b);
      },
      py::arg("min_") = py::none(), py::arg("max_") = py::none());
  t.attr("clip") = t.attr("clamp");
  t.def("__neg__", &Tensor::neg);
  t.def("__invert__", &Tensor::bitwise_not);
  t.def(
      "__matmul__", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, py::is_operator());
  t.def(
      "__rmatmul__", [](const Tensor& a, const Tensor& b) { return b.matmul(a); }, py::is_operator());
  t.def("__getitem__", [](const Tensor& x, py::object i) {
    // A forward slice with a bound Variable as a bound is a shrink: C++ indexing takes only concrete sizes.
    auto plain = [](py::handle b) {
      return b.is_none() || (py::isinstance<py::int_>(b) && b.cast<int64_t>() >= 0);
    };
    auto symbolic = [](py::handle b) { return py::isinstance<tg::sint>(b); };
    if (py::isinstance<py::slice>(i) && i.attr("step").is_none() && x.ndim() > 0 &&
        (plain(i.attr("start")) || symbolic(i.attr("start"))) &&
        (plain(i.attr("stop")) || symbolic(i.attr("stop"))) &&
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
           {"neg", &Tensor::neg},
           {"reciprocal", &Tensor::reciprocal},
           {"sqrt", &Tensor::sqrt},
           {"rsqrt", &Tensor::rsqrt},
           {"exp", &Tensor::exp},
           {"exp2", &Tensor::exp2},
           {"log", &Tensor::log},
           {"log2", &Tensor::log2},
           {"sin", &Tensor::sin},
           {"cos", &Tensor::cos},
           {"tan", &Tensor::tan},
           {"tanh", &Tensor::tanh},
           {"sigmoid", &Tensor::sigmoid},
           {"relu", &Tensor::relu},
           {"silu", &Tensor::silu},
           {"swish", &Tensor::silu},
           {"logsigmoid", &Tensor::logsigmoid},
           {"abs", &Tensor::abs},
           {"sign", &Tensor::sign},
           {"square", &Tensor::square},
           {"trunc", &Tensor::trunc},
           {"floor", &Tensor::floor},
           {"ceil", &Tensor::ceil},
           {"round", &Tensor::round},
           {"isnan", &Tensor::isnan},
           {"isfinite", &Tensor::isfinite},
           {"logical_not", &Tensor::logical_not},
           {"bitwise_not", &Tensor::bitwise_not},
           {"asin", &Tensor::asin},
           {"acos", &Tensor::acos},
           {"atan", &Tensor::atan},
           {"sinh", &Tensor::sinh},
           {"cosh", &Tensor::cosh},
           {"asinh", &Tensor::asinh},
           {"acosh", &Tensor::acosh},
           {"atanh", &Tensor::atanh},
           {"erf", &Tensor::erf},
           {"log10", &Tensor::log10},
           {"mish", &Tensor::mish},
           {"hardswish", &Tensor::hardswish},
           {"relu6", &Tensor::relu6},
           {"softsign", &Tensor::softsign},
           {"quick_gelu", &Tensor::quick_gelu}})
    t.def(name, fn);
  t.def(
      "gelu", [](const Tensor& x, std::string approximate) { return x.gelu(approximate); },
      py::arg("approximate") = "tanh");
  t.def("elu", &Tensor::elu, py::arg("alpha") = 1.0);
  t.def("celu", &Tensor::celu, py::arg("alpha") = 1.0);
  t.def("hardtanh", &Tensor::hardtanh, py::arg("min_val") = -1.0, py::arg("max_val") = 1.0);
  t.def("leaky_relu", &Tensor::leaky_relu, py::arg("neg_slope") = 0.01);
  t.def("softplus", &Tensor::softplus, py::arg("beta") = 1.0);
  t.def("isinf", &Tensor::isinf, py::arg("detect_positive") = true, py::arg("detect_negative") = true);

  // ---- reduce ----
  using Red = Tensor (Tensor::*)(tg::Axes, bool) const;
  for (auto [name, fn] :
       std::initializer_list<std::pair<const char*, Red>>{{"max", &Tensor::max},
                                                          {"min", &Tensor::min},
                                                          {"mean", &Tensor::mean},
                                                          {"any", &Tensor::any},
                                                          {"all", &Tensor::all},
                                                          {"logsumexp", &Tensor::logsumexp}})
    t.def(
        name,
        [fn = fn](const Tensor& x, py::object axis, bool keepdim) { return (x.*fn)(to_axes(axis), keepdim); },
        py::arg("axis") = py::none(), py::arg("keepdim") = false);
  t.def(
      "sum",
      [](const Tensor& x, py::object axis, bool keepdim, OptDType d) {
        return x.sum(to_axes(axis), keepdim, d);
      },
      py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def(
      "prod",
      [](const Tensor& x, py::object axis, bool keepdim, OptDType d) {
        return x.prod(to_axes(axis), keepdim, d);
      },
      py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("dtype") = py::none());
  t.def(
      "var",
      [](const Tensor& x, py::object axis, bool keepdim, double c) {
        return x.var(to_axes(axis), keepdim, c);
      },
      py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1.0);
  t.def(
      "std",
      [](const Tensor& x, py::object axis, bool keepdim, double c) {
        return x.std(to_axes(axis), keepdim, c);
      },
      py::arg("axis") = py::none(), py::arg("keepdim") = false, py::arg("correction") = 1.0);
  t.def("argmax", &Tensor::argmax, py::arg("axis") = py::none(), py::arg("keepdim") = false);
  t.def("argmin", &Tensor::argmin, py::arg("axis") = py::none(), py::arg("keepdim") = false);

  bind_tensor_more(t);
  bind_nn(m);
  bind_onnx(m);
  add_text_signatures(m);
}
