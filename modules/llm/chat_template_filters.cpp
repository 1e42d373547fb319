// jinja2's filters and tests on chat template values, and the names of those jinja2 knows.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "llm/chat_template_eval.hpp"

namespace tg::llm::jinja {

bool jinja_knows_filter(std::string_view name) {
  static constexpr std::array<std::string_view, 54> names = {
      "abs",       "attr",       "batch",       "capitalize", "center",  "count",
      "d",         "default",    "dictsort",    "e",          "escape",  "filesizeformat",
      "first",     "float",      "forceescape", "format",     "groupby", "indent",
      "int",       "join",       "last",        "length",     "list",    "lower",
      "items",     "map",        "min",         "max",        "pprint",  "random",
      "reject",    "rejectattr", "replace",     "reverse",    "round",   "safe",
      "select",    "selectattr", "slice",       "sort",       "string",  "striptags",
      "sum",       "title",      "trim",        "truncate",   "unique",  "upper",
      "urlencode", "urlize",     "wordcount",   "wordwrap",   "xmlattr", "tojson"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool jinja_knows_test(std::string_view name) {
  static constexpr std::array<std::string_view, 39> names = {
      "odd",     "even",   "divisibleby", "defined",  "undefined", "filter", "test",    "none",
      "boolean", "false",  "true",        "integer",  "float",     "lower",  "upper",   "string",
      "mapping", "number", "sequence",    "iterable", "callable",  "sameas", "escaped", "in",
      "==",      "eq",     "equalto",     "!=",       "ne",        ">",      "gt",      "greaterthan",
      "ge",      ">=",     "<",           "lt",       "lessthan",  "<=",     "le"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---- filters ----

namespace {

// jinja2's soft_str: a string stays as it is (markup included), anything else becomes its str().
Value soft_str(const Value& v) { return v.kind == Value::STRING ? v : string(to_str(v)); }

// The value jinja2's attribute= names: dotted paths and integer parts go through getitem.
Value attribute_of(const Value& item, const std::string& path) {
  Value v = item;
  size_t p = 0;
  for (;;) {
    size_t q = path.find('.', p);
    std::string part = path.substr(p, q == std::string::npos ? std::string::npos : q - p);
    bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = getitem(v, digits ? integer(std::stoll(part)) : string(part));
    if (q == std::string::npos) return v;
    p = q + 1;
  }
}

Value attr_arg(const Value& item, const CallArgs& a, size_t k) {
  const Value* at = arg(a, k, "attribute");
  if (!at || at->is(Value::NONE)) return item;
  return at->is_int() ? getitem(item, *at) : attribute_of(item, at->str());
}

// Sort keys the way jinja2's case-insensitive filters compare them.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.kind == Value::STRING && !case_sensitive ? string(lower(v.str())) : v;
}

void sort_values(List& items, std::function<Value(const Value&)> key, bool reverse) {
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t k = 0; k < items.size(); k++) keyed.emplace_back(key(items[k]), k);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
  });
  List out;
  for (const auto& kv : keyed) out.push_back(items[kv.second]);
  items = std::move(out);
}

// One filter application: the value before the | and the filter's arguments.
struct In {
  Renderer& r;
  const Value& v;
  CallArgs& a;
};
using Filter = Value (*)(const In&);

// select/reject/selectattr/rejectattr: the items whose (attribute's) test result is `keep`.
Value select(const In& x, bool with_attr, bool keep) {
  List out;
  size_t first = with_attr ? 1 : 0;
  const Value* test = arg(x.a, first, "");
  CallArgs targs;
  if (x.a.pos.size() > first + 1)
    targs.pos.assign(x.a.pos.begin() + static_cast<std::ptrdiff_t>(first) + 1, x.a.pos.end());
  for (const Value& item :
       truthy(x.v) ? iterate(x.v) : List{}) {  // jinja2 skips a falsy value, none included
    x.r.step();
    Value at = with_attr ? attribute_of(item, str_arg(x.a, 0, "attribute")) : item;
    bool ok = test ? apply_test(x.r, test->str(), at, targs) : truthy(at);
    if (ok == keep) out.push_back(item);
  }
  return list(std::move(out));
}

// map(attribute=...) picks an attribute, map('filter', args...) applies a filter.
Value do_map(const In& x) {
  const Value* attribute = arg(x.a, 99, "attribute");
  const Value* fallback = arg(x.a, 99, "default");
  if (!attribute && x.a.pos.empty()) fail("map requires a filter argument");
  CallArgs fargs;
  if (!attribute) {
    fargs.pos.assign(x.a.pos.begin() + 1, x.a.pos.end());
    fargs.kw = x.a.kw;
  }
  List out;
  for (const Value& item : truthy(x.v) ? iterate(x.v) : List{}) {
    x.r.step();
    Value y = attribute ? attr_arg(item, x.a, 99) : apply_filter(x.r, x.a.pos[0].str(), item, fargs);
    out.push_back(y.kind == Value::UNDEFINED && fallback ? *fallback : y);
  }
  return list(std::move(out));
}

// transformers' tojson: json.dumps with ensure_ascii, indent, separators and sort_keys, no HTML escaping.
Value do_tojson(const In& x) {
  JsonOptions o;
  o.ensure_ascii = flag(x.a, 0, "ensure_ascii");
  const Value* indent = arg(x.a, 1, "indent");
  if (indent && indent->is_int())
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->i, 0, 1000)), ' ');
  if (indent && indent->kind == Value::STRING) o.indent = indent->str();
  if (o.indent) o.item_sep = ",";
  const Value* seps = arg(x.a, 2, "separators");
  if (seps && seps->is_seq() && seps->list->size() == 2) {
    o.item_sep = (*seps->list)[0].str();
    o.key_sep = (*seps->list)[1].str();
  }
  o.sort_keys = flag(x.a, 3, "sort_keys");
  std::string out;
  to_json(out, x.v, o, 0);
  return x.r.made(std::move(out));
}

