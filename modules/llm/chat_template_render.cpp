// Evaluation of parsed chat templates as jinja2 runs them in transformers' sandbox: statements, expressions,
// loops and macros, and python's arithmetic; the values are chat_template_value.cpp.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"
#include "llm/chat_template_eval.hpp"

namespace tg::llm::jinja {

namespace {

ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

}  // namespace

Flow Renderer::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    try {
      Flow f = exec(*s, scope, out);
      if (f != Flow::NORMAL) return f;
    } catch (const Failure& e) {
      throw ValueError("llm", fmt::format("chat template line {}: {}", s->line, e.what));
    }
  }
  return Flow::NORMAL;
}

Value Renderer::eval(const Expr& e, const ScopePtr& scope) {
  try {
    return eval_inner(e, scope);
  } catch (const Failure& f) {
    throw ValueError("llm", fmt::format("chat template line {}: {}", e.line, f.what));
  }
}

void Renderer::emit(std::string& out, std::string_view text) {
  if (out.size() + text.size() > kMaxString) fail("output longer than 16 MiB");
  charge(text.size());
  out.append(text);
}

void Renderer::assign(const ScopePtr& scope, const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    scope->vars[names[0]] = v;
    return;
  }
  List items = iterate(v);
  if (items.size() != names.size())
    fail(fmt::format("cannot unpack {} values into {} names", items.size(), names.size()));
  for (size_t k = 0; k < names.size(); k++) scope->vars[names[k]] = items[k];
}

Flow Renderer::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  switch (s.kind) {
    case StmtKind::TEXT:
      emit(out, s.text);
      return Flow::NORMAL;
    case StmtKind::OUTPUT:
      emit(out, to_str(eval(*s.exprs[0], scope)));
      return Flow::NORMAL;
    case StmtKind::IF:
      for (size_t k = 0; k < s.bodies.size(); k++)
        if (k == s.exprs.size() || truthy(eval(*s.exprs[k], scope))) return exec(s.bodies[k], scope, out);
      return Flow::NORMAL;
    case StmtKind::FOR:
      return exec_for(s, scope, out);
    case StmtKind::SET:
      assign(scope, s.names, eval(*s.exprs[0], scope));
      return Flow::NORMAL;
    case StmtKind::SET_ATTR: {
      const Value* ns = scope->find(s.text);
      if (!ns || ns->kind != Value::NAMESPACE) fail("cannot assign attribute on non-namespace object");
      Value v = eval(*s.exprs[0], scope);
      nesting(v, 0);
      auto& items = ns->dict->items;
      auto it =
          std::find_if(items.begin(), items.end(), [&](const auto& kv) { return kv.first.str() == s.attr; });
      if (it != items.end())
        it->second = std::move(v);
      else
        items.emplace_back(string(s.attr), std::move(v));
      return Flow::NORMAL;
    }
    case StmtKind::SET_BLOCK:
      scope->vars[s.text] = render_block(s, scope);
      return Flow::NORMAL;
    case StmtKind::FILTER_BLOCK:
      emit(out, to_str(render_block(s, scope)));
      return Flow::NORMAL;
    case StmtKind::MACRO:
      scope->vars[s.text] = macro(s, scope, s.text);
      return Flow::NORMAL;
    case StmtKind::CALL_BLOCK: {
      const Expr& call_expr = *s.exprs[0];
      CallArgs a = eval_args(call_expr, scope);
      a.kw.emplace_back("caller", macro(s, scope, "caller"));
      emit(out, to_str(call(eval(*call_expr.args[0], scope), a)));
      return Flow::NORMAL;
    }
    case StmtKind::SCOPE: {
      ScopePtr inner = child(scope);
      for (size_t k = 0; k < s.names.size(); k++) inner->vars[s.names[k]] = eval(*s.exprs[k], scope);
      return exec(s.bodies[0], inner, out);
    }
    case StmtKind::BREAK:
      return Flow::BREAK;
    case StmtKind::CONTINUE:
      return Flow::CONTINUE;
  }
  return Flow::NORMAL;
}

