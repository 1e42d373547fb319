#include "llm/metadata.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::llm {

namespace {

using T = nn::GGUFValue::Type;

const nn::GGUFValue& find(const nn::GGUFMetadata& md, const std::string& key) {
  auto it = md.find(key);
  if (it == md.end()) throw FormatError("llm", fmt::format("the model has no metadata key '{}'", key));
  return it->second;
}

bool is_int(T t) {
  return t == T::UINT8 || t == T::INT8 || t == T::UINT16 || t == T::INT16 || t == T::UINT32 || t == T::INT32 ||
         t == T::UINT64 || t == T::INT64;
}
bool is_signed(T t) { return t == T::INT8 || t == T::INT16 || t == T::INT32 || t == T::INT64; }

}  // namespace

std::string meta_string(const nn::GGUFMetadata& md, const std::string& key) {
  const nn::GGUFValue& v = find(md, key);
  if (v.type != T::STRING) throw FormatError("llm", fmt::format("key '{}' is not a string", key));
  return v.s;
}

std::string meta_string_or(const nn::GGUFMetadata& md, const std::string& key, std::string_view fallback) {
  return md.count(key) ? meta_string(md, key) : std::string(fallback);
}

int64_t meta_int(const nn::GGUFMetadata& md, const std::string& key, int64_t lo, int64_t hi) {
  const nn::GGUFValue& v = find(md, key);
  if (!is_int(v.type)) throw FormatError("llm", fmt::format("key '{}' is not an integer", key));
  bool too_big = !is_signed(v.type) && v.u > static_cast<uint64_t>(INT64_MAX);
  int64_t x = is_signed(v.type) ? v.i : static_cast<int64_t>(v.u);
  if (too_big || x < lo || x > hi)
    throw FormatError("llm", fmt::format("key '{}' is {}, outside [{}, {}]", key,
                                         is_signed(v.type) ? fmt::format("{}", v.i) : fmt::format("{}", v.u), lo, hi));
  return x;
}

int64_t meta_int_or(const nn::GGUFMetadata& md, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  return md.count(key) ? meta_int(md, key, lo, hi) : fallback;
}

double meta_float(const nn::GGUFMetadata& md, const std::string& key) {
  const nn::GGUFValue& v = find(md, key);
  if (v.type == T::FLOAT32 || v.type == T::FLOAT64) return v.f;
  if (is_int(v.type)) return is_signed(v.type) ? static_cast<double>(v.i) : static_cast<double>(v.u);
  throw FormatError("llm", fmt::format("key '{}' is not a number", key));
}

double meta_float_or(const nn::GGUFMetadata& md, const std::string& key, double fallback) {
  return md.count(key) ? meta_float(md, key) : fallback;
}

}  // namespace tg::llm
