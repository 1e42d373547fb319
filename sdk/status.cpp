// Core-owned boundary types: compiled into libtg so allocation and release always happen in the core.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "tg/sdk/status.hpp"

namespace tg::sdk {

std::string_view code_name(Code c) noexcept {
  switch (c) {
    case Code::ok: return "ok";
    case Code::unavailable: return "unavailable";
    case Code::out_of_memory: return "out of memory";
    case Code::compile_error: return "compile error";
    case Code::invalid_argument: return "invalid argument";
    case Code::unsupported: return "unsupported";
    case Code::runtime_error: return "runtime error";
  }
  return "unknown";
}

Blob::Blob(Blob&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}

Blob& Blob::operator=(Blob&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr), size_ = std::exchange(o.size_, 0), cap_ = std::exchange(o.cap_, 0);
  }
  return *this;
}

Blob::~Blob() { std::free(data_); }

std::span<std::byte> Blob::resize(size_t n) {
  if (n > cap_) {
    size_t cap = std::max(n, cap_ * 2);
    auto* p = static_cast<std::byte*>(std::realloc(data_, cap));
    if (p == nullptr) throw std::bad_alloc();
    data_ = p, cap_ = cap;
  }
  if (n > size_) std::memset(data_ + size_, 0, n - size_);
  size_ = n;
  return {data_, size_};
}

void Blob::assign(std::span<const std::byte> bytes) {
  resize(0);
  auto dst = resize(bytes.size());
  if (!bytes.empty()) std::memcpy(dst.data(), bytes.data(), bytes.size());
}

void Blob::append(std::string_view text) {
  size_t old = size_;
  auto dst = resize(old + text.size());
  if (!text.empty()) std::memcpy(dst.data() + old, text.data(), text.size());
}

Status::Status(Code code, std::string_view message) : code_(code) { message_.assign(message); }

}  // namespace tg::sdk