// A block set's or filter block's body, rendered in a scope of its own and filtered.
Value Renderer::render_block(const Stmt& s, const ScopePtr& scope) {
  std::string text;
  exec(s.bodies[0], child(scope), text);
  if (s.exprs[0]) {
    block_values_.push_back(string(std::move(text)));
    Value v = eval(*s.exprs[0], scope);
    block_values_.pop_back();
    return v;
  }
  return string(std::move(text));
}

Value Renderer::loop_info(const List& items, size_t k) {
  int64_t n = static_cast<int64_t>(items.size()), i = static_cast<int64_t>(k);
  std::vector<std::pair<Value, Value>> d = {
      {string("index"), integer(i + 1)},
      {string("index0"), integer(i)},
      {string("revindex"), integer(n - i)},
      {string("revindex0"), integer(n - i - 1)},
      {string("first"), boolean(k == 0)},
      {string("last"), boolean(i == n - 1)},
      {string("length"), integer(n)},
      {string("depth"), integer(1)},
      {string("depth0"), integer(0)},
      {string("previtem"), k > 0 ? items[k - 1] : undefined("there is no previous item")},
      {string("nextitem"), i + 1 < n ? items[k + 1] : undefined("there is no next item")},
  };
  d.emplace_back(string("cycle"), func("loop.cycle", [k](Renderer&, CallArgs& a) {
                   if (a.pos.empty()) fail("no items for cycling given");
                   return a.pos[k % a.pos.size()];
                 }));
  return dict(std::move(d));
}

Flow Renderer::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  List items = iterate(eval(*s.exprs[0], scope));
  if (s.exprs[1]) {
    List kept;
    for (const Value& item : items) {
      step();
      ScopePtr test = child(scope);
      assign(test, s.names, item);
      if (truthy(eval(*s.exprs[1], test))) kept.push_back(item);
    }
    items = std::move(kept);
  }
  for (size_t k = 0; k < items.size(); k++) {
    step();
    ScopePtr inner = child(scope);
    if (s.uses_loop) inner->vars["loop"] = loop_info(items, k);
    assign(inner, s.names, items[k]);
    if (exec(s.bodies[0], inner, out) == Flow::BREAK) break;
  }
  if (items.empty()) return exec(s.bodies[1], child(scope), out);
  return Flow::NORMAL;
}

// A macro (or a call block's caller): each call renders the body in a fresh scope under the defining one.
Value Renderer::macro(const Stmt& s, const ScopePtr& scope, const std::string& name) {
  const Stmt* m = &s;
  macro_scopes_.push_back(scope);
  bool is_caller = s.kind == StmtKind::CALL_BLOCK;
  size_t first_default = is_caller ? 1 : 0;  // a call block's exprs[0] is its call
  return func(name, [m, scope, name, first_default](Renderer& r, CallArgs& a) {
    if (r.call_depth_ >= kMaxCallDepth) fail(fmt::format("macro '{}' recursed too deeply", name));
    ScopePtr inner = child(scope);
    List varargs;
    for (size_t k = 0; k < a.pos.size(); k++) {
      if (k < m->names.size())
        inner->vars[m->names[k]] = a.pos[k];
      else
        varargs.push_back(a.pos[k]);
    }
    std::vector<std::pair<Value, Value>> kwargs;
    for (auto& [key, v] : a.kw) {
      bool param = std::find(m->names.begin(), m->names.end(), key) != m->names.end();
      if (param || key == "caller")
        inner->vars[key] = v;
      else
        kwargs.emplace_back(string(key), v);
    }
    for (size_t k = a.pos.size(); k < m->names.size(); k++) {
      if (inner->vars.count(m->names[k])) continue;
      const Expr* d = k + first_default < m->exprs.size() ? m->exprs[k + first_default].get() : nullptr;
      inner->vars[m->names[k]] = d ? r.eval(*d, inner) : undefined(m->names[k]);
    }
    inner->vars["varargs"] = list(std::move(varargs), true);
    inner->vars["kwargs"] = dict(std::move(kwargs));
    std::string text;
    r.call_depth_++;
    try {
      r.exec(m->bodies[0], inner, text);
    } catch (...) {
      r.call_depth_--;
      throw;
    }
    r.call_depth_--;
    return string(std::move(text));
  });
}

CallArgs Renderer::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs a;
  for (size_t k = 1; k < e.args.size(); k++) a.pos.push_back(eval(*e.args[k], scope));
  for (const auto& [key, x] : e.kwargs) a.kw.emplace_back(key, eval(*x, scope));
  return a;
}

