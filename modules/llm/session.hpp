#pragma once
// A chat over one model: messages are rendered with the file's chat template, tokenized, fed after the
// longest prefix the KV cache already holds (so a conversation's next turn only prefills its new tokens),
// and the reply is generated until an end-of-generation token, a stop string or max_tokens.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat_template.hpp"
#include "llm/generate.hpp"
#include "llm/tokenizer.hpp"
#include "llm/transformer.hpp"

namespace tg::llm {

// A model file with its tokenizer and chat template, and the generator that owns its KV cache.
struct Model {
  Transformer transformer;
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  std::unique_ptr<Generator> generator;
  static std::unique_ptr<Model> load(const std::filesystem::path& path, const LoadOptions& opts = {});
};

struct ReplyOptions {
  int64_t max_tokens = 512;
  SamplerOptions sampler;
  std::vector<std::string> stop;  // the reply ends before the first of these
};

struct Reply {
  std::string text;
  std::vector<int32_t> tokens;  // as sampled, an end-of-generation token included
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string finish_reason;  // "stop" (end-of-generation token or a stop string) or "length"
  GenerationStats stats;
};

// The prompt tokens of a rendered chat: BOS is added unless the template wrote it.
std::vector<int32_t> chat_tokens(const Model& m, std::span<const ChatMessage> messages);

// Generates the assistant's reply; on_text receives it as whole UTF-8 characters as they come (return false
// to stop). ValueError "[llm] ..." when the prompt does not fit in the context.
Reply reply(Model& m, std::span<const ChatMessage> messages, const ReplyOptions& opts,
            const std::function<bool(std::string_view)>& on_text = {});

// Plain completion of a token prompt (no template), with the same streaming and stop rules.
Reply complete(Model& m, std::span<const int32_t> prompt, const ReplyOptions& opts,
               const std::function<bool(std::string_view)>& on_text = {},
               const std::function<void(std::span<const float>)>& on_logits = {});

}  // namespace tg::llm
