// cpp-httplib routes for the OpenAI chat API. Handlers run on httplib's thread pool; one mutex around the
// model makes concurrent requests wait their turn (the generator holds one KV cache).
#include "llm/server.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::llm {

namespace {

using nlohmann::json;

RequestError bad(std::string message, std::string param = "", std::string code = "invalid_value") {
  return {400, std::move(message), std::move(param), std::move(code)};
}

json error_body(const RequestError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", "invalid_request_error"},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code}}}};
}

double number(const json& j, const char* key, double lo, double hi) {
  if (!j[key].is_number()) throw bad(fmt::format("'{}' must be a number", key), key, "invalid_type");
  double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) throw bad(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v), key);
  return v;
}

int64_t integer(const json& j, const char* key, int64_t lo, int64_t hi) {
  if (!j[key].is_number_integer())
    throw bad(fmt::format("'{}' must be an integer", key), key, "invalid_type");
  int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) throw bad(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v), key);
  return v;
}

std::string now_id(std::atomic<uint64_t>& counter) { return fmt::format("chatcmpl-{}", ++counter); }

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Generated text need not be valid UTF-8 (a model can emit lone bytes): those bytes are dropped, as
// llama-cpp-python's decode(errors="ignore") does, rather than failing the dump.
std::string text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::ignore); }

std::string sse(const json& j) { return "data: " + text(j) + "\n\n"; }

}  // namespace

ChatRequest parse_chat_request(const std::string& body, const ReplyOptions& defaults) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) throw bad("the body is not valid JSON", "", "invalid_json");
  if (!j.is_object()) throw bad("the body must be a JSON object", "", "invalid_type");
  ChatRequest r;
  r.opts = defaults;
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
    throw bad("'messages' must be a non-empty array", "messages", "invalid_type");
  for (size_t i = 0; i < j["messages"].size(); i++) {
    const json& m = j["messages"][i];
    std::string p = fmt::format("messages[{}]", i);
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw bad(p + " needs a string 'role'", p + ".role", "invalid_type");
    std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      throw bad(fmt::format("{}.role '{}' is not system, developer, user or assistant", p, role),
                p + ".role");
    std::string content;
    if (m.contains("content") && m["content"].is_string()) {
      content = m["content"];
    } else if (m.contains("content") && m["content"].is_array()) {  // [{"type": "text", "text": ...}]
      for (const json& part : m["content"]) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          throw bad(p + ".content parts must be {\"type\": \"text\", \"text\": ...}", p + ".content",
                    "invalid_type");
        content += part["text"].get<std::string>();
      }
    } else {
      throw bad(p + " needs 'content' as a string or an array of text parts", p + ".content", "invalid_type");
    }
    r.messages.push_back({role == "developer" ? "system" : role, std::move(content)});
  }
  if (j.contains("model") && !j["model"].is_string())
    throw bad("'model' must be a string", "model", "invalid_type");
  if (j.contains("stream")) {
    if (!j["stream"].is_boolean()) throw bad("'stream' must be a boolean", "stream", "invalid_type");
    r.stream = j["stream"];
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (j.contains(key) && !j[key].is_null()) r.opts.max_tokens = integer(j, key, 1, 1 << 20);
  if (j.contains("temperature") && !j["temperature"].is_null())
    r.opts.sampler.temperature = number(j, "temperature", 0, 2);
  if (j.contains("top_p") && !j["top_p"].is_null()) r.opts.sampler.top_p = number(j, "top_p", 1e-9, 1);
  if (j.contains("top_k") && !j["top_k"].is_null()) r.opts.sampler.top_k = integer(j, "top_k", 0, 1 << 30);
  if (j.contains("seed") && !j["seed"].is_null())
    r.opts.sampler.seed = static_cast<uint64_t>(integer(j, "seed", 0, INT64_MAX));
  if (j.contains("n") && !j["n"].is_null() && integer(j, "n", 1, 1) != 1) throw bad("'n' must be 1", "n");
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& s = j["stop"];
    r.opts.stop.clear();
    if (s.is_string()) {
      r.opts.stop.push_back(s);
    } else if (s.is_array() && s.size() <= 4) {
      for (const json& x : s) {
        if (!x.is_string()) throw bad("'stop' must be a string or up to 4 strings", "stop", "invalid_type");
        r.opts.stop.push_back(x);
      }
    } else {
      throw bad("'stop' must be a string or up to 4 strings", "stop", "invalid_type");
    }
    for (const std::string& x : r.opts.stop)
      if (x.empty()) throw bad("'stop' strings must not be empty", "stop");
  }
  return r;
}

