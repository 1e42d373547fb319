// Tensor core: the handle, properties, realization, dtype changes and in-place assignment.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/gradient.hpp"
#include "tensor/host_value.hpp"
#include "tensor/internal.hpp"
#include "tensor/multi.hpp"

namespace tg {

struct Tensor::Impl {
  UOpRef uop;
  std::string device;
  std::vector<engine::BufferHold> holds;
  bool requires_grad = false;
  bool from_op = false;      // requires grad because an input does: not a leaf
  bool graph_freed = false;  // a backward() went through it: realizing it keeps no graph (kept_graph.cpp)
  std::shared_ptr<Impl> grad;
  // A leaf's node before the last realize()/assign() replaced it: gradients still find the leaf in graphs
  // built earlier. A non-leaf's graph is kept by its realized view instead (kept_graph.cpp).
  UOpRef graph_uop;
  void replace_uop(UOpRef u, std::vector<engine::BufferHold> h) {
    if (requires_grad && !from_op && u != uop) graph_uop = std::move(uop);
    uop = std::move(u);
    holds = std::move(h);
  }
};

// Requires-grad bookkeeping: propagation through ops, the registry of live leaves, backward().
struct Autograd {
  // out requires grad (and is no leaf) when it is floating point and an input requires grad.
  static void propagate(Tensor& out, std::initializer_list<const Tensor*> from) {
    if (!out.dtype().is_float()) return;
    for (const Tensor* t : from)
      if (t->requires_grad()) out.impl().requires_grad = out.impl().from_op = true;
    if (out.impl().from_op && RealizeEachOp::active()) out.realize();
  }
  // The node a realized tensor becomes. A non-leaf's graph is kept by a no-op RESHAPE over the buffer's
  // view: a node of its own, which a detached tensor of the same buffer (the plain view) does not reach.
  // Views of a buffer stay as they are (the walk goes through them), and an assign drops the graph.
  static UOpRef realized(Tensor::Impl& im, const UOpRef& view) {
    if (!im.requires_grad || !im.from_op) return view;
    if (engine::realized_buffer(im.uop)) return im.uop;
    UOpRef node = UOp::make(Ops::RESHAPE, view->dtype(), {view}, *view->shape());
    if (im.uop->op() == Ops::ASSIGN) {
      forget_graph(node);
      return view;
    }
    keep_graph(node, im.graph_freed ? UOpRef() : im.uop, im.holds);
    return node;
  }
  static void add_leaf(const std::shared_ptr<Tensor::Impl>& im);
  static std::vector<std::shared_ptr<Tensor::Impl>> live_leaves();
  static Tensor seed(const Tensor& out, const Tensor& grad_output, std::string_view op);
  // The nodes a tensor is found by in a graph: a leaf's node now and before; a realized non-leaf's graph.
  static std::vector<UOpRef> keys(const Tensor::Impl& im);
  // The gradient of a tensor: the sum over its keys.
  static UOpRef lookup(const Tensor::Impl& im, const std::unordered_map<UOpRef, UOpRef>& grads);
  static KeptUnder kept_under(const Tensor::Impl& root, const std::vector<UOpRef>& targets,
                              std::string_view op);
};

double Number::to_double() const { return host::as_double(dtypes::int64, v_); }

DType Number::default_dtype() const {
  return is_bool() ? dtypes::bool_ : is_int() ? dtypes::default_int : dtypes::default_float;
}

Tensor::Tensor(Number v, std::optional<DType> dtype, std::string_view device) {
  std::string dev = device.empty() ? engine::default_device_name() : engine::canonical_device(device);
  *this = detail::const_tensor(v.value(), dtype.value_or(v.default_dtype()), {}, dev);
}

Tensor::Tensor(UOpRef uop, std::string device, std::vector<engine::BufferHold> holds)
    : impl_(std::make_shared<Impl>(Impl{std::move(uop), std::move(device), std::move(holds)})) {
  if (!impl_->uop || impl_->uop->shape() == nullptr)
    throw ValueError("tensor", "a tensor needs a tensor-level UOp with a shape");
}

void Tensor::init_from_host(std::span<const std::byte> bytes, DType src, Shape shape,
                            std::optional<DType> dtype, std::string_view device) {
  auto n = static_cast<int64_t>(bytes.size() / src.itemsize());
  if (shape.empty()) shape = {n};  // a 0-d tensor comes from Tensor(Number)
  if (detail::prod(shape) != n)
    throw ShapeError("tensor",
                     fmt::format("{} values do not fill the shape {}", n, detail::shape_str(shape)));
  DType dt = dtype.value_or(src);
  std::vector<std::byte> converted;
  if (dt != src) {
    converted.resize(static_cast<size_t>(n) * dt.itemsize());
    for (int64_t i = 0; i < n; i++) {
      ConstValue v = host::load(src, bytes.data() + i * src.itemsize());
      host::store(dt, host::convert(dt, src, v), converted.data() + i * dt.itemsize());
    }
    bytes = converted;
  }
  std::string dev = device.empty() ? engine::default_device_name() : engine::canonical_device(device);
  if (dev.find(',') != std::string::npos) {  // several devices: a copy on each
    init_from_host(bytes, dt, std::move(shape), dt, split_devices(dev)[0]);
    *this = to(dev);
    return;
  }
  engine::RealizedBuffer rb = engine::buffer_from_host(dev, dt, bytes);
  *this = Tensor(UOp::make(Ops::RESHAPE, dt, {rb.buffer}, shape), dev, {rb.hold});
}

Tensor Tensor::from_blob(void* data, Shape shape, DType dtype, BlobOptions opts) {
  if (dtype.count() != 1 || dtype.is_ptr() || dtype.scalar() == Scalar::VOID ||
      dtype.scalar() == Scalar::INDEX)
    throw DTypeError("from_blob", fmt::format("{} is not a tensor element dtype", dtype.str()));
  for (const sint& d : shape) {
    if (!d.is_number())
      throw ShapeError("from_blob", fmt::format("the shape {} has a symbolic size; memory has a fixed one",
                                                detail::shape_str(shape)));
    if (static_cast<int64_t>(d) < 0)
      throw ShapeError("from_blob", fmt::format("negative size {} in the shape {}", static_cast<int64_t>(d),
                                                detail::shape_str(shape)));
  }
  if (data == nullptr) throw ValueError("from_blob", "data is a null pointer");
  if (reinterpret_cast<uintptr_t>(data) % dtype.itemsize() != 0)
    throw ValueError("from_blob", fmt::format("data at {} is not aligned to {}'s {} bytes", fmt::ptr(data),
                                              dtype.name(), dtype.itemsize()));
  std::string dev =
      opts.device.empty() ? engine::default_device_name() : engine::canonical_device(opts.device);
  engine::RealizedBuffer rb = engine::buffer_over_host(dev, dtype, static_cast<int64_t>(detail::prod(shape)),
                                                       data, std::move(opts.owner), opts.read_only);
  return Tensor(engine::realized_view(rb.buffer, shape), dev, {rb.hold});
}

Tensor::Impl& Tensor::impl() const {
  if (!impl_) throw ValueError("tensor", "operation on an undefined Tensor");
  return *impl_;
}

const UOpRef& Tensor::uop() const { return impl().uop; }
const Shape& Tensor::shape() const { return *impl().uop->shape(); }
sint Tensor::shape(int dim) const { return shape()[detail::normalize_axis(dim, ndim(), "shape")]; }
sint Tensor::numel() const { return detail::prod(shape()); }
const std::string& Tensor::device() const { return impl().device; }
const std::vector<engine::BufferHold>& Tensor::holds() const { return impl().holds; }
bool Tensor::requires_grad() const { return impl().requires_grad; }
bool Tensor::is_leaf() const { return !impl().from_op; }

Tensor Tensor::grad() const {
  Tensor g;
  g.impl_ = impl().grad;
  return g;
}

void Tensor::set_grad(const Tensor& g) { impl().grad = g.impl_; }

namespace detail {

ShapePairs size_pairs(const std::vector<std::pair<int64_t, int64_t>>& p) {
  return ShapePairs(p.begin(), p.end());
}

int normalize_axis(int axis, int ndim, std::string_view op) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    throw IndexError(
        op, fmt::format("axis {} is out of range for {} dimension{}", axis, ndim, ndim == 1 ? "" : "s"));
  return a;
}

std::vector<int> normalize_axes(const Axes& axes, int ndim, std::string_view op) {
  std::vector<int> out;
  if (axes.all())
    for (int i = 0; i < ndim; i++) out.push_back(i);
  else
    for (int a : axes.list()) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

UOpRef device_uop(std::string_view device) {
  return UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string(device));
}

Tensor const_tensor(ConstValue v, DType d, const Shape& shape, std::string_view device) {
  Arg arg = std::visit([](auto x) -> Arg { return x; }, host::normalize(d, v));
  UOpRef u = UOp::make(Ops::CONST, d, {device_uop(device)}, std::move(arg));
  if (!shape.empty()) {
    u = UOp::make(Ops::RESHAPE, d, {u}, Shape(shape.size(), 1));
    if (prod(shape) != 1) u = UOp::make(Ops::EXPAND, d, {u}, shape);
  }
  return Tensor(u, std::string(device));
}

Tensor derive(UOpRef u, const Tensor& like, std::initializer_list<const Tensor*> from) {
  return derive_on(std::move(u), like.device(), from);
}

Tensor derive_on(UOpRef u, std::string device, std::initializer_list<const Tensor*> from) {
  std::vector<engine::BufferHold> holds;
  for (const Tensor* t : from)
    for (const engine::BufferHold& h : t->holds())
      if (std::find(holds.begin(), holds.end(), h) == holds.end()) holds.push_back(h);
  Tensor out(std::move(u), std::move(device), std::move(holds));
  Autograd::propagate(out, from);
  return out;
}

static DType alu_dtype(Ops op, DType first) { return group::Comparison.contains(op) ? dtypes::bool_ : first; }

Tensor alu(Ops op, const Tensor& a) {
  return derive(UOp::make(op, alu_dtype(op, a.dtype()), {a.uop()}), a, {&a});
}

Tensor alu(Ops op, const Tensor& a, const Tensor& b) {
  return derive(UOp::make(op, alu_dtype(op, a.dtype()), {a.uop(), b.uop()}), a, {&a, &b});
}

Tensor alu(Ops op, const Tensor& a, const Tensor& b, const Tensor& c) {
  DType d = op == Ops::WHERE ? b.dtype() : alu_dtype(op, a.dtype());
  return derive(UOp::make(op, d, {a.uop(), b.uop(), c.uop()}), a, {&a, &b, &c});
}

}  // namespace detail

