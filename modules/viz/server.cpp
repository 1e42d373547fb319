// cpp-httplib routes over one immutable Trace; every answer is computed from it on request.
#include "viz/server.hpp"

#include <httplib.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "viz/graph.hpp"

namespace tg::viz {

namespace {

// From the Debian package libjs-highlight.js; the page shows plain text without it.
constexpr const char* kHighlightDir = "/usr/share/javascript/highlight.js";
constexpr size_t kMaxDrawn = 2000;  // dot takes seconds past this; the page says so instead

std::optional<int> index_param(const httplib::Request& req, size_t n) {
  try {
    size_t used = 0;
    std::string s = req.matches[1];
    int i = std::stoi(s, &used);
    if (used == s.size() && i >= 0 && static_cast<size_t>(i) < n) return i;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

void json_reply(httplib::Response& res, const nlohmann::json& j) {
  res.set_content(j.dump(), "application/json");
}

void not_found(httplib::Response& res, std::string_view what) {
  res.status = 404;
  res.set_content(fmt::format("[viz] no such {}", what), "text/plain");
}

void svg_reply(httplib::Response& res, const Trace& t, const std::vector<int>& nodes,
               const std::map<int, Mark>& marks) {
  if (nodes.size() > kMaxDrawn) {
    res.status = 413;
    res.set_content(fmt::format("[viz] {} nodes are too many to draw (at most {})", nodes.size(), kMaxDrawn),
                    "text/plain");
    return;
  }
  try {
    res.set_content(render_svg(to_dot(t, nodes, marks)), "image/svg+xml");
  } catch (const Error& e) {
    res.status = 500;
    res.set_content(e.what(), "text/plain");
  }
}

nlohmann::json summary(const Trace& t) {
  nlohmann::json entries = nlohmann::json::array(), kernels = nlohmann::json::array();
  for (const Entry& e : t.order) {
    if (e.kind == "kernel") {
      const Kernel& k = t.kernels[static_cast<size_t>(e.index)];
      nlohmann::json children = nlohmann::json::array();
      for (int ri : k.rewrites) {
        const Rewrite& r = t.rewrites[static_cast<size_t>(ri)];
        children.push_back({{"index", ri}, {"name", r.name}, {"steps", r.steps.size()}});
      }
      entries.push_back({{"kind", "kernel"}, {"index", e.index}, {"name", k.name}, {"rewrites", children}});
    } else {
      const Rewrite& r = t.rewrites[static_cast<size_t>(e.index)];
      entries.push_back(
          {{"kind", "rewrite"}, {"index", e.index}, {"name", r.name}, {"steps", r.steps.size()}});
    }
  }
  for (const Kernel& k : t.kernels)
    kernels.push_back({{"name", k.name}, {"device", k.device}, {"ops", k.ops}, {"bytes", k.bytes}});
  nlohmann::json runs = nlohmann::json::array();
  for (const Run& r : t.runs) runs.push_back({{"kernel", r.kernel}, {"start_us", r.start_us}, {"us", r.us}});
  nlohmann::json memory = nlohmann::json::array();
  for (const MemoryPlan& m : t.memory)
    memory.push_back(
        {{"bytes_before", m.bytes_before}, {"bytes_after", m.bytes_after}, {"shared", m.placed.size()}});
  return {{"entries", entries}, {"kernels", kernels}, {"runs", runs}, {"memory", memory}};
}

nlohmann::json rewrite_json(const Trace& t, const Rewrite& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const Step& s : r.steps) {
    const Rule& rule = t.rules[static_cast<size_t>(s.rule)];
    steps.push_back({{"loc", rule.loc},
                     {"code", rule.code},
                     {"from", s.from},
                     {"to", s.to},
                     {"from_op", t.nodes[static_cast<size_t>(s.from)].op},
                     {"to_op", t.nodes[static_cast<size_t>(s.to)].op}});
  }
  return {{"name", r.name},
          {"kernel", r.kernel},
          {"ms", r.ms},
          {"before", r.before},
          {"after", r.after},
          {"steps", steps},
          {"before_nodes", subgraph(t, r.before).size()},
          {"after_nodes", subgraph(t, r.after).size()}};
}

// Step k of a rewrite: the matched subgraph and its replacement in one drawing; the matched node is marked,
// and so is every node of the replacement that was not in the matched subgraph.
void step_svg(httplib::Response& res, const Trace& t, const Rewrite& r, size_t k) {
  const Step& s = r.steps[k];
  std::vector<int> from = subgraph(t, s.from), to = subgraph(t, s.to);
  std::set<int> all(from.begin(), from.end());
  std::map<int, Mark> marks{{s.from, Mark::matched}};
  for (int n : to)
    if (all.insert(n).second) marks[n] = Mark::added;
  svg_reply(res, t, std::vector<int>(all.begin(), all.end()), marks);
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace

Server::Server(Trace t)
    : trace_(std::make_shared<const Trace>(std::move(t))), http_(std::make_unique<httplib::Server>()) {
  std::shared_ptr<const Trace> tr = trace_;
  httplib::Server& s = *http_;
  // httplib's default adds SO_REUSEPORT, which lets a second server share a port in use without an error.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kPage, "text/html"); });
  s.Get("/api/summary",
        [tr](const httplib::Request&, httplib::Response& res) { json_reply(res, summary(*tr)); });
  s.Get("/api/trace.json",
        [tr](const httplib::Request&, httplib::Response& res) { json_reply(res, to_json(*tr)); });
  s.Get(R"(/api/kernel/(\d+))", [tr](const httplib::Request& req, httplib::Response& res) {
    auto i = index_param(req, tr->kernels.size());
    if (!i) return not_found(res, "kernel");
    const Kernel& k = tr->kernels[static_cast<size_t>(*i)];
    nlohmann::json j = k;
    j["ast_nodes"] = subgraph(*tr, k.ast).size();
    json_reply(res, j);
  });
  s.Get(R"(/api/rewrite/(\d+))", [tr](const httplib::Request& req, httplib::Response& res) {
    auto i = index_param(req, tr->rewrites.size());
    if (!i) return not_found(res, "rewrite");
    json_reply(res, rewrite_json(*tr, tr->rewrites[static_cast<size_t>(*i)]));
  });
  s.Get(R"(/api/graph/(\d+)\.svg)", [tr](const httplib::Request& req, httplib::Response& res) {
    auto i = index_param(req, tr->nodes.size());
    if (!i) return not_found(res, "node");
    svg_reply(res, *tr, subgraph(*tr, *i), {});
  });
  s.Get(R"(/api/step/(\d+)/(\d+)\.svg)", [tr](const httplib::Request& req, httplib::Response& res) {
    auto i = index_param(req, tr->rewrites.size());
    if (!i) return not_found(res, "rewrite");
    const Rewrite& r = tr->rewrites[static_cast<size_t>(*i)];
    size_t k = 0;
    try {
      k = std::stoul(std::string(req.matches[2]));
    } catch (const std::exception&) {
      k = r.steps.size();
    }
    if (k >= r.steps.size()) return not_found(res, "step");
    step_svg(res, *tr, r, k);
  });
  s.Get(R"(/lib/(highlight\.min\.js|styles/github\.css))",
        [](const httplib::Request& req, httplib::Response& res) {
          std::string body, name = req.matches[1];
          if (!read_file(std::string(kHighlightDir) + "/" + name, body)) return not_found(res, "file");
          res.set_content(body, name.ends_with(".js") ? "text/javascript" : "text/css");
        });
}

Server::~Server() = default;

int Server::bind(int port) {
  int got =
      port == 0 ? http_->bind_to_any_port("127.0.0.1") : (http_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (got <= 0)
    throw DeviceError("viz", fmt::format("cannot listen on 127.0.0.1:{}: the port is in use or not allowed "
                                         "(set VIZ_PORT to another port)",
                                         port));
  return got;
}

void Server::listen() { http_->listen_after_bind(); }
void Server::stop() { http_->stop(); }

void serve(Trace t, int port) {
  Server s(std::move(t));
  int got = s.bind(port);
  fmt::print(stderr, "VIZ: serving the trace at http://127.0.0.1:{} (Ctrl-C to stop)\n", got);
  std::fflush(stderr);
  s.listen();
}

}  // namespace tg::viz
