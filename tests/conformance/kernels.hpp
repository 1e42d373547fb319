#pragma once
// Hand-built kernels and raw plugin buffers for the allocator, compiler and program areas: kernel ASTs
// (docs/ir-stages.md stage 2) lowered with the device's caps and rendered by its renderer.
#include <cstring>
#include <exception>

#include <fmt/format.h>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codegen/lower.hpp"
#include "conformance.hpp"
#include "runtime/check.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"
#include "tg/sdk/device.hpp"
#include "uop/uop.hpp"

namespace tg::conformance {

inline UOpRef idx(int64_t v) { return UOp::const_(dtypes::index, ConstValue{v}); }
inline UOpRef glob(int64_t i, DType d, int64_t n) {
  return UOp::make(Ops::DEFINE_GLOBAL, d.ptr(AddrSpace::GLOBAL, n), {}, i);
}
inline UOpRef index(const UOpRef& buf, const UOpRef& i) { return UOp::make(Ops::INDEX, buf->dtype(), {buf, i}); }
inline UOpRef load(const UOpRef& buf, const UOpRef& i) {
  return UOp::make(Ops::LOAD, buf->dtype().base(), {index(buf, i)});
}
inline UOpRef store(const UOpRef& buf, const UOpRef& i, const UOpRef& v) {
  return UOp::make(Ops::STORE, dtypes::void_, {index(buf, i), v});
}
inline UOpRef end(const UOpRef& x, const UOpRef& range) { return UOp::make(Ops::END, dtypes::void_, {x, range}); }

// out[i] = in[i] * 2 + v for i < n (float32; v an int variable in [0, 1000]).
inline UOpRef scale_add_var_ast(int64_t n) {
  UOpRef r = UOp::range(idx(n), 0);
  UOpRef v = UOp::variable("v", 0, 1000)->cast(dtypes::float32);
  UOpRef x = load(glob(1, dtypes::float32, n), r);
  return UOp::sink({end(store(glob(0, dtypes::float32, n), r, x * 2.0 + v), r)});
}
// out[i] = in[i] + 1 for i < n (float32).
inline UOpRef add_one_ast(int64_t n) {
  UOpRef r = UOp::range(idx(n), 0);
  return UOp::sink({end(store(glob(0, dtypes::float32, n), r, load(glob(1, dtypes::float32, n), r) + 1.0), r)});
}
// buf[i] = buf[i] + 1 for i < n (int32, in place).
inline UOpRef increment_ast(int64_t n) {
  UOpRef r = UOp::range(idx(n), 0), b = glob(0, dtypes::int32, n);
  return UOp::sink({end(store(b, r, load(b, r) + UOp::const_(dtypes::int32, ConstValue{int64_t{1}})), r)});
}

// A lowered and rendered kernel.
struct Rendered {
  codegen::LinearProgram prog;
  std::string source;
};
inline Rendered render(const UOpRef& ast, const std::string& name) {
  Rendered k;
  k.prog = codegen::lower_kernel(ast, device().caps(), codegen::LowerOptions{.name = name});
  sdk::Blob src;
  runtime::check(device().renderer().render(k.prog.name, k.prog.view(), src), "render", k.prog.name);
  k.source = std::string(src.text());
  return k;
}
// Thrown right after a kernel compiled in compile-only mode: the item passes without loading or running.
struct CompiledOnly : std::exception {
  const char* what() const noexcept override { return "compiled for the target; not run (compile-only)"; }
};
inline void stop_if_compile_only() {
  if (compile_only()) throw CompiledOnly();
}

// The disassembly of a tensor-core kernel's binary must show the target's matrix instruction
// (--tc-instruction); empty when it does or when no pattern was given.
inline std::string check_tc_disassembly(std::span<const std::byte> binary) {
  const std::string& want = target().tc_pattern;
  if (want.empty()) return "";
  sdk::Blob text;
  sdk::Status s = device().compiler().disassemble(binary, text);
  if (!s.ok()) return fmt::format("cannot disassemble to look for {}: {}", want, s.message());
  if (text.text().find(want) != std::string_view::npos) return "";
  return fmt::format("the tensor-core kernel's disassembly has no {}:\n{}", want, text.text());
}

// Every kernel of the schedule of outs, lowered as a realize would (heuristic opts), rendered and compiled
// for the target; the first failure, naming the kernel, or "".
inline std::string compile_schedule(const std::vector<Tensor>& outs) {
  std::vector<UOpRef> roots;
  for (const Tensor& t : outs) roots.push_back(t.uop());
  for (const engine::ScheduleItemView& si : engine::schedule_uops(roots)) {
    if (si.ast->op() != Ops::SINK) continue;  // copies compile nothing
    codegen::LinearProgram p = codegen::lower_kernel(si.ast, device().caps());
    sdk::Blob src;
    runtime::check(device().renderer().render(p.name, p.view(), src), "render", p.name);
    try {
      (void)device().compile(src.text());
    } catch (const std::exception& e) {
      return fmt::format("kernel {}: {}", p.name, e.what());
    }
  }
  return "";
}

// Rendered, compiled by the device compiler and loaded.
struct Loaded {
  Rendered k;
  std::unique_ptr<sdk::Program> program;
};
inline Loaded compile_and_load(const UOpRef& ast, const std::string& name) {
  Loaded l{render(ast, name), nullptr};
  sdk::Blob bin = device().compile(l.k.source);
  stop_if_compile_only();
  l.program = device().load(l.k.prog.name, bin.bytes());
  return l;
}

// A buffer straight from the plugin's allocator (no LRU cache in between), freed on destruction.
class RawBuffer {
 public:
  explicit RawBuffer(size_t nbytes) : n_(nbytes) {
    runtime::check(alloc().alloc(nbytes, {}, &h_), "alloc", std::to_string(nbytes) + " bytes");
  }
  ~RawBuffer() { alloc().free(h_, n_, {}); }
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  sdk::Handle handle() const { return h_; }
  size_t size() const { return n_; }
  void write(std::span<const std::byte> b) {
    runtime::check(alloc().copyin(h_, b), "copyin", std::to_string(b.size()));
  }
  std::vector<std::byte> read(size_t n) {
    std::vector<std::byte> out(n);
    runtime::check(alloc().copyout(out, h_), "copyout", std::to_string(n));
    return out;
  }
  std::vector<std::byte> read() { return read(n_); }
  static sdk::Allocator& alloc() { return device().plugin().allocator(); }

 private:
  size_t n_;
  sdk::Handle h_ = nullptr;
};

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <typename T>
std::vector<T> values_of(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace tg::conformance
