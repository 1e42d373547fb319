#pragma once
// Turns a failed plugin Status into the matching tg::Error, so code above the boundary only sees
// exceptions: unavailable/runtime_error -> DeviceError, out_of_memory -> OutOfMemoryError, etc.
#include <string_view>

#include "tg/sdk/status.hpp"

namespace tg::runtime {

// Throws "[op] context: message" with the Error subclass for s.code().
[[noreturn]] void throw_status(const sdk::Status& s, std::string_view op, std::string_view context);

inline void check(const sdk::Status& s, std::string_view op, std::string_view context) {
  if (!s.ok()) throw_status(s, op, context);
}

}  // namespace tg::runtime