int serve(Model& m, const ServeOptions& opts) {
  httplib::Server srv;
  std::mutex model_lock;
  std::atomic<uint64_t> ids{0};
  auto reply_error = [](httplib::Response& res, const RequestError& e) {
    res.status = e.status;
    res.set_content(text(error_body(e)), "application/json");
  };
  srv.Get("/",
          [](const httplib::Request&, httplib::Response& res) { res.set_content(kChatPage, "text/html"); });
  srv.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    json data = json::array({{{"id", opts.model_name},
                              {"object", "model"},
                              {"created", unix_time()},
                              {"owned_by", "tinygrad.cpp"}}});
    res.set_content(text(json{{"object", "list"}, {"data", data}}), "application/json");
  });
  srv.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    ChatRequest r;
    std::vector<int32_t> prompt;
    try {
      r = parse_chat_request(req.body, opts.defaults);
      prompt = chat_tokens(m, r.messages);
    } catch (const RequestError& e) {
      return reply_error(res, e);
    } catch (const Error& e) {  // a message the template refuses (raise_exception), say
      return reply_error(res, bad(e.what(), "messages"));
    }
    if (static_cast<int64_t>(prompt.size()) >= m.transformer.max_context())
      return reply_error(res, bad(fmt::format("the prompt has {} tokens; the context is {} tokens",
                                              prompt.size(), m.transformer.max_context()),
                                  "messages", "context_length_exceeded"));
    std::string id = now_id(ids);
    int64_t created = unix_time();
    auto chunk = [&, id, created](json delta, json finish) {
      return json{
          {"id", id},
          {"object", "chat.completion.chunk"},
          {"created", created},
          {"model", opts.model_name},
          {"choices", json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}})}};
    };
    if (!r.stream) {
      Reply out;
      try {
        std::lock_guard<std::mutex> hold(model_lock);
        out = complete(m, prompt, r.opts);
      } catch (const std::exception& e) {  // nothing may escape a handler thread: it would end the process
        res.status = 500;
        res.set_content(text(json{{"error", {{"message", e.what()}, {"type", "server_error"}}}}),
                        "application/json");
        return;
      }
      json body = {{"id", id},
                   {"object", "chat.completion"},
                   {"created", created},
                   {"model", opts.model_name},
                   {"choices", json::array({{{"index", 0},
                                             {"message", {{"role", "assistant"}, {"content", out.text}}},
                                             {"finish_reason", out.finish_reason}}})},
                   {"usage",
                    {{"prompt_tokens", out.prompt_tokens},
                     {"completion_tokens", out.completion_tokens},
                     {"total_tokens", out.prompt_tokens + out.completion_tokens}}}};
      res.set_content(text(body), "application/json");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [&, r, prompt, chunk](size_t, httplib::DataSink& sink) {
          std::lock_guard<std::mutex> hold(model_lock);
          std::string head = sse(chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
          if (!sink.write(head.data(), head.size())) return false;
          try {
            Reply out = complete(m, prompt, r.opts, [&](std::string_view text) {
              std::string s = sse(chunk({{"content", std::string(text)}}, nullptr));
              return sink.write(s.data(), s.size());  // false: the client went away, stop generating
            });
            std::string tail = sse(chunk(json::object(), out.finish_reason)) + "data: [DONE]\n\n";
            sink.write(tail.data(), tail.size());
          } catch (const std::exception& e) {
            std::string s = sse({{"error", {{"message", e.what()}, {"type", "server_error"}}}});
            sink.write(s.data(), s.size());
          }
          sink.done();
          return true;
        });
  });
  srv.set_error_handler([&](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404)
      reply_error(res,
                  {404, "no such route (GET /, GET /v1/models, POST /v1/chat/completions)", "", "not_found"});
  });
  if (!srv.bind_to_port(opts.host, opts.port)) {
    fmt::print(stderr, "tg llm serve: cannot listen on {}:{} (in use?)\n", opts.host, opts.port);
    return 1;
  }
  fmt::print(stderr, "serving {} on http://{}:{}/ (OpenAI API under /v1)\n", opts.model_name, opts.host,
             opts.port);
  return srv.listen_after_bind() ? 0 : 1;
}

}  // namespace tg::llm