// ---- realization ----

Tensor& Tensor::realize() {
  realize_all({*this});
  return *this;
}

namespace {
thread_local std::vector<Tensor> g_later;  // Tensor::realize_later's, until the next realize_all

// An ASSIGN writes its target once. A realize runs every ASSIGN its graphs reach, including ones that other
// tensors still hold (`w.assign(w + 1); (w * 2).realize();` leaves `w` and everything built from it on the
// ASSIGN). Those nodes are recorded here once they ran, and later graphs read the target's buffer instead,
// so no write happens twice. An entry goes when nothing but this table refers to its node.
class RanAssigns {
 public:
  // Equal assigns are one interned node (an optimizer's `t.assign(t + 1)` every step): a new one is pending
  // again, to run once more.
  void created(const UOpRef& assign) {
    std::lock_guard lock(mu_);
    ran_.erase(assign.get());
    pending_.push_back(assign);
  }
  // After a realize of roots: the pending ASSIGNs they reached have run.
  void realized(std::span<const UOpRef> roots) {
    std::lock_guard lock(mu_);
    std::erase_if(pending_, [](const UOpRef& a) { return a->use_count() == 1; });
    if (pending_.empty() || roots.empty()) return;
    std::unordered_set<const UOp*> reached;
    // Named: the order ends with the sink, which must stay alive while the loop reads it.
    UOpRef sink = UOp::sink(std::vector<UOpRef>(roots.begin(), roots.end()));
    for (const UOp* u : sink->toposort())
      if (u->op() == Ops::ASSIGN) reached.insert(u);
    std::erase_if(pending_, [&](const UOpRef& a) {
      if (!reached.count(a.get())) return false;
      ran_.emplace(a.get(), a);
      return true;
    });
  }
  // root with every ASSIGN that already ran replaced by its target.
  UOpRef resolve(const UOpRef& root) {
    std::lock_guard lock(mu_);
    std::erase_if(ran_, [](const auto& e) { return e.second->use_count() == 1; });
    if (ran_.empty()) return root;
    std::unordered_map<const UOp*, UOpRef> targets;
    for (const auto& [node, ref] : ran_) targets.emplace(node, ref->src(0));
    return root->substitute(targets);
  }

