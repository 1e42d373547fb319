// Python's values as chat templates see them in jinja2 under transformers' sandbox: python str() and repr(),
// json, truthiness, equality, slicing by code point, jinja2's undefined, and the arguments of calls.
#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "llm/chat_template_eval.hpp"

namespace tg::llm::jinja {

uint8_t nesting(const Value& item, uint8_t depth) {
  if (item.depth >= kMaxNesting) fail("lists and dicts nested too deeply");
  return std::max<uint8_t>(depth, item.depth + 1);
}

Value list(List items, bool tuple) {
  if (items.size() > kMaxItems) fail("list longer than 2^20 items");
  Value v;
  for (const Value& item : items) v.depth = nesting(item, v.depth);
  v.kind = tuple ? Value::TUPLE : Value::LIST;
  v.list = std::make_shared<const List>(std::move(items));
  return v;
}
Value dict(std::vector<std::pair<Value, Value>> items, bool ns) {
  Value v;
  for (const auto& [key, item] : items) v.depth = nesting(item, nesting(key, v.depth));
  v.kind = ns ? Value::NAMESPACE : Value::DICT;
  v.dict = std::make_shared<Dict>(Dict{std::move(items)});
  return v;
}
Value func(std::string name, std::function<Value(Renderer&, CallArgs&)> call) {
  return {.kind = Value::FUNC, .fn = std::make_shared<const Func>(Func{std::move(name), std::move(call)})};
}

std::string_view type_name(const Value& v) {
  static constexpr std::string_view names[] = {"Undefined", "NoneType", "bool", "int",       "float",   "str",
                                               "list",      "tuple",    "dict", "Namespace", "function"};
  return names[v.kind];
}

// ---- UTF-8 and python's character classes ----

size_t char_len(std::string_view s, size_t p) {
  unsigned char c = static_cast<unsigned char>(s[p]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  for (size_t k = 1; k < n; k++)
    if (p + k >= s.size() || (static_cast<unsigned char>(s[p + k]) & 0xC0) != 0x80) return 1;
  return n;
}

uint32_t code_point(std::string_view s, size_t p, size_t n) {
  unsigned char c = static_cast<unsigned char>(s[p]);
  if (n == 1) return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; k++) cp = (cp << 6) | (static_cast<unsigned char>(s[p + k]) & 0x3F);
  return cp;
}

// Byte offsets of each character, plus the end.
std::vector<size_t> char_starts(std::string_view s) {
  std::vector<size_t> starts;
  for (size_t p = 0; p < s.size(); p += char_len(s, p)) starts.push_back(p);
  starts.push_back(s.size());
  return starts;
}

std::vector<std::string_view> chars(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t p = 0; p < s.size(); p += char_len(s, p)) out.push_back(s.substr(p, char_len(s, p)));
  return out;
}

size_t char_count(std::string_view s) { return char_starts(s).size() - 1; }

