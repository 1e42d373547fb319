// Reference implementation of the realization boundary: host storage plus the host evaluator, no
// kernels. The runtime-backed implementation (schedule, codegen, device) replaces this file.
#include "tensor/realize.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "schedule/schedule.hpp"
#include "tensor/eval_host.hpp"

namespace tg {

namespace {

struct HostBuffer;

// Live storages by UNIQUE id; ids are never reused, so a stale id cannot find a newer buffer.
class Registry {
 public:
  void add(int64_t id, const std::shared_ptr<HostBuffer>& b) {
    std::lock_guard lock(mu_);
    live_[id] = b;
  }
  void remove(int64_t id) {
    std::lock_guard lock(mu_);
    live_.erase(id);
  }
  std::shared_ptr<HostBuffer> find(int64_t id) {
    std::lock_guard lock(mu_);
    auto it = live_.find(id);
    return it == live_.end() ? nullptr : it->second.lock();
  }

 private:
  std::mutex mu_;
  std::unordered_map<int64_t, std::weak_ptr<HostBuffer>> live_;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: holds may outlive static destruction
  return *r;
}

struct HostBuffer : host::Storage {
  int64_t id = 0;
  ~HostBuffer() { registry().remove(id); }
};

RealizedBuffer make_buffer(std::string_view device, DType dtype, std::vector<std::byte> bytes) {
  auto numel = static_cast<int64_t>(bytes.size() / dtype.itemsize());
  UOpRef buf = tg::new_buffer(UOp::make(Ops::DEVICE, dtypes::void_, {}, std::string(device)), numel, dtype);
  auto b = std::make_shared<HostBuffer>();
  b->id = buf->src(0)->arg_as<int64_t>();
  b->dtype = dtype;
  b->bytes = std::move(bytes);
  registry().add(b->id, b);
  return {buf, b};
}

// The device a tensor-graph node computes on: follow the first source down to a DEVICE.
std::string device_of(const UOp& u) {
  const UOp* n = &u;
  while (true) {
    for (const UOpRef& s : n->src())
      if (s->op() == Ops::DEVICE) return s->arg_as<std::string>();
    if (n->src().empty()) return default_device();
    n = n->src(0).get();
  }
}

std::shared_ptr<HostBuffer> storage_of(const UOp& buffer) {
  if (buffer.op() != Ops::BUFFER)
    throw ValueError("realize", fmt::format("{} is not a BUFFER", op_name(buffer.op())));
  int64_t id = buffer.src(0)->arg_as<int64_t>();
  std::shared_ptr<HostBuffer> b = registry().find(id);
  if (!b) throw ValueError("realize", fmt::format("buffer {} was freed (no tensor holds it)", id));
  return b;
}

// The BUFFER a root already is, when it is the whole buffer in row-major order.
const UOp* whole_buffer(const UOp& u) {
  const UOp* b = &u;
  if (b->op() == Ops::ASSIGN) b = b->src(0).get();
  if (b->op() == Ops::RESHAPE) b = b->src(0).get();
  return b->op() == Ops::BUFFER ? b : nullptr;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ScheduleItemView& si) {
  return os << "ScheduleItem(" << (si.ast ? si.ast->str() : "<no ast>") << ", " << si.bufs.size()
            << " buffers)";
}

std::string canonical_device(std::string_view spec) {
  std::string s(spec);
  size_t colon = s.find(':');
  std::string name = s.substr(0, colon), rest = colon == std::string::npos ? "" : s.substr(colon);
  if (name.empty() || rest == ":" || rest.find("::") != std::string::npos)
    throw DeviceError("device",
                      fmt::format("malformed device '{}': expected NAME[:index][:renderer[:arch]]", spec));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (rest == ":0") rest.clear();
  return name + rest;
}

std::string default_device() {
  std::string dev = env::get("DEV");
  return dev.empty() ? std::string("INTERP") : canonical_device(dev);
}

RealizedBuffer buffer_from_host(std::string_view device, DType dtype, std::span<const std::byte> data) {
  if (data.size() % dtype.itemsize() != 0)
    throw ValueError("buffer",
                     fmt::format("{} bytes is not a whole number of {}", data.size(), dtype.name()));
  return make_buffer(device, dtype, std::vector<std::byte>(data.begin(), data.end()));
}

RealizedBuffer buffer_empty(std::string_view device, DType dtype, int64_t numel) {
  if (numel < 0) throw ValueError("buffer", fmt::format("negative element count {}", numel));
  return make_buffer(device, dtype, std::vector<std::byte>(static_cast<size_t>(numel) * dtype.itemsize()));
}

std::vector<RealizedBuffer> realize_uops(std::span<const UOpRef> roots) {
  std::vector<UOpRef> todo;
  for (const UOpRef& r : roots)
    if (r->op() != Ops::BUFFER && !(r->op() == Ops::RESHAPE && r->src(0)->op() == Ops::BUFFER))
      todo.push_back(r);
  auto lookup = [](const UOp& b) -> std::shared_ptr<host::Storage> { return storage_of(b); };
  std::vector<std::vector<std::byte>> values = host::evaluate(todo, lookup);

  std::vector<RealizedBuffer> out;
  size_t next = 0;
  for (const UOpRef& r : roots) {
    const UOp* whole = whole_buffer(*r);
    bool computed = next < todo.size() && todo[next] == r;
    if (whole != nullptr)
      out.push_back({whole->ref(), storage_of(*whole)});
    else
      out.push_back(make_buffer(device_of(*r), r->dtype(), std::move(values[next])));
    if (computed) next++;
  }
  return out;
}

void copy_to_host(const UOpRef& buffer, std::span<std::byte> dst) {
  std::shared_ptr<HostBuffer> b = storage_of(*buffer);
  if (dst.size() > b->bytes.size())
    throw ValueError("copyout",
                     fmt::format("asked for {} bytes of a {}-byte buffer", dst.size(), b->bytes.size()));
  std::memcpy(dst.data(), b->bytes.data(), dst.size());
}

std::vector<ScheduleItemView> schedule_uops(std::span<const UOpRef>) {
  throw NotSupportedError("schedule",
                          "this build realizes with the host reference evaluator, which has no kernels");
}

}  // namespace tg
