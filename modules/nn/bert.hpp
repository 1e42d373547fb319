#pragma once
// BERT encoders from Hugging Face files: BertConfig (config.json), Bert (model.safetensors, BertModel's
// tensor names, post-LN layers with GELU feed-forward) and SentenceEncoder (a sentence-transformers folder:
// tokenizer, encoder, mean pooling over the mask, L2 normalization, as all-MiniLM-L6-v2).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/safetensors.hpp"
#include "nn/wordpiece.hpp"

namespace tg::nn {

struct BertConfig {
  int64_t vocab_size = 0, hidden_size = 0, layers = 0, heads = 0, intermediate_size = 0;
  int64_t max_position_embeddings = 512, type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";  // "gelu" (erf), "gelu_new" / "gelu_pytorch_tanh" (tanh), "relu"
  // FormatError "[bert] ..." naming a missing or mistyped key; NotSupportedError for an activation, model
  // type or position embedding this build does not have.
  static BertConfig from_json(std::string_view config_json);
  static BertConfig from_file(const std::filesystem::path& config_json);
};

class Bert {
 public:
  // Every tensor BertModel's names need must be in the file with the configuration's shape (a "bert."
  // prefix is accepted, the pooler and position_ids are ignored, any other tensor is an error); nothing is
  // kept when one is wrong. Floating-point weights are computed in float32.
  static Bert load(const std::filesystem::path& safetensors, const BertConfig& config,
                   std::string_view device = {});
  Bert(const BertConfig& config, const StateDict& weights, std::string_view device = {});

  // input_ids (batch, length) integers; attention_mask 1 for tokens, 0 for padding (undefined: all tokens);
  // token_type_ids undefined means all 0. Returns the last hidden state (batch, length, hidden), lazy.
  Tensor forward(const Tensor& input_ids, const Tensor& attention_mask = Tensor(),
                 const Tensor& token_type_ids = Tensor()) const;
  const BertConfig& config() const { return cfg_; }
  const std::string& device() const { return device_; }

 private:
  struct Layer {
    Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln1_w, ln1_b, up_w, up_b, down_w, down_b, ln2_w, ln2_b;
  };
  Tensor activation(const Tensor& x) const;
  BertConfig cfg_;
  std::string device_;
  std::shared_ptr<std::vector<float>> words_;  // word embeddings on the host: rows are gathered there
  Tensor positions_, types_, ln_w_, ln_b_;
  std::vector<Layer> layers_;
};

class SentenceEncoder {
 public:
  // dir holds config.json, model.safetensors and tokenizer.json; sentence_bert_config.json's max_seq_length
  // (else 512) caps the tokens per text, and 1_Pooling/config.json, when present, must ask for mean pooling.
  static SentenceEncoder load(const std::filesystem::path& dir, std::string_view device = {});
  SentenceEncoder(WordPieceTokenizer tokenizer, Bert model, size_t max_length = 512)
      : tokenizer_(std::move(tokenizer)), model_(std::move(model)), max_length_(max_length) {}

  // (texts, hidden) float32 unit rows, computed in batches of batch_size texts padded to their longest.
  Tensor encode(const std::vector<std::string>& texts, size_t batch_size = 32) const;
  // The mean of hidden (batch, length, hidden) over the positions mask (batch, length) keeps, L2-normalized.
  static Tensor mean_pool(const Tensor& hidden, const Tensor& mask);

  const WordPieceTokenizer& tokenizer() const { return tokenizer_; }
  const Bert& model() const { return model_; }
  size_t max_length() const { return max_length_; }

 private:
  WordPieceTokenizer tokenizer_;
  Bert model_;
  size_t max_length_;
};

}  // namespace tg::nn
