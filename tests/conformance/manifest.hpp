#pragma once
// The manifest's reader and matcher (conformance.hpp's Manifest), apart from Boost.Test so that the fuzz
// target `manifest` (tests/fuzz) can run them on any text.
#include <string_view>

#include "conformance.hpp"

namespace tg::conformance {

// text as a manifest; a std::runtime_error "[manifest] <path>: ..." when it is not one (not JSON, not an
// object, an unknown section, a reason that is not a non-empty string).
Manifest parse_manifest(std::string_view text, std::string_view path);
// The entry covering id: the exact key, else the longest covering prefix ("a/b*" for any id starting "a/b",
// "a/b" for the items "a/b/..."); null when none does.
const Manifest::Entries::value_type* match_entry(const Manifest::Entries& m, std::string_view id);

}  // namespace tg::conformance