Value do_indent(const In& x) {
  const Value* w = arg(x.a, 0, "width");
  std::string ind = w && w->kind == Value::STRING
                        ? w->str()
                        : std::string(static_cast<size_t>(std::clamp<int64_t>(w ? w->i : 4, 0, 1000)), ' ');
  std::vector<std::string> lines = splitlines(to_str(x.v) + "\n");  // jinja2 appends the newline too
  bool blank = flag(x.a, 2, "blank");
  std::string out = lines.empty() ? "" : lines[0];
  for (size_t k = 1; k < lines.size(); k++) {
    out += "\n";
    if (blank || !lines[k].empty()) out += ind;
    out += lines[k];
    if (out.size() > kMaxString) fail("string longer than 16 MiB");
  }
  if (flag(x.a, 1, "first")) out = ind + out;
  return x.r.made(std::move(out), x.v.markup);
}

// int(): a string parses as an integer, else as a float; what cannot convert gives the default.
Value do_int(const In& x) {
  const Value& v = x.v;
  Value fallback = arg_or(x.a, 0, "default", integer(0));
  if (v.is_int()) return integer(v.i);
  if (v.kind == Value::FLOAT)
    return std::isfinite(v.f) && std::fabs(v.f) < 9.2e18 ? integer(static_cast<int64_t>(v.f)) : fallback;
  if (v.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", v.str()));
  if (v.kind != Value::STRING) return fallback;
  std::string s = strip(v.str(), nullptr, true, true), digits;
  for (char c : s)
    if (c != '_') digits += c;
  int64_t i = 0;
  const char* b = digits.data() + (!digits.empty() && digits[0] == '+');
  auto res = std::from_chars(b, digits.data() + digits.size(), i);
  if (!digits.empty() && res.ec == std::errc() && res.ptr == digits.data() + digits.size()) return integer(i);
  char* end = nullptr;
  double f = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(f) && std::fabs(f) < 9.2e18)
    return integer(static_cast<int64_t>(f));
  return fallback;
}

