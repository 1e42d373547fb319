#pragma once
// Results that cross the plugin boundary. Exceptions never cross it: every interface method is
// noexcept and reports failure through a Status. Status and Blob are core-owned (their members are
// defined in libtg), so a plugin never frees memory the core allocated or the other way round.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <span>
#include <string_view>

namespace tg::sdk {

enum class Code : int32_t {
  ok = 0,
  unavailable = 1,     // driver, library or device missing; message says how to fix it
  out_of_memory = 2,   // the core flushes its caches and retries once
  compile_error = 3,   // message carries the compiler log
  invalid_argument = 4,
  unsupported = 5,     // valid request this device does not implement
  runtime_error = 6,   // anything else that went wrong on the device
};
std::string_view code_name(Code c) noexcept;

// Growable bytes owned by the core (compiled binaries, rendered source, messages).
class Blob {
 public:
  Blob() noexcept = default;
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;
  Blob(Blob&& o) noexcept;
  Blob& operator=(Blob&& o) noexcept;
  ~Blob();

  void assign(std::span<const std::byte> bytes);
  void assign(std::string_view text) { assign(std::as_bytes(std::span(text.data(), text.size()))); }
  void append(std::string_view text);
  std::span<std::byte> resize(size_t n);  // contents past the old size are zero
  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  std::string_view text() const noexcept { return {reinterpret_cast<const char*>(data_), size_}; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
};

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // ok
  Status(Code code, std::string_view message);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const noexcept { return code_ == Code::ok; }
  explicit operator bool() const noexcept { return ok(); }
  Code code() const noexcept { return code_; }
  std::string_view message() const noexcept { return message_.text(); }

 private:
  Code code_ = Code::ok;
  Blob message_;
};

inline Status unavailable(std::string_view why) { return {Code::unavailable, why}; }
inline Status unsupported(std::string_view why) { return {Code::unsupported, why}; }

// Runs f (which returns Status or void) and turns any exception into a Status, so a plugin can
// write ordinary C++ inside its noexcept interface methods: `return tg::sdk::guard([&] { ... });`
template <typename F>
Status guard(F&& f) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return {};
    } else {
      return f();
    }
  } catch (const std::bad_alloc&) {
    return {Code::out_of_memory, "host allocation failed"};
  } catch (const std::exception& e) {
    return {Code::runtime_error, e.what()};
  } catch (...) {
    return {Code::runtime_error, "unknown exception"};
  }
}

}  // namespace tg::sdk
