#pragma once
// What the evaluator's files share: python's values, the scopes and the renderer, and the operations the
// renderer, the filters and the methods call on each other. Internal to the llm module.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "llm/chat_template_ast.hpp"

namespace tg::llm::jinja {

inline constexpr size_t kMaxString = 16u << 20;  // any one string, the output included
// All strings made while rendering: appending to a growing string in a loop is common, and quadratic.
inline constexpr size_t kMaxBytes = size_t{8} << 30;
inline constexpr size_t kMaxItems = 1u << 20;    // any one list
inline constexpr int64_t kMaxSteps = 5'000'000;  // loop iterations, calls and items touched by filters
inline constexpr int kMaxCallDepth = 64;         // macro recursion
inline constexpr int kMaxNesting = 100;          // lists and dicts in lists and dicts

// A runtime error without its line: eval() adds the line of the expression it was evaluating.
struct Failure {
  std::string what;
};
[[noreturn]] inline void fail(std::string what) { throw Failure{std::move(what)}; }

struct Value;
struct Dict;
struct Func;
using List = std::vector<Value>;

struct Value {
  enum Kind : uint8_t { UNDEFINED, NONE, BOOL, INT, FLOAT, STRING, LIST, TUPLE, DICT, NAMESPACE, FUNC };
  Kind kind = UNDEFINED;
  bool markup = false;  // jinja2's Markup (from |safe): `+` with a plain string escapes the plain side
  uint8_t depth = 0;    // containers nested in this one, capped so printing and freeing cannot recurse deeply
  int64_t i = 0;        // BOOL and INT
  double f = 0;
  std::shared_ptr<const std::string> s = nullptr;  // STRING; UNDEFINED: what was missing
  std::shared_ptr<const List> list = nullptr;      // LIST, TUPLE
  std::shared_ptr<Dict> dict = nullptr;  // DICT; NAMESPACE, the one mutable value, shared by its copies
  std::shared_ptr<const Func> fn = nullptr;

  const std::string& str() const {
    static const std::string empty;
    return s ? *s : empty;
  }
  bool is(Kind k) const { return kind == k; }
  bool is_seq() const { return kind == LIST || kind == TUPLE; }
  bool is_num() const { return kind == BOOL || kind == INT || kind == FLOAT; }
  bool is_int() const { return kind == BOOL || kind == INT; }
  double num() const { return kind == FLOAT ? f : static_cast<double>(i); }
};

struct Dict {
  std::vector<std::pair<Value, Value>> items;
};

class Renderer;
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};
struct Func {
  std::string name;
  std::function<Value(Renderer&, CallArgs&)> call;
};

inline Value undefined(std::string what) {
  return {.s = std::make_shared<const std::string>(std::move(what))};
}
inline Value none() { return {.kind = Value::NONE}; }
inline Value boolean(bool b) { return {.kind = Value::BOOL, .i = b}; }
inline Value integer(int64_t i) { return {.kind = Value::INT, .i = i}; }
inline Value number(double f) { return {.kind = Value::FLOAT, .f = f}; }
inline Value string(std::string s, bool markup = false) {
  if (s.size() > kMaxString) fail("string longer than 16 MiB");
  return {.kind = Value::STRING, .markup = markup, .s = std::make_shared<const std::string>(std::move(s))};
}
Value list(List items, bool tuple = false);
Value dict(std::vector<std::pair<Value, Value>> items = {}, bool ns = false);
Value func(std::string name, std::function<Value(Renderer&, CallArgs&)> call);
uint8_t nesting(const Value& item, uint8_t depth);
std::string_view type_name(const Value& v);

// UTF-8 and python's character classes (chat_template_value.cpp).
size_t char_len(std::string_view s, size_t p);
uint32_t code_point(std::string_view s, size_t p, size_t n);
std::vector<size_t> char_starts(std::string_view s);
std::vector<std::string_view> chars(std::string_view s);
size_t char_count(std::string_view s);
bool is_py_space(uint32_t c);
bool is_word_char(uint32_t c);
uint32_t to_upper(uint32_t c);
uint32_t to_lower(uint32_t c);
bool is_cased(uint32_t c);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string py_title(std::string_view s);
std::string strip(std::string_view s, const std::string* set, bool left, bool right);