Value do_float(const In& x) {
  Value fallback = arg_or(x.a, 0, "default", number(0));
  if (x.v.is_num()) return number(x.v.num());
  if (x.v.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", x.v.str()));
  if (x.v.kind != Value::STRING) return fallback;
  std::string s = strip(x.v.str(), nullptr, true, true);
  char* end = nullptr;
  double f = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() ? number(f) : fallback;
}

Value do_round(const In& x) {
  int64_t precision = int_arg(x.a, 0, "precision", 0);
  std::string m = arg_or(x.a, 1, "method", string("common")).str();
  if (!x.v.is_num()) fail("round: a number is required");
  if (m != "common" && m != "ceil" && m != "floor") fail("round: method must be common, ceil or floor");
  if (m == "common" && x.v.is_int() && precision >= 0)
    return integer(x.v.i);  // python's round(int) is an int
  double scale = std::pow(10.0, static_cast<double>(precision)), y = x.v.num() * scale;
  return number((m == "ceil" ? std::ceil(y) : m == "floor" ? std::floor(y) : std::nearbyint(y)) / scale);
}

Value min_max(const In& x, bool is_max) {
  bool cs = flag(x.a, 0, "case_sensitive");
  List items = iterate(x.v);
  if (items.empty()) return undefined("no items");
  size_t best = 0;
  for (size_t k = 1; k < items.size(); k++) {
    int c = compare(sort_key(attr_arg(items[k], x.a, 1), cs), sort_key(attr_arg(items[best], x.a, 1), cs));
    if (is_max ? c > 0 : c < 0) best = k;
  }
  return items[best];
}

Value do_unique(const In& x) {
  bool cs = flag(x.a, 0, "case_sensitive");
  List out, seen;
  for (const Value& item : iterate(x.v)) {
    Value key = sort_key(attr_arg(item, x.a, 1), cs);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return list(std::move(out));
}

Value do_sort(const In& x) {
  List items = iterate(x.v);
  bool cs = flag(x.a, 1, "case_sensitive");
  sort_values(
      items, [&](const Value& item) { return sort_key(attr_arg(item, x.a, 2), cs); },
      flag(x.a, 0, "reverse"));
  return list(std::move(items));
}

Value do_dictsort(const In& x) {
  if (x.v.kind != Value::DICT) fail("dictsort: a mapping is required");
  bool cs = flag(x.a, 0, "case_sensitive");
  size_t by = arg_or(x.a, 1, "by", string("key")).str() == "value" ? 1 : 0;
  List items;
  for (const auto& [k, v] : x.v.dict->items) items.push_back(list({k, v}, true));
  sort_values(
      items, [&](const Value& kv) { return sort_key((*kv.list)[by], cs); }, flag(x.a, 2, "reverse"));
  return list(std::move(items));
}

Value do_items(const In& x) {
  if (x.v.kind == Value::UNDEFINED) return list({});
  if (x.v.kind != Value::DICT) fail("can only get item pairs from a mapping");
  List out;
  for (const auto& [k, v] : x.v.dict->items) out.push_back(list({k, v}, true));
  return list(std::move(out));
}

Value do_batch(const In& x) {
  int64_t n = int_arg(x.a, 0, "linecount", 1);
  if (n <= 0) fail("batch: linecount must be positive");
  const Value* fill = arg(x.a, 1, "fill_with");
  List out, row;
  for (const Value& item : iterate(x.v)) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == n) out.push_back(list(std::exchange(row, {})));
  }
  while (!row.empty() && fill && !fill->is(Value::NONE) && static_cast<int64_t>(row.size()) < n)
    row.push_back(*fill);
  if (!row.empty()) out.push_back(list(std::move(row)));
  return list(std::move(out));
}

Value do_join(const In& x) {
  std::string d = to_str(arg_or(x.a, 0, "d", string(""))), out;
  List items = iterate(x.v);
  for (size_t k = 0; k < items.size(); k++) {
    out += (k ? d : "") + to_str(attr_arg(items[k], x.a, 1));
    if (out.size() > kMaxString) fail("string longer than 16 MiB");
  }
  return x.r.made(std::move(out));
}

Value do_reverse(const In& x) {
  if (x.v.kind == Value::STRING) {
    std::vector<std::string_view> cs = chars(x.v.str());
    std::string out;
    for (size_t k = cs.size(); k-- > 0;) out.append(cs[k]);
    return string(std::move(out));
  }
  List items = iterate(x.v);
  std::reverse(items.begin(), items.end());
  return list(std::move(items));
}

Value do_trim(const In& x) {
  const Value* c = arg(x.a, 0, "chars");
  return string(strip(soft_str(x.v).str(), c && c->kind == Value::STRING ? &c->str() : nullptr, true, true),
                x.v.markup);
}

