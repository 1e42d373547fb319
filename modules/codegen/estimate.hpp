#pragma once
// Work estimates of a linear program, for DEBUG=2's GFLOPS and GB/s (and later for BEAM): ALU ops
// weighted by the trip counts of the loops and launch indices around them, and the bytes of buffers moved.
#include <cstdint>
#include <span>

#include "codegen/lower.hpp"

namespace tg::codegen {

struct Estimate {
  int64_t ops = 0;  // ALU ops on values, not index math; MULACC counts 2; a vector op counts per lane
  int64_t bytes =
      0;  // bytes of the buffers read plus bytes of the buffers written (read-modify-write counts twice)
};

// vals are the variable values in p.vars order. buf_nbytes, when given, are the sizes of p.bufs in order;
// otherwise the DEFINE_GLOBAL pointer sizes are used (unknown sizes count 0). A loop bound that is not a
// plain expression of constants and variables is taken at its maximum.
Estimate estimate(const LinearProgram& p, std::span<const int64_t> vals = {},
                  std::span<const int64_t> buf_nbytes = {});

}  // namespace tg::codegen
