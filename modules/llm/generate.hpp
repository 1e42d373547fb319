#pragma once
// Text generation on a Transformer: prompt tokens go in chunks (prefill), then one token per step under the
// JIT: the first decode step captures its kernels (the model's state is realized at load, so there is no
// warm-up run), every later one replays them with the new position bound, so no token after the first
// builds a graph, schedules or compiles.
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "engine/jit.hpp"
#include "llm/transformer.hpp"

namespace tg::llm {

struct SamplerOptions {
  double temperature = 0.0;  // 0: greedy (the first largest logit)
  int64_t top_k = 0;         // keep the k most likely (0: all)
  double top_p = 1.0;        // then the smallest set whose probability reaches p
  uint64_t seed = 0;
};

// llama.cpp's order: top-k, top-p (on the untempered distribution), temperature, then a draw.
class Sampler {
 public:
  explicit Sampler(SamplerOptions opts);  // ValueError for a negative temperature or top_p outside (0, 1]
  int32_t sample(std::span<const float> logits);

 private:
  SamplerOptions opts_;
  std::mt19937_64 rng_;
};

struct GenerationStats {
  int64_t prompt_tokens = 0, generated = 0;
  double prompt_seconds = 0, generate_seconds = 0;
  // Process totals after decode steps 2 and 100 (-1 before): kernels built (compiled or read from the disk
  // cache) and graphs scheduled. Equal totals mean steps 3..100 replayed without building anything (step 2
  // is a replay already).
  int64_t built_at_2 = -1, built_at_100 = -1, scheduled_at_2 = -1, scheduled_at_100 = -1;
  // Decode steps after the JIT's capture (step 2 on), and their time: the steady rate.
  int64_t replayed = 0;
  double replay_seconds = 0;
};

class Generator {
 public:
  explicit Generator(Transformer& model, int64_t prefill_chunk = 256);

  // Feeds tokens at position() (advancing it) and returns the logits of the last one, or of every one
  // (rows of vocab) with all_logits.
  std::vector<float> feed(std::span<const int32_t> tokens, bool all_logits = false);
  // Forgets what follows position (the cache rows are rewritten when new tokens come).
  void rewind(int64_t position);
  int64_t position() const { return static_cast<int64_t>(fed_.size()); }
  const std::vector<int32_t>& fed() const { return fed_; }

  // Feeds the prompt, reusing the longest prefix of it the cache already holds, then samples up to
  // max_tokens; on_token(id) returns false to stop (after an end-of-generation token, say). Each sampled
  // token's logits go to on_logits when given.
  std::vector<int32_t> generate(std::span<const int32_t> prompt, int64_t max_tokens, Sampler& sampler,
                                const std::function<bool(int32_t)>& on_token,
                                const std::function<void(std::span<const float>)>& on_logits = {});
  const GenerationStats& stats() const { return stats_; }

 private:
  std::vector<float> decode(int32_t token);

  Transformer& model_;
  int64_t chunk_;
  std::vector<int32_t> fed_;
  engine::Jit step_;
  int64_t decode_steps_ = 0;
  GenerationStats stats_;
};

}  // namespace tg::llm
