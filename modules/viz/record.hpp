#pragma once
// The VIZ recorder's intake. Each stage hands over what it made behind one check of VIZ (an atomic load),
// so with VIZ unset nothing is kept and nothing is timed. At exit the recording becomes a Trace
// (trace.hpp): written to VIZ_OUT when set, and with VIZ=1 served on 127.0.0.1 until interrupted.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/env.hpp"
#include "uop/uop.hpp"

namespace tg::codegen {
struct LinearProgram;
}  // namespace tg::codegen
namespace tg::sched {
struct MemoryPlan;
}  // namespace tg::sched
namespace tg {
namespace sdk {
class Compiler;
class Program;
}  // namespace sdk
}  // namespace tg

namespace tg::viz {

inline bool on() { return env::VIZ.value() > 0; }

// codegen: a kernel lowered from ast; seq_begin is next_trace_seq() taken before lowering, so the rewrites
// in between (on this thread) are the kernel's. The thread's later record_binary belongs to this kernel.
void record_lowered(uint64_t seq_begin, const UOpRef& ast, const codegen::LinearProgram& p);
// runtime: the source and binary of the kernel this thread lowered last; disassembled when the compiler can.
void record_binary(std::string_view device, std::string_view source, std::span<const std::byte> binary,
                   sdk::Compiler& compiler);
// runtime: wraps a loaded program so each launch is recorded with its time.
std::unique_ptr<sdk::Program> record_runs(std::unique_ptr<sdk::Program> program,
                                          std::span<const std::byte> binary);
// schedule: which buffers share storage.
void record_memory_plan(const tg::sched::MemoryPlan& plan);

}  // namespace tg::viz
