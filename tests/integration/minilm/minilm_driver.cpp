// For test_minilm.py: one JSON request a line on stdin, one JSON line out.
//   {"tokenize": TOKENIZER_JSON, "texts": [...], "max_length": N} -> {"ids": [[...], ...]}
//   {"embed": MODEL_DIR, "texts": [...], "batch_size": N}           -> {"embeddings": [[...], ...]}
//   {"load": MODEL_DIR}                                             -> {"ok": true}
// A tg error comes back as {"error": "[op] ..."}.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "nn/bert.hpp"

using nlohmann::json;

namespace {

json run(const json& in) {
  std::vector<std::string> texts = in.value("texts", std::vector<std::string>{});
  if (in.contains("tokenize")) {
    auto tok = tg::nn::WordPieceTokenizer::from_file(in.at("tokenize").get<std::string>());
    json ids = json::array();
    for (const std::string& t : texts)
      ids.push_back(tok.encode(t, true, in.value("max_length", size_t{512})));
    return {{"ids", ids}};
  }
  auto enc = tg::nn::SentenceEncoder::load(in.value("embed", in.value("load", std::string())));
  if (!in.contains("embed")) return {{"ok", true}};
  std::vector<float> e = enc.encode(texts, in.value("batch_size", size_t{32})).to_vector<float>();
  size_t dim = e.size() / texts.size();
  json rows = json::array();
  for (size_t i = 0; i < texts.size(); i++)
    rows.push_back(std::vector<float>(e.begin() + i * dim, e.begin() + (i + 1) * dim));
  return {{"embeddings", rows}, {"max_length", enc.max_length()}};
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    json out;
    try {
      out = run(json::parse(line));
    } catch (const tg::Error& e) {
      out = {{"error", e.what()}};
    } catch (const json::exception& e) {
      out = {{"error", std::string("bad request: ") + e.what()}};
    }
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
  }
  return 0;
}
