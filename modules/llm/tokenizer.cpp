#include "llm/tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <optional>
#include <cctype>
#include <queue>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "llm/metadata.hpp"

namespace tg::llm {

namespace {

using T = nn::GGUFValue::Type;

// The pre-tokenizer splits of each tokenizer.ggml.pre (Hugging Face's tokenizer.json patterns; several are
// applied in turn, each splitting the pieces of the last into matches and the gaps between them).
struct PreTokenizer {
  std::vector<std::string_view> names;
  std::vector<std::string_view> patterns;
  bool ignore_merges = false;  // a piece that is a whole token is taken as is
  bool add_bos = false;        // the default when the file does not say
};

constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::vector<PreTokenizer>& pre_tokenizers() {
  static const std::vector<PreTokenizer> table = {
      {{"default", "gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "trillion", "roberta-bpe"}, {kGpt2}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "dbrx", "smaug-bpe"}, {kLlama3}, true, true},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2"}, {kQwen2}},
      {{"qwen35"}, {kQwen35}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva"}, {R"(\p{N})", kGpt2}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4e00}-\x{9fa5}\x{0800}-\x{4e00}\x{ac00}-\x{d7ff}]+)", R"(\p{N})"}},
  };
  return table;
}

// GPT-2's map of the 256 bytes to printable code points, as UTF-8.
const std::array<std::string, 256>& byte_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    auto utf8 = [](uint32_t cp) {
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      return s;
    };
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; b++) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[b] = utf8(printable ? b : next++);
    }
    return t;
  }();
  return table;
}

const std::unordered_map<std::string, uint8_t>& char_bytes() {
  static const std::unordered_map<std::string, uint8_t> table = [] {
    std::unordered_map<std::string, uint8_t> t;
    for (int b = 0; b < 256; b++) t[byte_chars()[b]] = static_cast<uint8_t>(b);
    return t;
  }();
  return table;
}

// The byte length a UTF-8 lead byte announces (1 for a stray continuation byte), as llama.cpp counts.
size_t utf8_len(uint8_t lead) {
  static constexpr uint8_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lens[lead >> 4];
}

const nn::GGUFValue* array_of(const nn::GGUFMetadata& md, const std::string& key, std::initializer_list<T> types) {
  auto it = md.find(key);
  if (it == md.end()) return nullptr;
  const nn::GGUFValue& v = it->second;
  if (v.type != T::ARRAY || std::find(types.begin(), types.end(), v.array_type) == types.end())
    throw FormatError("llm", fmt::format("key '{}' is not an array of the expected type", key));
  return &v;
}

bool meta_bool_or(const nn::GGUFMetadata& md, const std::string& key, bool fallback) {
  auto it = md.find(key);
  if (it == md.end()) return fallback;
  if (it->second.type != T::BOOL) throw FormatError("llm", fmt::format("key '{}' is not a bool", key));
  return it->second.u != 0;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

constexpr std::string_view kSpace = "\xe2\x96\x81";  // ▁, SentencePiece's space

}  // namespace

struct Tokenizer::Regexes {
  std::vector<pcre2_code*> codes;
  ~Regexes() {
    for (pcre2_code* c : codes) pcre2_code_free(c);
  }