bool is_py_space(uint32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// What ß maps to in upper and title case, which python spells with two letters.
constexpr uint32_t kUpperSharpS = 0x110000, kTitleSharpS = 0x110001;

// Case mapping for ASCII, Latin-1, Greek and Cyrillic; other scripts pass through unchanged.
uint32_t to_upper(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) ||
      (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
    return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c == 0xFF ? 0x178 : c;
}
uint32_t to_lower(uint32_t c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
      (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
    return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c == 0x178 ? 0xFF : c;
}
bool is_cased(uint32_t c) { return to_upper(c) != c || to_lower(c) != c || c == 0xDF; }

namespace {

uint32_t title_char(uint32_t c) { return c == 0xDF ? kTitleSharpS : to_upper(c); }

// Each character through fn(cp, index, previous cp): python's upper/lower/title/capitalize.
template <class Fn>
std::string map_chars(std::string_view s, Fn fn) {
  std::string out;
  uint32_t prev = 0;
  size_t k = 0;
  for (size_t p = 0; p < s.size();) {
    size_t n = char_len(s, p);
    uint32_t cp = code_point(s, p, n);
    uint32_t m = fn(cp, k++, prev);
    if (cp == 0xDF && m == kUpperSharpS)
      out += "SS";
    else if (cp == 0xDF && m == kTitleSharpS)
      out += "Ss";
    else if (m == cp)
      out.append(s.substr(p, n));
    else
      put_utf8(out, m);
    prev = cp;
    p += n;
  }
  return out;
}

bool in_chars(uint32_t cp, const std::string* set) {
  if (!set) return is_py_space(cp);
  for (size_t p = 0; p < set->size(); p += char_len(*set, p))
    if (code_point(*set, p, char_len(*set, p)) == cp) return true;
  return false;
}

}  // namespace

std::string upper(std::string_view s) {
  return map_chars(s, [](uint32_t c, size_t, uint32_t) { return c == 0xDF ? kUpperSharpS : to_upper(c); });
}
std::string lower(std::string_view s) {
  return map_chars(s, [](uint32_t c, size_t, uint32_t) { return to_lower(c); });
}
std::string capitalize(std::string_view s) {
  return map_chars(s, [](uint32_t c, size_t k, uint32_t) { return k == 0 ? title_char(c) : to_lower(c); });
}
std::string py_title(std::string_view s) {
  return map_chars(
      s, [](uint32_t c, size_t, uint32_t prev) { return is_cased(prev) ? to_lower(c) : title_char(c); });
}

// python's str.strip/lstrip/rstrip: whitespace, or the characters of `set`.
std::string strip(std::string_view s, const std::string* set, bool left, bool right) {
  std::vector<size_t> st = char_starts(s);
  size_t a = 0, b = st.size() - 1;
  auto cp_at = [&](size_t k) { return code_point(s, st[k], st[k + 1] - st[k]); };
  while (left && a < b && in_chars(cp_at(a), set)) a++;
  while (right && b > a && in_chars(cp_at(b - 1), set)) b--;
  return std::string(s.substr(st[a], st[b] - st[a]));
}

// ---- python str(), repr() and json ----

namespace {

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  bool neg = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(0, e))
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
      size_t point = static_cast<size_t>(exp) + 1;
      if (digits.size() <= point)
        digits += std::string(point - digits.size(), '0') + ".0";
      else
        digits.insert(point, ".");
      out += digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  return out + fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
}

bool printable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  return !((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) ||
           c == 0x3000 || c == 0xFEFF || (c >= 0xD800 && c <= 0xF8FF) || c >= 0xF0000);
}

std::string str_repr(std::string_view s) {
  char q = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, q);
  for (size_t p = 0; p < s.size();) {
    size_t n = char_len(s, p);
    uint32_t c = code_point(s, p, n);
    if (c == static_cast<uint32_t>(q) || c == '\\')
      out += {'\\', static_cast<char>(c)};
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (printable(c))
      out.append(s.substr(p, n));
    else if (c < 0x100)
      out += fmt::format("\\x{:02x}", c);
    else if (c < 0x10000)
      out += fmt::format("\\u{:04x}", c);
    else
      out += fmt::format("\\U{:08x}", c);
    p += n;
  }
  return out + q;
}

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t p = 0; p < s.size();) {
    size_t n = char_len(s, p);
    uint32_t c = code_point(s, p, n);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\b')
      out += "\\b";
    else if (c == '\f')
      out += "\\f";
    else if (c < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else if (c < 0x80 || !ensure_ascii)
      out.append(s.substr(p, n));
    else if (c < 0x10000)
      out += fmt::format("\\u{:04x}", c);
    else
      out +=
          fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF));
    p += n;
  }
  out += '"';
}

std::string json_key(const Value& k) {
  switch (k.kind) {
    case Value::STRING:
      return k.str();
    case Value::NONE:
      return "null";
    case Value::BOOL:
      return k.i ? "true" : "false";
    case Value::INT:
    case Value::FLOAT:
      return to_str(k);
    default:
      fail(fmt::format("keys must be str, int, float, bool or None, not {}", type_name(k)));
  }
}

}  // namespace

