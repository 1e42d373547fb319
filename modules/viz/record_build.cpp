// Live recording -> Trace.
#include "viz/record_build.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "build_config.hpp"

namespace tg::viz {

namespace {

class NodeTable {
 public:
  explicit NodeTable(std::vector<Node>& nodes) : nodes_(nodes) {}
  int add(const UOpRef& root) {
    if (auto it = ids_.find(root.get()); it != ids_.end()) return it->second;
    for (const UOp* u : root->toposort()) {  // sources first, so their ids are smaller
      if (ids_.contains(u)) continue;
      Node n{std::string(op_name(u->op())), u->dtype().str(), arg_str(u->arg()), {}};
      for (const UOpRef& s : u->src()) n.src.push_back(ids_.at(s.get()));
      ids_.emplace(u, static_cast<int>(nodes_.size()));
      nodes_.push_back(std::move(n));
    }
    return ids_.at(root.get());
  }

 private:
  std::vector<Node>& nodes_;
  std::unordered_map<const UOp*, int> ids_;
};

// __builtin_FILE paths are as the compiler saw them: relative ones are relative to the build folder.
std::vector<std::string> read_lines(const char* file) {
  std::filesystem::path p(file);
  if (p.is_relative()) p = std::filesystem::path(TG_BUILD_ROOT) / p;
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string s; std::getline(in, s);) lines.push_back(s);
  return lines;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b);
}

// The source line of a rule. When the location is a table's closing "};" (g++), the rule is the
// in_table-th of the last table_size lines above it that open with "{" (one rule per line, as written).
std::string rule_line(const RewriteStep& s) {
  std::vector<std::string> lines = read_lines(s.where.file);
  if (s.where.line < 1 || static_cast<size_t>(s.where.line) > lines.size()) return "";
  std::string at = trimmed(lines[static_cast<size_t>(s.where.line) - 1]);
  if (!at.starts_with("}")) return at;
  std::vector<std::string> starts;
  for (int i = s.where.line - 2; i >= 0 && starts.size() < static_cast<size_t>(s.table_size); i--)
    if (std::string t = trimmed(lines[static_cast<size_t>(i)]); t.starts_with("{")) starts.push_back(t);
  if (starts.size() != static_cast<size_t>(s.table_size)) return at;
  return starts[starts.size() - 1 - static_cast<size_t>(s.in_table)];
}

std::string short_path(std::string_view file) {
  for (std::string_view top : {"modules/", "plugins/", "apps/", "tests/"})
    if (size_t at = file.find(top); at != std::string_view::npos) return std::string(file.substr(at));
  return std::string(file);
}

}  // namespace

Trace build_trace(std::vector<RewriteTrace> rewrites, const std::vector<LiveKernel>& kernels,
                  const std::vector<LiveLowering>& lowerings, const std::vector<LiveRun>& runs,
                  const std::vector<LiveMemoryPlan>& memory) {
  Trace t;
  NodeTable table(t.nodes);
  std::map<std::tuple<std::string_view, int, int>, int> rule_ids;
  std::erase_if(rewrites, [](const RewriteTrace& r) { return r.name == "rewrite" || r.name == "simplify"; });
  std::sort(rewrites.begin(), rewrites.end(), [](auto& a, auto& b) { return a.seq < b.seq; });

  for (const LiveKernel& k : kernels)
    t.kernels.push_back(
        Kernel{k.name, k.device, k.opts, k.uops, k.source, k.disasm, table.add(k.ast), k.ops, k.bytes, {}});
  std::vector<std::pair<uint64_t, Entry>> order;
  for (const LiveLowering& l : lowerings)
    if (l.first) order.push_back({l.begin, Entry{"kernel", l.kernel}});
  for (const RewriteTrace& r : rewrites) {
    const LiveLowering* in = nullptr;  // the innermost lowering running on r's thread when r ran
    for (const LiveLowering& l : lowerings)
      if (l.thread == r.thread && l.begin < r.seq && r.seq < l.end) in = &l;
    if (in && !in->first) continue;
    Rewrite w{r.name, in ? in->kernel : -1, table.add(r.before), 0, r.seconds * 1e3, {}};
    for (const RewriteStep& s : r.steps) {
      auto [it, fresh] =
          rule_ids.try_emplace({s.where.file, s.where.line, s.in_table}, static_cast<int>(t.rules.size()));
      if (fresh) {
        std::string loc = fmt::format("{}:{}", short_path(s.where.file), s.where.line);
        if (s.table_size > 1) loc += fmt::format(" (rule {} of {})", s.in_table + 1, s.table_size);
        t.rules.push_back(Rule{loc, rule_line(s)});
      }
      w.steps.push_back(Step{it->second, table.add(s.from), table.add(s.to)});
    }
    w.after = table.add(r.after);
    int id = static_cast<int>(t.rewrites.size());
    if (w.kernel >= 0)
      t.kernels[static_cast<size_t>(w.kernel)].rewrites.push_back(id);
    else
      order.push_back({r.seq, Entry{"rewrite", id}});
    t.rewrites.push_back(std::move(w));
  }
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [seq, e] : order) t.order.push_back(e);
  for (const LiveRun& r : runs) t.runs.push_back(Run{r.kernel, r.start * 1e6, r.seconds * 1e6});
  for (const LiveMemoryPlan& m : memory) {
    MemoryPlan p{m.bytes_before, m.bytes_after, {}};
    for (const auto& [b, s] : m.placed) p.placed.emplace_back(table.add(b), table.add(s));
    t.memory.push_back(std::move(p));
  }
  return t;
}

}  // namespace tg::viz
