// Text signatures for the bound functions, so inspect.signature reads them as it reads tinygrad's: CPython
// takes a builtin's signature from a docstring that starts "name(params)\n--\n\n". pybind11's own first line
// has annotations and a return type that inspect does not parse, so it is rebuilt from the function record
// (the py::arg names and defaults) for every function with one overload.
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "convert.hpp"

namespace tgpy {

namespace {

py::detail::function_record* record_of(py::handle f) {
  f = py::detail::get_function(f);  // unwraps bound and instance methods
  if (!f || !PyCFunction_Check(f.ptr())) return nullptr;
  PyObject* self = PyCFunction_GET_SELF(f.ptr());
  if (self == nullptr || !py::isinstance<py::capsule>(self)) return nullptr;
  auto cap = py::reinterpret_borrow<py::capsule>(self);
  if (!py::detail::is_function_record_capsule(cap)) return nullptr;
  return cap.get_pointer<py::detail::function_record>();
}

// (self, x, reverse=False): positional parameters, *args or a bare * before the keyword-only ones, **kwargs.
std::string text_signature(const py::detail::function_record& r) {
  std::string s;
  auto add = [&s](const std::string& p) { s += (s.empty() ? "" : ", ") + p; };
  size_t named = r.nargs - r.has_args - r.has_kwargs;
  for (size_t i = 0; i < named; i++) {
    if (i == r.nargs_pos) add(r.has_args ? "*args" : "*");
    const py::detail::argument_record* a = i < r.args.size() ? &r.args[i] : nullptr;
    std::string p = a && a->name            ? a->name
                    : i == 0 && r.is_method ? "self"
                                            : "arg" + std::to_string(i - (r.is_method ? 1 : 0));
    if (a && a->descr) p += std::string("=") + a->descr;
    add(p);
    if (r.nargs_pos_only > 0 && i + 1 == r.nargs_pos_only) add("/");
  }
  if (r.has_args && r.nargs_pos >= named) add("*args");
  if (r.has_kwargs) add("**kwargs");
  return "(" + s + ")";
}

void add_text_signature(py::handle f) {
  py::detail::function_record* r = record_of(f);
  if (r == nullptr || r->next != nullptr || r->def == nullptr) return;  // not ours, or overloaded
  std::string doc = r->def->ml_doc ? r->def->ml_doc : "";
  if (doc.find("\n--\n\n") != std::string::npos) return;  // done already (an alias of another name)
  size_t eol = doc.find('\n');  // pybind11's first line is its own signature; the rest is the docstring
  std::string rest = eol == std::string::npos ? "" : doc.substr(eol + 1);
  std::string sig = std::string(r->def->ml_name) + text_signature(*r) + "\n--\n\n" + rest;
  std::free(const_cast<char*>(r->def->ml_doc));
  r->def->ml_doc = strdup(sig.c_str());
}

void add_to_class(py::handle cls) {
  for (auto [name, v] : py::dict(cls.attr("__dict__"))) {  // a copy: __dict__ is a mappingproxy
    if (py::isinstance<py::staticmethod>(v))
      add_text_signature(v.attr("__func__"));
    else
      add_text_signature(v);
  }
}

}  // namespace

void add_text_signatures(py::module_ m) {
  std::string prefix = m.attr("__name__").cast<std::string>();
  for (auto [name, v] : py::reinterpret_borrow<py::dict>(m.attr("__dict__"))) {
    if (py::isinstance<py::module_>(v)) {
      if (v.attr("__name__").cast<std::string>().rfind(prefix + ".", 0) == 0)
        add_text_signatures(py::reinterpret_borrow<py::module_>(v));
    } else if (PyType_Check(v.ptr())) {
      add_to_class(v);
    } else {
      add_text_signature(v);
    }
  }
}

}  // namespace tgpy