// Regex \w, roughly: outside ASCII everything but the common punctuation, symbol and emoji blocks.
bool is_word_char(uint32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  bool symbol = c <= 0xBF || c == 0xD7 || c == 0xF7 || (c >= 0x2000 && c <= 0x2BFF) ||
                (c >= 0x3000 && c <= 0x303F) || (c >= 0xFE00 && c <= 0xFE0F) ||
                (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0x1F000 && c <= 0x1FAFF);
  return !symbol && printable(c);
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::UNDEFINED:
      return "";
    case Value::NONE:
      return "None";
    case Value::BOOL:
      return v.i ? "True" : "False";
    case Value::INT:
      return fmt::format("{}", v.i);
    case Value::FLOAT:
      return float_repr(v.f);
    case Value::STRING:
      return v.str();
    case Value::LIST:
    case Value::TUPLE: {
      std::string out(1, v.kind == Value::LIST ? '[' : '(');
      for (size_t k = 0; k < v.list->size(); k++) out += (k ? ", " : "") + repr((*v.list)[k]);
      return out + (v.kind == Value::LIST ? "]" : v.list->size() == 1 ? ",)" : ")");
    }
    case Value::DICT:
    case Value::NAMESPACE: {
      // A namespace can hold itself; python prints the inner one as {...}.
      thread_local std::vector<const Dict*> printing;
      if (std::find(printing.begin(), printing.end(), v.dict.get()) != printing.end())
        return v.kind == Value::NAMESPACE ? "<Namespace {...}>" : "{...}";
      if (printing.size() >= 2 * kMaxNesting) fail("value nested too deeply to print");
      printing.push_back(v.dict.get());
      struct Pop {
        ~Pop() { printing.pop_back(); }
      } pop;
      std::string out = v.kind == Value::NAMESPACE ? "<Namespace {" : "{";
      for (size_t k = 0; k < v.dict->items.size(); k++)
        out += (k ? ", " : "") + repr(v.dict->items[k].first) + ": " + repr(v.dict->items[k].second);
      return out + (v.kind == Value::NAMESPACE ? "}>" : "}");
    }
    case Value::FUNC:
      return fmt::format("<function {}>", v.fn->name);
  }
  return "";
}

std::string repr(const Value& v) {
  if (v.kind == Value::STRING) return v.markup ? "Markup(" + str_repr(v.str()) + ")" : str_repr(v.str());
  return v.kind == Value::UNDEFINED ? "Undefined" : to_str(v);
}

void to_json(std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > 100 || out.size() > kMaxString) fail("tojson: value nested too deeply or too large");
  auto newline = [&](int lvl) {
    out += '\n';
    for (int k = 0; k < lvl; k++) out += *o.indent;
  };
  switch (v.kind) {
    case Value::NONE:
      out += "null";
      return;
    case Value::BOOL:
      out += v.i ? "true" : "false";
      return;
    case Value::INT:
      out += to_str(v);
      return;
    case Value::FLOAT:
      out += std::isnan(v.f)   ? "NaN"
             : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity")
                               : float_repr(v.f);
      return;
    case Value::STRING:
      json_string(out, v.str(), o.ensure_ascii);
      return;
    case Value::LIST:
    case Value::TUPLE:
    case Value::DICT: {
      bool is_dict = v.kind == Value::DICT;
      size_t n = is_dict ? v.dict->items.size() : v.list->size();
      out += is_dict ? '{' : '[';
      if (n == 0) {
        out += is_dict ? '}' : ']';
        return;
      }
      std::vector<size_t> order(n);
      for (size_t k = 0; k < n; k++) order[k] = k;
      if (is_dict && o.sort_keys)
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
          return json_key(v.dict->items[a].first) < json_key(v.dict->items[b].first);
        });
      for (size_t k = 0; k < n; k++) {
        if (k) out += o.item_sep;
        if (o.indent) newline(level + 1);
        if (is_dict) {
          json_string(out, json_key(v.dict->items[order[k]].first), o.ensure_ascii);
          out += o.key_sep;
        }
        to_json(out, is_dict ? v.dict->items[order[k]].second : (*v.list)[k], o, level + 1);
      }
      if (o.indent) newline(level);
      out += is_dict ? '}' : ']';
      return;
    }
    default:
      fail(fmt::format("Object of type {} is not JSON serializable", type_name(v)));
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '\'')
      out += "&#39;";
    else if (c == '"')
      out += "&#34;";
    else
      out += c;
  }
  return out;
}

// ---- python truthiness, equality, ordering ----

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::UNDEFINED:
    case Value::NONE:
      return false;
    case Value::BOOL:
    case Value::INT:
      return v.i != 0;
    case Value::FLOAT:
      return v.f != 0;
    case Value::STRING:
      return !v.str().empty();
    case Value::LIST:
    case Value::TUPLE:
      return !v.list->empty();
    case Value::DICT:
      return !v.dict->items.empty();
    default:
      return true;
  }
}

const Value* dict_find(const Dict& d, const Value& key) {
  for (const auto& [k, v] : d.items)
    if (equals(k, key)) return &v;
  return nullptr;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_num() && b.is_num()) return a.is_int() && b.is_int() ? a.i == b.i : a.num() == b.num();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::UNDEFINED:
    case Value::NONE:
      return true;
    case Value::STRING:
      return a.str() == b.str();
    case Value::LIST:
    case Value::TUPLE:
      return a.list->size() == b.list->size() &&
             std::equal(a.list->begin(), a.list->end(), b.list->begin(), equals);
    case Value::DICT:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* w = dict_find(*b.dict, k);
        if (!w || !equals(v, *w)) return false;
      }
      return true;
    case Value::NAMESPACE:
      return a.dict == b.dict;
    case Value::FUNC:
      return a.fn == b.fn;
    default:
      return false;
  }
}

