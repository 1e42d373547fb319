#pragma once
// BEAM=n: the kernel opts that run fastest on the device, found by timing candidates from codegen/search.hpp
// on scratch buffers, and kept in the on-disk cache so a later process searches nothing.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/env.hpp"
#include "codegen/opts.hpp"

namespace tg::runtime {

class Device;

// What a launch of the kernel needs besides its AST: the byte size of each buffer by DEFINE_GLOBAL index,
// and the value of each variable by name (the search times the kernel at these values).
struct BeamInputs {
  std::vector<int64_t> buf_nbytes;
  std::vector<std::pair<std::string, int64_t>> var_vals;
};

// The BEAM variable read strictly: a non-negative integer, else ValueError "[BEAM] ...".
int beam_width();

// IGNORE_BEAM_CACHE=1 (tinygrad's name): search again instead of reading a cached result; the new result
// is still stored.
extern env::IntVar IGNORE_BEAM_CACHE;

// The opts BEAM=width picks for ast on dev. A result cached for this kernel (its no-opt source), device,
// compiler and width is used as it is (Stat::beam_cache_hits); otherwise the search runs
// (Stat::beam_searched) and its winner is stored, unless CACHELEVEL=0. The search starts from the heuristic's
// choice (its output is the reference); each round extends every beam entry by every action, compiles the
// candidates in parallel, times each (min of up to 3 launches) on scratch buffers, drops those whose output
// differs from the reference, and keeps the `width` fastest; it stops when a round gains less than 2% or
// after 8 rounds. So the result is never slower than the heuristic's choice as measured.
std::vector<codegen::Opt> beam_search(Device& dev, const UOpRef& ast, int width, const BeamInputs& in);

}  // namespace tg::runtime