List Renderer::eval_items(const Expr& e, const ScopePtr& scope, size_t from) {
  List items;
  for (size_t k = from; k < e.args.size(); k++) items.push_back(eval(*e.args[k], scope));
  return items;
}

Value Renderer::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::NONE_LIT:
      return none();
    case ExprKind::BOOL_LIT:
      return boolean(e.i != 0);
    case ExprKind::INT_LIT:
      return integer(e.i);
    case ExprKind::FLOAT_LIT:
      return number(e.f);
    case ExprKind::STR_LIT:
      return string(e.s);
    case ExprKind::NAME: {
      const Value* v = scope->find(e.s);
      return v ? *v : undefined(e.s);
    }
    case ExprKind::LIST:
      return list(eval_items(e, scope));
    case ExprKind::TUPLE:
      return list(eval_items(e, scope), true);
    case ExprKind::DICT: {
      Value d = dict();
      for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
        Value key = eval(*e.args[k], scope);
        if (key.is_seq() || key.kind == Value::DICT)
          fail(fmt::format("unhashable type: '{}'", type_name(key)));
        Value v = eval(*e.args[k + 1], scope);
        auto& items = d.dict->items;
        auto it =
            std::find_if(items.begin(), items.end(), [&](const auto& kv) { return equals(kv.first, key); });
        if (it != items.end())
          it->second = v;
        else
          items.emplace_back(std::move(key), std::move(v));
      }
      return d;
    }
    case ExprKind::GETATTR:
      return getattr(eval(*e.args[0], scope), e.s);
    case ExprKind::GETITEM:
      return getitem(eval(*e.args[0], scope), eval(*e.args[1], scope));
    case ExprKind::SLICE:
      return eval_slice(e, scope);
    case ExprKind::CALL: {
      Value fn = eval(*e.args[0], scope);
      CallArgs a = eval_args(e, scope);
      return call(fn, a);
    }
    case ExprKind::FILTER: {
      Value base = eval(*e.args[0], scope);
      CallArgs a = eval_args(e, scope);
      step();
      return apply_filter(*this, e.s, base, a);
    }
    case ExprKind::TEST: {
      Value base = eval(*e.args[0], scope);
      CallArgs a = eval_args(e, scope);
      return boolean(apply_test(*this, e.s, base, a) != (e.i != 0));
    }
    case ExprKind::NOT:
      return boolean(!truthy(eval(*e.args[0], scope)));
    case ExprKind::NEG:
    case ExprKind::POS: {
      Value v = eval(*e.args[0], scope);
      if (e.kind == ExprKind::POS && v.is_num()) return v.kind == Value::BOOL ? integer(v.i) : v;
      if (v.kind == Value::FLOAT) return number(-v.f);
      if (v.is_int() && v.i != INT64_MIN) return integer(-v.i);
      fail(fmt::format("bad operand type for unary -: '{}'", type_name(v)));
    }
    case ExprKind::BINARY:
      return binary(*this, e.s, eval(*e.args[0], scope), eval(*e.args[1], scope));
    case ExprKind::AND:
    case ExprKind::OR: {
      Value a = eval(*e.args[0], scope);
      return truthy(a) == (e.kind == ExprKind::OR) ? a : eval(*e.args[1], scope);
    }
    case ExprKind::COMPARE:
      return eval_compare(e, scope);
    case ExprKind::COND:
      if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
      return e.args[2] ? eval(*e.args[2], scope) : undefined("the inline if-expression had no else");
    case ExprKind::BLOCK_VALUE:
      return block_values_.back();
  }
  return undefined("");
}

Value Renderer::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.args[0], scope);
  for (size_t k = 0; k < e.ops.size(); k++) {
    Value right = eval(*e.args[k + 1], scope);
    const std::string& op = e.ops[k];
    bool ok = op == "=="      ? equals(left, right)
              : op == "!="    ? !equals(left, right)
              : op == "in"    ? contains(right, left)
              : op == "notin" ? !contains(right, left)
              : op == "<"     ? compare(left, right, op) < 0
              : op == "<="    ? compare(left, right, op) <= 0
              : op == ">"     ? compare(left, right, op) > 0
                              : compare(left, right, op) >= 0;
    if (!ok) return boolean(false);
    left = std::move(right);
  }
  return boolean(true);
}

