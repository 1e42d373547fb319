#include "tensor/multi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <unordered_map>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

std::vector<Tensor> shard(const Tensor& x, std::span<const std::string> devices, std::optional<int> axis) {
  if (devices.empty()) throw ValueError("shard", "needs at least one device");
  std::vector<Tensor> out;
  if (!axis) {
    for (const std::string& d : devices) out.push_back(x.to(d));
    return out;
  }
  int64_t n = static_cast<int64_t>(devices.size());
  int64_t rank = static_cast<int64_t>(x.shape().size());
  int a = *axis < 0 ? static_cast<int>(*axis + rank) : *axis;
  if (a < 0 || a >= rank)
    throw ValueError("shard", fmt::format("axis {} is out of range for a tensor of {} dims", *axis, rank));
  int64_t size = x.shape()[static_cast<size_t>(a)];
  if (size % n != 0)
    throw ValueError("shard",
                     fmt::format("axis {} of size {} does not split evenly over {} devices", a, size, n));
  std::vector<Tensor> parts = x.chunk(n, a);
  for (size_t i = 0; i < devices.size(); i++) out.push_back(parts[i].to(devices[i]));
  return out;
}

namespace {
// Each ring step is realized before the next reads it, as the steps of a ring wait on their neighbours.
void realize_step(const std::vector<std::vector<Tensor>>& chunk) {
  std::vector<Tensor> all;
  for (const auto& c : chunk) all.insert(all.end(), c.begin(), c.end());
  Tensor::realize_all(all);
}
}  // namespace

std::vector<Tensor> all_reduce_sum(std::span<const Tensor> xs) {
  if (xs.empty()) throw ValueError("all_reduce", "needs at least one tensor");
  for (size_t i = 1; i < xs.size(); i++) {
    if (xs[i].shape() != xs[0].shape())
      throw ShapeError("all_reduce", fmt::format("tensor {} has shape {} but tensor 0 has {}", i,
                                                 shape_str(xs[i].shape()), shape_str(xs[0].shape())));
    if (xs[i].dtype() != xs[0].dtype())
      throw DTypeError("all_reduce", fmt::format("tensor {} is {} but tensor 0 is {}", i,
                                                 xs[i].dtype().name(), xs[0].dtype().name()));
  }
  size_t n = xs.size();
  int64_t numel = xs[0].numel();
  if (n == 1) return {xs[0]};
  if (numel < static_cast<int64_t>(n)) {  // too small to split into n chunks: gather on one, copy back
    Tensor sum = xs[0];
    for (size_t i = 1; i < n; i++) sum = sum + xs[i].to(xs[0].device());
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(sum.to(x.device()));
    return out;
  }
  Shape sizes;
  for (size_t k = 0; k < n; k++)
    sizes.push_back(numel / static_cast<int64_t>(n) +
                    (static_cast<int64_t>(k) < numel % static_cast<int64_t>(n)));
  std::vector<Tensor> flat;  // realized first: the chunks are views of buffers that already exist
  for (const Tensor& x : xs) flat.push_back(x.flatten().contiguous());
  Tensor::realize_all(flat);
  std::vector<std::vector<Tensor>> chunk(n);  // chunk[device][k]
  for (size_t i = 0; i < n; i++)
    for (const Tensor& c : flat[i].split(sizes)) chunk[i].push_back(c.contiguous());
  realize_step(chunk);  // each chunk its own buffer: a copy moves whole buffers
  // reduce-scatter: at step s device i passes its partial sum of chunk (i - s) mod n on to device i+1;
  // after n-1 steps device i holds the whole sum of chunk (i + 1) mod n
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<Tensor>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + n - s) % n;
      next[to][k] = chunk[to][k] + chunk[i][k].to(xs[to].device());
    }
    chunk = std::move(next);
    realize_step(chunk);
  }
  // all-gather: at step s device i passes the finished chunk (i + 1 - s) mod n on to device i+1
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<Tensor>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + 1 + n - s) % n;
      next[to][k] = chunk[i][k].to(xs[to].device());
    }
    chunk = std::move(next);
    realize_step(chunk);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; i++) out.push_back(Tensor::cat(chunk[i]).reshape(xs[0].shape()));
  return out;
}

// ---- a tensor over several devices ----

