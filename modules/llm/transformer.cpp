// The transformer's forward pass as tensor ops, and its configuration from gguf metadata. Tensor names and
// metadata keys are llama.cpp's (gguf's "blk.N.attn_q.weight", "{arch}.attention.head_count").
#include "llm/transformer.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/error.hpp"
#include "llm/chat_template.hpp"
#include "llm/metadata.hpp"
#include "llm/tokenizer.hpp"

namespace tg::llm {

namespace {

struct ArchInfo {
  std::string_view name;
  bool neox, layernorm, qk_norm, learned_positions;
};
constexpr ArchInfo kArchs[] = {
    {"llama", false, false, false, false},
    {"qwen2", true, false, false, false},
    {"qwen3", true, false, true, false},
    {"gpt2", false, true, false, true},
};

DType plain_dtype(const std::string& type) {
  if (type == "F32") return dtypes::float32;
  if (type == "F16") return dtypes::float16;
  if (type == "BF16") return dtypes::bfloat16;
  throw FormatError("llm", fmt::format("token_embd.weight of type {} cannot be an embedding", type));
}

}  // namespace

TransformerConfig TransformerConfig::from_gguf(const nn::GGUFMetadata& md) {
  TransformerConfig c;
  c.arch = meta_string(md, "general.architecture");
  const ArchInfo* a = nullptr;
  for (const ArchInfo& k : kArchs)
    if (k.name == c.arch) a = &k;
  if (!a)
    throw ValueError(
        "llm", fmt::format("architecture '{}' is not supported (llama, qwen2, qwen3, gpt2 are)", c.arch));
  std::string p = c.arch + ".";
  c.dim = meta_int(md, p + "embedding_length", 1, 1 << 20);
  c.layers = meta_int(md, p + "block_count", 1, 1024);
  c.heads = meta_int(md, p + "attention.head_count", 1, 4096);
  c.kv_heads = meta_int_or(md, p + "attention.head_count_kv", c.heads, 1, c.heads);
  if (c.heads % c.kv_heads)
    throw FormatError("llm", fmt::format("{}attention.head_count {} is not a multiple of head_count_kv {}", p,
                                         c.heads, c.kv_heads));
  if (c.dim % c.heads && !md.count(p + "attention.key_length"))
    throw FormatError("llm", fmt::format("{}embedding_length {} is not a multiple of attention.head_count {}",
                                         p, c.dim, c.heads));
  c.head_dim = meta_int_or(md, p + "attention.key_length", c.dim / c.heads, 2, 1 << 16);
  if (meta_int_or(md, p + "attention.value_length", c.head_dim, 1, 1 << 16) != c.head_dim)
    throw FormatError("llm", fmt::format("{}attention.value_length differs from key_length", p));
  if (c.head_dim % 2)
    throw FormatError("llm", fmt::format("{}attention.key_length {} is odd", p, c.head_dim));
  c.ffn = meta_int(md, p + "feed_forward_length", 1, 1 << 24);
  c.context = meta_int(md, p + "context_length", 1, int64_t{1} << 31);
  c.rope_neox = a->neox;
  c.layernorm = a->layernorm;
  c.qk_norm = a->qk_norm;
  c.learned_positions = a->learned_positions;
  c.norm_eps = c.layernorm ? meta_float(md, p + "attention.layer_norm_epsilon")
                           : meta_float(md, p + "attention.layer_norm_rms_epsilon");
  if (!(c.norm_eps >= 0 && c.norm_eps < 1))
    throw FormatError("llm", fmt::format("layer norm epsilon {} is not in [0, 1)", c.norm_eps));
  if (!c.learned_positions) {
    c.rope_base = meta_float_or(md, p + "rope.freq_base", 10000.0);
    if (!(c.rope_base > 1))
      throw FormatError("llm", fmt::format("{}rope.freq_base {} is not > 1", p, c.rope_base));
    int64_t rot = meta_int_or(md, p + "rope.dimension_count", c.head_dim, 2, c.head_dim);
    if (rot != c.head_dim)
      throw ValueError("llm", fmt::format("{}rope.dimension_count {} < the head size {}: partial rotary "
                                          "embeddings are not supported",
                                          p, rot, c.head_dim));
    std::string scaling = meta_string_or(md, p + "rope.scaling.type", "none");
    if (scaling == "linear") {
      c.rope_scale = meta_float(md, p + "rope.scaling.factor");
      if (!(c.rope_scale > 0))
        throw FormatError("llm", fmt::format("{}rope.scaling.factor {} is not > 0", p, c.rope_scale));
    } else if (scaling != "none") {
      throw ValueError("llm",
                       fmt::format("{}rope.scaling.type '{}' is not supported (none, linear)", p, scaling));
    }
  }
  return c;
}

// Every tensor the configuration needs, with its shape, and no type a tensor cannot have; returns the
// vocabulary size. Reads only the tensor infos, so a hostile file fails here before anything is made.
int64_t validate(const nn::GGUFFile& f, const TransformerConfig& c) {
  auto info = [&](const std::string& name) -> const nn::GGUFTensorInfo& {
    auto it = f.infos.find(name);
    if (it == f.infos.end()) throw FormatError("llm", fmt::format("the model has no tensor '{}'", name));
    return it->second;
  };
  const nn::GGUFTensorInfo& embd = info("token_embd.weight");
  if (embd.shape.size() != 2 || embd.shape[1] != c.dim || embd.shape[0] < 1)
    throw FormatError("llm", fmt::format("tensor 'token_embd.weight' has shape {}, the configuration needs "
                                         "(vocabulary, {})",
                                         shape_str(embd.shape), c.dim));
  if (!embd.quantized()) plain_dtype(embd.type);
  int64_t vocab = static_cast<int64_t>(embd.shape[0]);
  auto need = [&](const std::string& name, const Shape& shape, bool matrix) {
    const nn::GGUFTensorInfo& t = info(name);
    if (t.shape != shape)
      throw FormatError("llm", fmt::format("tensor '{}' has shape {}, the configuration needs {}", name,
                                           shape_str(t.shape), shape_str(shape)));
    if (t.quantized() && !matrix)
      throw FormatError("llm",
                        fmt::format("tensor '{}' is {}; a vector must be F32, F16 or BF16", name, t.type));
    if (!t.quantized() && t.type != "F32" && t.type != "F16" && t.type != "BF16")
      throw FormatError("llm", fmt::format("tensor '{}' is {}, not a float type", name, t.type));
  };
  auto optional = [&](const std::string& name, const Shape& shape, bool matrix) {
    if (f.infos.count(name)) need(name, shape, matrix);
  };
  int64_t d = c.dim, hd = c.head_dim, q_out = c.heads * hd, kv_out = c.kv_heads * hd;
  need("output_norm.weight", {d}, false);
  optional("output.weight", {vocab, d}, true);
  if (c.layernorm) need("output_norm.bias", {d}, false);
  if (c.learned_positions) need("position_embd.weight", {c.context, d}, false);
  if (!c.learned_positions) optional("rope_freqs.weight", {hd / 2}, false);
  for (int64_t i = 0; i < c.layers; i++) {
    std::string b = fmt::format("blk.{}.", i);
    need(b + "attn_norm.weight", {d}, false);
    need(b + "ffn_norm.weight", {d}, false);
    need(b + "attn_output.weight", {d, q_out}, true);
    need(b + "ffn_up.weight", {c.ffn, d}, true);
    need(b + "ffn_down.weight", {d, c.ffn}, true);
    if (c.layernorm) {
      for (const char* n : {"attn_norm.bias", "ffn_norm.bias", "attn_output.bias", "ffn_down.bias"})
        need(b + n, {d}, false);
      need(b + "attn_qkv.weight", {q_out + 2 * kv_out, d}, true);
      need(b + "attn_qkv.bias", {q_out + 2 * kv_out}, false);
      need(b + "ffn_up.bias", {c.ffn}, false);
    } else {
      need(b + "attn_q.weight", {q_out, d}, true);
      need(b + "attn_k.weight", {kv_out, d}, true);
      need(b + "attn_v.weight", {kv_out, d}, true);
      need(b + "ffn_gate.weight", {c.ffn, d}, true);
      optional(b + "attn_q.bias", {q_out}, false);
      optional(b + "attn_k.bias", {kv_out}, false);
      optional(b + "attn_v.bias", {kv_out}, false);
    }
    if (c.qk_norm) {
      need(b + "attn_q_norm.weight", {hd}, false);
      need(b + "attn_k_norm.weight", {hd}, false);
    }
  }
  return vocab;
}

int fuzz_llm_model(const uint8_t* data, size_t size) {
  try {
    nn::GGUFFile f = nn::gguf_parse_metadata({reinterpret_cast<const std::byte*>(data), size});
    try {  // the file's chat template, parsed and rendered under its step and size limits
      const ChatMessage chat[] = {
          {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "?"}};
      (void)ChatTemplate::from_gguf(f.metadata).apply(chat, true, "<s>", "</s>");
    } catch (const Error&) {
    }
    validate(f, TransformerConfig::from_gguf(f.metadata));
    Tokenizer tok = Tokenizer::from_gguf(f.metadata);
    std::vector<int32_t> ids = tok.encode(" Hello <|im_start|>world\n\n  12345 ü\xff'll", true, true);
    (void)tok.decode(ids);
  } catch (const Error&) {
  }
  return 0;
}

Transformer Transformer::load(const std::filesystem::path& path, const LoadOptions& opts) {
  return Transformer(nn::gguf_load(path, opts.device, {.keep_quantized = true}), opts);
}

Transformer::Transformer(nn::GGUFFile file, const LoadOptions& opts)
    : file_(std::move(file)),
      cfg_(TransformerConfig::from_gguf(file_.metadata)),
      device_(opts.device),
      max_context_(opts.max_context <= 0 ? cfg_.context : std::min(opts.max_context, cfg_.context)) {
  const TransformerConfig& c = cfg_;
  cfg_.vocab = validate(file_, cfg_);
  // validate() checked every shape and type.
  auto want = [&](const std::string& name) { return Weight::from_gguf(file_, name); };
  auto maybe = [&](const std::string& name) { return file_.tensors.count(name) ? want(name) : Weight{}; };
  int64_t hd = c.head_dim;
  embd_ = want("token_embd.weight");
  out_norm_ = want("output_norm.weight");
  output_ = file_.tensors.count("output.weight") ? want("output.weight") : embd_;
  if (c.layernorm) out_norm_b_ = want("output_norm.bias");
  if (c.learned_positions) pos_embd_ = want("position_embd.weight");
  for (int64_t i = 0; i < c.layers; i++) {
    std::string b = fmt::format("blk.{}.", i);
    Layer l;
    l.attn_norm = want(b + "attn_norm.weight");
    l.ffn_norm = want(b + "ffn_norm.weight");
    l.o = want(b + "attn_output.weight");
    l.up = want(b + "ffn_up.weight");
    l.down = want(b + "ffn_down.weight");
    if (c.layernorm) {
      l.attn_norm_b = want(b + "attn_norm.bias");
      l.ffn_norm_b = want(b + "ffn_norm.bias");
      l.qkv = want(b + "attn_qkv.weight");
      l.qkv_bias = want(b + "attn_qkv.bias");
      l.o_bias = want(b + "attn_output.bias");
      l.up_bias = want(b + "ffn_up.bias");
      l.down_bias = want(b + "ffn_down.bias");
    } else {
      l.q = want(b + "attn_q.weight");
      l.k = want(b + "attn_k.weight");
      l.v = want(b + "attn_v.weight");
      l.gate = want(b + "ffn_gate.weight");
      l.q_bias = maybe(b + "attn_q.bias");
      l.k_bias = maybe(b + "attn_k.bias");
      l.v_bias = maybe(b + "attn_v.bias");
    }
    if (c.qk_norm) {
      l.q_norm = want(b + "attn_q_norm.weight");
      l.k_norm = want(b + "attn_k_norm.weight");
    }
    std::vector<Tensor> todo;
    for (Weight* w : {&l.q, &l.k, &l.v, &l.qkv, &l.o, &l.gate, &l.up, &l.down})
      if (w->defined())
        for (Tensor& t : w->pack()) todo.push_back(t);
    Tensor::realize_all(todo);
    l.cache_k =
        Tensor::zeros({max_context_, c.kv_heads, hd}, dtypes::float16, device_).contiguous().realize();
    l.cache_v =
        Tensor::zeros({max_context_, c.kv_heads, hd}, dtypes::float16, device_).contiguous().realize();
    layers_.push_back(std::move(l));
  }
  Tensor::realize_all(output_.pack());
  if (!c.learned_positions) {  // RoPE tables: angle(p, i) = p / scale * base^(-2i/hd) / freq_factor[i]
    std::vector<float> freq_factor(static_cast<size_t>(hd / 2), 1.0f);
    if (file_.tensors.count("rope_freqs.weight")) {
      freq_factor = Weight::from_gguf(file_, "rope_freqs.weight").dequantize().to_vector<float>();
      for (float f : freq_factor)
        if (!(f > 0)) throw FormatError("llm", fmt::format("rope_freqs.weight holds {}, not > 0", f));
    }
    std::vector<float> cs(static_cast<size_t>(max_context_ * hd / 2)), sn(cs.size());
    for (int64_t p = 0; p < max_context_; p++)
      for (int64_t i = 0; i < hd / 2; i++) {
        double theta = static_cast<double>(p) / c.rope_scale *
                       std::pow(c.rope_base, -2.0 * static_cast<double>(i) / static_cast<double>(hd)) /
                       freq_factor[static_cast<size_t>(i)];
        cs[static_cast<size_t>(p * hd / 2 + i)] = static_cast<float>(std::cos(theta));
        sn[static_cast<size_t>(p * hd / 2 + i)] = static_cast<float>(std::sin(theta));
      }
    cos_ = Tensor(cs, {max_context_, hd / 2}, {}, device_).realize();
    sin_ = Tensor(sn, {max_context_, hd / 2}, {}, device_).realize();
  }
  positions_ = Tensor::arange(max_context_, dtypes::int32, device_).contiguous().realize();
}

Tensor Transformer::embed_rows(std::span<const int32_t> tokens) const {
  const nn::GGUFTensorInfo& info = file_.infos.at("token_embd.weight");
  size_t row = static_cast<size_t>(info.nbytes / static_cast<uint64_t>(cfg_.vocab));
  auto bytes = std::make_shared<std::vector<std::byte>>(tokens.size() * row);
  for (size_t i = 0; i < tokens.size(); i++) {
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab)
      throw ValueError("llm",
                       fmt::format("token id {} is outside the vocabulary of {}", tokens[i], cfg_.vocab));
    std::memcpy(bytes->data() + i * row,
                file_.bytes.data() + info.offset + static_cast<size_t>(tokens[i]) * row, row);
  }
  DType dt = embd_.quantized() ? dtypes::uint8 : plain_dtype(embd_.type);
  Shape shape{static_cast<int64_t>(tokens.size()), static_cast<int64_t>(row / dt.itemsize())};
  return Tensor::from_blob(bytes->data(), shape, dt, {.device = device_, .owner = bytes});
}

