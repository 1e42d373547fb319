#pragma once
// A decoder-only transformer read from a gguf file: llama (GQA, RoPE with the file's base, linear and
// llama3 frequency scaling), qwen2 (qkv biases), qwen3 (q/k RMSNorm), gpt2 (learned positions, LayerNorm,
// gelu). Weights stay in their ggml blocks (llm/quant.hpp); the KV cache is float16, as llama.cpp's.
//
//   llm::Transformer model = llm::Transformer::load("model.gguf");
//   Tensor logits = model.forward(model.embed_rows(tokens), model.bind_position(0));   // (T, vocab)
//
// forward() writes the keys and values of positions start..start+T-1 into the cache and attends over
// 0..start+T-1, so calls must come in position order (llm::Generator does; it also runs decode under the JIT).
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "llm/quant.hpp"
#include "nn/gguf.hpp"
#include "tensor/tensor.hpp"

namespace tg::llm {

struct TransformerConfig {
  std::string arch;  // general.architecture
  int64_t vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  int64_t context = 0;  // {arch}.context_length: the longest sequence it was trained for
  double norm_eps = 1e-5;
  double rope_base = 10000.0, rope_scale = 1.0;  // positions are divided by rope_scale (linear scaling)
  bool rope_neox = false;   // rotate halves (qwen) rather than adjacent pairs (llama)
  bool layernorm = false;   // LayerNorm with bias and gelu MLP (gpt2) rather than RMSNorm and SwiGLU
  bool qk_norm = false;     // RMSNorm of each head's q and k before RoPE (qwen3)
  bool learned_positions = false;  // gpt2's position_embd
  // FormatError "[llm] ..." naming the key for a missing or wrong value, ValueError for an architecture
  // that is not one of the above.
  static TransformerConfig from_gguf(const nn::GGUFMetadata& md);
};

// Every tensor the configuration needs, with the right shape and type, read from the tensor infos alone;
// returns the vocabulary size. FormatError "[llm] ..." naming the tensor otherwise.
int64_t validate(const nn::GGUFFile& f, const TransformerConfig& c);
// libFuzzer-ready: a gguf file's header to its chat template rendered and a checked configuration (no tensor
// is made), 0 always.
int fuzz_llm_model(const uint8_t* data, size_t size);

struct LoadOptions {
  std::string device;         // empty: the default device
  int64_t max_context = 4096;  // KV cache rows (at most the model's context; 0: the model's)
};

class Transformer {
 public:
  static Transformer load(const std::filesystem::path& path, const LoadOptions& opts = {});
  Transformer(nn::GGUFFile file, const LoadOptions& opts);

  // The rows of token_embd for these ids as stored (raw blocks: uint8 (T, row bytes); a plain type: (T, dim)),
  // copied on the host: the input of forward(). A gather on the host, as llama.cpp's get_rows: one row per
  // token, never the whole table.
  Tensor embed_rows(std::span<const int32_t> tokens) const;
  // start as a variable bound to it (range [0, max_context - tokens]), so every position of a step of
  // `tokens` tokens shares one graph, one schedule and one JIT capture.
  sint bind_position(int64_t start, int64_t tokens = 1);
  // Logits (T, vocab) float32 of the tokens whose embedding rows are given, at positions start..; with
  // last_only, only the last row's (1, vocab). Realizes each layer's cache write.
  Tensor forward(const Tensor& rows, const sint& start, bool last_only = false);

  const TransformerConfig& config() const { return cfg_; }
  const nn::GGUFFile& file() const { return file_; }
  int64_t max_context() const { return max_context_; }
  int64_t weight_bytes() const;      // every weight as held in memory
  int64_t kv_cache_bytes() const;

 private:
  struct Layer {
    Weight attn_norm, attn_norm_b, q, k, v, qkv, o, q_bias, k_bias, v_bias, qkv_bias, o_bias, q_norm, k_norm;
    Weight ffn_norm, ffn_norm_b, gate, up, down, up_bias, down_bias;
    Tensor cache_k, cache_v;  // (max_context, kv_heads, head_dim) float16
  };
  Tensor norm(const Tensor& x, const Weight& w, const Weight& b) const;
  Tensor attention(Layer& l, const Tensor& x, const sint& start, int64_t t);
  Tensor ffn(const Layer& l, const Tensor& x) const;
  Tensor rope(const Tensor& x, const sint& start, int64_t t) const;  // x (T, heads, head_dim)

  nn::GGUFFile file_;
  TransformerConfig cfg_;
  std::string device_;
  int64_t max_context_ = 0;
  std::map<int64_t, Variable> pos_;  // by tokens per step
  Weight embd_, pos_embd_, out_norm_, out_norm_b_, output_;
  std::vector<Layer> layers_;
  Tensor cos_, sin_, positions_;  // (max_context, rot/2) tables and arange(max_context), realized
};

}  // namespace tg::llm