 private:
  std::mutex mu_;
  std::vector<UOpRef> pending_;
  std::unordered_map<const UOp*, UOpRef> ran_;  // the node itself keeps the key valid
};

RanAssigns& ran_assigns() {
  static RanAssigns* r = new RanAssigns();  // never destroyed: tensors may outlive static destruction
  return *r;
}

// The tensors contiguous() made, while they live. A realize whose graph computes one of them (a loop's
// convergence check reads the matrix the loop updates) stores it for that tensor too, as the tensor's own
// realize would: else its buffer is dropped, and every later realize computes all the steps again.
std::mutex stored_mutex;
std::vector<std::weak_ptr<void>> to_store;
}  // namespace

void Tensor::realize_later(std::vector<Tensor> tensors) {
  g_later.insert(g_later.end(), std::make_move_iterator(tensors.begin()),
                 std::make_move_iterator(tensors.end()));
}

void Tensor::realize_all(std::vector<Tensor> tensors) {
  // The queue goes with this realize, also when it fails: queued again, failed work would fail every later
  // realize. A tensor holding a dropped assign still runs it when read.
  tensors.insert(tensors.end(), std::make_move_iterator(g_later.begin()),
                 std::make_move_iterator(g_later.end()));
  g_later.clear();
  // Handles of one tensor share its storage; equal roots of distinct tensors get a buffer each.
  std::unordered_set<const Impl*> seen;
  std::erase_if(tensors, [&](const Tensor& t) { return !seen.insert(&t.impl()).second; });
  // a symbolic tensor's elements at its largest size decide whether it needs a kernel
  auto has_elements = [](const Tensor& t) { return t.numel().max() > 0; };
  // the lazy tensors of to_store these tensors' graphs compute
  auto computed_contiguous = [](const std::vector<Tensor>& asked_for) {
    std::vector<std::shared_ptr<Impl>> lazy;
    {
      std::lock_guard lock(stored_mutex);
      std::erase_if(to_store, [&](const std::weak_ptr<void>& w) {
        auto im = std::static_pointer_cast<Impl>(w.lock());
        if (!im || im->uop->op() != Ops::CONTIGUOUS) return true;  // gone, or realized or assigned since
        lazy.push_back(std::move(im));
        return false;
      });
    }
    std::vector<Tensor> out;
    if (lazy.empty()) return out;
    std::vector<UOpRef> uops;
    for (const Tensor& t : asked_for) uops.push_back(t.uop());
    UOpRef sink = UOp::sink(uops);  // named: the order ends with it
    std::unordered_set<const UOp*> computed;
    for (const UOp* u : sink->toposort()) computed.insert(u);
    for (const UOpRef& u : uops) computed.erase(u.get());  // a node asked for gets no second tensor
    for (std::shared_ptr<Impl>& im : lazy) {
      // over several devices a tensor is left to its own realize
      if (im->device.find(',') != std::string::npos || !computed.erase(im->uop.get())) continue;
      out.emplace_back().impl_ = std::move(im);
    }
    return out;
  };
  size_t asked = tensors.size();
  for (Tensor& t : computed_contiguous(tensors))
    if (has_elements(t)) tensors.push_back(std::move(t));
  std::vector<UOpRef> roots;
  for (const Tensor& t : tensors)
    if (has_elements(t)) roots.push_back(ran_assigns().resolve(t.uop()));
  // over several devices: each MULTI root realizes one buffer per device
  bool multi = multi_in_use();
  for (const Tensor& t : tensors) multi = multi || t.device().find(',') != std::string::npos;
  std::vector<UOpRef> resolved = multi ? resolve_multi(roots) : roots, flat;
  for (const UOpRef& r : resolved)
    if (r->op() == Ops::MULTI)
      flat.insert(flat.end(), r->src().begin(), r->src().end());
    else
      flat.push_back(r);
  std::vector<engine::RealizedBuffer> bufs = engine::realize_uops(flat);
  ran_assigns().realized(roots);
  for (size_t i = 0, k = 0, r = 0; i < tensors.size(); i++) {
    Impl& im = tensors[i].impl();
    const Shape& shape = *im.uop->shape();
    if (has_elements(tensors[i]) && resolved[r]->op() == Ops::MULTI) {
      const UOpRef& m = resolved[r++];
      std::vector<UOpRef> views;
      std::vector<engine::BufferHold> holds;
      for (const UOpRef& part : m->src()) {
        views.push_back(engine::realized_view(bufs[k].buffer, *part->shape()));
        holds.push_back(bufs[k++].hold);
      }
      im.replace_uop(Autograd::realized(im, m->with_src(std::move(views))), std::move(holds));
      continue;
    }
    if (has_elements(tensors[i])) r++;
    // a tensor without elements needs no kernel, only an empty buffer
    engine::RealizedBuffer rb =
        has_elements(tensors[i]) ? bufs[k++] : engine::buffer_empty(im.device, im.uop->dtype(), 0);
    // a stored contiguous() whose buffer a tensor asked for also has (a view of it) stays lazy: tensors
    // never share a buffer, or an assign to one would change the other
    if (i >= asked && std::any_of(bufs.begin(), bufs.begin() + static_cast<ptrdiff_t>(k - 1),
                                  [&](const engine::RealizedBuffer& b) { return b.buffer == rb.buffer; }))
      continue;
    im.replace_uop(Autograd::realized(im, engine::realized_view(rb.buffer, shape)), {rb.hold});
  }
}

