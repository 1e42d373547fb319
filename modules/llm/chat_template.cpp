// The public chat template: parsed once (chat_template_lex.cpp, chat_template_parse.cpp), rendered per call
// (chat_template_render.cpp).
#include "llm/chat_template.hpp"

#include "llm/chat_template_ast.hpp"
#include "llm/chat_template_parse.hpp"
#include "llm/metadata.hpp"

namespace tg::llm {

namespace {

constexpr std::string_view kChatML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

ChatTemplate::ChatTemplate(std::string source) : source_(std::move(source)) {
  auto program = std::make_shared<jinja::Program>();
  program->body = jinja::parse(jinja::lex(jinja::normalize_newlines(source_)));
  jinja::check_names(program->body, false);
  jinja::mark_loops(program->body);
  program_ = std::move(program);
}

ChatTemplate ChatTemplate::from_gguf(const nn::GGUFMetadata& md) {
  return ChatTemplate(meta_string_or(md, "tokenizer.chat_template", kChatML));
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                const std::string& bos, const std::string& eos) const {
  return jinja::render(*program_, messages, add_generation_prompt, bos, eos);
}

}  // namespace tg::llm
