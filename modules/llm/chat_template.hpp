#pragma once
// Chat templates: the Jinja2 subset that Hugging Face chat templates (gguf's tokenizer.chat_template) use,
// rendered byte for byte like transformers' apply_chat_template (jinja2 with trim_blocks, lstrip_blocks
// and loop controls, in its immutable sandbox).
#include <memory>
#include <span>
#include <string>

#include "nn/gguf.hpp"

namespace tg::llm {

namespace jinja {
struct Program;
}

struct ChatMessage {
  std::string role, content;
};

class ChatTemplate {
 public:
  // Parses; a syntax error or an unsupported construct is a ValueError "[llm] chat template line N: ...".
  explicit ChatTemplate(std::string source);
  // tokenizer.chat_template, or a ChatML template when the file has none.
  static ChatTemplate from_gguf(const nn::GGUFMetadata& md);

  // The variables are messages (a list of {role, content}), add_generation_prompt, bos_token and
  // eos_token; anything else (tools, documents) is undefined. A template's raise_exception(msg) throws
  // ValueError "[llm] chat template: msg"; runtime errors name the construct and the template line.
  std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt, const std::string& bos,
                    const std::string& eos) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace tg::llm
