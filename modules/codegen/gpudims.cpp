// Output loops -> launch indices for renderers with workgroups: the loops around the whole kernel become
// SPECIAL gidx, innermost loop first, grouped or split to fit the device limits; LOCAL and GROUP_REDUCE
// ranges become lidx (add_local_ids, before the loops are split). CPU-style targets turn a THREAD range
// into the task index core_id instead.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/passes.hpp"

namespace tg::codegen {

namespace {

int64_t as_int(const ConstValue& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  return static_cast<int64_t>(std::get<double>(v));
}
int64_t dim_max(const UOpRef& d) { return as_int(d->vmax()); }

UOpRef prod(std::span<const UOpRef> ds) {
  UOpRef p = UOp::const_(dtypes::index, ConstValue{int64_t{1}});
  for (const UOpRef& d : ds) p = p->is_const() && as_int(*p->const_value()) == 1 ? d : p * d;
  return p;
}

// (a, b, c, d) -> (ab, c, d) until at most three dims each within its limit; nullopt when impossible.
std::optional<std::vector<UOpRef>> group_dims(std::vector<UOpRef> dims, const std::array<int64_t, 3>& mx) {
  auto over = [&] {
    for (size_t i = 0; i < dims.size(); i++)
      if (i >= 3 || dim_max(dims[i]) > mx[i]) return true;
    return false;
  };
  while (over()) {
    bool merged = false;
    for (size_t i = 0; i < 3 && i + 1 < dims.size() && !merged; i++) {
      if (dim_max(dims[i]) * dim_max(dims[i + 1]) > mx[i]) continue;
      dims[i] = dims[i] * dims[i + 1];
      dims.erase(dims.begin() + static_cast<long>(i) + 1);
      merged = true;
    }
    if (!merged) return std::nullopt;
  }
  return dims;
}

// (a,) -> (a/k, k): moves factors of a too-large static dim into the next one.
std::optional<std::vector<UOpRef>> split_dims(const std::vector<UOpRef>& dims,
                                              const std::array<int64_t, 3>& mx) {
  std::array<int64_t, 3> d{1, 1, 1};
  for (size_t i = 0; i < dims.size(); i++) {
    if (!dims[i]->is_const()) return std::nullopt;
    d[i] = as_int(*dims[i]->const_value());
  }
  for (int guard = 0; guard < 64; guard++) {
    size_t i = 0;
    while (i < 3 && d[i] <= mx[i]) i++;
    if (i == 3) break;
    int64_t div = 1;
    for (int64_t k = 2; k * k <= d[i]; k++)
      if (d[i] % k == 0) {
        div = k;
        break;
      }
    if (div == 1) return std::nullopt;
    d[i] /= div, d[(i + 1) % 3] *= div;
  }
  for (size_t i = 0; i < 3; i++)
    if (d[i] > mx[i]) return std::nullopt;
  size_t n = 3;
  while (n > std::max<size_t>(dims.size(), 1) && d[n - 1] == 1) n--;
  std::vector<UOpRef> out;
  for (size_t i = 0; i < n; i++) out.push_back(UOp::const_(dtypes::index, ConstValue{d[i]}));
  return out;
}

// Index expressions for dims (dims[0] gets prefix0), or empty when the limits cannot be met.
std::vector<UOpRef> launch_indices(const std::string& prefix, const std::vector<UOpRef>& dims,
                                   const std::array<int64_t, 3>& mx) {
  auto grouped = group_dims(dims, mx);
  if (!grouped) grouped = split_dims(dims, mx);
  if (!grouped) return {};
  const std::vector<UOpRef>& lim = *grouped;
  std::vector<UOpRef> raw;
  for (size_t i = 0; i < lim.size(); i++)
    raw.push_back(UOp::make(Ops::SPECIAL, dtypes::index, {lim[i]}, prefix + std::to_string(i)));
  if (lim == dims) return raw;
  UOpRef flat = UOp::const_(dtypes::index, ConstValue{int64_t{0}});
  for (size_t i = 0; i < raw.size(); i++) flat = flat + raw[i] * prod(std::span(lim).subspan(i + 1));
  std::vector<UOpRef> out;
  for (size_t i = 0; i < dims.size(); i++) {
    UOpRef q = flat / prod(std::span(dims).subspan(i + 1));
    out.push_back(i == 0 ? q : q % dims[i]);
  }
  return out;
}

std::array<int64_t, 3> limits(const uint32_t (&m)[3]) { return {m[0], m[1], m[2]}; }

}  // namespace

// CPU-style targets: a THREAD range is the task index core_id; without tasks it stays a plain loop.
static UOpRef thread_to_core(const UOpRef& sink, const sdk::RendererCaps& caps) {
  if (!caps.has_threads) return sink;
  std::unordered_map<const UOp*, UOpRef> map;
  for (const UOp* u : sink->toposort())
    if (u->op() == Ops::RANGE && u->arg_as<AxisArg>().type == AxisType::THREAD)
      map[u] = UOp::make(Ops::SPECIAL, dtypes::index, {u->src(0)}, std::string("core_id"));
  if (map.empty()) return sink;
  return graph_rewrite(sink->substitute(map), end_cleanup(), nullptr, {.name = "add core_id"});
}

UOpRef add_local_ids(const UOpRef& sink, const sdk::RendererCaps& caps) {
  std::vector<UOpRef> rs;
  for (const UOp* u : sink->toposort())
    if (u->op() == Ops::RANGE) {
      AxisType t = u->arg_as<AxisArg>().type;
      if (t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE) rs.push_back(u->ref());
    }
  if (rs.empty()) return sink;
  // The last (innermost) local dim is lidx0, as the innermost loop is gidx0.
  std::sort(rs.begin(), rs.end(), [](const UOpRef& a, const UOpRef& b) {
    return a->arg_as<AxisArg>().id > b->arg_as<AxisArg>().id;
  });
  std::vector<UOpRef> sizes;
  for (const UOpRef& r : rs) sizes.push_back(r->src(0));
  std::vector<UOpRef> idx = launch_indices("lidx", sizes, limits(caps.local_max));
  if (idx.empty())
    throw ValueError("codegen", fmt::format("{} local dims do not fit the '{}' renderer's local_max",
                                            rs.size(), caps.dialect));
  std::unordered_map<const UOp*, UOpRef> map;
  for (size_t i = 0; i < rs.size(); i++) map[rs[i].get()] = idx[i];
  return sink->substitute(map);
}

UOpRef add_gpudims(const UOpRef& sink, const sdk::RendererCaps& caps) {
  if (!caps.has_local) return thread_to_core(sink, caps);
  // The chain of loops around everything: the single top-level END and the ENDs directly inside it.
  const UOp* e = nullptr;
  for (const UOpRef& s : sink->src()) {
    if (s->op() != Ops::END) continue;
    if (e != nullptr && e != s.get()) return sink;
    e = s.get();
  }
  std::vector<UOpRef> globals, locals;
  for (; e != nullptr && e->op() == Ops::END; e = e->src(0).get()) {
    const UOpRef& r = e->src(1);
    if (r->op() != Ops::RANGE) break;
    AxisType t = r->arg_as<AxisArg>().type;
    if (t == AxisType::LOOP || t == AxisType::GLOBAL || t == AxisType::THREAD)
      globals.push_back(r);
    else if (t == AxisType::LOCAL)
      locals.push_back(r);
    else
      break;
  }
  if (globals.empty() && locals.empty()) return sink;

  std::unordered_map<const UOp*, UOpRef> map;
  auto assign = [&](std::vector<UOpRef> rs, const std::string& prefix, const std::array<int64_t, 3>& mx) {
    std::reverse(rs.begin(), rs.end());  // the innermost loop is the fastest-moving launch index
    std::vector<UOpRef> sizes;
    for (const UOpRef& r : rs) sizes.push_back(r->src(0));
    std::vector<UOpRef> idx = launch_indices(prefix, sizes, mx);
    if (idx.empty()) return false;
    for (size_t i = 0; i < rs.size(); i++) map[rs[i].get()] = idx[i];
    return true;
  };
  if (!globals.empty() && !assign(globals, "gidx", limits(caps.global_max))) return sink;
  if (!locals.empty() && !assign(locals, "lidx", limits(caps.local_max))) return sink;
  return graph_rewrite(sink->substitute(map), end_cleanup(), nullptr, {.name = "add gpudims"});
}

}  // namespace tg::codegen
