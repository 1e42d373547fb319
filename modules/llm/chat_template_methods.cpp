// Attributes and items of chat template values, python's methods on str, dict and list, and the globals
// templates call (range, namespace, dict, raise_exception, strftime_now).
#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "base/error.hpp"
#include "llm/chat_template_eval.hpp"

namespace tg::llm::jinja {

// ---- attributes and items ----

namespace {

Value call_method(Renderer& r, const Value& self, const std::string& name, CallArgs& a);

// The sandbox hides methods that modify a list or dict: reading them gives undefined.
bool is_mutator(const Value& obj, const std::string& name) {
  static const std::vector<std::string> list_mut = {"append", "clear", "pop",    "reverse",
                                                    "insert", "sort",  "extend", "remove"};
  static const std::vector<std::string> dict_mut = {"clear", "pop", "popitem", "setdefault", "update"};
  const auto& names = obj.kind == Value::DICT   ? dict_mut
                      : obj.kind == Value::LIST ? list_mut
                                                : std::vector<std::string>{};
  return std::find(names.begin(), names.end(), name) != names.end();
}

Value method(const Value& obj, const std::string& name) {
  return func(name, [obj, name](Renderer& r, CallArgs& a) { return call_method(r, obj, name, a); });
}

}  // namespace

bool has_method(const Value& obj, const std::string& name) {
  static const std::vector<std::string> str_methods = {
      "strip",    "lstrip", "rstrip", "split", "rsplit",     "splitlines", "startswith",
      "endswith", "upper",  "lower",  "title", "capitalize", "replace",    "find",
      "rfind",    "count",  "format", "join",  "isdigit",    "isalpha",    "isspace"};
  static const std::vector<std::string> dict_methods = {"get", "items", "keys", "values", "copy"};
  static const std::vector<std::string> list_methods = {"count", "index", "copy"};
  const auto& names = obj.kind == Value::STRING ? str_methods
                      : obj.kind == Value::DICT ? dict_methods
                      : obj.is_seq()            ? list_methods
                                                : std::vector<std::string>{};
  return std::find(names.begin(), names.end(), name) != names.end();
}

// jinja2's sandboxed getattr: python attributes first (a dict's methods), then the item.
Value getattr(const Value& obj, const std::string& name) {
  if (obj.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", obj.str()));
  if (is_mutator(obj, name)) return undefined(fmt::format("access to attribute '{}' is unsafe", name));
  if (has_method(obj, name)) return method(obj, name);
  if (obj.kind == Value::DICT || obj.kind == Value::NAMESPACE) {
    const Value* v = dict_find(*obj.dict, string(name));
    if (v) return *v;
  }
  return undefined(name);
}

// jinja2's sandboxed getitem: the item first, then for a string key the attribute.
Value getitem(const Value& obj, const Value& key) {
  if (obj.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", obj.str()));
  if (obj.kind == Value::DICT || obj.kind == Value::NAMESPACE) {
    const Value* v = dict_find(*obj.dict, key);
    if (v) return *v;
  } else if ((obj.is_seq() || obj.kind == Value::STRING) && key.is_int()) {
    if (obj.is_seq()) {
      int64_t n = static_cast<int64_t>(obj.list->size()), k = key.i < 0 ? key.i + n : key.i;
      if (k >= 0 && k < n) return (*obj.list)[static_cast<size_t>(k)];
    } else {
      std::vector<size_t> st = char_starts(obj.str());
      int64_t n = static_cast<int64_t>(st.size()) - 1, k = key.i < 0 ? key.i + n : key.i;
      if (k >= 0 && k < n) {
        size_t at = st[static_cast<size_t>(k)];
        return string(obj.str().substr(at, st[static_cast<size_t>(k) + 1] - at));
      }
    }
  }
  if (key.kind == Value::STRING && obj.kind != Value::NAMESPACE) {
    if (is_mutator(obj, key.str())) return undefined("unsafe attribute");
    if (has_method(obj, key.str())) return method(obj, key.str());
  }
  return undefined(key.kind == Value::STRING ? key.str() : to_str(key));
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<std::string_view> cs = chars(s);
    int64_t done = 0;
    for (size_t k = 0; k <= cs.size(); k++) {
      if (count < 0 || done < count) out += rep, done++;
      if (k < cs.size()) out.append(cs[k]);
      if (out.size() > kMaxString) fail("string longer than 16 MiB");
    }
    return out;
  }
  size_t p = 0;
  for (int64_t k = 0; count < 0 || k < count; k++) {
    size_t q = s.find(old, p);
    if (q == std::string::npos) break;
    out.append(s, p, q - p).append(rep);
    if (out.size() > kMaxString) fail("string longer than 16 MiB");
    p = q + old.size();
  }
  return out + s.substr(p);
}

// python's str.center: an odd padding puts the extra space on the left when the width is odd.
std::string center(const std::string& s, int64_t width) {
  int64_t n = static_cast<int64_t>(char_count(s));
  if (width <= n) return s;
  if (width > static_cast<int64_t>(kMaxString)) fail("string longer than 16 MiB");
  int64_t total = width - n, left = total / 2 + (total & width & 1);
  return std::string(static_cast<size_t>(left), ' ') + s +
         std::string(static_cast<size_t>(total - left), ' ');
}

// python's str.splitlines for the ASCII line breaks.
std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> lines;
  for (size_t p = 0; p < s.size();) {
    size_t q = s.find_first_of("\n\r\v\f\x1c\x1d\x1e", p);
    if (q == std::string::npos) q = s.size();
    lines.push_back(s.substr(p, q - p));
    p = q + (q + 1 < s.size() && s[q] == '\r' && s[q + 1] == '\n' ? 2 : 1);
  }
  return lines;
}

// ---- methods ----

namespace {

std::vector<std::string> split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (!sep || sep->is(Value::NONE)) {
    std::vector<std::string_view> cs = chars(s);
    auto space = [&](size_t k) { return is_py_space(code_point(cs[k], 0, cs[k].size())); };
    std::vector<std::pair<size_t, size_t>> words;  // character ranges
    for (size_t k = 0; k < cs.size();) {
      while (k < cs.size() && space(k)) k++;
      size_t b = k;
      while (k < cs.size() && !space(k)) k++;
      if (k > b) words.emplace_back(b, k);
    }
    auto text = [&](size_t a, size_t b) {
      std::string t;
      for (size_t k = a; k < b; k++) t.append(cs[k]);
      return t;
    };
    size_t n = words.size(), limit = maxsplit < 0 ? n : std::min(n, static_cast<size_t>(maxsplit) + 1);
    if (limit == 0) return out;
    if (!from_right) {
      for (size_t k = 0; k + 1 < limit; k++) out.push_back(text(words[k].first, words[k].second));
      out.push_back(strip(text(words[limit - 1].first, cs.size()), nullptr, false, true));
    } else {
      out.push_back(strip(text(0, words[n - limit].second), nullptr, true, false));
      for (size_t k = n - limit + 1; k < n; k++) out.push_back(text(words[k].first, words[k].second));
    }
    return out;
  }
  if (sep->kind != Value::STRING) fail("split: separator must be a string or None");
  const std::string& d = sep->str();
  if (d.empty()) fail("empty separator");
  if (!from_right) {
    size_t p = 0;
    for (int64_t k = 0; maxsplit < 0 || k < maxsplit; k++) {
      size_t q = s.find(d, p);
      if (q == std::string::npos) break;
      out.push_back(s.substr(p, q - p));
      p = q + d.size();
    }
    out.push_back(s.substr(p));
    return out;
  }
  size_t end = s.size();
  for (int64_t k = 0; maxsplit < 0 || k < maxsplit; k++) {
    size_t q = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
    if (q == std::string::npos) break;
    out.insert(out.begin(), s.substr(q + d.size(), end - q - d.size()));
    end = q;
  }
  out.insert(out.begin(), s.substr(0, end));
  return out;
}

List strings(const std::vector<std::string>& parts) {
  List out;
  for (const std::string& p : parts) out.push_back(string(p));
  return out;
}

// str.format with {}, {0} and {name} fields (no format specs).
std::string str_format(const std::string& f, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t p = 0; p < f.size(); p++) {
    char c = f[p];
    if ((c == '{' || c == '}') && p + 1 < f.size() && f[p + 1] == c) {
      out += c;
      p++;
      continue;
    }
    if (c == '}') fail("single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    size_t e = f.find('}', p);
    if (e == std::string::npos) fail("single '{' encountered in format string");
    std::string field = f.substr(p + 1, e - p - 1);
    if (field.find_first_of(":!.[") != std::string::npos) fail("format: field specs are not supported");
    const Value* v = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      size_t k = field.empty() ? auto_index++ : std::stoul(field);
      if (k < a.pos.size()) v = &a.pos[k];
    } else {
      for (const auto& [key, x] : a.kw)
        if (key == field) v = &x;
    }
    if (!v) fail(fmt::format("format: no argument for field '{}'", field));
    out += to_str(*v);
    p = e;
    if (out.size() > kMaxString) fail("string longer than 16 MiB");
  }
  return out;
}

