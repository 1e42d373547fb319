#pragma once
// What the lexer (chat_template_lex.cpp) hands the parser (chat_template_parse.cpp), and the steps the
// constructor runs. Internal to the llm module.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat_template_ast.hpp"

namespace tg::llm::jinja {

enum class Tok : uint8_t {
  TEXT,
  VAR_BEGIN,
  VAR_END,
  BLOCK_BEGIN,
  BLOCK_END,
  NAME,
  STRING,
  INT,
  FLOAT,
  OP,
  END
};

struct Token {
  Tok type;
  int line;
  std::string text;
  int64_t i = 0;
  double f = 0;
};

// ValueError "[llm] chat template line N: what".
[[noreturn]] void syntax_error(int line, std::string_view what);

// The source as jinja2 reads it.
std::string normalize_newlines(std::string_view src);
// The tokens of a template, after normalize_newlines.
std::vector<Token> lex(std::string_view src);
// The statements of the tokens; a syntax error throws.
Body parse(std::vector<Token> toks);
// jinja2's compile-time check for unknown filters and tests, over a whole template when soft is false.
void check_names(const Body& body, bool soft);
// Sets each loop's uses_loop.
void mark_loops(Body& body);

}  // namespace tg::llm::jinja