sint Transformer::bind_position(int64_t start, int64_t tokens) {
  if (tokens < 1 || start < 0 || start + tokens > max_context_)
    throw ValueError("llm", fmt::format("{} tokens at position {} run past the context of {} tokens", tokens,
                                        start, max_context_));
  auto it = pos_.find(tokens);
  if (it == pos_.end()) it = pos_.emplace(tokens, Variable("start_pos", 0, max_context_ - tokens)).first;
  return it->second.bind(start);
}

Tensor Transformer::norm(const Tensor& x, const Weight& w, const Weight& b) const {
  if (cfg_.layernorm) return x.layernorm(-1, cfg_.norm_eps) * w.dequantize() + b.dequantize();
  return x * ((x * x).mean(-1, true) + cfg_.norm_eps).rsqrt() * w.dequantize();
}

Tensor Transformer::rope(const Tensor& x, const sint& start, int64_t t) const {
  int64_t h = static_cast<int64_t>(x.shape(1)), half = cfg_.head_dim / 2;
  Tensor c = cos_.shrink({{start, start + t}, {0, half}}).reshape({t, 1, half});
  Tensor s = sin_.shrink({{start, start + t}, {0, half}}).reshape({t, 1, half});
  // neox pairs element i with i + hd/2; llama pairs 2i with 2i + 1
  Tensor xr = cfg_.rope_neox ? x.reshape({t, h, 2, half}) : x.reshape({t, h, half, 2});
  int axis = cfg_.rope_neox ? 2 : 3;
  Tensor x0 = xr.shrink(cfg_.rope_neox ? ShapePairs{{0, t}, {0, h}, {0, 1}, {0, half}}
                                       : ShapePairs{{0, t}, {0, h}, {0, half}, {0, 1}})
                  .squeeze(axis),
         x1 = xr.shrink(cfg_.rope_neox ? ShapePairs{{0, t}, {0, h}, {1, 2}, {0, half}}
                                       : ShapePairs{{0, t}, {0, h}, {0, half}, {1, 2}})
                  .squeeze(axis);
  Tensor o0 = x0 * c - x1 * s, o1 = x0 * s + x1 * c;
  return Tensor::stack({o0, o1}, axis).reshape({t, h, cfg_.head_dim});
}