// -1, 0 or 1, or a failure where python's < would raise.
int compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_num() && b.is_num()) {
    if (a.is_int() && b.is_int()) return a.i < b.i ? -1 : a.i > b.i;
    return a.num() < b.num() ? -1 : a.num() > b.num();
  }
  if (a.kind == Value::STRING && b.kind == Value::STRING) {
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0;
  }
  if (a.kind == b.kind && a.is_seq()) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; k++)
      if (!equals((*a.list)[k], (*b.list)[k])) return compare((*a.list)[k], (*b.list)[k], op);
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size();
  }
  fail(fmt::format("'{}' not supported between instances of '{}' and '{}'", op, type_name(a), type_name(b)));
}

// python's iter(): a dict gives its keys, a string its characters, undefined nothing.
List iterate(const Value& v) {
  switch (v.kind) {
    case Value::UNDEFINED:
      return {};
    case Value::LIST:
    case Value::TUPLE:
      return *v.list;
    case Value::DICT: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Value::STRING: {
      List out;
      for (std::string_view c : chars(v.str())) out.push_back(string(std::string(c)));
      return out;
    }
    default:
      fail(fmt::format("'{}' object is not iterable", type_name(v)));
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Value::UNDEFINED:
      return 0;
    case Value::STRING:
      return static_cast<int64_t>(char_count(v.str()));
    case Value::LIST:
    case Value::TUPLE:
      return static_cast<int64_t>(v.list->size());
    case Value::DICT:
      return static_cast<int64_t>(v.dict->items.size());
    default:
      fail(fmt::format("object of type '{}' has no len()", type_name(v)));
  }
}

bool contains(const Value& container, const Value& item) {
  if (container.kind == Value::STRING) {
    if (item.kind != Value::STRING)
      fail(fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.kind == Value::DICT) return dict_find(*container.dict, item) != nullptr;
  if (container.is_seq() || container.kind == Value::UNDEFINED) {
    List items = iterate(container);
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return equals(x, item); });
  }
  fail(fmt::format("argument of type '{}' is not iterable", type_name(container)));
}

// Python's slice of n items: the indices it selects.
std::vector<int64_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step) {
  int64_t st = step.is(Value::NONE) ? 1 : step.i;
  if (st == 0) fail("slice step cannot be zero");
  int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
  auto bound = [&](const Value& v, int64_t fallback) {
    if (v.is(Value::NONE)) return fallback;
    int64_t x = v.i < 0 ? v.i + n : v.i;
    return std::clamp(x, lo, hi);
  };
  int64_t a = bound(start, st > 0 ? lo : hi), b = bound(stop, st > 0 ? hi : lo);
  std::vector<int64_t> out;
  for (int64_t k = a; st > 0 ? k < b : k > b; k += st) out.push_back(k);
  return out;
}

// ---- arguments ----

// The argument bound to parameter k (python's positional-or-keyword binding), or null.
const Value* arg(const CallArgs& a, size_t k, std::string_view name) {
  if (k < a.pos.size()) return &a.pos[k];
  for (const auto& [key, v] : a.kw)
    if (key == name) return &v;
  return nullptr;
}
Value arg_or(const CallArgs& a, size_t k, std::string_view name, Value fallback) {
  const Value* v = arg(a, k, name);
  return v ? *v : std::move(fallback);
}
bool flag(const CallArgs& a, size_t k, std::string_view name) {
  const Value* v = arg(a, k, name);
  return v && truthy(*v);
}
int64_t int_arg(const CallArgs& a, size_t k, std::string_view name, int64_t fallback) {
  const Value* v = arg(a, k, name);
  if (!v) return fallback;
  if (!v->is_int()) fail(fmt::format("argument '{}' must be an integer, not {}", name, type_name(*v)));
  return v->i;
}
std::string str_arg(const CallArgs& a, size_t k, std::string_view name) {
  const Value* v = arg(a, k, name);
  if (!v || v->kind != Value::STRING) fail(fmt::format("argument '{}' must be a string", name));
  return v->str();
}

}  // namespace tg::llm::jinja
