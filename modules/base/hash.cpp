#include "base/hash.hpp"

#include <string>

#include <fmt/format.h>
#include <xxhash.h>

namespace tg {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) noexcept { return XXH3_64bits_withSeed(data, n, seed); }

std::string hash_hex(std::string_view s) {
  XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace tg