namespace {
std::atomic<bool> g_multi_used{false};

UOpRef device_node(const std::string& d) { return UOp::make(Ops::DEVICE, dtypes::void_, {}, d); }
UOpRef copy_to(const UOpRef& x, const std::string& d) {
  return UOp::make(Ops::COPY, x->dtype(), {x, device_node(d)});
}
UOpRef mv(Ops op, const UOpRef& x, Arg a) { return UOp::make(op, x->dtype(), {x}, std::move(a)); }
int64_t multi_axis(const UOp& m) { return m.arg_as<IntVec>().at(0); }
UOpRef make_multi(std::vector<UOpRef> parts, int64_t axis) {
  DType d = parts.at(0)->dtype();
  return UOp::make(Ops::MULTI, d, std::move(parts), IntVec{axis});
}
std::string join(std::span<const std::string> devs) {
  std::string out;
  for (const std::string& d : devs) out += (out.empty() ? "" : ",") + d;
  return out;
}
int64_t size_of(const sint& s, std::string_view op) {
  if (!s.is_number())
    throw NotSupportedError(op, "a tensor over several devices needs sizes that are numbers, not variables");
  return static_cast<int64_t>(s);
}

// x (on its device) laid along axis into a tensor of `total` elements there at `offset`: zero elsewhere.
UOpRef place(const UOpRef& x, int64_t axis, int64_t offset, int64_t total) {
  const Shape& s = *x->shape();
  ShapePairs pads(s.size(), {0, 0});
  pads[static_cast<size_t>(axis)] = {offset, total - offset - size_of(s[static_cast<size_t>(axis)], "shard")};
  return mv(Ops::PAD, x, pads);
}
// The concatenation of parts (one device) along axis, as a sum of zero-padded parts.
UOpRef cat(std::span<const UOpRef> parts, int64_t axis) {
  int64_t total = 0;
  for (const UOpRef& p : parts) total += size_of((*p->shape())[static_cast<size_t>(axis)], "shard");
  UOpRef out;
  Ops add = parts[0]->dtype().is_bool() ? Ops::OR : Ops::ADD;
  int64_t offset = 0;
  for (const UOpRef& p : parts) {
    UOpRef placed = place(p, axis, offset, total);
    out = out ? out->alu(add, placed) : placed;
    offset += size_of((*p->shape())[static_cast<size_t>(axis)], "shard");
  }
  return out;
}
// [begin, end) of one axis.
UOpRef shrink(const UOpRef& x, int64_t axis, int64_t begin, int64_t end) {
  const Shape& s = *x->shape();
  ShapePairs r;
  for (const sint& d : s) r.emplace_back(0, d);
  r[static_cast<size_t>(axis)] = {begin, end};
  return mv(Ops::SHRINK, x, r);
}

// Rewrites a tensor graph over MULTI nodes into one graph per device, node by node from the sources up.
class Resolver {
 public:
  UOpRef resolve(const UOpRef& root) {
    for (const UOp* u : root->toposort()) {
      std::vector<UOpRef> src;
      bool multi = false, changed = false;
      for (const UOpRef& s : u->src()) {
        src.push_back(done_.at(s.get()));
        multi = multi || src.back()->op() == Ops::MULTI;
        changed = changed || src.back() != s;
      }
      UOpRef r;
      if (u->op() == Ops::MULTI)
        r = changed ? u->with_src(src) : u->ref();
      else if (u->op() == Ops::CONST && !src.empty() && is_multi_device(*src[0]))
        r = replicate_const(*u, src[0]);
      else if (u->op() == Ops::COPY && (multi || is_multi_device(*src[1])))
        r = copy(src);
      else if (multi)
        r = per_device(*u, src);
      else
        r = changed ? u->with_src(src) : u->ref();
      done_[u] = r;
    }
    return done_.at(root.get());
  }

 private:
  std::unordered_map<const UOp*, UOpRef> done_;

  static bool is_multi_device(const UOp& u) {
    return u.op() == Ops::DEVICE && u.arg_as<std::string>().find(',') != std::string::npos;
  }
  static std::vector<std::string> devices(const UOp& m) {
    std::vector<std::string> out;
    for (const UOpRef& s : m.src()) out.push_back(graph_device(s.get()));
    return out;
  }

  static UOpRef replicate_const(const UOp& c, const UOpRef& dev) {
    std::vector<UOpRef> parts;
    for (const std::string& d : split_devices(dev->arg_as<std::string>()))
      parts.push_back(c.with_src({device_node(d)}));
    return make_multi(std::move(parts), -1);
  }