Value do_abs(const In& x) {
  if (x.v.kind == Value::FLOAT) return number(std::fabs(x.v.f));
  if (!x.v.is_int() || x.v.i == INT64_MIN)
    fail(fmt::format("bad operand type for abs(): '{}'", type_name(x.v)));
  return integer(x.v.i < 0 ? -x.v.i : x.v.i);
}

Value do_default(const In& x) {
  bool use = x.v.kind == Value::UNDEFINED || (flag(x.a, 1, "boolean") && !truthy(x.v));
  return use ? arg_or(x.a, 0, "default_value", string("")) : x.v;
}

Value do_replace(const In& x) {
  std::string old = to_str(arg_or(x.a, 0, "old", string(""))),
              rep = to_str(arg_or(x.a, 1, "new", string("")));
  return x.r.made(replace_all(to_str(x.v), old, rep, int_arg(x.a, 2, "count", -1)));
}

Value do_sum(const In& x) {
  Value total = arg_or(x.a, 1, "start", integer(0));
  for (const Value& item : iterate(x.v)) total = binary(x.r, "+", total, attr_arg(item, x.a, 0));
  return total;
}

// attr() is getattr alone: a dict's keys are not its attributes.
Value do_attr(const In& x) {
  std::string name = str_arg(x.a, 0, "name");
  if (x.v.kind == Value::DICT && !has_method(x.v, name)) return undefined(name);
  return getattr(x.v, name);
}

Value do_wordcount(const In& x) {
  int64_t n = 0;
  bool in_word = false;
  std::string text = to_str(x.v);
  for (std::string_view c : chars(text)) {
    bool w = is_word_char(code_point(c, 0, c.size()));
    n += w && !in_word;
    in_word = w;
  }
  return integer(n);
}

Value first_or_last(const In& x, bool last) {
  List items = iterate(x.v);
  if (items.empty()) return undefined("the sequence is empty");
  return last ? items.back() : items.front();
}

// Markup (safe) strings pass through escape untouched.
Value do_escape(const In& x) { return x.v.markup ? x.v : x.r.made(html_escape(to_str(x.v)), true); }

// jinja2's title: each word, split at whitespace and -({[<, starts upper and goes on lower.
std::string jinja_title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (std::string_view c : chars(s)) {
    uint32_t cp = code_point(c, 0, c.size());
    bool sep = is_py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    uint32_t m = sep ? cp : word_start ? to_upper(cp) : to_lower(cp);
    if (word_start && cp == 0xDF)
      out += "SS";
    else if (m == cp)
      out.append(c);
    else
      put_utf8(out, m);
    word_start = sep;
  }
  return out;
}

Value case_filter(const In& x, std::string (*fn)(std::string_view)) {
  return string(fn(soft_str(x.v).str()), x.v.markup);
}

const std::unordered_map<std::string_view, Filter>& filters() {
  static const std::unordered_map<std::string_view, Filter> table = {
      {"abs", do_abs},
      {"attr", do_attr},
      {"batch", do_batch},
      {"capitalize", [](const In& x) { return case_filter(x, capitalize); }},
      {"center", [](const In& x) { return x.r.made(center(to_str(x.v), int_arg(x.a, 0, "width", 80))); }},
      {"count", [](const In& x) { return integer(length(x.v)); }},
      {"d", do_default},
      {"default", do_default},
      {"dictsort", do_dictsort},
      {"e", do_escape},
      {"escape", do_escape},
      {"first", [](const In& x) { return first_or_last(x, false); }},
      {"float", do_float},
      {"forceescape", [](const In& x) { return x.r.made(html_escape(to_str(x.v)), true); }},
      {"format", [](const In& x) { return percent_format(x.r, soft_str(x.v), list(x.a.pos, true)); }},
      {"indent", do_indent},
      {"int", do_int},
      {"items", do_items},
      {"join", do_join},
      {"last", [](const In& x) { return first_or_last(x, true); }},
      {"length", [](const In& x) { return integer(length(x.v)); }},
      {"list", [](const In& x) { return list(iterate(x.v)); }},
      {"lower", [](const In& x) { return case_filter(x, lower); }},
      {"map", do_map},
      {"max", [](const In& x) { return min_max(x, true); }},
      {"min", [](const In& x) { return min_max(x, false); }},
      {"reject", [](const In& x) { return select(x, false, false); }},
      {"rejectattr", [](const In& x) { return select(x, true, false); }},
      {"replace", do_replace},
      {"reverse", do_reverse},
      {"round", do_round},
      {"safe", [](const In& x) { return string(to_str(x.v), true); }},
      {"select", [](const In& x) { return select(x, false, true); }},
      {"selectattr", [](const In& x) { return select(x, true, true); }},
      {"sort", do_sort},
      {"string", [](const In& x) { return soft_str(x.v); }},
      {"sum", do_sum},
      {"title", [](const In& x) { return case_filter(x, jinja_title); }},
      {"tojson", do_tojson},
      {"trim", do_trim},
      {"unique", do_unique},
      {"upper", [](const In& x) { return case_filter(x, upper); }},
      {"wordcount", do_wordcount},
  };
  return table;
}

}  // namespace

