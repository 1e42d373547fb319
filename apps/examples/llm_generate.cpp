// The SDK's smallest language-model program: load a gguf file, tokenize a prompt, stream a greedy
// continuation. Usage: llm_generate MODEL.gguf PROMPT [TOKENS]
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/error.hpp"
#include "llm/session.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT [TOKENS]\n", argv[0]);
    return 2;
  }
  try {
    std::unique_ptr<tg::llm::Model> model = tg::llm::Model::load(argv[1]);
    std::vector<int32_t> prompt = model->tokenizer.encode(argv[2]);  // BOS as the file asks
    tg::llm::ReplyOptions opts;  // greedy; opts.sampler sets temperature, top_k, top_p, seed
    opts.max_tokens = argc > 3 ? std::atoll(argv[3]) : 32;
    tg::llm::Reply r = tg::llm::complete(*model, prompt, opts, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return true;  // false stops generating
    });
    const tg::llm::GenerationStats& s = r.stats;
    std::fprintf(stderr, "\n%lld prompt tokens, %lld generated (%.1f tokens/s), finish: %s\n",
                 static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.completion_tokens),
                 s.generate_seconds > 0 ? static_cast<double>(s.generated) / s.generate_seconds : 0.0,
                 r.finish_reason.c_str());
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "llm_generate: %s\n", e.what());
    return 1;
  }
  return 0;
}