  // To one device: the part already there or a copy (gathered along the split axis); to several: a copy
  // on each device of a tensor on one.
  static UOpRef copy(const std::vector<UOpRef>& src) {
    const std::string& to = src[1]->arg_as<std::string>();
    if (src[0]->op() != Ops::MULTI) {
      std::string from = graph_device(src[0].get());
      std::vector<UOpRef> parts;
      for (const std::string& d : split_devices(to)) parts.push_back(d == from ? src[0] : copy_to(src[0], d));
      return make_multi(std::move(parts), -1);
    }
    const UOp& m = *src[0];
    std::vector<std::string> devs = devices(m);
    if (to.find(',') != std::string::npos) {
      if (to == join(devs)) return src[0];
      throw NotSupportedError(
          "to", fmt::format("cannot move a tensor on {} to {}; move it to one device first", join(devs), to));
    }
    std::vector<UOpRef> parts;
    for (size_t i = 0; i < devs.size(); i++) {
      if (multi_axis(m) < 0 && devs[i] == to) return m.src(i);
      parts.push_back(devs[i] == to ? m.src(i) : copy_to(m.src(i), to));
    }
    if (multi_axis(m) < 0) return parts[0];
    return cat(parts, multi_axis(m));
  }

  // Any other op with a MULTI source: the op on each device's part.
  static UOpRef per_device(const UOp& u, const std::vector<UOpRef>& src) {
    std::string op(op_name(u.op()));
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const UOp* m = nullptr;
    for (const UOpRef& s : src)
      if (s->op() == Ops::MULTI && (!m || (multi_axis(*m) < 0 && multi_axis(*s) >= 0))) m = s.get();
    std::vector<std::string> devs = devices(*m);
    size_t n = devs.size();
    int64_t axis = multi_axis(*m);
    if (u.op() == Ops::SINK) {
      std::vector<UOpRef> all;
      for (const UOpRef& s : src)
        if (s->op() == Ops::MULTI)
          all.insert(all.end(), s->src().begin(), s->src().end());
        else
          all.push_back(s);
      return UOp::sink(std::move(all));
    }
    // every source as n parts split like m: a full copy on each device is cut to each device's part
    std::vector<std::vector<UOpRef>> parts(n);
    for (size_t k = 0; k < src.size(); k++) {
      const UOpRef& s = src[k];
      if (s->op() != Ops::MULTI) {
        if (s->shape() != nullptr && s->op() != Ops::BIND && s->op() != Ops::DEFINE_VAR)
          throw DeviceError(
              op, fmt::format("a source is on {} but another on {}", graph_device(s.get()), join(devs)));
        for (size_t i = 0; i < n; i++) parts[i].push_back(s);
        continue;
      }
      if (devices(*s) != devs)
        throw DeviceError(op, fmt::format("sources are on {} and on {}", join(devices(*s)), join(devs)));
      int64_t a = multi_axis(*s);
      if (a >= 0 && a != axis)
        throw NotSupportedError(op, fmt::format("sources are split along axes {} and {}", a, axis));
      if (a < 0 && axis >= 0 && u.op() == Ops::ASSIGN && k == 0)
        throw NotSupportedError("assign",
                                "cannot assign a tensor split across devices to a full copy on each");
      for (size_t i = 0; i < n; i++) {
        UOpRef p = s->src(i);
        if (a < 0 && axis >= 0) {
          int64_t len = size_of((*p->shape())[static_cast<size_t>(axis)], op) / static_cast<int64_t>(n);
          p = shrink(p, axis, len * static_cast<int64_t>(i), len * static_cast<int64_t>(i + 1));
        }
        parts[i].push_back(p);
      }
    }
    const Shape& whole = *u.shape();
    Arg arg = u.arg();
    int64_t out_axis = axis;
    auto each = [&](const Arg& a) {
      std::vector<UOpRef> out;
      for (size_t i = 0; i < n; i++) out.push_back(UOp::make(u.op(), u.dtype(), parts[i], a));
      return out;
    };
    if (axis >= 0 && group::Movement.contains(u.op())) {
      const Shape& in = *src[0]->shape();
      int64_t len = size_of(in[static_cast<size_t>(axis)], op) / static_cast<int64_t>(n);
      switch (u.op()) {
        case Ops::RESHAPE: {  // the axis whose outer sizes multiply to the split axis's and that splits
                              // evenly
          int64_t outer = 1, want = 1;
          for (int64_t i = 0; i < axis; i++) want *= size_of(in[static_cast<size_t>(i)], op);
          out_axis = -1;
          for (size_t j = 0; j < whole.size(); j++) {
            int64_t d = size_of(whole[j], op);
            if (outer == want && d > 1 && d % static_cast<int64_t>(n) == 0) {
              out_axis = static_cast<int64_t>(j);
              break;
            }
            outer *= d;
          }
          if (out_axis < 0)
            throw NotSupportedError(
                op, fmt::format("cannot reshape {} split along axis {} over {} devices to {}", shape_str(in),
                                axis, n, shape_str(whole)));
          Shape s = whole;
          s[static_cast<size_t>(out_axis)] =
              size_of(whole[static_cast<size_t>(out_axis)], op) / static_cast<int64_t>(n);
          arg = s;
          break;
        }
        case Ops::EXPAND: {
          Shape s = whole;
          s[static_cast<size_t>(axis)] = len;
          arg = s;
          break;
        }
        case Ops::PERMUTE: {
          const IntVec& perm = u.arg_as<IntVec>();
          for (size_t j = 0; j < perm.size(); j++)
            if (perm[j] == axis) out_axis = static_cast<int64_t>(j);
          break;
        }
        case Ops::PAD:
        case Ops::SHRINK: {
          ShapePairs p = u.arg_as<ShapePairs>();
          auto& [b, e] = p[static_cast<size_t>(axis)];
          bool whole_axis =
              u.op() == Ops::PAD ? (b == 0 && e == 0) : (b == 0 && e == in[static_cast<size_t>(axis)]);
          if (!whole_axis)
            throw NotSupportedError(op,
                                    fmt::format("axis {} is split over {} devices; move the tensor to one "
                                                "device to {} along it",
                                                axis, n, op));
          if (u.op() == Ops::SHRINK) e = len;
          arg = p;
          break;
        }
        case Ops::FLIP:
          if (u.arg_as<IntVec>()[static_cast<size_t>(axis)] != 0)
            throw NotSupportedError(op,
                                    fmt::format("axis {} is split over {} devices; move the tensor to one "
                                                "device to flip it",
                                                axis, n));
          break;
        default:
          break;
      }
      return make_multi(each(arg), out_axis);
    }
    if (u.op() == Ops::REDUCE_AXIS) {
      const ReduceArg& r = u.arg_as<ReduceArg>();
      std::vector<UOpRef> out = each(arg);
      if (axis >= 0 && std::find(r.axes.begin(), r.axes.end(), axis) != r.axes.end())
        return make_multi(ring_all_reduce(r.op, out, devs), -1);
      return make_multi(std::move(out), axis);
    }
    if (group::ALU.contains(u.op()) ||
        OpSet{Ops::CAST, Ops::BITCAST, Ops::ASSIGN, Ops::CONTIGUOUS, Ops::DETACH, Ops::AFTER, Ops::NOOP}
            .contains(u.op()) ||
        group::Movement.contains(u.op()))
      return make_multi(each(arg), axis);
    throw NotSupportedError(op, "not supported on a tensor over several devices");
  }
};
}  // namespace

