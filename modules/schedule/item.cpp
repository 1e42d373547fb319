// Printing schedule items: a tinygrad-style kernel name, the buffers, and the AST as an indented tree.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "schedule/schedule.hpp"
#include "uop/print.hpp"

namespace tg::sched {

namespace {

std::string range_size(const UOp* r) {
  if (const ConstValue* v = r->src(0)->const_value()) return std::to_string(std::get<int64_t>(*v));
  if (r->src(0)->op() == Ops::DEFINE_VAR) return r->src(0)->arg_as<VarArg>().name;
  return "n";
}

std::string buffer_line(size_t i, const UOpRef& b) {
  std::string dev = b->src().size() > 1 ? std::get<std::string>(b->src(1)->arg()) : "?";
  int64_t id = b->src().empty() ? -1 : std::get<int64_t>(b->src(0)->arg());
  return fmt::format("  buf {}: {}[{}] on {} (unique {}){}\n", i, b->dtype().name(), b->arg_as<int64_t>(),
                     dev, id, i == 0 ? ", written" : "");
}

}  // namespace

std::string ScheduleItem::name() const {
  if (is_copy()) return fmt::format("copy_{}", bufs.at(0)->arg_as<int64_t>());
  std::vector<const UOp*> ranges;
  for (const UOp* u : ast->toposort())
    if (u->op() == Ops::RANGE) ranges.push_back(u);
  auto key = [](const UOp* r) {
    const AxisArg& a = r->arg_as<AxisArg>();
    return std::pair{a.type == AxisType::REDUCE, a.id};
  };
  std::sort(ranges.begin(), ranges.end(), [&](const UOp* a, const UOp* b) { return key(a) < key(b); });
  bool reduce = !ranges.empty() && ranges.back()->arg_as<AxisArg>().type == AxisType::REDUCE;
  std::string name = reduce ? "r" : "E";
  for (const UOp* r : ranges) name += "_" + range_size(r);
  return name;
}

std::string ScheduleItem::str() const {
  std::string out = name() + "\n";
  for (size_t i = 0; i < bufs.size(); i++) out += buffer_line(i, bufs[i]);
  return out + print_tree(ast);
}

std::ostream& operator<<(std::ostream& os, const ScheduleItem& si) { return os << si.str(); }

}  // namespace tg::sched