  // Splits text into pieces: every pattern in turn splits each piece into its matches and the gaps between.
  // Bytes that are not valid UTF-8 match nothing and stay in the gaps.
  std::vector<std::string_view> split(std::string_view text) const {
    std::vector<std::string_view> pieces = {text}, next;
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data(pcre2_match_data_create(1, nullptr),
                                                                        pcre2_match_data_free);
    pcre2_match_data* match = data.get();
    if (!match) throw OutOfMemoryError("tokenize", "no memory for the regex match");
    for (pcre2_code* code : codes) {
      next.clear();
      for (std::string_view p : pieces) {
        size_t at = 0, gap = 0;
        while (at < p.size()) {
          int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), at, 0, match, nullptr);
          if (rc == PCRE2_ERROR_NOMATCH) break;
          if (rc < 0) throw ValueError("tokenize", fmt::format("the pre-tokenizer's regex failed ({})", rc));
          const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
          if (ov[1] == ov[0]) {  // an empty match: step over one character
            at = ov[0] + 1;
            while (at < p.size() && (static_cast<uint8_t>(p[at]) & 0xC0) == 0x80) at++;
            continue;
          }
          if (ov[0] > gap) next.push_back(p.substr(gap, ov[0] - gap));
          next.push_back(p.substr(ov[0], ov[1] - ov[0]));
          gap = at = ov[1];
        }
        if (gap < p.size()) next.push_back(p.substr(gap));
      }
      std::swap(pieces, next);
    }
    return pieces;
  }
};

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::from_gguf(const nn::GGUFMetadata& md) {
  Tokenizer t;
  t.model_ = meta_string(md, "tokenizer.ggml.model");
  if (t.model_ != "gpt2" && t.model_ != "llama")
    throw NotSupportedError("llm", fmt::format("tokenizer.ggml.model '{}' is not supported (gpt2 BPE and llama "
                                               "SentencePiece are)", t.model_));
  const nn::GGUFValue* tokens = array_of(md, "tokenizer.ggml.tokens", {T::STRING});
  if (!tokens || tokens->array.empty()) throw FormatError("llm", "key 'tokenizer.ggml.tokens' is missing or empty");
  size_t n = tokens->array.size();
  if (n > (1u << 30)) throw FormatError("llm", fmt::format("key 'tokenizer.ggml.tokens' has {} tokens", n));
  const nn::GGUFValue* types = array_of(md, "tokenizer.ggml.token_type", {T::INT32, T::UINT32, T::INT8, T::UINT8});
  const nn::GGUFValue* scores = array_of(md, "tokenizer.ggml.scores", {T::FLOAT32, T::FLOAT64, T::INT32});
  for (auto [v, key] : {std::pair{types, "tokenizer.ggml.token_type"}, std::pair{scores, "tokenizer.ggml.scores"}})
    if (v && v->array.size() < n)
      throw FormatError("llm", fmt::format("key '{}' has {} entries for {} tokens", key, v->array.size(), n));

  t.text_.resize(n);
  t.type_.resize(n, TokenType::normal);
  t.score_.resize(n, 0.f);
  for (size_t i = 0; i < n; i++) {
    std::string word = tokens->array[i].s;
    if (word.empty()) word = fmt::format("[EMPTY_{}]", i);
    t.id_[word] = static_cast<int32_t>(i);
    t.text_[i] = std::move(word);
    if (types) {
      const nn::GGUFValue& v = types->array[i];
      int64_t ty = v.type == T::INT32 || v.type == T::INT8 ? v.i : static_cast<int64_t>(v.u);
      t.type_[i] = ty >= 1 && ty <= 6 ? static_cast<TokenType>(ty) : TokenType::normal;
    }
    if (scores) {
      const nn::GGUFValue& v = scores->array[i];
      t.score_[i] = static_cast<float>(v.type == T::INT32 ? static_cast<double>(v.i) : v.f);
    }
  }

  bool spm = t.model_ == "llama";
  if (spm) {
    t.pre_ = "default";
    t.bos_ = 1, t.eos_ = 2, t.unk_ = 0;
    t.add_bos_ = true;
    t.add_space_prefix_ = true;
  } else {
    t.pre_ = meta_string_or(md, "tokenizer.ggml.pre", "default");
    const PreTokenizer* pre = nullptr;
    for (const PreTokenizer& p : pre_tokenizers())
      if (std::find(p.names.begin(), p.names.end(), t.pre_) != p.names.end()) pre = &p;
    if (!pre) throw NotSupportedError("llm", fmt::format("tokenizer.ggml.pre '{}' is not supported", t.pre_));
    t.ignore_merges_ = pre->ignore_merges;
    t.add_bos_ = pre->add_bos;
    t.regexes_ = std::make_unique<Regexes>();
    for (std::string_view pattern : pre->patterns) {
      int err = 0;
      PCRE2_SIZE at = 0;
      pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, nullptr);
      if (!code) throw NotSupportedError("llm", fmt::format("pre-tokenizer regex {} does not compile", pattern));
      pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: matching works without it
      t.regexes_->codes.push_back(code);
    }
    const nn::GGUFValue* merges = array_of(md, "tokenizer.ggml.merges", {T::STRING});
    if (!merges) throw FormatError("llm", "key 'tokenizer.ggml.merges' is missing (a gpt2 tokenizer needs it)");
    for (size_t i = 0; i < merges->array.size(); i++) {
      const std::string& m = merges->array[i].s;
      size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;
      t.merge_rank_.emplace(m, static_cast<int32_t>(i));
    }
  }

  auto special = [&](const char* key, int32_t& id) {
    if (!md.count(key)) return;
    int64_t v = meta_int(md, key, -1, INT32_MAX);
    if (v >= static_cast<int64_t>(n))
      throw FormatError("llm", fmt::format("key '{}' is {}, beyond the {} tokens", key, v, n));
    id = static_cast<int32_t>(v);
  };
  special("tokenizer.ggml.bos_token_id", t.bos_);
  special("tokenizer.ggml.eos_token_id", t.eos_);
  special("tokenizer.ggml.unknown_token_id", t.unk_);
  for (int32_t* id : {&t.bos_, &t.eos_, &t.unk_})
    if (*id >= static_cast<int32_t>(n)) *id = -1;
  t.add_bos_ = meta_bool_or(md, "tokenizer.ggml.add_bos_token", t.add_bos_);
  t.add_eos_ = meta_bool_or(md, "tokenizer.ggml.add_eos_token", false);
  t.add_space_prefix_ = meta_bool_or(md, "tokenizer.ggml.add_space_prefix", t.add_space_prefix_);
  if (t.add_bos_ && t.bos_ < 0) throw FormatError("llm", "the tokenizer adds BOS but has no tokenizer.ggml.bos_token_id");
  if (t.add_eos_ && t.eos_ < 0) throw FormatError("llm", "the tokenizer adds EOS but has no tokenizer.ggml.eos_token_id");

  // End of generation: EOS, the file's EOT/EOM, and the usual end-of-turn texts.
  t.eog_.assign(n, false);
  int32_t eot = -1, eom = -1;
  special("tokenizer.ggml.eot_token_id", eot);
  special("tokenizer.ggml.eom_token_id", eom);
  for (int32_t id : {t.eos_, eot, eom})
    if (id >= 0) t.eog_[id] = true;
  for (std::string_view s : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
                             "<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"})
    if (auto it = t.id_.find(std::string(s)); it != t.id_.end()) {
      t.eog_[it->second] = true;
      t.type_[it->second] = TokenType::control;
    }

  for (size_t i = 0; i < n; i++)
    if (t.type_[i] == TokenType::control || t.type_[i] == TokenType::user_defined || t.type_[i] == TokenType::unknown)
      t.specials_.push_back(static_cast<int32_t>(i));
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [&](int32_t a, int32_t b) { return t.text_[a].size() > t.text_[b].size(); });
  t.lstrip_.assign(n, false);
  t.rstrip_.assign(n, false);
  std::string name = meta_string_or(md, "general.name", "");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    // Phi-3's special tokens eat the whitespace after them, except these three.
    for (int32_t id : t.specials_) t.rstrip_[id] = true;
    for (std::string_view s : {"</s>"})
      if (int32_t id = t.find(s); id >= 0) t.rstrip_[id] = true;
    for (std::string_view s : {"<unk>", "<s>", "<|endoftext|>"})
      if (int32_t id = t.find(s); id >= 0) t.rstrip_[id] = false;
  }
  return t;
}

