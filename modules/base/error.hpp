#pragma once
// User-facing errors. Every message reads "[op] what and why" so the failing call is obvious.
#include <stdexcept>
#include <string>
#include <string_view>

namespace tg {

class Error : public std::runtime_error {
 public:
  Error(std::string_view op, std::string_view what);
  const std::string& op() const noexcept { return op_; }
  const std::string& what_only() const noexcept { return what_; }

 private:
  std::string op_, what_;
};

#define TG_ERROR_KIND(Name)                                                   \
  class Name : public Error {                                                 \
   public:                                                                    \
    Name(std::string_view op, std::string_view what) : Error(op, what) {}     \
  };
TG_ERROR_KIND(ShapeError)        // shapes that do not fit the op
TG_ERROR_KIND(DTypeError)        // a dtype the op or device cannot take
TG_ERROR_KIND(IndexError)        // an index or axis out of range
TG_ERROR_KIND(ValueError)        // any other bad argument
TG_ERROR_KIND(DeviceError)       // unknown, unusable or failing device
TG_ERROR_KIND(CompileError)      // a kernel that did not compile; carries source and log
TG_ERROR_KIND(OutOfMemoryError)  // still out of memory after flushing caches
TG_ERROR_KIND(FormatError)       // malformed file (safetensors, idx, plugin)
TG_ERROR_KIND(NotSupportedError) // valid request the build or device does not support
#undef TG_ERROR_KIND

}  // namespace tg
