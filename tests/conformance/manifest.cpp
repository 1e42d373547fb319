// Reading and matching the conformance manifest (see manifest.hpp and conformance.hpp).
#include "manifest.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner.hpp"

namespace tg::conformance {

Manifest parse_manifest(std::string_view text, std::string_view path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[manifest] {} is not valid JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw std::runtime_error(fmt::format("[manifest] {}: expected a JSON object", path));
  Manifest m;
  for (const auto& [key, section] : j.items()) {
    if (key != "unsupported" && key != "xfail")
      throw std::runtime_error(
          fmt::format("[manifest] {}: unknown key '{}' (expected \"unsupported\" and \"xfail\")", path, key));
    if (!section.is_object())
      throw std::runtime_error(fmt::format("[manifest] {}: \"{}\" must map test ids to reasons", path, key));
    auto& out = key == "unsupported" ? m.unsupported : m.xfail;
    for (const auto& [id, why] : section.items()) {
      if (!why.is_string() || why.get<std::string>().empty())
        throw std::runtime_error(fmt::format("[manifest] {}: \"{}\" needs a non-empty reason string", path, id));
      out.emplace(id, why.get<std::string>());
    }
  }
  return m;
}

const Manifest::Entries::value_type* match_entry(const Manifest::Entries& m, std::string_view id) {
  if (auto it = m.find(id); it != m.end()) return &*it;
  const Manifest::Entries::value_type* best = nullptr;
  size_t best_len = 0;
  for (const auto& e : m) {
    // "a/b*" matches ids starting with "a/b"; "a/b" also matches the items "a/b/..." of test case a/b.
    const std::string& k = e.first;
    bool star = !k.empty() && k.back() == '*';
    std::string_view prefix(k.data(), star ? k.size() - 1 : k.size());
    bool hit = star ? id.starts_with(prefix) : id.size() > k.size() && id.starts_with(k) && id[k.size()] == '/';
    if (hit && prefix.size() >= best_len) best = &e, best_len = prefix.size();
  }
  return best;
}

Manifest runner::read_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[manifest] cannot read {}", path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_manifest(text, path);
}

}  // namespace tg::conformance
