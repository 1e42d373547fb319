// Lexing of chat templates, following jinja2's lexer (trim_blocks and lstrip_blocks on, as transformers
// sets them); the parser is chat_template_parse.cpp.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "base/error.hpp"
#include "llm/chat_template_parse.hpp"

namespace tg::llm::jinja {

[[noreturn]] void syntax_error(int line, std::string_view what) {
  throw ValueError("llm", fmt::format("chat template line {}: {}", line, what));
}

// jinja2 reads a template with its newlines made \n and one trailing newline dropped.
std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); k++) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n') k++;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's body, decoded like python's unicode-escape (what jinja2 applies to it).
std::string decode_string(std::string_view body, int line) {
  std::string out;
  for (size_t k = 0; k < body.size(); k++) {
    char c = body[k];
    if (c != '\\' || k + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++k];
    switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out += e;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t d = 0; d < n; d++) {
          int h = k + 1 + d < body.size() ? hex_value(body[k + 1 + d]) : -1;
          if (h < 0) syntax_error(line, fmt::format("truncated \\{} escape in a string", e));
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) syntax_error(line, "escape beyond unicode in a string");
        put_utf8(out, cp);
        k += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = 0;
          size_t d = 0;
          for (; d < 3 && k + d < body.size() && body[k + d] >= '0' && body[k + d] <= '7'; d++)
            cp = cp * 8 + static_cast<uint32_t>(body[k + d] - '0');
          put_utf8(out, cp);
          k += d - 1;
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_open(pos_);
      if (start == std::string_view::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[start + 1];
      char sign =
          start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+') ? src_[start + 2] : 0;
      emit_text(strip_before(src_.substr(pos_, start - pos_), kind, sign), pos_);
      size_t p = start + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        lex_comment(start, p);
      } else if (kind == '%' && lex_raw(start, p)) {
        continue;
      } else {
        lex_tag(kind, start, p);
      }
    }
    out_.push_back({Tok::END, line_at(src_.size()), {}});
    return std::move(out_);
  }

 private:
  size_t find_open(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string_view::npos; p = src_.find('{', p + 1))
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    return std::string_view::npos;
  }

  // `{%-` strips all whitespace before the tag; lstrip_blocks strips a block or comment tag's indentation.
  std::string_view strip_before(std::string_view text, char kind, char sign) const {
    if (sign == '-') {
      while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    } else if (sign != '+' && kind != '{') {
      size_t l = text.rfind('\n');
      l = l == std::string_view::npos ? 0 : l + 1;
      bool blank = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l), text.end(),
                               [](char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; });
      if ((l > 0 || line_starting_) && blank) text = text.substr(0, l);
    }
    return text;
  }

  void emit_text(std::string_view text, size_t at) {
    if (!text.empty()) out_.push_back({Tok::TEXT, line_at(at), std::string(text)});
  }

  // After a closing tag: `-` eats the whitespace that follows, trim_blocks one newline (not after `}}`).
  void close_at(size_t after_closer, char sign, bool trim) {
    size_t p = after_closer;
    if (sign == '-') {
      while (p < src_.size() && is_space(src_[p])) p++;
    } else if (sign != '+' && trim && p < src_.size() && src_[p] == '\n') {
      p++;
    }
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    pos_ = p;
  }

  void lex_comment(size_t start, size_t p) {
    size_t e = src_.find("#}", p);
    if (e == std::string_view::npos) syntax_error(line_at(start), "missing end of comment tag");
    char sign = e > p && (src_[e - 1] == '-' || src_[e - 1] == '+') ? src_[e - 1] : 0;
    close_at(e + 2, sign, true);
  }

  // `{% raw %}...{% endraw %}` passes its body through untouched.
  static size_t match_word_tag(std::string_view src, size_t p, std::string_view word, char* sign) {
    while (p < src.size() && is_space(src[p])) p++;
    if (src.substr(p, word.size()) != word) return std::string_view::npos;
    p += word.size();
    while (p < src.size() && is_space(src[p])) p++;
    *sign = p < src.size() && (src[p] == '-' || src[p] == '+') ? src[p] : 0;
    if (*sign) p++;
    return src.substr(p, 2) == "%}" ? p + 2 : std::string_view::npos;
  }

  bool lex_raw(size_t start, size_t p) {
    char sign = 0;
    size_t body = match_word_tag(src_, p, "raw", &sign);
    if (body == std::string_view::npos) return false;
    if (sign == '-')
      while (body < src_.size() && is_space(src_[body])) body++;
    for (size_t q = src_.find("{%", body); q != std::string_view::npos; q = src_.find("{%", q + 1)) {
      char open_sign = q + 2 < src_.size() && (src_[q + 2] == '-' || src_[q + 2] == '+') ? src_[q + 2] : 0;
      char close_sign = 0;
      size_t end = match_word_tag(src_, q + 2 + (open_sign ? 1 : 0), "endraw", &close_sign);
      if (end == std::string_view::npos) continue;
      line_starting_ = false;
      emit_text(strip_before(src_.substr(body, q - body), '%', open_sign), body);
      close_at(end, close_sign, true);
      return true;
    }
    syntax_error(line_at(start), "missing endraw for raw");
  }

  void lex_tag(char kind, size_t start, size_t p) {
    out_.push_back({kind == '{' ? Tok::VAR_BEGIN : Tok::BLOCK_BEGIN, line_at(start), {}});
    std::vector<char> brackets;
    for (;;) {
      while (p < src_.size() && is_space(src_[p])) p++;
      if (p >= src_.size()) syntax_error(line_at(start), "unexpected end of template inside a tag");
      if (brackets.empty() && closes(kind, p)) return;
      p = lex_token(p, brackets);
    }
  }

  bool closes(char kind, size_t p) {
    std::string_view rest = src_.substr(p);
    std::string_view closer = kind == '{' ? "}}" : "%}";
    char sign = 0;
    if ((rest.size() > 2 && (rest[0] == '-' || (rest[0] == '+' && kind == '%'))) &&
        rest.substr(1, 2) == closer)
      sign = rest[0];
    else if (rest.substr(0, 2) != closer)
      return false;
    out_.push_back({kind == '{' ? Tok::VAR_END : Tok::BLOCK_END, line_at(p), {}});
    close_at(p + 2 + (sign ? 1 : 0), sign, kind == '%');
    return true;
  }

  size_t lex_token(size_t p, std::vector<char>& brackets) {
    int line = line_at(p);
    char c = src_[p];
    if (is_digit(c)) return lex_number(p, line);
    if (is_name_start(c)) {
      size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) e++;
      out_.push_back({Tok::NAME, line, std::string(src_.substr(p, e - p))});
      return e;
    }
    if (c == '\'' || c == '"') {
      size_t e = p + 1;
      while (e < src_.size() && src_[e] != c) e += src_[e] == '\\' ? 2 : 1;
      if (e >= src_.size()) syntax_error(line, "unterminated string");
      out_.push_back({Tok::STRING, line, decode_string(src_.substr(p + 1, e - p - 1), line)});
      return e + 1;
    }
    static constexpr std::array<std::string_view, 4> two = {"//", "**", "==", "!="};
    static constexpr std::array<std::string_view, 2> two_cmp = {">=", "<="};
    std::string_view op = src_.substr(p, 2);
    bool is_two = std::find(two.begin(), two.end(), op) != two.end() ||
                  std::find(two_cmp.begin(), two_cmp.end(), op) != two_cmp.end();
    if (!is_two) {
      op = src_.substr(p, 1);
      if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos)
        syntax_error(line, fmt::format("unexpected char '{}'", c));
      if (c == '(' || c == '[' || c == '{') brackets.push_back(c);
      if (c == ')' || c == ']' || c == '}') {
        char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (brackets.empty() || brackets.back() != want)
          syntax_error(line, fmt::format("unexpected '{}'", c));
        brackets.pop_back();
      }
    }
    out_.push_back({Tok::OP, line, std::string(op)});
    return p + op.size();
  }

  size_t digits_end(size_t p) const {
    while (p < src_.size() &&
           (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1]))))
      p++;
    return p;
  }

  size_t lex_number(size_t p, int line) {
    size_t e = digits_end(p);
    bool is_float = false;
    bool after_dot = p > 0 && src_[p - 1] == '.';  // `x.0.1` is two subscripts, as in jinja2
    if (!after_dot && e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      e = digits_end(e + 1);
      is_float = true;
    }
    if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) x++;
      if (x < src_.size() && is_digit(src_[x])) {
        e = digits_end(x);
        is_float = true;
      }
    }
    std::string text;
    for (char ch : src_.substr(p, e - p))
      if (ch != '_') text += ch;
    Token t{is_float ? Tok::FLOAT : Tok::INT, line, text};
    auto r = is_float ? std::from_chars(text.data(), text.data() + text.size(), t.f)
                      : std::from_chars(text.data(), text.data() + text.size(), t.i);
    if (r.ec != std::errc()) syntax_error(line, fmt::format("number '{}' out of range", text));
    out_.push_back(std::move(t));
    return e;
  }

  int line_at(size_t p) {
    if (p < line_pos_) line_pos_ = 0, line_ = 1;
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(line_pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(p), '\n'));
    line_pos_ = p;
    return line_;
  }

  std::string_view src_;
  size_t pos_ = 0;
  size_t line_pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last tag's match ended a line, so lstrip_blocks applies at once
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(std::string_view src) { return Lexer(src).run(); }

}  // namespace tg::llm::jinja
