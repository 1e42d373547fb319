#include "llm/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "runtime/stats.hpp"

namespace tg::llm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Sampler::Sampler(SamplerOptions opts) : opts_(opts), rng_(opts.seed) {
  if (!(opts.temperature >= 0) || !std::isfinite(opts.temperature))
    throw ValueError("sampler", fmt::format("temperature must be >= 0, got {}", opts.temperature));
  if (!(opts.top_p > 0 && opts.top_p <= 1))
    throw ValueError("sampler", fmt::format("top_p must be in (0, 1], got {}", opts.top_p));
  if (opts.top_k < 0) throw ValueError("sampler", fmt::format("top_k must be >= 0, got {}", opts.top_k));
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) throw ValueError("sampler", "no logits to sample from");
  if (opts_.temperature == 0)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t k = opts_.top_k > 0 ? std::min<size_t>(static_cast<size_t>(opts_.top_k), ids.size()) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), by_logit);
  ids.resize(k);
  if (opts_.top_p < 1) {  // the smallest prefix whose untempered probability reaches top_p
    double top = logits[ids[0]], total = 0;
    std::vector<double> p(ids.size());
    for (size_t i = 0; i < ids.size(); i++) total += p[i] = std::exp(logits[ids[i]] - top);
    double acc = 0;
    size_t keep = ids.size();
    for (size_t i = 0; i < ids.size(); i++)
      if ((acc += p[i] / total) >= opts_.top_p) {
        keep = i + 1;
        break;
      }
    ids.resize(keep);
  }
  double top = logits[ids[0]];
  std::vector<double> w(ids.size());
  for (size_t i = 0; i < ids.size(); i++) w[i] = std::exp((logits[ids[i]] - top) / opts_.temperature);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  return ids[pick(rng_)];
}

Generator::Generator(Transformer& model, int64_t prefill_chunk)
    : model_(model),
      chunk_(prefill_chunk),
      step_(engine::jit([this](std::span<const Tensor> in) -> std::vector<Tensor> {
        Tensor logits = model_.forward(in[0], in[1].as_size(), true);
        return {logits.realize()};
      }, {.warmup = false})) {  // the weights, caches and tables are realized at load: step 1 captures
  if (chunk_ < 1) throw ValueError("llm", fmt::format("the prefill chunk must be >= 1, got {}", chunk_));
}

std::vector<float> Generator::feed(std::span<const int32_t> tokens, bool all_logits) {
  if (position() + static_cast<int64_t>(tokens.size()) > model_.max_context())
    throw ValueError("llm", fmt::format("{} tokens at position {} run past the context of {} tokens",
                                        tokens.size(), position(), model_.max_context()));
  std::vector<float> out;
  for (size_t at = 0; at < tokens.size();) {
    size_t n = std::min(tokens.size() - at, static_cast<size_t>(chunk_));
    std::span<const int32_t> part = tokens.subspan(at, n);
    bool last = at + n == tokens.size();
    if (n == 1 && !all_logits) {
      out = decode(part[0]);
    } else {
      Tensor logits = model_.forward(model_.embed_rows(part), model_.bind_position(position(), static_cast<int64_t>(n)), !all_logits);
      if (all_logits || last) {
        std::vector<float> v = logits.to_vector<float>();
        if (all_logits)
          out.insert(out.end(), v.begin(), v.end());
        else
          out = std::move(v);
      } else {
        logits.realize();
      }
      fed_.insert(fed_.end(), part.begin(), part.end());
    }
    at += n;
  }
  return out;
}

std::vector<float> Generator::decode(int32_t token) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out = step_({model_.embed_rows({&token, 1}),
                                   Tensor::from_size(model_.bind_position(position()), dtypes::int32)});
  std::vector<float> logits = out[0].to_vector<float>();
  fed_.push_back(token);
  if (++decode_steps_ > 1) {  // step 1 captured the graph: every later step is a replay
    stats_.replayed++;
    stats_.replay_seconds += seconds_since(t0);
  }
  if (decode_steps_ == 2 || decode_steps_ == 100) {
    runtime::RuntimeStats s = runtime::runtime_stats();
    int64_t built = static_cast<int64_t>(s.compiled + s.disk_hits), sched = static_cast<int64_t>(s.scheduled);
    (decode_steps_ == 2 ? stats_.built_at_2 : stats_.built_at_100) = built;
    (decode_steps_ == 2 ? stats_.scheduled_at_2 : stats_.scheduled_at_100) = sched;
  }
  return logits;
}

void Generator::rewind(int64_t position) {
  if (position < 0 || position > this->position())
    throw ValueError("llm", fmt::format("cannot rewind to {} (the cache holds {} tokens)", position,
                                        this->position()));
  fed_.resize(static_cast<size_t>(position));
}

std::vector<int32_t> Generator::generate(std::span<const int32_t> prompt, int64_t max_tokens, Sampler& sampler,
                                         const std::function<bool(int32_t)>& on_token,
                                         const std::function<void(std::span<const float>)>& on_logits) {
  if (prompt.empty()) throw ValueError("llm", "the prompt has no tokens");
  // keep the cached prefix, but always feed at least the prompt's last token to get its logits
  size_t same = 0;
  while (same + 1 < prompt.size() && same < fed_.size() && fed_[same] == prompt[same]) same++;
  rewind(static_cast<int64_t>(same));
  stats_.replayed = 0;
  stats_.replay_seconds = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = feed(prompt.subspan(same));
  stats_.prompt_tokens = static_cast<int64_t>(prompt.size() - same);
  stats_.prompt_seconds = seconds_since(t0);
  std::vector<int32_t> out;
  t0 = std::chrono::steady_clock::now();
  while (static_cast<int64_t>(out.size()) < max_tokens) {
    if (on_logits) on_logits(logits);
    int32_t id = sampler.sample(logits);
    out.push_back(id);
    if (!on_token(id) || static_cast<int64_t>(out.size()) == max_tokens || position() >= model_.max_context())
      break;
    logits = decode(id);
  }
  stats_.generated = static_cast<int64_t>(out.size());
  stats_.generate_seconds = seconds_since(t0);
  return out;
}

}  // namespace tg::llm
