#pragma once
// The BERT tokenizer a Hugging Face tokenizer.json describes: added (special) tokens matched in the text
// first, BertNormalizer (clean text, space around CJK ideographs, NFD accent stripping, lowercase),
// BertPreTokenizer (whitespace split, punctuation isolated), WordPiece with "##" continuations, then the
// post-processor's [CLS] ... [SEP] template. Unicode properties, NFD and case mapping come from ICU.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::nn {

// A padded batch: row i holds text i's ids, then pad ids where attention_mask is 0.
struct WordPieceBatch {
  Tensor input_ids, attention_mask, token_type_ids;  // (texts, longest) int32
  std::vector<std::vector<int32_t>> ids;             // each text's ids without padding
};

class WordPieceTokenizer {
 public:
  // FormatError "[wordpiece] ..." naming the key for a missing or mistyped entry (model.vocab, model.type,
  // the unknown token); NotSupportedError for a normalizer, pre-tokenizer or post-processor other than
  // BERT's.
  static WordPieceTokenizer from_json(std::string_view tokenizer_json);
  static WordPieceTokenizer from_file(const std::filesystem::path& tokenizer_json);

  // The word pieces of text after normalization; added tokens are kept whole.
  std::vector<std::string> tokenize(std::string_view text) const;
  // Ids of text; add_special wraps them in the post-processor's template. At most max_length ids in all
  // (0: no limit): the pieces are truncated from the end first, as the Hugging Face tokenizer does.
  // Invalid UTF-8 bytes read as U+FFFD, which clean-text then drops.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, size_t max_length = 512) const;
  // Every text encoded and padded (right) to the longest, as tensors on device.
  WordPieceBatch encode_batch(const std::vector<std::string>& texts, size_t max_length = 512,
                              std::string_view device = {}) const;

  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  const std::string& id_to_token(int32_t id) const;   // IndexError out of range
  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }

 private:
  struct Added {
    std::string content;
    int32_t id;
    bool normalized;
  };
  WordPieceTokenizer() = default;
  void append_ids(std::string_view text, std::vector<int32_t>& out) const;
  void append_normalized(std::string_view segment, std::vector<int32_t>& out) const;
  void wordpiece(const std::u32string& word, std::vector<int32_t>& out) const;
  std::u32string normalize(std::string_view text) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;
  std::vector<Added> added_;              // longest content first
  std::vector<int32_t> prefix_, suffix_;  // the template's special ids around the text
  std::string continuing_ = "##";
  size_t max_chars_ = 100;
  int32_t unk_id_ = -1, pad_id_ = 0;
  bool clean_text_ = true, chinese_chars_ = true, strip_accents_ = true, lowercase_ = true;
};

}  // namespace tg::nn