Value Renderer::eval_slice(const Expr& e, const ScopePtr& scope) {
  Value base = eval(*e.args[0], scope);
  Value bounds[3];
  for (int k = 0; k < 3; k++) {
    bounds[k] = e.args[k + 1] ? eval(*e.args[k + 1], scope) : none();
    if (!bounds[k].is_int() && !bounds[k].is(Value::NONE)) return undefined("slice");
  }
  if (base.kind == Value::UNDEFINED) fail(fmt::format("'{}' is undefined", base.str()));
  if (base.is_seq()) {
    List out;
    for (int64_t k : slice_indices(static_cast<int64_t>(base.list->size()), bounds[0], bounds[1], bounds[2]))
      out.push_back((*base.list)[static_cast<size_t>(k)]);
    return list(std::move(out), base.kind == Value::TUPLE);
  }
  if (base.kind != Value::STRING) return undefined("slice");
  std::vector<std::string_view> cs = chars(base.str());
  std::string out;
  for (int64_t k : slice_indices(static_cast<int64_t>(cs.size()), bounds[0], bounds[1], bounds[2]))
    out.append(cs[static_cast<size_t>(k)]);
  return string(std::move(out));
}

// ---- arithmetic ----

namespace {

// python ints are unbounded; past int64 we stop rather than wrap.
template <class Op>
Value checked_int(Op op, int64_t a, int64_t b) {
  int64_t x = 0;
  if (op(a, b, &x)) fail("integer overflow");
  return integer(x);
}
bool add_ovf(int64_t a, int64_t b, int64_t* x) { return __builtin_add_overflow(a, b, x); }
bool sub_ovf(int64_t a, int64_t b, int64_t* x) { return __builtin_sub_overflow(a, b, x); }
bool mul_ovf(int64_t a, int64_t b, int64_t* x) { return __builtin_mul_overflow(a, b, x); }

Value repeat(Renderer& r, const Value& seq, int64_t n) {
  if (n <= 0) return seq.kind == Value::STRING ? string("") : list({}, seq.kind == Value::TUPLE);
  if (seq.kind == Value::STRING) {
    if (seq.str().size() * static_cast<size_t>(std::min<int64_t>(n, kMaxString + 1)) > kMaxString)
      fail("string longer than 16 MiB");
    std::string out;
    for (int64_t k = 0; k < n; k++) out += seq.str();
    return r.made(std::move(out));
  }
  if (seq.list->size() * static_cast<size_t>(std::min<int64_t>(n, kMaxItems + 1)) > kMaxItems)
    fail("list longer than 2^20 items");
  List out;
  for (int64_t k = 0; k < n; k++) out.insert(out.end(), seq.list->begin(), seq.list->end());
  r.step(static_cast<int64_t>(out.size()));
  return list(std::move(out), seq.kind == Value::TUPLE);
}

}  // namespace

