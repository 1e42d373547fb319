// The graphs realized tensors were computed by, kept by their views for autograd (gradient.hpp).
#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "tensor/gradient.hpp"

namespace tg {

namespace {

struct Entry {
  UOpRef view, graph;  // graph null: freed by a backward()
  std::vector<engine::BufferHold> holds;
};

std::mutex mu;
std::unordered_map<const UOp*, Entry> table;
size_t prune_at = 64;

// Drops entries whose view nothing else refers to: no graph can reach them any more. A dropped graph may
// have been the last user of another view, so repeat until nothing changes.
void prune() {
  for (bool again = true; again;) {
    again = false;
    for (auto it = table.begin(); it != table.end();)
      if (it->second.view->use_count() == 1)
        it = table.erase(it), again = true;
      else
        ++it;
  }
  prune_at = std::max<size_t>(64, 2 * table.size());
}

// Whether view is reachable from graph (through kept graphs too): a realize that returned a buffer the
// graph already reads gives such a view, and keeping the graph would make the view its own source.
bool reaches(const UOpRef& graph, const UOp* view) {
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> todo{graph.get()};
  while (!todo.empty()) {
    const UOp* u = todo.back();
    todo.pop_back();
    if (u == view) return true;
    if (!seen.insert(u).second) continue;
    for (const UOpRef& s : u->src()) todo.push_back(s.get());
    if (auto it = table.find(u); it != table.end() && it->second.graph)
      todo.push_back(it->second.graph.get());
  }
  return false;
}

}  // namespace

void keep_graph(const UOpRef& view, const UOpRef& graph, std::vector<engine::BufferHold> holds) {
  std::lock_guard lock(mu);
  if (table.size() >= prune_at) prune();
  // only a view of a buffer the graph already reads can be in it: check that case in full
  if (graph) {
    const UOp* buffer = engine::realized_buffer(view).get();
    std::vector<const UOp*> nodes = graph->toposort();
    if (std::find(nodes.begin(), nodes.end(), buffer) != nodes.end() && reaches(graph, view.get())) return;
  }
  auto [it, fresh] = table.try_emplace(view.get(), Entry{view, graph, std::move(holds)});
  if (!fresh && graph && !it->second.graph) it->second = Entry{view, graph, std::move(holds)};
}

void forget_graph(const UOpRef& view) {
  std::lock_guard lock(mu);
  table.erase(view.get());
}

UOpRef kept_graph(const UOpRef& view) {
  std::lock_guard lock(mu);
  auto it = table.find(view.get());
  return it == table.end() ? UOpRef() : it->second.graph;
}

KeptUnder kept_graphs_under(const UOpRef& root) {
  KeptUnder out;
  std::lock_guard lock(mu);
  if (table.empty()) return out;
  std::unordered_set<const UOp*> walked;
  std::vector<UOpRef> todo{root};
  while (!todo.empty()) {
    UOpRef g = std::move(todo.back());
    todo.pop_back();
    for (const UOp* u : g->toposort()) {
      auto it = table.find(u);
      if (it == table.end() || !walked.insert(u).second) continue;
      if (!it->second.graph) {
        out.freed.push_back(u);
        continue;
      }
      out.graphs.emplace(u, it->second.graph);
      out.holds.insert(out.holds.end(), it->second.holds.begin(), it->second.holds.end());
      todo.push_back(it->second.graph);
    }
  }
  return out;
}

void free_graphs(const KeptGraphs& used) {
  std::lock_guard lock(mu);
  for (const auto& [view, graph] : used)
    if (auto it = table.find(view); it != table.end()) it->second.graph = nullptr, it->second.holds.clear();
}

size_t kept_graph_count() {
  std::lock_guard lock(mu);
  prune();
  return static_cast<size_t>(
      std::count_if(table.begin(), table.end(), [](const auto& e) { return e.second.graph != nullptr; }));
}

namespace {
thread_local bool realize_each_op = false;
}

RealizeEachOp::RealizeEachOp() : prev_(std::exchange(realize_each_op, true)) {}
RealizeEachOp::~RealizeEachOp() { realize_each_op = prev_; }
bool RealizeEachOp::active() { return realize_each_op; }

}  // namespace tg
