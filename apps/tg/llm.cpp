// `tg llm`: generate from a gguf language model (one prompt, or an interactive chat), or serve it with an
// OpenAI-compatible HTTP API (`tg llm serve`).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/tg/commands.hpp"
#include "apps/tg/flags.hpp"
#include "base/error.hpp"
#include "llm/server.hpp"
#include "llm/session.hpp"

namespace tg::cli {

namespace {

constexpr std::string_view kCmd = "llm";

double number_flag(const Flags& f, std::string_view name, double fallback, double lo, double hi) {
  std::string v = f.get(name, fmt::format("{}", fallback));
  try {
    size_t used = 0;
    double x = std::stod(v, &used);
    if (used == v.size() && x >= lo && x <= hi) return x;
  } catch (const std::exception&) {
  }
  throw ValueError(std::string(kCmd),
                   fmt::format("--{} must be a number in [{}, {}], got '{}'", name, lo, hi, v));
}

std::vector<int32_t> token_list(const std::string& s) {
  std::vector<int32_t> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(',', at);
    std::string item = s.substr(at, end == std::string::npos ? std::string::npos : end - at);
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::out_of_range("id");
      out.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      throw ValueError(std::string(kCmd),
                       fmt::format("--tokens takes ids like 1,2,3; '{}' is not one", item));
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

void print_model(const llm::Model& m) {
  const llm::TransformerConfig& c = m.transformer.config();
  std::string types;
  for (const auto& [name, info] : m.transformer.file().infos)
    if (name.ends_with("ffn_down.weight") && types.find(info.type) == std::string::npos)
      types += (types.empty() ? "" : ",") + info.type;
  fmt::print(stderr,
             "model: {}, {} layers, dim {}, {} heads ({} kv), vocab {} ({} {}); weights {:.1f} MB ({}), KV "
             "cache {:.1f} MB (float16, {} tokens)\n",
             c.arch, c.layers, c.dim, c.heads, c.kv_heads, c.vocab, m.tokenizer.model(), m.tokenizer.pre(),
             static_cast<double>(m.transformer.weight_bytes()) / 1e6, types,
             static_cast<double>(m.transformer.kv_cache_bytes()) / 1e6, m.transformer.max_context());
}

void print_stats(const llm::GenerationStats& s) {
  auto rate = [](int64_t n, double sec) { return sec > 0 ? static_cast<double>(n) / sec : 0.0; };
  fmt::print(stderr, "prompt: {} tokens, {:.1f} tokens/s; generated: {} tokens, {:.1f} tokens/s\n",
             s.prompt_tokens, rate(s.prompt_tokens, s.prompt_seconds), s.generated,
             rate(s.generated, s.generate_seconds));
  if (s.built_at_2 >= 0)
    fmt::print(stderr, "kernels built by decode step 2: {}{}; graphs scheduled: {}{}\n", s.built_at_2,
               s.built_at_100 >= 0 ? fmt::format(", by step 100: {}", s.built_at_100) : "", s.scheduled_at_2,
               s.scheduled_at_100 >= 0 ? fmt::format(", by step 100: {}", s.scheduled_at_100) : "");
}

bool print_text(std::string_view t) {
  std::fwrite(t.data(), 1, t.size(), stdout);
  std::fflush(stdout);
  return true;
}

int chat(llm::Model& m, const llm::ReplyOptions& opts, const std::string& system) {
  std::vector<llm::ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  fmt::print(stderr, "chat: type a message; /reset forgets the conversation, /exit or end of input quits\n");
  std::string line;
  while (true) {
    fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      messages.resize(system.empty() ? 0 : 1);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    try {
      llm::Reply r = llm::reply(m, messages, opts, print_text);
      print_text("\n");
      messages.push_back({"assistant", r.text});
      print_stats(r.stats);
    } catch (const ValueError& e) {  // a conversation past the context: say so and let the user go on
      messages.pop_back();
      fmt::print(stderr, "{}\n", e.what());
    }
  }
  return 0;
}

}  // namespace

int llm(Args args) {
  bool serve = !args.empty() && args[0] == "serve";
  if (serve) args = args.subspan(1);
  Flags f = parse(kCmd, args,
                  {"model", "prompt", "tokens", "system", "max-tokens", "temperature", "top-k", "top-p",
                   "seed", "context", "logits", "json", "port", "host", "name"});
  std::string path = f.get("model", "");
  if (path.empty()) throw ValueError(std::string(kCmd), "--model FILE.gguf is required");
  llm::LoadOptions lo;
  lo.max_context = int_flag(kCmd, f, "context", 4096);
  std::unique_ptr<llm::Model> m = llm::Model::load(path, lo);
  const llm::TransformerConfig& cfg = m->transformer.config();
  if (!f.get("context", "").empty() && lo.max_context > cfg.context)
    throw ValueError(std::string(kCmd), fmt::format("--context {} is beyond the model's {}.context_length {}",
                                                    lo.max_context, cfg.arch, cfg.context));
  print_model(*m);
  llm::ReplyOptions opts;
  opts.max_tokens = int_flag(kCmd, f, "max-tokens", serve ? 512 : 256);
  opts.sampler.temperature = number_flag(f, "temperature", 0.0, 0.0, 100.0);
  opts.sampler.top_k = static_cast<int64_t>(number_flag(f, "top-k", 0, 0, 1e9));
  opts.sampler.top_p = number_flag(f, "top-p", 1.0, 1e-9, 1.0);
  opts.sampler.seed = static_cast<uint64_t>(number_flag(f, "seed", 0, 0, 9e15));
  if (serve) {
    llm::ServeOptions so;
    so.host = f.get("host", "127.0.0.1");
    so.port = static_cast<int>(int_flag(kCmd, f, "port", 8000));
    so.model_name = f.get("name", std::filesystem::path(path).stem().string());
    so.defaults = opts;
    return llm::serve(*m, so);
  }
  std::string prompt = f.get("prompt", ""), tokens = f.get("tokens", "");
  if (prompt.empty() && tokens.empty()) return chat(*m, opts, f.get("system", ""));
  std::vector<int32_t> ids = tokens.empty() ? m->tokenizer.encode(prompt, true, true) : token_list(tokens);
  std::ofstream logits;
  if (!f.get("logits", "").empty()) {  // float32 rows of vocab: every prompt position, then each later step
    logits.open(f.get("logits", ""), std::ios::binary);
    if (!logits) throw ValueError(std::string(kCmd), fmt::format("cannot write '{}'", f.get("logits", "")));
    std::vector<float> all = m->generator->feed(ids, true);
    logits.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * 4));
    m->generator->rewind(0);
  }
  bool first = true;
  llm::Reply r = llm::complete(*m, ids, opts, print_text, [&](std::span<const float> row) {
    if (logits.is_open() && !first)
      logits.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * 4));
    first = false;
  });
  print_text("\n");
  print_stats(r.stats);
  if (!f.get("json", "").empty()) {
    nlohmann::json j = {
        {"prompt_tokens", ids},
        {"tokens", r.tokens},
        {"text", r.text},
        {"finish_reason", r.finish_reason},
        {"prompt_tokens_per_s",
         r.stats.prompt_seconds > 0 ? r.stats.prompt_tokens / r.stats.prompt_seconds : 0},
        {"tokens_per_s", r.stats.generate_seconds > 0 ? r.stats.generated / r.stats.generate_seconds : 0},
        {"replayed_tokens_per_s", r.stats.replay_seconds > 0 ? r.stats.replayed / r.stats.replay_seconds : 0},
        {"kernels_built_at_2", r.stats.built_at_2},
        {"kernels_built_at_100", r.stats.built_at_100}};
    std::ofstream(f.get("json", "")) << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore)
                                     << "\n";
  }
  return 0;
}

}  // namespace tg::cli