Tensor Transformer::attention(Layer& l, const Tensor& x, const sint& start, int64_t t) {
  const TransformerConfig& c = cfg_;
  int64_t hd = c.head_dim, kvh = c.kv_heads, g = c.heads / c.kv_heads;
  // stored before RoPE and the norms read them: fused, each output pair would recompute its product
  auto heads_of = [&](const Tensor& y, int64_t n) { return y.contiguous().reshape({t, n, hd}); };
  Tensor q, k, v;
  if (c.layernorm) {
    Tensor qkv = l.qkv.linear(x, l.qkv_bias.data).contiguous();
    q = heads_of(qkv.shrink({{0, t}, {0, c.heads * hd}}), c.heads);
    k = heads_of(qkv.shrink({{0, t}, {c.heads * hd, (c.heads + kvh) * hd}}), kvh);
    v = heads_of(qkv.shrink({{0, t}, {(c.heads + kvh) * hd, (c.heads + 2 * kvh) * hd}}), kvh);
  } else {
    q = heads_of(l.q.linear(x, l.q_bias.data), c.heads);
    k = heads_of(l.k.linear(x, l.k_bias.data), kvh);
    v = heads_of(l.v.linear(x, l.v_bias.data), kvh);
  }
  if (c.qk_norm) {
    q = q * ((q * q).mean(-1, true) + c.norm_eps).rsqrt() * l.q_norm.dequantize();
    k = k * ((k * k).mean(-1, true) + c.norm_eps).rsqrt() * l.k_norm.dequantize();
  }
  if (!c.learned_positions) {
    q = rope(q, start, t);
    k = rope(k, start, t);
  }
  // Write this step's keys and values, then attend over every position so far.
  ShapePairs rows{{start, start + t}, {0, kvh}, {0, hd}};
  Tensor wk = l.cache_k.shrink(rows).assign(k.cast(dtypes::float16));
  Tensor wv = l.cache_v.shrink(rows).assign(v.cast(dtypes::float16));
  Tensor::realize_all({wk, wv, q});
  sint n = start + t;
  Tensor keys = l.cache_k.shrink({{0, n}, {0, kvh}, {0, hd}}).cast(dtypes::float32).permute({1, 0, 2});
  Tensor vals = l.cache_v.shrink({{0, n}, {0, kvh}, {0, hd}}).cast(dtypes::float32).permute({1, 0, 2});
  Tensor qg = q.reshape({t, kvh, g, hd}).permute({1, 2, 0, 3});  // (kv, g, t, hd)
  Tensor scores = (qg.unsqueeze(3) * keys.reshape({kvh, 1, 1, n, hd})).sum(-1) *
                  (1.0 / std::sqrt(static_cast<double>(hd)));  // (kv, g, t, n)
  if (t > 1) {  // causal: position start+i sees positions <= start+i
    Tensor here =
        (Tensor::from_size(start, dtypes::int32, device_) + Tensor::arange(t, dtypes::int32, device_))
            .reshape({t, 1});
    Tensor seen = positions_.shrink({{0, n}}).reshape({1, n}) <= here;
    scores = seen.where(scores, -INFINITY);
  }
  Tensor p = scores.softmax(-1).contiguous();  // else the product recomputes it for every value column
  Tensor out = (p.unsqueeze(-1) * vals.reshape({kvh, 1, 1, n, hd})).sum(-2);  // (kv, g, t, hd)
  return l.o.linear(out.permute({2, 0, 1, 3}).reshape({t, c.heads * hd}), l.o_bias.data);
}