// python str(), repr() and json.
std::string to_str(const Value& v);
std::string repr(const Value& v);
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
void to_json(std::string& out, const Value& v, const JsonOptions& o, int level);
std::string html_escape(std::string_view s);

// python truthiness, equality, ordering and containers.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
const Value* dict_find(const Dict& d, const Value& key);
int compare(const Value& a, const Value& b, std::string_view op = "<");
List iterate(const Value& v);
int64_t length(const Value& v);
bool contains(const Value& container, const Value& item);
std::vector<int64_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step);

// Arguments.
const Value* arg(const CallArgs& a, size_t k, std::string_view name);
Value arg_or(const CallArgs& a, size_t k, std::string_view name, Value fallback);
bool flag(const CallArgs& a, size_t k, std::string_view name);
int64_t int_arg(const CallArgs& a, size_t k, std::string_view name, int64_t fallback);
std::string str_arg(const CallArgs& a, size_t k, std::string_view name);

// Scopes and the renderer (chat_template_render.cpp).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { NORMAL, BREAK, CONTINUE };

class Renderer {
 public:
  void step(int64_t n = 1) {
    if ((steps_ += n) > kMaxSteps) fail("template ran too long");
  }
  void charge(size_t bytes) {
    if ((bytes_ += bytes) > kMaxBytes) fail("template made too much text");
  }
  Value made(std::string s, bool markup = false) {
    charge(s.size());
    return string(std::move(s), markup);
  }

  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  Value eval(const Expr& e, const ScopePtr& scope);

  Value call(const Value& fn, CallArgs& a) {
    if (fn.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", fn.str()));
    if (fn.kind != Value::FUNC) fail(fmt::format("'{}' object is not callable", type_name(fn)));
    step();
    return fn.fn->call(*this, a);
  }

 private:
  void emit(std::string& out, std::string_view text);
  static void assign(const ScopePtr& scope, const std::vector<std::string>& names, const Value& v);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Value render_block(const Stmt& s, const ScopePtr& scope);
  Value loop_info(const List& items, size_t k);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  Value macro(const Stmt& s, const ScopePtr& scope, const std::string& name);
  CallArgs eval_args(const Expr& e, const ScopePtr& scope);
  List eval_items(const Expr& e, const ScopePtr& scope, size_t from = 0);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_slice(const Expr& e, const ScopePtr& scope);

  int64_t steps_ = 0;
  size_t bytes_ = 0;
  int call_depth_ = 0;
  std::vector<Value> block_values_;
  // Namespaces (which can hold themselves) and scopes holding macros (which hold their scope): cleared at the
  // end to break those cycles.
  std::vector<std::shared_ptr<Dict>> namespaces_;
  std::vector<ScopePtr> macro_scopes_;

 public:
  Value make_namespace(std::vector<std::pair<Value, Value>> items) {
    Value ns = dict(std::move(items), true);
    namespaces_.push_back(ns.dict);
    return ns;
  }
  ~Renderer() {
    for (const auto& d : namespaces_) d->items.clear();
    for (const auto& s : macro_scopes_) s->vars.clear();
  }
};

// Arithmetic (chat_template_render.cpp).
Value binary(Renderer& r, const std::string& op, const Value& a, const Value& b);
Value percent_format(Renderer& r, const Value& fmt_str, const Value& args);

// Attributes, items, methods and globals (chat_template_methods.cpp).
Value getattr(const Value& obj, const std::string& name);
Value getitem(const Value& obj, const Value& key);
bool has_method(const Value& obj, const std::string& name);
std::string replace_all(const std::string& s, const std::string& old, const std::string& rep, int64_t count);
std::string center(const std::string& s, int64_t width);
std::vector<std::string> splitlines(const std::string& s);
void install_globals(Scope& g);

// Filters and tests (chat_template_filters.cpp).
Value apply_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& a);
bool apply_test(Renderer& r, const std::string& name, const Value& v, CallArgs& a);

}  // namespace tg::llm::jinja
