// Renders chat templates for test_chat_template.py: one JSON case a line on stdin
// ({"template", "messages", "add_generation_prompt", "bos_token", "eos_token"}), one line out,
// {"text": ...} or {"error": ...}. Each distinct template is parsed once.
#include <iostream>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "llm/chat_template.hpp"

namespace {

using Parsed = std::variant<tg::llm::ChatTemplate, std::string>;  // the template, or why it did not parse

nlohmann::json render_case(const nlohmann::json& in, std::map<std::string, Parsed>& cache) {
  std::string source = in.at("template").get<std::string>();
  auto it = cache.find(source);
  if (it == cache.end()) {
    try {
      it = cache.emplace(source, tg::llm::ChatTemplate(source)).first;
    } catch (const tg::Error& e) {
      it = cache.emplace(source, std::string(e.what())).first;
    }
  }
  if (const auto* why = std::get_if<std::string>(&it->second)) return {{"error", *why}};
  std::vector<tg::llm::ChatMessage> messages;
  for (const auto& m : in.at("messages"))
    messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  try {
    const auto& tmpl = std::get<tg::llm::ChatTemplate>(it->second);
    return {{"text", tmpl.apply(messages, in.value("add_generation_prompt", false), in.value("bos_token", ""),
                                in.value("eos_token", ""))}};
  } catch (const tg::Error& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace

int main() {
  std::map<std::string, Parsed> cache;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json out;
    try {
      out = render_case(nlohmann::json::parse(line), cache);
    } catch (const nlohmann::json::exception& e) {
      out = {{"error", std::string("bad input: ") + e.what()}};
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
