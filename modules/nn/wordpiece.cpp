// BERT's WordPiece tokenizer from tokenizer.json, step for step as Hugging Face tokenizers runs it:
// added tokens, BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing (or BertProcessing).
#include "nn/wordpiece.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace tg::nn {

namespace {

using nlohmann::json;
constexpr std::string_view kWordPieceOp = "wordpiece";

[[noreturn]] void bad(const std::string& what) { throw FormatError(kWordPieceOp, what); }

const json& need(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(fmt::format("tokenizer.json has no '{}{}'", where, key));
  return j.at(key);
}

std::string need_string(const json& j, const char* key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_string()) bad(fmt::format("tokenizer.json's '{}{}' is not a string", where, key));
  return v.get<std::string>();
}

bool flag_or(const json& j, const char* key, bool fallback, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  if (!j.at(key).is_boolean()) bad(fmt::format("tokenizer.json's '{}{}' is not a boolean", where, key));
  return j.at(key).get<bool>();
}

int32_t id_value(const json& v, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
    bad(fmt::format("tokenizer.json's '{}' is not a token id", what));
  return static_cast<int32_t>(v.get<int64_t>());
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

// ICU turns malformed UTF-8 into U+FFFD, as a Python str would hold it after decode(errors="replace").
std::u32string decode(std::string_view text) {
  icu::UnicodeString u =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  std::u32string out;
  for (int32_t i = 0; i < u.length(); i = u.moveIndex32(i, 1)) out += static_cast<char32_t>(u.char32At(i));
  return out;
}

bool is_whitespace(char32_t c) {
  return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(static_cast<UChar32>(c));
}

// Other (C*): control, format, unassigned, private use, surrogate; tab and newlines count as whitespace.
bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

// The CJK ideograph blocks BERT splits into single characters (not Hangul, Hiragana or Katakana).
bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ASCII symbols such as $ + < = > ^ ` | ~ count as punctuation too, as in BERT's original code.
bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return u_ispunct(static_cast<UChar32>(c));
}

// Full lowercase mapping of one character without context (Rust's char::to_lowercase): 'İ' -> "i\u0307",
// and a capital sigma is always 'σ', never the final 'ς'.
void append_lower(std::u32string& out, char32_t c) {
  if (c < 0x80) {
    out += (c >= 'A' && c <= 'Z') ? c + 32 : c;
    return;
  }
  UChar src[2], dst[8];
  int32_t n = 0;
  U16_APPEND_UNSAFE(src, n, static_cast<UChar32>(c));
  UErrorCode err = U_ZERO_ERROR;
  int32_t m = u_strToLower(dst, 8, src, n, "", &err);
  if (U_FAILURE(err)) {
    out += c;
    return;
  }
  for (int32_t i = 0; i < m;) {
    UChar32 d;
    U16_NEXT(dst, i, m, d);
    out += static_cast<char32_t>(d);
  }
}

std::u32string nfd(const std::u32string& s) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFDInstance(err);
  if (U_FAILURE(err)) throw NotSupportedError(kWordPieceOp, "ICU has no NFD data");
  icu::UnicodeString u = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(s.data()),
                                                       static_cast<int32_t>(s.size()));
  icu::UnicodeString d = n->normalize(u, err);
  if (U_FAILURE(err)) return s;
  std::u32string out;
  for (int32_t i = 0; i < d.length(); i = d.moveIndex32(i, 1)) out += static_cast<char32_t>(d.char32At(i));
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError(kWordPieceOp, fmt::format("cannot open '{}'", path.string()));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

WordPieceTokenizer WordPieceTokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  return from_json(read_file(tokenizer_json));
}

WordPieceTokenizer WordPieceTokenizer::from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad(fmt::format("tokenizer.json is not JSON: {}", e.what()));
  }
  if (!j.is_object()) bad("tokenizer.json is not a JSON object");
  WordPieceTokenizer t;
  const json& model = need(j, "model", "");
  if (std::string type = need_string(model, "type", "model."); type != "WordPiece")
    bad(fmt::format("tokenizer.json's 'model.type' is '{}', not 'WordPiece'", type));
  const json& vocab = need(model, "vocab", "model.");
  if (!vocab.is_object() || vocab.empty())
    bad("tokenizer.json's 'model.vocab' is not an object of token ids");
  t.tokens_.resize(vocab.size());
  for (const auto& [tok, v] : vocab.items()) {
    int32_t id = id_value(v, "model.vocab." + tok);
    if (static_cast<size_t>(id) >= vocab.size() || !t.tokens_[id].empty() || tok.empty())
      bad(fmt::format("tokenizer.json's 'model.vocab' ids are not 0..{} once each (token '{}' has {})",
                      vocab.size() - 1, tok, id));
    t.tokens_[id] = tok;
    t.vocab_.emplace(tok, id);
  }
  std::string unk = need_string(model, "unk_token", "model.");
  if ((t.unk_id_ = t.token_to_id(unk)) < 0)
    bad(fmt::format("tokenizer.json's 'model.unk_token' '{}' is not in the vocabulary", unk));
  if (model.contains("continuing_subword_prefix"))
    t.continuing_ = need_string(model, "continuing_subword_prefix", "model.");
  if (model.contains("max_input_chars_per_word")) {
    const json& m = model.at("max_input_chars_per_word");
    if (!m.is_number_unsigned()) bad("tokenizer.json's 'model.max_input_chars_per_word' is not a count");
    t.max_chars_ = m.get<size_t>();
  }

  if (j.contains("added_tokens") && !j.at("added_tokens").is_null()) {
    for (const json& a : j.at("added_tokens")) {
      std::string content = need_string(a, "content", "added_tokens[].");
      if (content.empty()) continue;
      t.added_.push_back({content, id_value(need(a, "id", "added_tokens[]."), "added_tokens[].id"),
                          flag_or(a, "normalized", false, "added_tokens[].")});
    }
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
  }

  const json& norm = need(j, "normalizer", "");
  if (!norm.is_null()) {
    if (std::string type = need_string(norm, "type", "normalizer."); type != "BertNormalizer")
      throw NotSupportedError(kWordPieceOp,
                              fmt::format("normalizer '{}' is not supported (BertNormalizer is)", type));
    t.clean_text_ = flag_or(norm, "clean_text", true, "normalizer.");
    t.chinese_chars_ = flag_or(norm, "handle_chinese_chars", true, "normalizer.");
    t.lowercase_ = flag_or(norm, "lowercase", true, "normalizer.");
    t.strip_accents_ = flag_or(norm, "strip_accents", t.lowercase_, "normalizer.");  // null: as lowercase
  } else {
    t.clean_text_ = t.chinese_chars_ = t.lowercase_ = t.strip_accents_ = false;
  }
  const json& pre = need(j, "pre_tokenizer", "");
  if (std::string type = need_string(pre, "type", "pre_tokenizer."); type != "BertPreTokenizer")
    throw NotSupportedError(kWordPieceOp,
                            fmt::format("pre-tokenizer '{}' is not supported (BertPreTokenizer is)", type));

  const json& post = j.contains("post_processor") ? j.at("post_processor") : json();
  if (!post.is_null()) {
    std::string type = need_string(post, "type", "post_processor.");
    if (type == "BertProcessing") {  // {"cls": ["[CLS]", 101], "sep": ["[SEP]", 102]}
      for (const char* key : {"cls", "sep"}) {
        const json& p = need(post, key, "post_processor.");
        if (!p.is_array() || p.size() != 2)
          bad(fmt::format("tokenizer.json's 'post_processor.{}' is not [token, id]", key));
        (key[0] == 'c' ? t.prefix_ : t.suffix_)
            .push_back(id_value(p[1], std::string("post_processor.") + key));
      }
    } else if (type == "TemplateProcessing") {
      const json& single = need(post, "single", "post_processor.");
      const json& specials = need(post, "special_tokens", "post_processor.");
      bool seen_a = false;
      for (const json& piece : single) {
        if (piece.contains("Sequence")) {
          seen_a = true;
          continue;
        }
        std::string name = need_string(need(piece, "SpecialToken", "post_processor.single[]."), "id",
                                       "post_processor.single[].SpecialToken.");
        const json& ids = need(need(specials, name.c_str(), "post_processor.special_tokens."), "ids",
                               "post_processor.special_tokens." + name + ".");
        for (const json& id : ids)
          (seen_a ? t.suffix_ : t.prefix_).push_back(id_value(id, "special_tokens." + name));
      }
    } else {
      throw NotSupportedError(kWordPieceOp,
                              fmt::format("post-processor '{}' is not supported (TemplateProcessing, "
                                          "BertProcessing are)",
                                          type));
    }
  }
  for (int32_t id : t.prefix_) t.id_to_token(id);
  for (int32_t id : t.suffix_) t.id_to_token(id);

  t.pad_id_ = std::max(0, t.token_to_id("[PAD]"));
  if (j.contains("padding") && j.at("padding").is_object() && j.at("padding").contains("pad_id"))
    t.pad_id_ = id_value(j.at("padding").at("pad_id"), "padding.pad_id");
  return t;
}

int32_t WordPieceTokenizer::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it != vocab_.end()) return it->second;
  for (const Added& a : added_)
    if (a.content == token) return a.id;
  return -1;
}

const std::string& WordPieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size())
    throw IndexError(kWordPieceOp,
                     fmt::format("token id {} is outside the vocabulary of {}", id, tokens_.size()));
  return tokens_[id];
}

std::u32string WordPieceTokenizer::normalize(std::string_view text) const {
  std::u32string s = decode(text), t;
  for (char32_t c : s) {
    if (clean_text_ && (c == 0 || c == 0xFFFD || is_control(c))) continue;
    if (clean_text_ && is_whitespace(c)) c = ' ';
    if (chinese_chars_ && is_chinese(c)) {
      t += U' ';
      t += c;
      t += U' ';
    } else {
      t += c;
    }
  }
  if (strip_accents_ && std::any_of(t.begin(), t.end(), [](char32_t c) { return c >= 0x80; })) {
    s.clear();
    for (char32_t c : nfd(t))
      if (u_charType(static_cast<UChar32>(c)) != U_NON_SPACING_MARK) s += c;
    t.swap(s);
  }
  if (lowercase_) {
    s.clear();
    for (char32_t c : t) append_lower(s, c);
    t.swap(s);
  }
  return t;
}

// Greedy longest match from the left; a word with a piece the vocabulary lacks is one [UNK].
void WordPieceTokenizer::wordpiece(const std::u32string& word, std::vector<int32_t>& out) const {
  if (word.size() > max_chars_) {
    out.push_back(unk_id_);
    return;
  }
  size_t mark = out.size();
  for (size_t start = 0; start < word.size();) {
    int32_t found = -1;
    size_t end = word.size();
    for (; end > start; end--) {
      std::string piece = (start > 0 ? continuing_ : std::string()) + utf8(word.substr(start, end - start));
      auto it = vocab_.find(piece);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      out.resize(mark);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

void WordPieceTokenizer::append_normalized(std::string_view segment, std::vector<int32_t>& out) const {
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) wordpiece(word, out);
    word.clear();
  };
  for (char32_t c : normalize(segment)) {
    if (u_isUWhiteSpace(static_cast<UChar32>(c))) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      word = c;
      flush();
    } else {
      word += c;
    }
  }
  flush();
}

// Added tokens split the text (leftmost, then longest): those not normalized are matched in the raw text,
// the others in what the normalizer makes of each piece between them.
void WordPieceTokenizer::append_ids(std::string_view text, std::vector<int32_t>& out) const {
  auto split = [&](std::string_view s, bool normalized, auto&& between) {
    size_t from = 0;
    for (size_t i = 0; i < s.size();) {
      const Added* hit = nullptr;
      for (const Added& a : added_)
        if (a.normalized == normalized && s.substr(i).starts_with(a.content)) {
          hit = &a;
          break;
        }
      if (!hit) {
        i++;
        continue;
      }
      between(s.substr(from, i - from));
      out.push_back(hit->id);
      i += hit->content.size();
      from = i;
    }
    between(s.substr(from));
  };
  bool any_normalized =
      std::any_of(added_.begin(), added_.end(), [](const Added& a) { return a.normalized; });
  split(text, false, [&](std::string_view raw) {
    if (raw.empty()) return;
    if (!any_normalized) return append_normalized(raw, out);
    std::string n = utf8(normalize(raw));
    split(n, true, [&](std::string_view piece) {
      if (!piece.empty()) append_normalized(piece, out);
    });
  });
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> ids;
  append_ids(text, ids);
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(id_to_token(id));
  return out;
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, bool add_special,
                                                size_t max_length) const {
  std::vector<int32_t> pieces;
  append_ids(text, pieces);
  size_t specials = add_special ? prefix_.size() + suffix_.size() : 0;
  if (max_length > 0) {
    if (max_length < specials)
      throw ValueError(kWordPieceOp, fmt::format("max_length {} leaves no room for the {} special tokens",
                                                 max_length, specials));
    if (pieces.size() > max_length - specials) pieces.resize(max_length - specials);
  }
  if (!add_special) return pieces;
  std::vector<int32_t> out(prefix_);
  out.insert(out.end(), pieces.begin(), pieces.end());
  out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

WordPieceBatch WordPieceTokenizer::encode_batch(const std::vector<std::string>& texts, size_t max_length,
                                                std::string_view device) const {
  if (texts.empty()) throw ValueError(kWordPieceOp, "encode_batch needs at least one text");
  WordPieceBatch b;
  size_t longest = 1;
  for (const std::string& t : texts) {
    b.ids.push_back(encode(t, true, max_length));
    longest = std::max(longest, b.ids.back().size());
  }
  std::vector<int32_t> ids(texts.size() * longest, pad_id_), mask(ids.size(), 0), types(ids.size(), 0);
  for (size_t i = 0; i < texts.size(); i++) {
    std::copy(b.ids[i].begin(), b.ids[i].end(), ids.begin() + static_cast<ptrdiff_t>(i * longest));
    std::fill_n(mask.begin() + static_cast<ptrdiff_t>(i * longest), b.ids[i].size(), 1);
  }
  Shape shape{static_cast<int64_t>(texts.size()), static_cast<int64_t>(longest)};
  b.input_ids = Tensor(ids, shape, dtypes::int32, device);
  b.attention_mask = Tensor(mask, shape, dtypes::int32, device);
  b.token_type_ids = Tensor(types, shape, dtypes::int32, device);
  return b;
}

}  // namespace tg::nn
