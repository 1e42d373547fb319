// The conformance manifest (plugins/*/*.conformance.json, tests/conformance/manifest.hpp): any text is a
// manifest or a std::runtime_error starting "[manifest]". In an accepted one every reason is a non-empty
// string, every key matches itself, and an item under a key is matched by that key or a longer one.
#include <stdexcept>
#include <string>
#include <string_view>

#include "common.hpp"
#include "conformance/manifest.hpp"

namespace {

void check(const tg::conformance::Manifest::Entries& m) {
  for (const auto& [key, why] : m) {
    if (why.empty()) __builtin_trap();
    const auto* self = tg::conformance::match_entry(m, key);
    if (self == nullptr || self->first != key) __builtin_trap();
    std::string item = key + "/item";
    const auto* under = tg::conformance::match_entry(m, item);
    if (under == nullptr) __builtin_trap();
    if (under->first != item) {  // a covering key at least as long as this one's prefix
      std::string_view prefix(under->first), own(key);
      if (prefix.ends_with('*')) prefix.remove_suffix(1);
      if (own.ends_with('*')) own.remove_suffix(1);
      if (!std::string_view(item).starts_with(prefix) || prefix.size() < own.size()) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::conformance::Manifest m =
        tg::conformance::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    check(m.unsupported);
    check(m.xfail);
  } catch (const std::runtime_error& e) {
    if (!std::string_view(e.what()).starts_with("[manifest] fuzz.json")) throw;
  }
  return 0;
}