Value str_method(Renderer& r, const std::string& s, const std::string& name, CallArgs& a) {
  const Value* a0 = arg(a, 0, "");
  auto chars_arg = [&]() -> const std::string* {
    return a0 && a0->kind == Value::STRING ? &a0->str() : nullptr;
  };
  auto all = [&](auto pred) {
    std::vector<std::string_view> cs = chars(s);
    return boolean(!cs.empty() && std::all_of(cs.begin(), cs.end(), [&](std::string_view c) {
      return pred(code_point(c, 0, c.size()));
    }));
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return string(strip(s, chars_arg(), name != "rstrip", name != "lstrip"));
  if (name == "split" || name == "rsplit")
    return list(strings(split(s, arg(a, 0, "sep"), int_arg(a, 1, "maxsplit", -1), name == "rsplit")));
  if (name == "splitlines") return list(strings(splitlines(s)));
  if (name == "startswith" || name == "endswith") {
    if (!a0) fail(fmt::format("{} takes at least 1 argument", name));
    List options = a0->kind == Value::TUPLE ? *a0->list : List{*a0};
    for (const Value& o : options) {
      if (o.kind != Value::STRING) fail(fmt::format("{} first arg must be str or a tuple of str", name));
      const std::string& x = o.str();
      if (name == "startswith" ? s.compare(0, x.size(), x) == 0
                               : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
        return boolean(true);
    }
    return boolean(false);
  }
  if (name == "upper") return string(upper(s));
  if (name == "lower") return string(lower(s));
  if (name == "title") return string(py_title(s));
  if (name == "capitalize") return string(capitalize(s));
  if (name == "replace")
    return r.made(replace_all(s, str_arg(a, 0, "old"), str_arg(a, 1, "new"), int_arg(a, 2, "count", -1)));
  if (name == "find" || name == "rfind" || name == "count") {
    std::string x = str_arg(a, 0, "sub");
    if (name == "count") {
      if (x.empty()) return integer(static_cast<int64_t>(char_count(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) n++;
      return integer(n);
    }
    size_t p = name == "rfind" ? s.rfind(x) : s.find(x);
    return integer(p == std::string::npos ? -1 : static_cast<int64_t>(char_count(s.substr(0, p))));
  }
  if (name == "format") return r.made(str_format(s, a));
  if (name == "join") {
    std::string out;
    List items = iterate(a0 ? *a0 : undefined("iterable"));
    for (size_t k = 0; k < items.size(); k++) {
      if (items[k].kind != Value::STRING) fail(fmt::format("sequence item {}: expected str instance", k));
      out += (k ? s : "") + items[k].str();
      if (out.size() > kMaxString) fail("string longer than 16 MiB");
    }
    return r.made(std::move(out));
  }
  if (name == "isdigit") return all([](uint32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all([](uint32_t c) { return is_cased(c); });
  if (name == "isspace") return all(is_py_space);
  fail(fmt::format("str has no method '{}'", name));
}

Value call_method(Renderer& r, const Value& self, const std::string& name, CallArgs& a) {
  if (self.kind == Value::STRING) return str_method(r, self.str(), name, a);
  if (self.kind == Value::DICT) {
    if (name == "get") {
      const Value* key = arg(a, 0, "key");
      if (!key) fail("get expected at least 1 argument");
      const Value* v = dict_find(*self.dict, *key);
      return v ? *v : arg_or(a, 1, "default", none());
    }
    if (name == "copy") return dict(self.dict->items);
    List out;
    for (const auto& [k, v] : self.dict->items)
      out.push_back(name == "items" ? list({k, v}, true) : name == "keys" ? k : v);
    return list(std::move(out));
  }
  if (name == "copy") return list(*self.list);
  const Value* x = arg(a, 0, "value");
  if (!x) fail(fmt::format("{} expected 1 argument", name));
  for (size_t k = 0; k < self.list->size(); k++)
    if (equals((*self.list)[k], *x)) {
      if (name == "index") return integer(static_cast<int64_t>(k));
    }
  if (name == "index") fail("value is not in list");
  return integer(
      std::count_if(self.list->begin(), self.list->end(), [&](const Value& v) { return equals(v, *x); }));
}

}  // namespace

// ---- globals ----

namespace {

std::vector<std::pair<Value, Value>> dict_args(const CallArgs& a) {
  std::vector<std::pair<Value, Value>> items;
  auto put = [&](Value k, Value v) {
    for (auto& kv : items)
      if (equals(kv.first, k)) return void(kv.second = std::move(v));
    items.emplace_back(std::move(k), std::move(v));
  };
  if (!a.pos.empty()) {
    const Value& src = a.pos[0];
    if (src.kind == Value::DICT || src.kind == Value::NAMESPACE) {
      for (const auto& [k, v] : src.dict->items) put(k, v);
    } else {
      for (const Value& pair : iterate(src)) {
        List kv = iterate(pair);
        if (kv.size() != 2) fail("dictionary update sequence element has the wrong length");
        put(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kw) put(string(k), v);
  return items;
}

Value do_range(Renderer& r, CallArgs& a) {
  for (const Value& v : a.pos)
    if (!v.is_int()) fail(fmt::format("'{}' object cannot be interpreted as an integer", type_name(v)));
  if (a.pos.empty() || a.pos.size() > 3) fail("range expected 1 to 3 arguments");
  int64_t start = a.pos.size() > 1 ? a.pos[0].i : 0, stop = a.pos.size() > 1 ? a.pos[1].i : a.pos[0].i;
  int64_t step = a.pos.size() > 2 ? a.pos[2].i : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  List out;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    if (out.size() >= kMaxItems) fail("range longer than 2^20 items");
    out.push_back(integer(k));
    if ((step > 0 && k > INT64_MAX - step) || (step < 0 && k < INT64_MIN - step)) break;
  }
  r.step(static_cast<int64_t>(out.size()));
  return list(std::move(out));
}

Value strftime_now(Renderer&, CallArgs& a) {
  std::string f = str_arg(a, 0, "format");
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[512];
  size_t n = f.empty() ? 0 : std::strftime(buf, sizeof buf, f.c_str(), &tm);
  if (n == 0 && !f.empty()) fail("strftime_now: format too long");
  return string(std::string(buf, n));
}

}  // namespace

void install_globals(Scope& g) {
  g.vars["range"] = func("range", do_range);
  g.vars["namespace"] =
      func("namespace", [](Renderer& r, CallArgs& a) { return r.make_namespace(dict_args(a)); });
  g.vars["dict"] = func("dict", [](Renderer&, CallArgs& a) { return dict(dict_args(a)); });
  g.vars["raise_exception"] = func("raise_exception", [](Renderer&, CallArgs& a) -> Value {
    throw ValueError("llm", "chat template: " + to_str(arg_or(a, 0, "message", string(""))));
  });
  g.vars["strftime_now"] = func("strftime_now", strftime_now);
}

}  // namespace tg::llm::jinja