Tensor Transformer::ffn(const Layer& l, const Tensor& x) const {
  if (cfg_.layernorm) return l.down.linear(l.up.linear(x, l.up_bias.data).gelu("tanh"), l.down_bias.data);
  return l.down.linear(l.gate.linear(x).silu() * l.up.linear(x));
}

Tensor Transformer::forward(const Tensor& rows, const sint& start, bool last_only) {
  if (rows.ndim() != 2) throw ValueError("llm", "forward takes the embedding rows of embed_rows()");
  int64_t t = static_cast<int64_t>(rows.shape(0));
  if (start.max() + t > max_context_)
    throw ValueError("llm", fmt::format("{} tokens at a position up to {} run past the context of {}", t,
                                        start.max(), max_context_));
  Tensor x = embd_.quantized() ? dequantize(rows, embd_.type) : rows.cast(dtypes::float32);
  if (cfg_.learned_positions) x = x + pos_embd_.dequantize().shrink({{start, start + t}, {0, cfg_.dim}});
  for (Layer& l : layers_) {
    x = x.contiguous();
    x = x + attention(l, norm(x, l.attn_norm, l.attn_norm_b), start, t);
    x = x + ffn(l, norm(x, l.ffn_norm, l.ffn_norm_b));
  }
  if (last_only) x = x.shrink({{t - 1, t}, {0, cfg_.dim}});
  return output_.linear(norm(x, out_norm_, out_norm_b_));
}

int64_t Transformer::weight_bytes() const {
  int64_t total = embd_.nbytes() + pos_embd_.nbytes() + out_norm_.nbytes() + out_norm_b_.nbytes();
  total += output_.nbytes();  // packed apart from the embedding rows, even when tied
  for (const Layer& l : layers_)
    for (const Weight* w :
         {&l.attn_norm, &l.attn_norm_b, &l.q,      &l.k,        &l.v,      &l.qkv,     &l.o,
          &l.q_bias,    &l.k_bias,      &l.v_bias, &l.qkv_bias, &l.o_bias, &l.q_norm,  &l.k_norm,
          &l.ffn_norm,  &l.ffn_norm_b,  &l.gate,   &l.up,       &l.down,   &l.up_bias, &l.down_bias})
      total += w->nbytes();
  return total;
}

int64_t Transformer::kv_cache_bytes() const {
  return 2 * cfg_.layers * max_context_ * cfg_.kv_heads * cfg_.head_dim * 2;
}

}  // namespace tg::llm
