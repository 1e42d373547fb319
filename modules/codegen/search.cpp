// The BEAM search's action space and the text form of opts lists (see search.hpp).
#include "codegen/search.hpp"

#include <array>
#include <charconv>

#include "base/error.hpp"

namespace tg::codegen {

namespace {

constexpr std::array<int64_t, 6> kAmounts = {2, 3, 4, 5, 8, 16};
constexpr std::array<int64_t, 3> kLaneAmounts = {8, 16, 32};  // UPCAST of a reduce axis: vector lanes
constexpr std::array<int64_t, 6> kLocalAmounts = {2, 3, 4, 8, 16, 32};
constexpr std::array<int64_t, 3> kGroupAmounts = {4, 8, 16};
constexpr std::array<int64_t, 4> kGroupTopAmounts = {16, 32, 64, 256};
constexpr int64_t kPad = 32;  // PADTO rounds axes that no amount divides up to this

int64_t unrolled_size(std::span<const Opt> opts) {
  int64_t n = 1;
  for (const Opt& o : opts)
    if (o.op == OptOps::UPCAST || o.op == OptOps::UNROLL) n *= o.arg;
  return n;
}

// Reads a non-negative decimal integer at the front of s, then the literal `after`.
bool take_int(std::string_view& s, int64_t& out, std::string_view after) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data() || out < 0) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  if (!s.starts_with(after)) return false;
  s.remove_prefix(after.size());
  return true;
}

}  // namespace

std::vector<Opt> search_actions(const UOpRef& ast, const sdk::RendererCaps& caps) {
  std::vector<KernelAxis> axes = kernel_axes(ast);
  std::vector<Opt> out;
  for (size_t i = 0; i < sdk::tensor_cores(caps).size(); i++)  // applies only as the first opt
    out.push_back({OptOps::TC, 0, static_cast<int64_t>(i)});
  for (size_t i = 0; i < axes.size(); i++) {
    auto axis = static_cast<int64_t>(i);
    // Workgroup devices: pad axes of awkward sizes, group reduces, make output axes local.
    bool gpu = caps.has_local;
    if (gpu && axes[i].size > kPad && axes[i].size % kPad != 0) out.push_back({OptOps::PADTO, axis, kPad});
    if (axes[i].reduce) {
      for (int64_t k : kAmounts) out.push_back({OptOps::UNROLL, axis, k});
      if (!gpu)
        for (int64_t k : kLaneAmounts) out.push_back({OptOps::UPCAST, axis, k});
      if (gpu && caps.has_shared) {
        for (int64_t k : kGroupAmounts) out.push_back({OptOps::GROUP, axis, k});
        for (int64_t k : kGroupTopAmounts) out.push_back({OptOps::GROUPTOP, axis, k});
      }
      continue;
    }
    for (int64_t k : kAmounts) out.push_back({OptOps::UPCAST, axis, k});
    if (gpu)
      for (int64_t k : kLocalAmounts) out.push_back({OptOps::LOCAL, axis, k});
    if ((caps.has_threads || caps.has_local) && caps.thread_count > 1)
      out.push_back({OptOps::THREAD, axis, caps.thread_count});
    for (size_t j = i + 1; j < axes.size(); j++)  // loop order of two output axes (cache reuse)
      if (!axes[j].reduce) out.push_back({OptOps::SWAP, axis, static_cast<int64_t>(j)});
  }
  return out;
}

bool opts_apply(const UOpRef& ast, std::span<const Opt> opts, const sdk::RendererCaps& caps) {
  try {
    apply_opts(ast, opts, caps);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::vector<Opt>> search_expand(const UOpRef& ast, std::span<const Opt> base,
                                            const sdk::RendererCaps& caps) {
  std::vector<std::vector<Opt>> out;
  int64_t unrolled = unrolled_size(base);
  for (const Opt& a : search_actions(ast, caps)) {
    if ((a.op == OptOps::UPCAST || a.op == OptOps::UNROLL) && unrolled * a.arg > kMaxSearchUpcast) continue;
    std::vector<Opt> opts(base.begin(), base.end());
    opts.push_back(a);
    if (opts_apply(ast, opts, caps)) out.push_back(std::move(opts));
  }
  return out;
}

std::optional<std::vector<Opt>> parse_opts(std::string_view text) {
  std::string_view s = text;
  if (!s.starts_with("[") || !s.ends_with("]")) return std::nullopt;
  s = s.substr(1, s.size() - 2);
  std::vector<Opt> out;
  while (!s.empty()) {
    if (!out.empty()) {
      if (!s.starts_with(", ")) return std::nullopt;
      s.remove_prefix(2);
    }
    Opt o;
    bool named = false;
    for (int v = 0; v <= 255 && !named; v++) {  // every op opt_op_name knows
      auto op = static_cast<OptOps>(v);
      if (opt_op_name(op) == "?") continue;
      std::string head = std::string(opt_op_name(op)) + "(axis=";
      if (!s.starts_with(head)) continue;
      s.remove_prefix(head.size());
      o.op = op, named = true;
    }
    if (!named || !take_int(s, o.axis, ", arg=") || !take_int(s, o.arg, ")")) return std::nullopt;
    out.push_back(o);
  }
  if (opts_str(out) != text) return std::nullopt;  // only opts_str's own spelling ("axis=01" is not)
  return out;
}

}  // namespace tg::codegen
