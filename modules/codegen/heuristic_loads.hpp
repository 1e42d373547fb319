#pragma once
// How a reduce kernel's streamed loads (inputs that move along a reduce axis) run along an output axis, for
// the register tile's choice of its vector axis (heuristic_tile.cpp, heuristic_loops.cpp).
#include "codegen/heuristic.hpp"

namespace tg::codegen::heuristic {

// Whether access j moves along some reduce axis.
inline bool streamed(const Kernel& k, size_t j) {
  if (k.accesses()[j].store) return false;
  for (size_t r = 0; r < k.axes().size(); r++)
    if (k.axes()[r].reduce && k.stride(j, r) != 0) return true;
  return false;
}

// Vector lanes along axis i load every streamed input whole: each is either the same for all lanes
// (stride 0, a broadcast) or contiguous (stride 1), and at least one is contiguous.
inline bool lanes_load(const Kernel& k, size_t i) {
  bool some = false;
  for (size_t j = 0; j < k.accesses().size(); j++) {
    if (!streamed(k, j)) continue;
    int64_t s = k.stride(j, i);
    if (s != 0 && s != 1) return false;
    some = some || s == 1;
  }
  return some;
}

}  // namespace tg::codegen::heuristic