std::vector<std::byte> Tensor::to_bytes() const {
  if (device().find(',') != std::string::npos) return to(split_devices(device())[0]).to_bytes();
  Tensor t = *this;
  t.realize();
  // a symbolic tensor reads as its elements at the variables' bound values
  const UOpRef& buf = engine::realized_buffer(t.uop());
  std::vector<std::byte> out(static_cast<size_t>(numel().bound()) * dtype().itemsize());
  engine::copy_to_host(buf, out);
  return out;
}

engine::HostView Tensor::host_view() const {
  if (device().find(',') != std::string::npos) return to(split_devices(device())[0]).host_view();
  Tensor t = contiguous();
  t.realize();
  UOpRef buf = engine::realized_buffer(t.uop());
  if (!buf) return {};
  engine::HostView v = tg::engine::host_view(buf);
  // a symbolic tensor reads as its elements at the variables' bound values
  if (v.bytes.data() != nullptr)
    v.bytes = v.bytes.first(static_cast<size_t>(numel().bound()) * dtype().itemsize());
  return v;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  std::vector<std::byte> bytes = to_bytes();
  DType d = dtype(), as = dtype_of<T>();
  std::vector<T> out(static_cast<size_t>(numel().bound()));
  if constexpr (!std::is_same_v<T, bool>) {  // the element type itself: the bytes as they are
    if (d == as) {  // (an empty vector's data() may be null, which memcpy may not take)
      if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
      return out;
    }
  }
  for (size_t i = 0; i < out.size(); i++) {
    ConstValue v = host::convert(as, d, host::load(d, bytes.data() + i * d.itemsize()));
    std::visit([&](auto x) { out[i] = static_cast<T>(x); }, v);
  }
  return out;
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1)
    throw ValueError("item", fmt::format("needs exactly one element, the tensor has shape {}",
                                         detail::shape_str(shape())));
  return to_vector<T>()[0];
}