int32_t Tokenizer::find(std::string_view token_text) const {
  auto it = id_.find(std::string(token_text));
  return it == id_.end() ? -1 : it->second;
}

TokenType Tokenizer::type(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw IndexError("tokenizer", fmt::format("token id {} is outside [0, {})", id, vocab_size()));
  return type_[id];
}

bool Tokenizer::is_eog(int32_t id) const { return id >= 0 && id < vocab_size() && eog_[id]; }

int32_t Tokenizer::byte_token(uint8_t b) const {
  int32_t id = -1;
  if (model_ == "llama") {
    id = find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = find(std::string(1, static_cast<char>(b)));
  } else {
    id = find(byte_chars()[b]);
  }
  if (id < 0) id = unk_;
  if (id < 0) throw ValueError("tokenize", fmt::format("byte 0x{:02X} has no token and there is no unknown token", b));
  return id;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  // Split the text at special tokens, longest first: fragments of raw text and token ids.
  struct Fragment {
    int32_t id;  // -1: raw text
    std::string_view text;
  };
  std::vector<Fragment> frags, next;
  if (!text.empty()) frags.push_back({-1, text});
  for (int32_t sid : specials_) {
    if (!parse_special && (type_[sid] == TokenType::control || type_[sid] == TokenType::unknown)) continue;
    const std::string& st = text_[sid];
    next.clear();
    for (Fragment f : frags) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t at; (at = rest.find(st)) != std::string_view::npos;) {
        std::string_view left = rest.substr(0, at);
        if (lstrip_[sid])
          while (!left.empty() && std::isspace(static_cast<unsigned char>(left.back()))) left.remove_suffix(1);
        if (!left.empty()) next.push_back({-1, left});
        next.push_back({sid, st});
        rest = rest.substr(at + st.size());
        if (rstrip_[sid])
          while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    std::swap(frags, next);
  }

  std::vector<int32_t> out;
  if (add_special && add_bos_) out.push_back(bos_);
  bool prev_special = true;  // SentencePiece adds its space before text that starts the prompt or follows a token
  for (const Fragment& f : frags) {
    if (f.id >= 0) {
      out.push_back(f.id);
      prev_special = true;
      continue;
    }
    if (model_ == "llama") {
      std::string s = add_space_prefix_ && prev_special ? " " : "";
      s += f.text;
      replace_all(s, " ", kSpace);
      encode_spm(s, out);
    } else {
      encode_bpe(f.text, out);
    }
    prev_special = false;
  }
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

namespace {

// Starts from text's UTF-8 characters (a stray byte is one) and joins the adjacent pair of pieces that
// priority(left, right) ranks highest (leftmost on ties) until it ranks none (nullopt); returns the pieces.
template <class Priority>
std::vector<std::string_view> merge_pairs(std::string_view text, Priority priority) {
  struct Symbol {
    int prev, next;
    size_t at, n;  // n = 0: joined into its left neighbour
  };
  struct Pair {
    int left, right;
    double rank;
    size_t size;  // a pair is stale once either side has changed: their sizes no longer add up to this
    bool operator<(const Pair& o) const { return rank < o.rank || (rank == o.rank && left > o.left); }
  };
  std::vector<Symbol> sym;
  for (size_t at = 0; at < text.size();) {
    size_t n = std::min(utf8_len(static_cast<uint8_t>(text[at])), text.size() - at);
    int i = static_cast<int>(sym.size());
    sym.push_back({i - 1, at + n == text.size() ? -1 : i + 1, at, n});
    at += n;
  }
  std::priority_queue<Pair> queue;
  auto consider = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    if (std::optional<double> rank = priority(text.substr(sym[l].at, sym[l].n), text.substr(sym[r].at, sym[r].n)))
      queue.push({l, r, *rank, sym[l].n + sym[r].n});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); i++) consider(i - 1, i);
  while (!queue.empty()) {
    Pair p = queue.top();
    queue.pop();
    Symbol &l = sym[p.left], &r = sym[p.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != p.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = p.left;
    consider(l.prev, p.left);
    consider(p.left, l.next);
  }
  std::vector<std::string_view> pieces;
  for (const Symbol& s : sym)
    if (s.n) pieces.push_back(text.substr(s.at, s.n));
  return pieces;
}

}  // namespace

