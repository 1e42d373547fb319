// BERT's encoder as tensor ops, with BertModel's tensor names, and the sentence-transformers pipeline on it.
#include "nn/bert.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace tg::nn {

namespace {

using nlohmann::json;
constexpr std::string_view kBertOp = "bert";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError(kBertOp, fmt::format("cannot open '{}'", path.string()));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

json parse(std::string_view text, std::string_view what) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw FormatError(kBertOp, fmt::format("{} is not a JSON object", what));
    return j;
  } catch (const json::exception& e) {
    throw FormatError(kBertOp, fmt::format("{} is not JSON: {}", what, e.what()));
  }
}

int64_t get_int(const json& j, const char* key, int64_t lo, int64_t hi,
                std::optional<int64_t> fallback = {}) {
  if (!j.contains(key)) {
    if (fallback) return *fallback;
    throw FormatError(kBertOp, fmt::format("config.json has no '{}'", key));
  }
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw FormatError(kBertOp, fmt::format("config.json's '{}' is not an integer in [{}, {}]", key, lo, hi));
  return v.get<int64_t>();
}

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(static_cast<int64_t>(s[i]));
  return out + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

BertConfig BertConfig::from_file(const std::filesystem::path& config_json) {
  return from_json(read_text(config_json));
}

BertConfig BertConfig::from_json(std::string_view text) {
  json j = parse(text, "config.json");
  BertConfig c;
  if (j.contains("model_type") && j.at("model_type") != "bert")
    throw NotSupportedError(
        kBertOp, fmt::format("config.json's 'model_type' is {}, not \"bert\"", j.at("model_type").dump()));
  c.vocab_size = get_int(j, "vocab_size", 1, 1 << 24);
  c.hidden_size = get_int(j, "hidden_size", 1, 1 << 16);
  c.layers = get_int(j, "num_hidden_layers", 1, 1024);
  c.heads = get_int(j, "num_attention_heads", 1, 4096);
  c.intermediate_size = get_int(j, "intermediate_size", 1, 1 << 20);
  c.max_position_embeddings = get_int(j, "max_position_embeddings", 1, 1 << 20, 512);
  c.type_vocab_size = get_int(j, "type_vocab_size", 1, 1 << 16, 2);
  if (c.hidden_size % c.heads)
    throw FormatError(
        kBertOp, fmt::format("config.json's 'hidden_size' {} is not a multiple of 'num_attention_heads' {}",
                             c.hidden_size, c.heads));
  if (j.contains("layer_norm_eps")) {
    const json& e = j.at("layer_norm_eps");
    if (!e.is_number() || !(e.get<double>() >= 0 && e.get<double>() < 1))
      throw FormatError(kBertOp, "config.json's 'layer_norm_eps' is not a number in [0, 1)");
    c.layer_norm_eps = e.get<double>();
  }
  if (j.contains("hidden_act")) {
    if (!j.at("hidden_act").is_string())
      throw FormatError(kBertOp, "config.json's 'hidden_act' is not a string");
    c.hidden_act = j.at("hidden_act").get<std::string>();
  }
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh" &&
      c.hidden_act != "relu")
    throw NotSupportedError(kBertOp,
                            fmt::format("config.json's 'hidden_act' '{}' is not supported (gelu, gelu_new, "
                                        "gelu_pytorch_tanh, relu are)",
                                        c.hidden_act));
  if (j.contains("position_embedding_type") && j.at("position_embedding_type") != "absolute")
    throw NotSupportedError(
        kBertOp, fmt::format("config.json's 'position_embedding_type' {} is not supported (\"absolute\" is)",
                             j.at("position_embedding_type").dump()));
  return c;
}

Bert Bert::load(const std::filesystem::path& safetensors, const BertConfig& config, std::string_view device) {
  return Bert(config, safe_load(safetensors, device), device);
}