#define TG_INSTANTIATE(T)                               \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;
TG_INSTANTIATE(bool)
TG_INSTANTIATE(int8_t)
TG_INSTANTIATE(uint8_t)
TG_INSTANTIATE(int16_t)
TG_INSTANTIATE(uint16_t)
TG_INSTANTIATE(int32_t)
TG_INSTANTIATE(uint32_t)
TG_INSTANTIATE(int64_t)
TG_INSTANTIATE(uint64_t)
TG_INSTANTIATE(float)
TG_INSTANTIATE(double)
#undef TG_INSTANTIATE

std::vector<engine::ScheduleItemView> Tensor::schedule() const {
  std::vector<UOpRef> roots{ran_assigns().resolve(uop())};
  if (multi_in_use() || device().find(',') != std::string::npos) roots = resolve_multi(roots);
  if (roots[0]->op() == Ops::MULTI)
    roots = std::vector<UOpRef>(roots[0]->src().begin(), roots[0]->src().end());
  return engine::schedule_uops(roots);
}

// ---- dtype ----

Tensor Tensor::cast(DType d) const {
  if (d.count() != 1 || d.is_ptr() || d.scalar() == Scalar::VOID || d.scalar() == Scalar::INDEX)
    throw DTypeError("cast", fmt::format("{} is not a tensor element dtype", d.str()));
  if (d == dtype()) return *this;
  return detail::derive(UOp::make(Ops::CAST, d, {uop()}), *this, {this});
}