Value apply_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& a) {
  auto it = filters().find(name);
  if (it != filters().end()) return it->second(In{r, v, a});
  if (jinja_knows_filter(name)) fail(fmt::format("filter '{}' is not supported", name));
  fail(fmt::format("no filter named '{}'", name));
}

// ---- tests ----

bool apply_test(Renderer&, const std::string& name, const Value& v, CallArgs& a) {
  auto other = [&]() -> const Value& {
    if (a.pos.empty()) fail(fmt::format("test '{}' needs an argument", name));
    return a.pos[0];
  };
  if (name == "defined") return v.kind != Value::UNDEFINED;
  if (name == "undefined") return v.kind == Value::UNDEFINED;
  if (name == "none") return v.kind == Value::NONE;
  if (name == "boolean") return v.kind == Value::BOOL;
  if (name == "false") return v.kind == Value::BOOL && !v.i;
  if (name == "true") return v.kind == Value::BOOL && v.i;
  if (name == "integer") return v.kind == Value::INT;
  if (name == "float") return v.kind == Value::FLOAT;
  if (name == "number") return v.is_num();
  if (name == "string") return v.kind == Value::STRING;
  if (name == "mapping") return v.kind == Value::DICT;
  if (name == "iterable")
    return v.kind == Value::UNDEFINED || v.is_seq() || v.kind == Value::DICT || v.kind == Value::STRING;
  if (name == "sequence")
    return v.kind == Value::UNDEFINED || v.is_seq() || v.kind == Value::DICT || v.kind == Value::STRING;
  if (name == "callable") return v.kind == Value::FUNC;
  if (name == "escaped") return v.markup;
  if (name == "lower" || name == "upper") {
    if (v.kind != Value::STRING) return false;
    std::string s = v.str();
    return name == "lower" ? lower(s) == s && upper(s) != s : upper(s) == s && lower(s) != s;
  }
  if (name == "even" || name == "odd") {
    if (!v.is_int()) fail(fmt::format("test '{}' needs an integer", name));
    return (v.i % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    const Value& n = other();
    if (!v.is_int() || !n.is_int() || n.i == 0) fail("divisibleby needs nonzero integers");
    return n.i == -1 || v.i % n.i == 0;
  }
  if (name == "sameas") {
    const Value& o = other();
    if (v.kind != o.kind) return false;
    if (v.kind == Value::NONE || v.kind == Value::UNDEFINED) return v.kind == Value::NONE;
    if (v.kind == Value::BOOL) return v.i == o.i;
    if (v.kind == Value::INT) return v.i == o.i && v.i >= -5 && v.i <= 256;  // python's small-int cache
    return (v.list && v.list == o.list) || (v.dict && v.dict == o.dict) || (v.fn && v.fn == o.fn) ||
           (v.s && v.s == o.s);
  }
  if (name == "in") return contains(other(), v);
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, other());
  if (name == "ne" || name == "!=") return !equals(v, other());
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, other(), "<") < 0;
  if (name == "le" || name == "<=") return compare(v, other(), "<=") <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, other(), ">") > 0;
  if (name == "ge" || name == ">=") return compare(v, other(), ">=") >= 0;
  if (name == "filter") return v.kind == Value::STRING && (jinja_knows_filter(v.str()));
  if (name == "test") return v.kind == Value::STRING && jinja_knows_test(v.str());
  fail(fmt::format("no test named '{}'", name));
}

}  // namespace tg::llm::jinja