// SentencePiece: the pair whose joined text is the best-scored token is merged first; a character that is
// not a token goes out as its bytes.
void Tokenizer::encode_spm(std::string_view text, std::vector<int32_t>& out) const {
  auto score = [&](std::string_view l, std::string_view r) -> std::optional<double> {
    auto it = id_.find(std::string(l.data(), l.size() + r.size()));  // neighbours: one run of text
    if (it == id_.end()) return std::nullopt;
    return score_[it->second];
  };
  for (std::string_view piece : merge_pairs(text, score)) {
    if (auto it = id_.find(std::string(piece)); it != id_.end()) out.push_back(it->second);
    else
      for (char c : piece) out.push_back(byte_token(static_cast<uint8_t>(c)));
  }
}

// Byte-level BPE: each regex piece's bytes become GPT-2's printable characters, then the pair with the
// lowest merge rank is joined first.
void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::string word, key;
  auto rank = [&](std::string_view l, std::string_view r) -> std::optional<double> {
    key.assign(l);
    key += ' ';
    key += r;
    auto it = merge_rank_.find(key);
    if (it == merge_rank_.end()) return std::nullopt;
    return -static_cast<double>(it->second);
  };
  for (std::string_view piece : regexes_->split(text)) {
    word.clear();
    for (char c : piece) word += byte_chars()[static_cast<uint8_t>(c)];
    if (ignore_merges_)
      if (auto it = id_.find(word); it != id_.end()) {
        out.push_back(it->second);
        continue;
      }
    for (std::string_view t : merge_pairs(word, rank)) {
      if (auto it = id_.find(std::string(t)); it != id_.end()) {
        out.push_back(it->second);
        continue;
      }
      // Not a token: each of its bytes (every character of word stands for one).
      for (size_t at = 0; at < t.size();) {
        size_t len = std::min(utf8_len(static_cast<uint8_t>(t[at])), t.size() - at);
        out.push_back(byte_token(char_bytes().at(std::string(t.substr(at, len)))));
        at += len;
      }
    }
  }
}