Tensor Tensor::bitcast(DType d) const {
  if (d.count() != 1 || d.is_ptr() || d.scalar() == Scalar::VOID || d.scalar() == Scalar::INDEX ||
      d.is_bool() || dtype().is_bool())
    throw DTypeError("bitcast", fmt::format("cannot bitcast {} to {}", dtype().name(), d.name()));
  if (d == dtype()) return *this;
  if (d.itemsize() != dtype().itemsize())
    throw NotSupportedError("bitcast", fmt::format("{} to {} changes the element size; the scheduler only "
                                                   "handles same-size bitcasts so far",
                                                   dtype().name(), d.name()));
  return detail::derive(UOp::make(Ops::BITCAST, d, {uop()}), *this, {this});
}

Tensor Tensor::detach() const { return Tensor(UOp::make(Ops::DETACH, dtype(), {uop()}), device(), holds()); }

Tensor Tensor::contiguous_backward() const {
  UOpRef x = uop();
  CustomBackward back = [](const UOpRef& g) {
    return std::vector<UOpRef>{UOp::make(Ops::CONTIGUOUS, g->dtype(), {g})};
  };
  return detail::derive(custom_gradient(x, {x}, std::move(back), "contiguous_backward"), *this, {this});
}

Tensor Tensor::contiguous() const {
  Ops op = uop()->op();
  if (op == Ops::CONTIGUOUS || op == Ops::BUFFER ||
      (op == Ops::RESHAPE && uop()->src(0)->op() == Ops::BUFFER))
    return *this;
  Tensor out = detail::derive(UOp::make(Ops::CONTIGUOUS, dtype(), {uop()}), *this, {this});
  std::lock_guard lock(stored_mutex);
  to_store.push_back(out.impl_);
  return out;
}

Tensor Tensor::to(std::string_view device) const {
  std::string dev = engine::canonical_device(device);
  if (dev == this->device()) return *this;
  if (dev.find(',') != std::string::npos && this->device().find(',') != std::string::npos)
    throw ValueError(
        "to", fmt::format("the tensor is on {}; move it to one device before {}", this->device(), dev));
  if (dev.find(',') != std::string::npos) return shard(split_devices(dev));  // a copy on each device
  UOpRef u = UOp::make(Ops::COPY, dtype(), {uop(), detail::device_uop(dev)});
  Tensor out(u, dev, holds());
  Autograd::propagate(out, {this});
  return out;
}

static bool is_buffer_view(const UOp* u) {
  if (u->op() == Ops::MULTI)
    return std::all_of(u->src().begin(), u->src().end(),
                       [](const UOpRef& s) { return is_buffer_view(s.get()); });
  while (group::Movement.contains(u->op())) u = u->src(0).get();
  return u->op() == Ops::BUFFER;
}

Tensor& Tensor::assign(const Operand& x) {
  Tensor v = x.tensor() ? *x.tensor() : detail::const_tensor(x.number()->value(), dtype(), shape(), device());
  detail::check_same_device(*this, v, "assign");
  if (v.dtype() != dtype())
    throw DTypeError("assign", fmt::format("value is {} but the target is {}; cast it first",
                                           v.dtype().name(), dtype().name()));
  if (v.shape() != shape()) {
    if (detail::broadcast_shape(v.shape(), shape(), "assign") != shape())
      throw ShapeError("assign", fmt::format("cannot assign {} to {}", detail::shape_str(v.shape()),
                                             detail::shape_str(shape())));
    v = detail::broadcast_to(v, shape(), "assign");
  }
  if (!is_buffer_view(uop().get())) {
    // The pending graph (an earlier assign, say) runs now; a value built from it reads its result instead,
    // or the value would run it again, writing the buffer twice.
    UOpRef pending = uop();
    realize();
    UOpRef value = v.uop()->substitute({{pending.get(), uop()}});
    if (value != v.uop()) v = Tensor(value, v.device(), v.holds());
  }
  std::vector<engine::BufferHold> holds = impl().holds;
  for (const engine::BufferHold& h : v.holds())
    if (std::find(holds.begin(), holds.end(), h) == holds.end()) holds.push_back(h);
  impl().replace_uop(UOp::make(Ops::ASSIGN, dtype(), {uop(), v.uop()}), std::move(holds));
  ran_assigns().created(uop());
  return *this;
}

