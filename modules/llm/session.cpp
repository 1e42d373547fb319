#include "llm/session.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::llm {

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, const LoadOptions& opts) {
  Transformer t = Transformer::load(path, opts);
  Tokenizer tok = Tokenizer::from_gguf(t.file().metadata);
  if (tok.vocab_size() != t.config().vocab)
    throw FormatError("llm", fmt::format("the tokenizer has {} tokens but token_embd.weight has {} rows",
                                         tok.vocab_size(), t.config().vocab));
  ChatTemplate tmpl = ChatTemplate::from_gguf(t.file().metadata);
  auto m = std::unique_ptr<Model>(new Model{std::move(t), std::move(tok), std::move(tmpl), nullptr});
  m->generator = std::make_unique<Generator>(m->transformer);
  return m;
}

std::vector<int32_t> chat_tokens(const Model& m, std::span<const ChatMessage> messages) {
  const Tokenizer& tok = m.tokenizer;
  std::string bos = tok.bos() >= 0 ? tok.piece(tok.bos()) : std::string();
  std::string eos = tok.eos() >= 0 ? tok.piece(tok.eos()) : std::string();
  std::string text = m.chat_template.apply(messages, true, bos, eos);
  bool has_bos = !bos.empty() && text.starts_with(bos);
  return tok.encode(text, !has_bos, true);
}

namespace {

// The longest suffix of text that is a proper prefix of a stop string: held back until it is decided.
size_t held_back(std::string_view text, const std::vector<std::string>& stop) {
  size_t hold = 0;
  for (const std::string& s : stop)
    for (size_t n = std::min(s.size() - 1, text.size()); n > hold; n--)
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

Reply complete(Model& m, std::span<const int32_t> prompt, const ReplyOptions& opts,
               const std::function<bool(std::string_view)>& on_text,
               const std::function<void(std::span<const float>)>& on_logits) {
  for (const std::string& s : opts.stop)
    if (s.empty()) throw ValueError("llm", "a stop string is empty");
  if (static_cast<int64_t>(prompt.size()) >= m.transformer.max_context())
    throw ValueError("llm", fmt::format("the prompt has {} tokens, the context only {}", prompt.size(),
                                        m.transformer.max_context()));
  Sampler sampler(opts.sampler);
  Utf8Stream utf8;
  Reply r;
  r.finish_reason = "length";
  size_t sent = 0;
  bool stopped = false;
  auto emit = [&](size_t upto) {
    if (upto > sent && on_text && !on_text(std::string_view(r.text).substr(sent, upto - sent)))
      stopped = true;
    sent = std::max(sent, upto);
  };
  auto on_token = [&](int32_t id) {
    if (m.tokenizer.is_eog(id)) {
      r.finish_reason = "stop";
      return false;
    }
    r.text += utf8.push(m.tokenizer.piece(id, false));  // control tokens are not reply text
    for (const std::string& s : opts.stop)
      if (size_t at = r.text.find(s, sent > s.size() ? sent - s.size() : 0); at != std::string::npos) {
        r.text.resize(at);
        r.finish_reason = "stop";
        emit(at);
        return false;
      }
    emit(r.text.size() - held_back(r.text, opts.stop));
    return !stopped;
  };
  std::vector<int32_t> out = m.generator->generate(prompt, opts.max_tokens, sampler, on_token, on_logits);
  if (r.finish_reason == "length") {
    r.text += utf8.flush();
    emit(r.text.size());
  }
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  r.completion_tokens = static_cast<int64_t>(out.size());
  r.tokens = std::move(out);
  r.stats = m.generator->stats();
  return r;
}

Reply reply(Model& m, std::span<const ChatMessage> messages, const ReplyOptions& opts,
            const std::function<bool(std::string_view)>& on_text) {
  std::vector<int32_t> prompt = chat_tokens(m, messages);
  return complete(m, prompt, opts, on_text);
}

}  // namespace tg::llm
