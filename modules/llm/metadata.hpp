#pragma once
// Typed reads of gguf metadata: a missing key or a value of the wrong type or range is a FormatError
// "[llm] key 'k': ..." naming the key, never a default silently taken.
#include <cstdint>
#include <string>
#include <string_view>

#include "nn/gguf.hpp"

namespace tg::llm {

std::string meta_string(const nn::GGUFMetadata& md, const std::string& key);
std::string meta_string_or(const nn::GGUFMetadata& md, const std::string& key, std::string_view fallback);
// Any integer type, in [lo, hi].
int64_t meta_int(const nn::GGUFMetadata& md, const std::string& key, int64_t lo, int64_t hi);
int64_t meta_int_or(const nn::GGUFMetadata& md, const std::string& key, int64_t fallback, int64_t lo, int64_t hi);
double meta_float(const nn::GGUFMetadata& md, const std::string& key);  // float32/64 or an integer
double meta_float_or(const nn::GGUFMetadata& md, const std::string& key, double fallback);

}  // namespace tg::llm
