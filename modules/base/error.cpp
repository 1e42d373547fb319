#include "base/error.hpp"

#include <fmt/format.h>

namespace tg {

Error::Error(std::string_view op, std::string_view what)
    : std::runtime_error(fmt::format("[{}] {}", op, what)), op_(op), what_(what) {}

}  // namespace tg