Value binary(Renderer& r, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return r.made(to_str(a) + to_str(b));
  if (a.kind == Value::UNDEFINED || b.kind == Value::UNDEFINED)
    fail(fmt::format("'{}' is undefined", (a.kind == Value::UNDEFINED ? a : b).str()));
  auto unsupported = [&]() -> Value {
    fail(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b)));
  };
  if (a.is_num() && b.is_num()) {
    bool ints = a.is_int() && b.is_int();
    if (op == "+") return ints ? checked_int(add_ovf, a.i, b.i) : number(a.num() + b.num());
    if (op == "-") return ints ? checked_int(sub_ovf, a.i, b.i) : number(a.num() - b.num());
    if (op == "*") return ints ? checked_int(mul_ovf, a.i, b.i) : number(a.num() * b.num());
    if ((op == "/" || op == "//" || op == "%") && (ints ? b.i == 0 : b.num() == 0)) fail("division by zero");
    if (op == "/") return number(a.num() / b.num());
    if (op == "//" && ints) {
      if (a.i == INT64_MIN && b.i == -1) fail("integer overflow");
      int64_t q = a.i / b.i;
      return integer(q - ((a.i % b.i != 0) && ((a.i < 0) != (b.i < 0))));
    }
    if (op == "//") return number(std::floor(a.num() / b.num()));
    if (op == "%" && ints) {
      if (b.i == -1) return integer(0);
      int64_t m = a.i % b.i;
      return integer(m != 0 && ((m < 0) != (b.i < 0)) ? m + b.i : m);
    }
    if (op == "%") {
      double m = std::fmod(a.num(), b.num());
      return number(m != 0 && ((m < 0) != (b.num() < 0)) ? m + b.num() : m);
    }
    if (op == "**" && ints && b.i >= 0) {
      if (a.i == 0 || a.i == 1 || a.i == -1)
        return integer(b.i == 0 ? 1 : a.i == -1 && b.i % 2 == 0 ? 1 : a.i);
      Value out = integer(1);
      for (int64_t k = 0; k < b.i; k++) out = checked_int(mul_ovf, out.i, a.i);  // |a| >= 2 overflows by 63
      return out;
    }
    if (op == "**") return number(std::pow(a.num(), b.num()));
    return unsupported();
  }
  if (op == "+" && a.kind == Value::STRING && b.kind == Value::STRING) {
    if (a.markup == b.markup) return r.made(a.str() + b.str(), a.markup);
    return r.made((a.markup ? a.str() : html_escape(a.str())) + (b.markup ? b.str() : html_escape(b.str())),
                  true);
  }
  if (op == "+" && a.is_seq() && a.kind == b.kind) {
    List out = *a.list;
    out.insert(out.end(), b.list->begin(), b.list->end());
    r.step(static_cast<int64_t>(out.size()));
    return list(std::move(out), a.kind == Value::TUPLE);
  }
  if (op == "*" && (a.kind == Value::STRING || a.is_seq()) && b.is_int()) return repeat(r, a, b.i);
  if (op == "*" && (b.kind == Value::STRING || b.is_seq()) && a.is_int()) return repeat(r, b, a.i);
  if (op == "%" && a.kind == Value::STRING) return percent_format(r, a, b);
  return unsupported();
}

// python's `fmt % args` for %s, %r, %d and %i.
Value percent_format(Renderer& r, const Value& fmt_str, const Value& args) {
  List items = args.kind == Value::TUPLE ? *args.list : List{args};
  const std::string& f = fmt_str.str();
  std::string out;
  size_t next = 0;
  for (size_t p = 0; p < f.size(); p++) {
    if (f[p] != '%') {
      out += f[p];
      continue;
    }
    char c = p + 1 < f.size() ? f[++p] : 0;
    if (c == '%') {
      out += '%';
      continue;
    }
    if (c != 's' && c != 'r' && c != 'd' && c != 'i')
      fail(fmt::format("unsupported format character '%{}'", c));
    if (next >= items.size()) fail("not enough arguments for format string");
    const Value& v = items[next++];
    if ((c == 'd' || c == 'i') && !v.is_num()) fail(fmt::format("%{} format: a real number is required", c));
    out += c == 'r'                 ? repr(v)
           : (c == 'd' || c == 'i') ? to_str(integer(static_cast<int64_t>(v.num())))
                                    : to_str(v);
  }
  if (next < items.size()) fail("not all arguments converted during string formatting");
  return r.made(std::move(out));
}

std::string render(const Program& program, std::span<const ChatMessage> messages, bool add_generation_prompt,
                   const std::string& bos, const std::string& eos) {
  auto globals = std::make_shared<Scope>();
  install_globals(*globals);
  ScopePtr root = child(globals);
  List msgs;
  for (const ChatMessage& m : messages)
    msgs.push_back(dict({{string("role"), string(m.role)}, {string("content"), string(m.content)}}));
  root->vars["messages"] = list(std::move(msgs));
  root->vars["add_generation_prompt"] = boolean(add_generation_prompt);
  root->vars["bos_token"] = string(bos);
  root->vars["eos_token"] = string(eos);
  Renderer r;
  std::string out;
  try {
    r.exec(program.body, root, out);
  } catch (const Failure& f) {  // from outside any statement, which cannot happen, but never let it escape
    throw ValueError("llm", "chat template: " + f.what);
  }
  return out;
}

}  // namespace tg::llm::jinja
