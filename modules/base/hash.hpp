#pragma once
// Fast non-cryptographic hashing (xxHash) for interning, cache keys and memo tables.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tg {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0) noexcept;
inline uint64_t hash_str(std::string_view s, uint64_t seed = 0) noexcept { return hash_bytes(s.data(), s.size(), seed); }
// Mixes v into h (order matters); cheap enough for per-node hashing.
constexpr uint64_t hash_combine(uint64_t h, uint64_t v) noexcept {
  v *= 0x9E3779B97F4A7C15ull;
  v ^= v >> 32;
  return (h ^ v) * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
}
// Hex digest used for on-disk cache keys.
std::string hash_hex(std::string_view s);

}  // namespace tg
