#pragma once
// INTERP's "binary": the linear program written out as text, one uop per line, so it survives the
// program caches (memory and disk) like any compiled kernel; load() parses it back and runs it.
//
//   TGINTERP 1 5:E_4_4
//   DEFINE_GLOBAL 12 1 1 16 0 i 0        op, scalar, vector count, address space, ptr size, sources, arg
//   ADD 6 1 0 -1 2 3 4 -                 arg tags: - none, b bool, i int, f float bits, s string,
//                                        v int list, a axis, V variable, o op
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/program.hpp"
#include "uop/uop.hpp"

namespace tg::runtime::interp {

struct Inst {
  Ops op;
  DType dtype;
  std::vector<int32_t> src;  // positions of earlier instructions
  Arg arg;

  int64_t arg_int() const;  // the int argument (DEFINE_GLOBAL index...); FormatError if there is none
};

struct Program {
  std::string name;
  std::vector<Inst> insts;
};

// A kernel's memory as INTERP sees it: host bytes and their length (for bounds checks).
struct Memory {
  std::byte* data = nullptr;
  size_t nbytes = 0;
};

std::string serialize(std::string_view name, std::span<const UOp* const> uops);
// Throws FormatError for text serialize() did not produce, ValueError for a malformed program.
Program parse(std::string_view text);
// Runs the program over the launch grid. Throws tg::Error subclasses naming the kernel and uop on
// out-of-bounds access, bad arguments or undefined ops.
void execute(const Program& p, std::span<const Memory> bufs, std::span<const int64_t> vals,
             const sdk::LaunchDims& dims);

}  // namespace tg::runtime::interp
