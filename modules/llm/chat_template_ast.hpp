#pragma once
// The parsed form of a chat template: what the parser (chat_template_parse.cpp) hands the evaluator
// (chat_template_render.cpp). Internal to the llm module.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/chat_template.hpp"

namespace tg::llm::jinja {

enum class ExprKind : uint8_t {
  NONE_LIT,
  BOOL_LIT,     // i
  INT_LIT,      // i
  FLOAT_LIT,    // f
  STR_LIT,      // s
  NAME,         // s: the variable
  LIST,         // args: the items
  TUPLE,        // args: the items
  DICT,         // args: key, value, key, value...
  GETATTR,      // args[0].s
  GETITEM,      // args[0][args[1]]
  SLICE,        // args[0][args[1]:args[2]:args[3]], each bound may be null
  CALL,         // args[0](args[1:], kwargs)
  FILTER,       // args[0] | s(args[1:], kwargs)
  TEST,         // args[0] is [not when i] s(args[1:])
  NOT,          // not args[0]
  NEG,          // -args[0]
  POS,          // +args[0]
  BINARY,       // args[0] s args[1], s one of + - * / // % ** ~
  AND,          // args[0] and args[1]
  OR,           // args[0] or args[1]
  COMPARE,      // args[0] ops[0] args[1] ops[1] args[2]... (python chaining)
  COND,         // args[1] if args[0] else args[2] (may be null)
  BLOCK_VALUE,  // the rendered body of a filter block or a filtered block set
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::NONE_LIT;
  int line = 0;
  int depth = 1;  // of the tree under it
  int64_t i = 0;  // BOOL_LIT, INT_LIT; TEST: 1 when negated
  double f = 0;
  std::string s;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

enum class StmtKind : uint8_t {
  TEXT,          // text
  OUTPUT,        // {{ exprs[0] }}
  IF,            // exprs[k] guards bodies[k]; one more body is the else
  FOR,           // for names in exprs[0] if exprs[1] (may be null): bodies[0], else bodies[1]
  SET,           // set names = exprs[0] (several names unpack)
  SET_ATTR,      // set text.attr = exprs[0]
  SET_BLOCK,     // set text %}bodies[0]{% endset, exprs[0] (may be null) filters it
  MACRO,         // macro text(names with defaults exprs, null where none): bodies[0]
  CALL_BLOCK,    // call(names) exprs[0] %}bodies[0]{% endcall: bodies[0] is the macro `caller`
  FILTER_BLOCK,  // filter: exprs[0] applied to bodies[0]
  SCOPE,         // generation, or with names = exprs: bodies[0] in a scope of its own
  BREAK,         // in a loop
  CONTINUE,      // in a loop
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::TEXT;
  int line = 0;
  bool uses_loop = false;  // FOR: the body names `loop`, so each iteration needs the loop object
  std::string text, attr;
  std::vector<std::string> names;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

struct Program {
  Body body;
};

// The filters and tests jinja2 knows: a name outside these is a syntax error when the use is not
// under an `if` (jinja2 checks at compile time there), a runtime error otherwise.
bool jinja_knows_filter(std::string_view name);
bool jinja_knows_test(std::string_view name);

// Appends code point cp as UTF-8.
inline void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string render(const Program& program, std::span<const ChatMessage> messages, bool add_generation_prompt,
                   const std::string& bos, const std::string& eos);

}  // namespace tg::llm::jinja