std::vector<UOpRef> ring_all_reduce(Ops op, std::span<const UOpRef> xs,
                                    std::span<const std::string> devices) {
  size_t n = xs.size();
  if (n == 1) return {xs[0]};
  const Shape& shape = *xs[0]->shape();
  int64_t numel = 1;
  for (const sint& d : shape) numel *= size_of(d, "all_reduce");
  std::vector<UOpRef> out;
  if (numel < static_cast<int64_t>(n)) {  // too small to split into n chunks: combine on one, copy back
    UOpRef acc = xs[0];
    for (size_t i = 1; i < n; i++) acc = acc->alu(op, copy_to(xs[i], devices[0]));
    for (size_t i = 0; i < n; i++) out.push_back(i == 0 ? acc : copy_to(acc, devices[i]));
    return out;
  }
  std::vector<int64_t> begin(n + 1, 0);
  for (size_t k = 0; k < n; k++)
    begin[k + 1] = begin[k] + numel / static_cast<int64_t>(n) +
                   (static_cast<int64_t>(k) < numel % static_cast<int64_t>(n));
  std::vector<std::vector<UOpRef>> chunk(n);  // chunk[device][k]
  for (size_t i = 0; i < n; i++) {
    UOpRef flat = mv(Ops::RESHAPE, xs[i], Shape{numel});
    for (size_t k = 0; k < n; k++) chunk[i].push_back(shrink(flat, 0, begin[k], begin[k + 1]));
  }
  // reduce-scatter: at step s device i passes its partial result of chunk (i - s) mod n on to device i+1;
  // after n-1 steps device i holds the whole result of chunk (i + 1) mod n
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<UOpRef>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + n - s) % n;
      next[to][k] = chunk[to][k]->alu(op, copy_to(chunk[i][k], devices[to]));
    }
    chunk = std::move(next);
  }
  // all-gather: at step s device i passes the finished chunk (i + 1 - s) mod n on to device i+1
  for (size_t s = 0; s + 1 < n; s++) {
    std::vector<std::vector<UOpRef>> next = chunk;
    for (size_t i = 0; i < n; i++) {
      size_t to = (i + 1) % n, k = (i + 1 + n - s) % n;
      next[to][k] = copy_to(chunk[i][k], devices[to]);
    }
    chunk = std::move(next);
  }
  for (size_t i = 0; i < n; i++) out.push_back(mv(Ops::RESHAPE, cat(chunk[i], 0), shape));
  return out;
}