Tensor& Tensor::replace(const Tensor& x) {
  if (x.shape() != shape())
    throw ShapeError("replace", fmt::format("the new value has shape {} but the tensor has shape {}",
                                            detail::shape_str(x.shape()), detail::shape_str(shape())));
  if (x.dtype() != dtype())
    throw DTypeError("replace", fmt::format("the new value is {} but the tensor is {}; cast it first",
                                            x.dtype().name(), dtype().name()));
  if (x.requires_grad())
    throw ValueError("replace", "the new value requires grad; replace takes data, detach() it first");
  Tensor v = x;
  // a buffer of its own, not one shared by every tensor replaced by an equal lazy graph (one node)
  if (!is_buffer_view(v.uop().get())) v = x.contiguous().realize();
  Impl& im = impl();
  im.replace_uop(v.uop(), v.holds());
  im.device = v.device();
  return *this;
}

Tensor& Tensor::shard_(const std::vector<std::string>& devices, std::optional<int> axis) {
  // realized now and without history: the parts are the tensor's own buffers from here on
  Tensor s = detach().shard(devices, axis);
  s.realize();
  Impl& im = impl();
  im.uop = s.uop(), im.holds = s.holds(), im.device = s.device(), im.graph_uop = UOpRef();
  return *this;
}

// ---- graph: autograd ----

namespace {
std::mutex leaves_mutex;
std::vector<std::weak_ptr<void>> leaves;  // every tensor marked by requires_grad_(), while it lives
}  // namespace

void Autograd::add_leaf(const std::shared_ptr<Tensor::Impl>& im) {
  std::lock_guard lock(leaves_mutex);
  std::erase_if(leaves, [](const std::weak_ptr<void>& w) { return w.expired(); });
  leaves.push_back(im);
}