std::string Tokenizer::piece(int32_t id, bool special) const {
  TokenType ty = type(id);
  const std::string& t = text_[id];
  switch (ty) {
    case TokenType::control:
    case TokenType::unknown:
      return special ? t : std::string();
    case TokenType::user_defined:
      return t;
    case TokenType::byte:
      if (model_ == "llama") {
        if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>')
          return std::string(1, static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
        return t;
      }
      [[fallthrough]];
    default:
      break;
  }
  if (model_ == "llama") {
    std::string s = t;
    replace_all(s, kSpace, " ");
    return s;
  }
  // Byte-level: each printable character back to its byte; anything else as it is.
  std::string s;
  for (size_t at = 0; at < t.size();) {
    size_t len = std::min(utf8_len(static_cast<uint8_t>(t[at])), t.size() - at);
    std::string ch = t.substr(at, len);
    auto b = char_bytes().find(ch);
    if (b != char_bytes().end()) s += static_cast<char>(b->second);
    else s += ch;
    at += len;
  }
  return s;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string s;
  bool first_text = true;
  for (int32_t id : ids) {
    std::string p = piece(id, !skip_special);
    TokenType ty = type_[id];
    bool text_token = ty == TokenType::normal || ty == TokenType::byte || ty == TokenType::unused;
    // SentencePiece's space added at the start of the prompt and after special tokens is not the text's.
    if (model_ == "llama" && add_space_prefix_ && first_text && text_token && p.starts_with(' ')) p.erase(0, 1);
    first_text = !text_token;
    s += p;
  }
  return s;
}

std::string Utf8Stream::push(std::string_view bytes) {
  pending_ += bytes;
  // Hold back a trailing sequence its lead byte says is not complete yet.
  size_t cut = pending_.size();
  for (size_t back = 1; back <= std::min<size_t>(3, pending_.size()); back++) {
    uint8_t c = static_cast<uint8_t>(pending_[pending_.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) cut = pending_.size() - back;
    break;
  }
  std::string out = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, std::string()); }

}  // namespace tg::llm