Bert::Bert(const BertConfig& config, const StateDict& weights, std::string_view device)
    : cfg_(config), device_(device) {
  const int64_t h = cfg_.hidden_size, ff = cfg_.intermediate_size;
  std::string prefix = !weights.count("embeddings.word_embeddings.weight") &&
                               weights.count("bert.embeddings.word_embeddings.weight")
                           ? "bert."
                           : "";
  std::set<std::string> used;
  auto want = [&](const std::string& name, const Shape& shape) {
    auto it = weights.find(prefix + name);
    if (it == weights.end())
      throw FormatError(kBertOp, fmt::format("the weights have no tensor '{}{}'", prefix, name));
    const Tensor& t = it->second;
    if (t.shape() != shape)
      throw FormatError(kBertOp, fmt::format("tensor '{}{}' has shape {}, config.json needs {}", prefix, name,
                                             shape_text(t.shape()), shape_text(shape)));
    if (!t.dtype().is_float())
      throw FormatError(kBertOp, fmt::format("tensor '{}{}' is {}, not a floating-point type", prefix, name,
                                             t.dtype().name()));
    used.insert(prefix + name);
    return t.dtype() == dtypes::float32 ? t : t.cast(dtypes::float32);
  };
  Tensor words = want("embeddings.word_embeddings.weight", {cfg_.vocab_size, h});
  positions_ = want("embeddings.position_embeddings.weight", {cfg_.max_position_embeddings, h});
  types_ = want("embeddings.token_type_embeddings.weight", {cfg_.type_vocab_size, h});
  ln_w_ = want("embeddings.LayerNorm.weight", {h});
  ln_b_ = want("embeddings.LayerNorm.bias", {h});
  for (int64_t i = 0; i < cfg_.layers; i++) {
    std::string p = fmt::format("encoder.layer.{}.", i);
    Layer l;
    l.q_w = want(p + "attention.self.query.weight", {h, h});
    l.q_b = want(p + "attention.self.query.bias", {h});
    l.k_w = want(p + "attention.self.key.weight", {h, h});
    l.k_b = want(p + "attention.self.key.bias", {h});
    l.v_w = want(p + "attention.self.value.weight", {h, h});
    l.v_b = want(p + "attention.self.value.bias", {h});
    l.o_w = want(p + "attention.output.dense.weight", {h, h});
    l.o_b = want(p + "attention.output.dense.bias", {h});
    l.ln1_w = want(p + "attention.output.LayerNorm.weight", {h});
    l.ln1_b = want(p + "attention.output.LayerNorm.bias", {h});
    l.up_w = want(p + "intermediate.dense.weight", {ff, h});
    l.up_b = want(p + "intermediate.dense.bias", {ff});
    l.down_w = want(p + "output.dense.weight", {h, ff});
    l.down_b = want(p + "output.dense.bias", {h});
    l.ln2_w = want(p + "output.LayerNorm.weight", {h});
    l.ln2_b = want(p + "output.LayerNorm.bias", {h});
    layers_.push_back(std::move(l));
  }
  // BertModel's own extras; a "bert."-prefixed file may also carry a task head outside the prefix
  for (const char* n : {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"})
    used.insert(prefix + n);
  for (const auto& [name, t] : weights)
    if (!used.count(name) && name.starts_with(prefix))
      throw FormatError(kBertOp,
                        fmt::format("tensor '{}' is not part of a {}-layer BertModel", name, cfg_.layers));
  words_ = std::make_shared<std::vector<float>>(words.to_vector<float>());
}

Tensor Bert::activation(const Tensor& x) const {
  if (cfg_.hidden_act == "gelu") return x.gelu("none");
  if (cfg_.hidden_act == "relu") return x.relu();
  return x.gelu("tanh");
}

Tensor Bert::forward(const Tensor& input_ids, const Tensor& attention_mask,
                     const Tensor& token_type_ids) const {
  if (input_ids.ndim() != 2 || !input_ids.dtype().is_int())
    throw ShapeError(kBertOp, fmt::format("input_ids must be (batch, length) integers, got {} {}",
                                          shape_text(input_ids.shape()), input_ids.dtype().name()));
  const int64_t b = input_ids.shape(0), n = input_ids.shape(1), h = cfg_.hidden_size;
  const int64_t heads = cfg_.heads, hd = h / heads;
  if (n < 1 || n > cfg_.max_position_embeddings)
    throw ValueError(kBertOp, fmt::format("{} tokens are more than the {} positions of the model", n,
                                          cfg_.max_position_embeddings));
  for (const Tensor* t : {&attention_mask, &token_type_ids})
    if (t->defined() && t->shape() != input_ids.shape())
      throw ShapeError(kBertOp, fmt::format("a mask or token types of shape {} for input_ids {}",
                                            shape_text(t->shape()), shape_text(input_ids.shape())));
  // the rows are gathered on the host: a one-hot product over a 30k-word vocabulary would dwarf the encoder
  std::vector<int32_t> ids = input_ids.cast(dtypes::int32).to_vector<int32_t>();
  auto rows = std::make_shared<std::vector<float>>(ids.size() * static_cast<size_t>(h));
  for (size_t i = 0; i < ids.size(); i++) {
    if (ids[i] < 0 || ids[i] >= cfg_.vocab_size)
      throw IndexError(kBertOp,
                       fmt::format("token id {} is outside the vocabulary of {}", ids[i], cfg_.vocab_size));
    std::copy_n(words_->begin() + static_cast<ptrdiff_t>(ids[i]) * h, h,
                rows->begin() + static_cast<ptrdiff_t>(i) * h);
  }
  Tensor x = Tensor::from_blob(rows->data(), {b, n, h}, dtypes::float32, {.device = device_, .owner = rows});
  x = x + positions_.shrink({{0, n}, {0, h}});
  if (token_type_ids.defined())
    x = x +
        token_type_ids.cast(dtypes::int32).one_hot(cfg_.type_vocab_size).cast(dtypes::float32).matmul(types_);
  else
    x = x + types_.shrink({{0, 1}, {0, h}});
  x = x.layernorm(-1, cfg_.layer_norm_eps) * ln_w_ + ln_b_;
  Tensor keep = attention_mask.defined() ? attention_mask.ne(0).reshape({b, 1, 1, n}) : Tensor();
  auto split_heads = [&](const Tensor& t) { return t.reshape({b, n, heads, hd}).permute({0, 2, 1, 3}); };
  for (const Layer& l : layers_) {
    Tensor q = split_heads(x.linear(l.q_w.transpose(), l.q_b)),
           k = split_heads(x.linear(l.k_w.transpose(), l.k_b));
    Tensor v = split_heads(x.linear(l.v_w.transpose(), l.v_b));
    Tensor ctx = q.scaled_dot_product_attention(k, v, keep).permute({0, 2, 1, 3}).reshape({b, n, h});
    x = (ctx.linear(l.o_w.transpose(), l.o_b) + x).layernorm(-1, cfg_.layer_norm_eps) * l.ln1_w + l.ln1_b;
    Tensor up = activation(x.linear(l.up_w.transpose(), l.up_b));
    x = (up.linear(l.down_w.transpose(), l.down_b) + x).layernorm(-1, cfg_.layer_norm_eps) * l.ln2_w +
        l.ln2_b;
  }
  return x;
}

SentenceEncoder SentenceEncoder::load(const std::filesystem::path& dir, std::string_view device) {
  BertConfig cfg = BertConfig::from_file(dir / "config.json");
  WordPieceTokenizer tok = WordPieceTokenizer::from_file(dir / "tokenizer.json");
  if (tok.vocab_size() != cfg.vocab_size)
    throw FormatError(kBertOp, fmt::format("tokenizer.json has {} tokens, config.json's 'vocab_size' is {}",
                                           tok.vocab_size(), cfg.vocab_size));
  size_t max_length = 512;
  if (std::filesystem::exists(dir / "sentence_bert_config.json")) {
    json s = parse(read_text(dir / "sentence_bert_config.json"), "sentence_bert_config.json");
    if (s.contains("max_seq_length")) {
      if (!s.at("max_seq_length").is_number_unsigned() || s.at("max_seq_length").get<size_t>() < 3)
        throw FormatError(kBertOp,
                          "sentence_bert_config.json's 'max_seq_length' is not a count of at least 3");
      max_length = s.at("max_seq_length").get<size_t>();
    }
  }
  max_length = std::min(max_length, static_cast<size_t>(cfg.max_position_embeddings));
  if (std::filesystem::exists(dir / "1_Pooling" / "config.json")) {
    json p = parse(read_text(dir / "1_Pooling" / "config.json"), "1_Pooling/config.json");
    for (const auto& [key, on] : p.items())
      if (key.starts_with("pooling_mode_") && on.is_boolean() &&
          on.get<bool>() != (key == "pooling_mode_mean_tokens"))
        throw NotSupportedError(
            kBertOp, fmt::format("1_Pooling/config.json asks for {} = {}: only mean pooling is supported",
                                 key, on.dump()));
  }
  return SentenceEncoder(std::move(tok), Bert::load(dir / "model.safetensors", cfg, device), max_length);
}

Tensor SentenceEncoder::mean_pool(const Tensor& hidden, const Tensor& mask) {
  Tensor m = mask.cast(hidden.dtype()).unsqueeze(-1);
  Tensor mean = (hidden * m).sum(1) / m.sum(1).maximum(1e-9);
  return mean.normalize(2.0, 1, 1e-12);
}

Tensor SentenceEncoder::encode(const std::vector<std::string>& texts, size_t batch_size) const {
  if (texts.empty()) throw ValueError(kBertOp, "encode needs at least one text");
  if (batch_size == 0) throw ValueError(kBertOp, "batch_size must be at least 1");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < texts.size(); i += batch_size) {
    std::vector<std::string> chunk(
        texts.begin() + static_cast<ptrdiff_t>(i),
        texts.begin() + static_cast<ptrdiff_t>(std::min(texts.size(), i + batch_size)));
    WordPieceBatch batch = tokenizer_.encode_batch(chunk, max_length_, model_.device());
    Tensor hidden = model_.forward(batch.input_ids, batch.attention_mask, batch.token_type_ids);
    parts.push_back(mean_pool(hidden, batch.attention_mask).realize());
  }
  return parts.size() == 1 ? parts[0] : Tensor::cat(parts, 0);
}

}  // namespace tg::nn