std::vector<std::string> split_devices(std::string_view device) {
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    size_t comma = device.find(',', from);
    out.emplace_back(
        device.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

std::string graph_device(const UOp* u) {
  if (u->op() == Ops::MULTI) {
    std::vector<std::string> devs;
    for (const UOpRef& s : u->src()) devs.push_back(graph_device(s.get()));
    return join(devs);
  }
  while (u->op() != Ops::DEVICE && u->op() != Ops::MULTI && !u->src().empty())
    u = (u->op() == Ops::COPY || u->op() == Ops::BUFFER) ? u->src(1).get() : u->src(0).get();
  if (u->op() == Ops::MULTI) return graph_device(u);
  if (u->op() != Ops::DEVICE) throw ValueError("device", fmt::format("no device under {}", u->str()));
  return u->arg_as<std::string>();
}

bool multi_in_use() { return g_multi_used.load(std::memory_order_relaxed); }

std::vector<UOpRef> resolve_multi(std::span<const UOpRef> roots) {
  Resolver r;
  std::vector<UOpRef> out;
  for (const UOpRef& root : roots) out.push_back(r.resolve(root));
  return out;
}

namespace {
// x's node with its MULTI on top (a lazy tensor's graph resolved), or null for a tensor on one device.
UOpRef multi_of(const Tensor& x) {
  if (x.device().find(',') == std::string::npos) return UOpRef();
  if (x.uop()->op() == Ops::MULTI) return x.uop();
  UOpRef r = resolve_multi(std::span<const UOpRef>(&x.uop(), 1))[0];
  return r->op() == Ops::MULTI ? r : UOpRef();
}
}  // namespace

std::vector<Tensor> shards(const Tensor& x) {
  UOpRef m = multi_of(x);
  if (!m) return {x};
  std::vector<Tensor> out;
  std::vector<std::string> devs = split_devices(x.device());
  for (size_t i = 0; i < devs.size(); i++) out.emplace_back(m->src(i), devs[i], x.holds());
  return out;
}

std::optional<int> shard_axis(const Tensor& x) {
  UOpRef m = multi_of(x);
  if (!m || multi_axis(*m) < 0) return std::nullopt;
  return static_cast<int>(multi_axis(*m));
}

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  if (device().find(',') != std::string::npos)
    throw ValueError("shard",
                     fmt::format("the tensor is on {} already; move it to one device first", device()));
  std::vector<std::string> devs;
  for (const std::string& d : devices) {
    if (d.find(',') != std::string::npos)
      throw ValueError("shard", fmt::format("'{}' is a list; pass each device on its own", d));
    std::string c = engine::canonical_device(d);
    if (std::find(devs.begin(), devs.end(), c) != devs.end())
      throw ValueError("shard", fmt::format("device {} is named twice", c));
    devs.push_back(c);
  }
  std::vector<Tensor> parts = tg::shard(*this, devs, axis);
  if (devs.size() == 1) return parts[0];
  int64_t a = axis ? detail::normalize_axis(*axis, ndim(), "shard") : -1;
  std::vector<UOpRef> srcs;
  for (const Tensor& p : parts) srcs.push_back(p.uop());
  g_multi_used.store(true, std::memory_order_relaxed);
  return detail::derive_on(make_multi(std::move(srcs), a), join(devs), {this});
}

}  // namespace tg
