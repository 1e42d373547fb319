#pragma once
// An OpenAI-compatible HTTP server over one model (cpp-httplib): GET /v1/models, POST /v1/chat/completions
// (whole replies, or server-sent events with "stream": true), and a chat page at /. Requests are answered
// one at a time in arrival order (one KV cache); a bad request gets a 4xx JSON error in OpenAI's shape,
// {"error": {"message", "type", "param", "code"}}, naming the field.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/session.hpp"

namespace tg::llm {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model_name = "model";
  ReplyOptions defaults;  // max_tokens and sampling when a request does not set them
};

// A chat completion request, checked: messages, and what it may override. RequestError on a bad one.
struct ChatRequest {
  std::vector<ChatMessage> messages;
  ReplyOptions opts;
  bool stream = false;
};
struct RequestError {
  int status;
  std::string message, param, code;
};
ChatRequest parse_chat_request(const std::string& body, const ReplyOptions& defaults);  // throws RequestError

// Blocks serving until the process ends; returns non-zero when the port cannot be bound.
int serve(Model& m, const ServeOptions& opts);

extern const char* const kChatPage;  // the HTML of /

}  // namespace tg::llm
