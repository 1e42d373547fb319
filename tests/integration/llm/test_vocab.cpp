// llama.cpp's own tokenizer tests (tests/test-tokenizer-0): each ggml-vocab-NAME.gguf with its .inp texts
// (separated by "\n__ggml_vocab_test__\n") and .out ids (one line each, made by Hugging Face's tokenizers).
// Every text must encode to its ids (no BOS, special tokens not parsed, as llama.cpp runs them) and decode
// back to itself. Args: the folder of the vocab files, then the vocab names to check.
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llm/tokenizer.hpp"
#include "nn/gguf.hpp"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += fmt::format("{} ", id);
  return s;
}

bool round_trips(const tg::llm::Tokenizer& tok, const std::string& text, const std::vector<int32_t>& ids) {
  return tok.decode(ids) == text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VOCAB_DIR NAME...\n", argv[0]);
    return 2;
  }
  int failed_vocabs = 0;
  for (int a = 2; a < argc; a++) {
    std::string base = fmt::format("{}/ggml-vocab-{}.gguf", argv[1], argv[a]);
    std::string inp = slurp(base + ".inp"), out = slurp(base + ".out");
    std::vector<std::string> texts;
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t pos = 0; pos < inp.size();) {
      size_t next = inp.find(sep, pos);
      if (next == std::string::npos) {
        texts.push_back(inp.substr(pos));
        break;
      }
      texts.push_back(inp.substr(pos, next - pos));
      pos = next + sep.size();
    }
    std::vector<std::vector<int32_t>> want;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream ids(line);
      std::vector<int32_t> v;
      for (int32_t id; ids >> id;) v.push_back(id);
      want.push_back(v);
    }
    if (texts.size() != want.size()) {
      std::printf("%-16s FAIL: %zu texts but %zu id lines\n", argv[a], texts.size(), want.size());
      failed_vocabs++;
      continue;
    }
    std::optional<tg::llm::Tokenizer> loaded;
    try {
      loaded.emplace(tg::llm::Tokenizer::from_gguf(tg::nn::gguf_load_metadata(base).metadata));
    } catch (const std::exception& e) {
      std::printf("%-16s FAIL: %s\n", argv[a], e.what());
      failed_vocabs++;
      continue;
    }
    const tg::llm::Tokenizer& tok = *loaded;
    int bad_ids = 0, bad_text = 0;
    for (size_t i = 0; i < texts.size(); i++) {
      std::vector<int32_t> got = tok.encode(texts[i], false, false);
      if (got != want[i]) {
        if (bad_ids++ < 5)
          std::printf("  %s: '%s'\n    want %s\n    got  %s\n", argv[a], texts[i].c_str(), show(want[i]).c_str(),
                      show(got).c_str());
      } else if (!round_trips(tok, texts[i], got)) {
        if (bad_text++ < 5)
          std::printf("  %s: '%s' decodes to '%s'\n", argv[a], texts[i].c_str(), tok.decode(got).c_str());
      }
    }
    std::printf("%-16s %s: %zu texts, %d with other ids, %d not decoding back (%s, pre %s)\n", argv[a],
                bad_ids || bad_text ? "FAIL" : "ok", texts.size(), bad_ids, bad_text, tok.model().c_str(),
                tok.pre().c_str());
    if (bad_ids || bad_text) failed_vocabs++;
  }
  return failed_vocabs ? 1 : 0;
}
