// Parsing of chat templates' tokens into statements and expressions, following jinja2's parser, and the
// checks jinja2 makes when compiling; the lexer is chat_template_lex.cpp.
#include <algorithm>
#include <initializer_list>
#include <memory>

#include <fmt/format.h>

#include "llm/chat_template_parse.hpp"

namespace tg::llm::jinja {

namespace {

constexpr int kMaxDepth = 200;  // nesting of expressions and blocks, so hostile input cannot blow the stack

// Chains like a.b.c... or 1 + 1 + ... nest without recursing in the parser, so depth is counted here too:
// evaluating or freeing the tree recurses once per level.
void adopt(Expr& parent, ExprPtr child) {
  if (child) {
    parent.depth = std::max(parent.depth, child->depth + 1);
    if (parent.depth > kMaxDepth) syntax_error(child->line, "expression nested too deeply");
  }
  parent.args.push_back(std::move(child));
}

ExprPtr make(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

ExprPtr make(ExprKind kind, int line, ExprPtr a, ExprPtr b = nullptr) {
  auto e = make(kind, line);
  adopt(*e, std::move(a));
  if (b) adopt(*e, std::move(b));
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  Body parse_template() {
    Body body = parse_body({});
    if (peek().type != Tok::END) syntax_error(peek().line, fmt::format("unexpected tag '{}'", peek().text));
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) syntax_error(p_.peek().line, "template nested too deeply");
    }
    ~DepthGuard() { p_.depth_--; }
    Parser& p_;
  };

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) pos_++;
    return t;
  }
  bool at_op(std::string_view op, size_t k = 0) const {
    return peek(k).type == Tok::OP && peek(k).text == op;
  }
  bool at_name(std::string_view name, size_t k = 0) const {
    return peek(k).type == Tok::NAME && peek(k).text == name;
  }
  bool skip_op(std::string_view op) { return at_op(op) && (next(), true); }
  bool skip_name(std::string_view name) { return at_name(name) && (next(), true); }
  [[noreturn]] void unexpected(std::string_view wanted) const {
    const Token& t = peek();
    std::string got = t.type == Tok::END         ? "end of template"
                      : t.type == Tok::VAR_END   ? "end of print statement"
                      : t.type == Tok::BLOCK_END ? "end of statement block"
                                                 : fmt::format("'{}'", t.text);
    syntax_error(t.line, fmt::format("expected {}, got {}", wanted, got));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected(fmt::format("'{}'", op));
  }
  void expect(Tok type, std::string_view what) {
    if (peek().type != type) unexpected(what);
    next();
  }
  std::string expect_ident() {
    if (peek().type != Tok::NAME) unexpected("a name");
    return next().text;
  }

  // Statements up to a `{% name %}` with name in ends, which is left unread after its `{%`.
  Body parse_body(std::initializer_list<std::string_view> ends) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.type == Tok::END) {
        if (ends.size())
          syntax_error(t.line, fmt::format("unexpected end of template, expected '{}'", *ends.begin()));
        return body;
      }
      if (t.type == Tok::TEXT) {
        auto s = std::make_unique<Stmt>();
        s->line = t.line;
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == Tok::VAR_BEGIN) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::OUTPUT;
        s->line = next().line;
        s->exprs.push_back(parse_tuple());
        expect(Tok::VAR_END, "end of print statement");
        body.push_back(std::move(s));
      } else {
        next();
        if (peek().type == Tok::NAME && std::find(ends.begin(), ends.end(), peek().text) != ends.end())
          return body;
        body.push_back(parse_statement());
      }
    }
  }

  // The closing `{% name %}` of a block.
  void end_tag(std::string_view name) {
    if (!skip_name(name)) unexpected(fmt::format("'{}'", name));
    expect(Tok::BLOCK_END, "end of statement block");
  }

  StmtPtr parse_statement() {
    const Token& t = peek();
    if (t.type != Tok::NAME) unexpected("a tag name");
    auto s = std::make_unique<Stmt>();
    s->line = t.line;
    std::string tag = next().text;
    if (tag == "if") {
      parse_if(*s);
    } else if (tag == "for") {
      parse_for(*s);
    } else if (tag == "set") {
      parse_set(*s);
    } else if (tag == "macro") {
      parse_macro(*s);
    } else if (tag == "call") {
      parse_call_block(*s);
    } else if (tag == "filter") {
      s->kind = StmtKind::FILTER_BLOCK;
      s->exprs.push_back(parse_filter(make(ExprKind::BLOCK_VALUE, s->line), true));
      s->bodies.push_back(block_body("endfilter"));
    } else if (tag == "generation" || tag == "with") {
      parse_scope(*s, tag);
    } else if (tag == "break" || tag == "continue") {
      s->kind = tag == "break" ? StmtKind::BREAK : StmtKind::CONTINUE;
      expect(Tok::BLOCK_END, "end of statement block");
    } else {
      syntax_error(s->line, fmt::format("unknown or unsupported tag '{}'", tag));
    }
    return s;
  }

  Body block_body(std::string_view end) {
    expect(Tok::BLOCK_END, "end of statement block");
    Body body = parse_body({end});
    end_tag(end);
    return body;
  }

  void parse_if(Stmt& s) {
    s.kind = StmtKind::IF;
    for (;;) {
      s.exprs.push_back(parse_tuple(false));
      expect(Tok::BLOCK_END, "end of statement block");
      s.bodies.push_back(parse_body({"elif", "else", "endif"}));
      std::string tag = next().text;
      if (tag == "elif") continue;
      if (tag == "else") {
        expect(Tok::BLOCK_END, "end of statement block");
        s.bodies.push_back(parse_body({"endif"}));
        next();
      }
      expect(Tok::BLOCK_END, "end of statement block");
      return;
    }
  }

  // Loop and set targets: a name or names separated by commas, optionally in parentheses.
  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    do {
      if (paren && at_op(")")) break;
      names.push_back(expect_ident());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  void parse_for(Stmt& s) {
    s.kind = StmtKind::FOR;
    s.names = parse_targets();
    if (!skip_name("in")) unexpected("'in'");
    s.exprs.push_back(parse_tuple(false, {"recursive"}));
    s.exprs.push_back(skip_name("if") ? parse_expression() : nullptr);
    if (at_name("recursive")) syntax_error(s.line, "recursive loops are not supported");
    expect(Tok::BLOCK_END, "end of statement block");
    s.bodies.push_back(parse_body({"endfor", "else"}));
    if (next().text == "else") {
      expect(Tok::BLOCK_END, "end of statement block");
      s.bodies.push_back(parse_body({"endfor"}));
      next();
    } else {
      s.bodies.emplace_back();
    }
    expect(Tok::BLOCK_END, "end of statement block");
  }

  void parse_set(Stmt& s) {
    if (peek().type == Tok::NAME && at_op(".", 1)) {
      s.kind = StmtKind::SET_ATTR;
      s.text = next().text;
      next();
      s.attr = expect_ident();
      expect_op("=");
      s.exprs.push_back(parse_tuple());
      expect(Tok::BLOCK_END, "end of statement block");
      return;
    }
    s.names = parse_targets();
    if (skip_op("=")) {
      s.kind = StmtKind::SET;
      s.exprs.push_back(parse_tuple());
      expect(Tok::BLOCK_END, "end of statement block");
      return;
    }
    if (s.names.size() != 1) unexpected("'='");
    s.kind = StmtKind::SET_BLOCK;
    s.text = s.names[0];
    s.exprs.push_back(at_op("|") ? parse_filter(make(ExprKind::BLOCK_VALUE, s.line), false) : nullptr);
    s.bodies.push_back(block_body("endset"));
  }

  // `(a, b=default)` of a macro or a call block's caller.
  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!at_op(")")) {
      if (!s.names.empty()) expect_op(",");
      if (at_op(")")) break;
      s.names.push_back(expect_ident());
      s.exprs.push_back(skip_op("=") ? parse_expression() : nullptr);
    }
    expect_op(")");
  }

  void parse_macro(Stmt& s) {
    s.kind = StmtKind::MACRO;
    s.text = expect_ident();
    parse_signature(s);
    s.bodies.push_back(block_body("endmacro"));
  }

  void parse_call_block(Stmt& s) {
    s.kind = StmtKind::CALL_BLOCK;
    if (at_op("(")) parse_signature(s);
    ExprPtr call = parse_expression();
    if (call->kind != ExprKind::CALL) syntax_error(s.line, "expected call");
    s.exprs.insert(s.exprs.begin(), std::move(call));
    s.bodies.push_back(block_body("endcall"));
  }

  void parse_scope(Stmt& s, const std::string& tag) {
    s.kind = StmtKind::SCOPE;
    while (tag == "with" && peek().type != Tok::BLOCK_END) {
      if (!s.names.empty()) expect_op(",");
      s.names.push_back(expect_ident());
      expect_op("=");
      s.exprs.push_back(parse_expression());
    }
    s.bodies.push_back(block_body("end" + tag));
  }

  // Expressions, jinja2's grammar from loosest to tightest binding.
  ExprPtr parse_tuple(bool with_condexpr = true, std::initializer_list<std::string_view> extra_ends = {},
                      bool explicit_parens = false) {
    int line = peek().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) expect_op(",");
      const Token& t = peek();
      bool end = t.type == Tok::VAR_END || t.type == Tok::BLOCK_END || at_op(")") ||
                 (t.type == Tok::NAME &&
                  std::find(extra_ends.begin(), extra_ends.end(), t.text) != extra_ends.end());
      if (end) break;
      items.push_back(parse_expression(with_condexpr));
      if (!at_op(",")) break;
      is_tuple = true;
    }
    if (!is_tuple && !items.empty()) return std::move(items[0]);
    if (!is_tuple && !explicit_parens) unexpected("an expression");
    auto e = make(ExprKind::TUPLE, line);
    for (ExprPtr& item : items) adopt(*e, std::move(item));
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr = true) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (at_name("if")) {
      int line = next().line;
      auto c = make(ExprKind::COND, line);
      adopt(*c, parse_or());
      adopt(*c, std::move(e));
      adopt(*c, skip_name("else") ? parse_condexpr() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      int line = next().line;
      e = make(ExprKind::OR, line, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      int line = next().line;
      e = make(ExprKind::AND, line, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (!at_name("not")) return parse_compare();
    int line = next().line;
    return make(ExprKind::NOT, line, parse_not());
  }

  ExprPtr parse_compare() {
    int line = peek().line;
    ExprPtr first = parse_math1();
    ExprPtr e;
    for (;;) {
      std::string op;
      if (peek().type == Tok::OP && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                     peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next(), next();
        op = "notin";
      } else {
        break;
      }
      if (!e) e = make(ExprKind::COMPARE, line, std::move(first));
      e->ops.push_back(op);
      adopt(*e, parse_math1());
    }
    return e ? std::move(e) : std::move(first);
  }

  ExprPtr binary(std::string op, int line, ExprPtr a, ExprPtr b) {
    auto e = make(ExprKind::BINARY, line, std::move(a), std::move(b));
    e->s = std::move(op);
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& t = next();
      e = binary(t.text, t.line, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      int line = next().line;
      e = binary("~", line, std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& t = next();
      e = binary(t.text, t.line, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (at_op("**")) {
      int line = next().line;
      e = binary("**", line, std::move(e), parse_unary(true));
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& t = next();
      e = make(t.text == "-" ? ExprKind::NEG : ExprKind::POS, t.line, parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    if (t.type == Tok::NAME) {
      next();
      if (t.text == "true" || t.text == "false" || t.text == "True" || t.text == "False") {
        auto e = make(ExprKind::BOOL_LIT, t.line);
        e->i = t.text == "true" || t.text == "True";
        return e;
      }
      if (t.text == "none" || t.text == "None") return make(ExprKind::NONE_LIT, t.line);
      auto e = make(ExprKind::NAME, t.line);
      e->s = t.text;
      return e;
    }
    if (t.type == Tok::STRING) {
      auto e = make(ExprKind::STR_LIT, t.line);
      while (peek().type == Tok::STRING) e->s += next().text;
      return e;
    }
    if (t.type == Tok::INT || t.type == Tok::FLOAT) {
      auto e = make(t.type == Tok::INT ? ExprKind::INT_LIT : ExprKind::FLOAT_LIT, t.line);
      e->i = t.i;
      e->f = t.f;
      next();
      return e;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (at_op("[") || at_op("{")) return parse_collection();
    unexpected("an expression");
  }

  ExprPtr parse_collection() {
    bool is_dict = next().text == "{";
    std::string_view close = is_dict ? "}" : "]";
    auto e = make(is_dict ? ExprKind::DICT : ExprKind::LIST, peek().line);
    while (!at_op(close)) {
      if (!e->args.empty()) expect_op(",");
      if (at_op(close)) break;
      adopt(*e, parse_expression());
      if (is_dict) {
        expect_op(":");
        adopt(*e, parse_expression());
      }
    }
    expect_op(close);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".") || at_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        e = parse_filter(std::move(e), false);
      } else if (at_name("is")) {
        e = parse_test(std::move(e));
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr base) {
    const Token& t = next();
    if (t.text == ".") {
      const Token& a = next();
      if (a.type == Tok::NAME) {
        auto e = make(ExprKind::GETATTR, t.line, std::move(base));
        e->s = a.text;
        return e;
      }
      if (a.type != Tok::INT) syntax_error(a.line, "expected name or number after '.'");
      auto index = make(ExprKind::INT_LIT, a.line);
      index->i = a.i;
      return make(ExprKind::GETITEM, t.line, std::move(base), std::move(index));
    }
    ExprPtr e = parse_subscribed(std::move(base), t.line);
    if (at_op(",")) syntax_error(t.line, "tuple subscripts are not supported");
    expect_op("]");
    return e;
  }

  ExprPtr parse_subscribed(ExprPtr base, int line) {
    ExprPtr start = at_op(":") ? nullptr : parse_expression();
    if (!at_op(":")) return make(ExprKind::GETITEM, line, std::move(base), std::move(start));
    next();
    auto e = make(ExprKind::SLICE, line);
    adopt(*e, std::move(base));
    adopt(*e, std::move(start));
    adopt(*e, at_op(":") || at_op("]") || at_op(",") ? nullptr : parse_expression());
    adopt(*e, skip_op(":") && !at_op("]") && !at_op(",") ? parse_expression() : nullptr);
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool need_comma = false;
    while (!at_op(")")) {
      if (need_comma) {
        expect_op(",");
        if (at_op(")")) break;
      }
      if (at_op("*") || at_op("**"))
        syntax_error(peek().line, "*args and **kwargs in calls are not supported");
      if (peek().type == Tok::NAME && at_op("=", 1)) {
        std::string key = next().text;
        next();
        ExprPtr value = parse_expression();
        if (value->depth >= kMaxDepth) syntax_error(value->line, "expression nested too deeply");
        e.kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!e.kwargs.empty()) syntax_error(peek().line, "positional argument after a keyword argument");
        adopt(e, parse_expression());
      }
      need_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::CALL, peek().line, std::move(callee));
    parse_call_args(*e);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_ident();
    while (skip_op(".")) name += "." + expect_ident();
    return name;
  }

  ExprPtr parse_filter(ExprPtr base, bool start_inline) {
    while (at_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      int line = peek().line;
      auto e = make(ExprKind::FILTER, line, std::move(base));
      e->s = dotted_name();
      if (at_op("(")) parse_call_args(*e);
      base = std::move(e);
    }
    return base;
  }

  ExprPtr parse_test(ExprPtr base) {
    int line = next().line;
    auto e = make(ExprKind::TEST, line, std::move(base));
    e->i = skip_name("not");
    e->s = dotted_name();
    const Token& t = peek();
    if (at_op("(")) {
      parse_call_args(*e);
    } else if ((t.type == Tok::NAME || t.type == Tok::STRING || t.type == Tok::INT || t.type == Tok::FLOAT ||
                at_op("[") || at_op("{")) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
      if (at_name("is")) syntax_error(t.line, "you cannot chain multiple tests with is");
      adopt(*e, parse_postfix(parse_primary()));
    }
    return e;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// jinja2 rejects an unknown filter or test when compiling, unless it sits under an `if` or in a conditional
// expression (then only running it fails); loops, macros and blocks start afresh.
void check_names(const Expr* e, bool soft) {
  if (!e) return;
  if ((e->kind == ExprKind::FILTER && !jinja_knows_filter(e->s)) ||
      (e->kind == ExprKind::TEST && !jinja_knows_test(e->s))) {
    if (!soft)
      syntax_error(e->line,
                   fmt::format("no {} named '{}'", e->kind == ExprKind::FILTER ? "filter" : "test", e->s));
  }
  soft = soft || e->kind == ExprKind::COND;
  for (const ExprPtr& a : e->args) check_names(a.get(), soft);
  for (const auto& kw : e->kwargs) check_names(kw.second.get(), soft);
}

bool mentions(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == ExprKind::NAME && e->s == name) return true;
  for (const auto& kw : e->kwargs)
    if (mentions(kw.second.get(), name)) return true;
  return std::any_of(e->args.begin(), e->args.end(),
                     [&](const ExprPtr& a) { return mentions(a.get(), name); });
}

bool mentions(const Body& body, std::string_view name) {
  for (const StmtPtr& s : body) {
    for (const ExprPtr& e : s->exprs)
      if (mentions(e.get(), name)) return true;
    for (const Body& b : s->bodies)
      if (mentions(b, name)) return true;
  }
  return false;
}

}  // namespace

Body parse(std::vector<Token> toks) { return Parser(std::move(toks)).parse_template(); }

void check_names(const Body& body, bool soft) {
  for (const StmtPtr& s : body) {
    bool inner_soft =
        s->kind == StmtKind::IF                                                                    ? true
        : s->kind == StmtKind::SET || s->kind == StmtKind::SET_ATTR || s->kind == StmtKind::OUTPUT ? soft
                                                                                                   : false;
    for (size_t k = 0; k < s->exprs.size(); k++)
      check_names(s->exprs[k].get(), s->kind == StmtKind::FOR && k == 0 ? soft : inner_soft);
    for (const Body& b : s->bodies) check_names(b, inner_soft);
  }
}

// A loop whose body never names `loop` skips building the loop object.
void mark_loops(Body& body) {
  for (StmtPtr& s : body) {
    if (s->kind == StmtKind::FOR) s->uses_loop = mentions(s->bodies[0], "loop");
    for (Body& b : s->bodies) mark_loops(b);
  }
}

}  // namespace tg::llm::jinja