std::vector<std::shared_ptr<Tensor::Impl>> Autograd::live_leaves() {
  std::lock_guard lock(leaves_mutex);
  std::vector<std::shared_ptr<Tensor::Impl>> out;
  for (const std::weak_ptr<void>& w : leaves)
    if (auto p = std::static_pointer_cast<Tensor::Impl>(w.lock());
        p && p->requires_grad && !p->from_op && std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  return out;
}

Tensor Autograd::seed(const Tensor& out, const Tensor& grad_output, std::string_view op) {
  if (!out.dtype().is_float())
    throw DTypeError(
        op, fmt::format("only floating-point outputs have gradients, this one is {}", out.dtype().name()));
  if (!grad_output.defined()) {
    if (out.numel() != 1)
      throw ValueError(op,
                       fmt::format("a gradient can only be implied for a one-element output, this one has "
                                   "shape {}: pass the output's gradient",
                                   detail::shape_str(out.shape())));
    return detail::const_tensor(1.0, out.dtype(), out.shape(), out.device());
  }
  if (grad_output.shape() != out.shape())
    throw ShapeError(op, fmt::format("the gradient has shape {} but the output has shape {}",
                                     detail::shape_str(grad_output.shape()), detail::shape_str(out.shape())));
  detail::check_same_device(out, grad_output, op);
  return grad_output.cast(out.dtype());
}

std::vector<UOpRef> Autograd::keys(const Tensor::Impl& im) {
  // the walk reaches the graph from the view too, so the graph's gradient is the whole of it
  if (UOpRef g = im.from_op ? kept_graph(im.uop) : UOpRef()) return {g};
  if (im.graph_uop) return {im.uop, im.graph_uop};
  return {im.uop};
}

UOpRef Autograd::lookup(const Tensor::Impl& im, const std::unordered_map<UOpRef, UOpRef>& grads) {
  UOpRef g;
  for (const UOpRef& key : keys(im))
    if (auto it = grads.find(key); it != grads.end()) g = g ? g + it->second : it->second;
  return g;
}

KeptUnder Autograd::kept_under(const Tensor::Impl& root, const std::vector<UOpRef>& targets,
                               std::string_view op) {
  KeptUnder kept = kept_graphs_under(root.uop);
  for (const UOp* v : kept.freed)
    if (std::find(targets.begin(), targets.end(), v->ref()) == targets.end())
      throw ValueError(op,
                       "a tensor in this graph was realized from a graph that an earlier backward() "
                       "freed (as PyTorch does without retain_graph); compute it again");
  return kept;
}

Tensor& Tensor::requires_grad_(bool on) {
  Impl& im = impl();
  if (on && !im.requires_grad) {
    // a leaf needs a node of its own: equal lazy graphs (say two ones()) are one node after hash-consing
    if (!is_buffer_view(im.uop.get())) realize();
    Autograd::add_leaf(impl_);
  }
  im.requires_grad = on;
  if (!on) im.from_op = false;
  return *this;
}

Tensor& Tensor::backward(const Tensor& gradient) {
  Impl& im = impl();
  if (!im.requires_grad)
    throw ValueError("backward",
                     "the tensor does not require grad: no input it is computed from has "
                     "requires_grad set, or the path goes through detach()");
  Tensor seed = Autograd::seed(*this, gradient, "backward");
  KeptUnder kept = Autograd::kept_under(im, {}, "backward");
  if (im.from_op && im.graph_freed)  // PyTorch: "Trying to backward through the graph a second time"
    throw ValueError("backward",
                     "backward() already went through this tensor's graph and freed it (as PyTorch does "
                     "without retain_graph); compute the tensor again to backpropagate again");
  std::unordered_set<const UOp*> nodes;
  for (const UOp* u : gradient_toposort(im.uop, kept.graphs)) nodes.insert(u);
  std::vector<std::shared_ptr<Impl>> found;
  std::vector<UOpRef> targets;
  for (const std::shared_ptr<Impl>& leaf : Autograd::live_leaves()) {
    bool used = false;
    for (const UOpRef& key : Autograd::keys(*leaf))
      if (nodes.count(key.get())) {
        targets.push_back(key);
        used = true;
      }
    if (!used) continue;
    if (!leaf->uop->dtype().is_float())
      throw DTypeError("backward", fmt::format("requires_grad is set on an {} tensor; only floating-point "
                                               "tensors can have gradients",
                                               leaf->uop->dtype().name()));
    found.push_back(leaf);
  }
  std::unordered_map<UOpRef, UOpRef> grads = compute_gradient(im.uop, seed.uop(), targets, kept.graphs);
  std::vector<engine::BufferHold> holds = im.holds;
  holds.insert(holds.end(), seed.holds().begin(), seed.holds().end());
  holds.insert(holds.end(), kept.holds.begin(), kept.holds.end());
  for (const std::shared_ptr<Impl>& leaf : found) {
    UOpRef g = Autograd::lookup(*leaf, grads);
    if (!g) continue;  // reached only through detach()
    Tensor fresh(g, leaf->device, holds), old;
    old.impl_ = leaf->grad;
    leaf->grad = (old.defined() ? old + fresh : fresh).impl_;
  }
  // as PyTorch without retain_graph: the graphs walked are freed, and so is this one if realized later
  free_graphs(kept.graphs);
  im.graph_freed = true;
  return *this;
}

std::vector<Tensor> Tensor::gradient(std::vector<Tensor> targets, const Tensor& grad_output) const {
  Tensor seed = Autograd::seed(*this, grad_output, "gradient");
  std::vector<UOpRef> keys;
  for (const Tensor& t : targets) {
    if (!t.dtype().is_float())
      throw DTypeError("gradient",
                       fmt::format("only floating-point targets have gradients, got {}", t.dtype().name()));
    for (const UOpRef& key : Autograd::keys(t.impl())) keys.push_back(key);
  }
  KeptUnder kept = Autograd::kept_under(impl(), keys, "gradient");
  std::unordered_map<UOpRef, UOpRef> grads = compute_gradient(uop(), seed.uop(), keys, kept.graphs);
  std::vector<engine::BufferHold> holds = impl().holds;
  holds.insert(holds.end(), seed.holds().begin(), seed.holds().end());
  holds.insert(holds.end(), kept.holds.begin(), kept.holds.end());
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); i++) {
    UOpRef g = Autograd::lookup(targets[i].impl(), grads);
    if (!g)
      throw ValueError("gradient", fmt::format("the output does not depend on target {} (it is not in the "
                                               "output's graph, or only through detach())",
                                               i));
    out.emplace_back(g, targets[i].device(), holds);
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace tg
