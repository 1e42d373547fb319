#include "runtime/check.hpp"

#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::runtime {

void throw_status(const sdk::Status& s, std::string_view op, std::string_view context) {
  std::string what(s.message().empty() ? sdk::code_name(s.code()) : s.message());
  if (sdk::code_name(s.code()) == "unknown")  // a plugin bug: a code the ABI does not define
    what = fmt::format("status code {}, which the plugin ABI does not define{}{}",
                       static_cast<int32_t>(s.code()), s.message().empty() ? "" : ": ", s.message());
  std::string msg = fmt::format("{}: {}", context, what);
  switch (s.code()) {
    case sdk::Code::out_of_memory:
      throw OutOfMemoryError(op, msg);
    case sdk::Code::compile_error:
      throw CompileError(op, msg);
    case sdk::Code::invalid_argument:
      throw ValueError(op, msg);
    case sdk::Code::unsupported:
      throw NotSupportedError(op, msg);
    case sdk::Code::ok:  // a caller bug; still report it rather than pretend success
    case sdk::Code::unavailable:
    case sdk::Code::runtime_error:
      break;
  }
  throw DeviceError(op, msg);
}

}  // namespace tg::runtime
