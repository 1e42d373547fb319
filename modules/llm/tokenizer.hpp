#pragma once
// The tokenizer a gguf file describes (tokenizer.ggml.*): byte-level BPE ("gpt2": the file's merges after a
// pre-tokenizer regex split chosen by tokenizer.ggml.pre) or SentencePiece ("llama": merges by score, byte
// fallback). Special tokens (control, user-defined, unknown) are matched in the text first, longest first.
// decode(encode(text)) gives the text back byte for byte (SentencePiece drops its added leading space).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nn/gguf.hpp"

namespace tg::llm {

// gguf's tokenizer.ggml.token_type values.
enum class TokenType : uint8_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Tokenizer {
 public:
  // FormatError "[llm] ..." naming the key for a missing, mistyped or inconsistent tokenizer entry, or
  // NotSupportedError for a tokenizer model or pre-tokenizer this build does not know.
  static Tokenizer from_gguf(const nn::GGUFMetadata& md);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // add_special: BOS (and EOS) as the file asks (tokenizer.ggml.add_bos_token/add_eos_token). parse_special:
  // control tokens written in the text ("<|im_start|>") become their ids; user-defined ones always do.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = true) const;
  // The bytes of the tokens; control and unknown tokens are skipped with skip_special. Ids out of range throw
  // IndexError.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // One token's bytes (may be part of a UTF-8 character); control tokens give their text unless !special.
  std::string piece(int32_t id, bool special = true) const;

  int32_t bos() const { return bos_; }  // -1 when the file has none
  int32_t eos() const { return eos_; }
  bool is_eog(int32_t id) const;  // ends generation: EOS, EOT, <|im_end|>, <|eot_id|>, ...
  TokenType type(int32_t id) const;
  int64_t vocab_size() const { return static_cast<int64_t>(text_.size()); }
  const std::string& model() const { return model_; }  // "gpt2" or "llama"
  const std::string& pre() const { return pre_; }      // the pre-tokenizer, "default" when none is named
  int32_t find(std::string_view token_text) const;    // -1 when absent

  struct Regexes;  // compiled pre-tokenizer patterns

 private:
  Tokenizer() = default;
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;
  int32_t byte_token(uint8_t b) const;

  std::string model_, pre_;
  std::vector<std::string> text_;
  std::vector<TokenType> type_;
  std::vector<float> score_;
  std::unordered_map<std::string, int32_t> id_;
  std::unordered_map<std::string, int32_t> merge_rank_;  // "left right"
  std::vector<int32_t> specials_;                       // longest text first
  std::vector<bool> eog_, lstrip_, rstrip_;
  std::unique_ptr<Regexes> regexes_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false, ignore_merges_ = false;
};

// Joins token pieces into whole UTF-8 characters for streaming: push returns what is complete so far; an
// invalid sequence passes through as is; flush returns the rest.
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace tg::llm
