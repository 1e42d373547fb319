// The INTERP device: host allocator, text "renderer", checking "compiler" and the program runner.
#include "runtime/interp/interp.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/builtins.hpp"
#include "runtime/interp/program.hpp"
#include "tg/sdk/foreign_memory.hpp"
#include "tg/sdk/graph.hpp"

namespace tg::runtime::interp {

namespace {
using namespace tg::sdk;

constexpr std::align_val_t kAlign{64};

// A handle: host bytes, owned unless it is a view made by offset().
struct HostBuffer {
  std::byte* data;
  size_t nbytes;
  bool owned;
};

HostBuffer* buf(Handle h) { return static_cast<HostBuffer*>(h); }

class InterpAllocator final : public Allocator {
 public:
  Status alloc(size_t nbytes, const AllocOptions&, Handle* out) noexcept override {
    return guard([&]() -> Status {
      // nothrow: a size no host has is an out_of_memory status, also under AddressSanitizer (whose throwing
      // new aborts the process instead, even with allocator_may_return_null)
      auto* p = static_cast<std::byte*>(::operator new(std::max<size_t>(nbytes, 1), kAlign, std::nothrow));
      if (p == nullptr) return {Code::out_of_memory, "host allocation failed"};
      std::memset(p, 0, nbytes);
      *out = new HostBuffer{p, nbytes, true};
      return {};
    });
  }
  void free(Handle h, size_t, const AllocOptions&) noexcept override {
    if (h == nullptr) return;
    if (buf(h)->owned) ::operator delete(buf(h)->data, kAlign);
    delete buf(h);
  }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    if (src.size() > buf(dst)->nbytes) return {Code::invalid_argument, "copyin larger than the buffer"};
    if (!src.empty()) std::memcpy(buf(dst)->data, src.data(), src.size());
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    if (dst.size() > buf(src)->nbytes) return {Code::invalid_argument, "copyout larger than the buffer"};
    if (!dst.empty()) std::memcpy(dst.data(), buf(src)->data, dst.size());
    return {};
  }
  size_t alignment() const noexcept override { return 64; }
  Status offset(Handle b, size_t off, size_t size, Handle* out) noexcept override {
    if (off + size > buf(b)->nbytes) return {Code::invalid_argument, "view past the end of the buffer"};
    return guard([&] { *out = new HostBuffer{buf(b)->data + off, size, false}; });
  }
  void free_view(Handle view) noexcept override { delete buf(view); }
  Status transfer(Handle dst, Handle src, size_t nbytes) noexcept override {
    if (nbytes > buf(dst)->nbytes || nbytes > buf(src)->nbytes)
      return {Code::invalid_argument, "transfer past the end"};
    if (nbytes != 0) std::memmove(buf(dst)->data, buf(src)->data, nbytes);
    return {};
  }
  void* as_host(Handle h) noexcept override { return buf(h)->data; }
};

// The caller's memory used in place, as a buffer that does not own its bytes.
class InterpForeignMemory final : public sdk::ForeignMemory {
 public:
  Status wrap(void* ptr, size_t nbytes, Handle* out) noexcept override {
    return guard([&] { *out = new HostBuffer{static_cast<std::byte*>(ptr), nbytes, false}; });
  }
  void release(Handle h) noexcept override { delete buf(h); }
};

class InterpRenderer final : public Renderer {
 public:
  const RendererCaps& caps() const noexcept override { return caps_; }
  Status render(std::string_view name, std::span<const UOp* const> uops, Blob& source) noexcept override {
    return guard([&] { source.assign(serialize(name, uops)); });
  }

 private:
  RendererCaps caps_ = device_caps();

  static RendererCaps device_caps() {
    RendererCaps c = interp_caps();
    std::string tc = env::get("INTERP_TC");
    if (tc == "cuda") {
      c.tensor_core_count = 1, c.tensor_cores[0] = cuda_mma_m16n8k16();
    } else if (tc == "hip_mfma") {
      c.tensor_core_count = 1, c.tensor_cores[0] = hip_mfma_16x16x16();
    } else if (tc == "hip_wmma") {
      c.tensor_core_count = 1, c.tensor_cores[0] = hip_wmma_16x16x16();
    } else if (tc == "metal") {
      c.tensor_core_count = 1, c.tensor_cores[0] = metal_simdgroup_8x8();
    } else if (!tc.empty()) {
      throw ValueError(
          "INTERP",
          fmt::format("INTERP_TC={} is not a tensor core INTERP knows (cuda, hip_mfma, hip_wmma, metal)", tc));
    }
    return c;
  }
};

struct InterpCompiler final : Compiler {
  std::string_view cache_key() const noexcept override { return "interp-1"; }
  Status compile(std::string_view source, Blob& binary) noexcept override {
    try {
      (void)parse(source);
      binary.assign(source);
      return {};
    } catch (const std::exception& e) {
      return {Code::compile_error, e.what()};
    }
  }
};

class InterpProgram final : public sdk::Program {
 public:
  explicit InterpProgram(runtime::interp::Program p) : p_(std::move(p)) {}
  Status launch(std::span<const Handle> bufs, std::span<const int64_t> vals, const LaunchDims& dims, bool,
                double* seconds) noexcept override {
    return guard([&] {
      std::vector<Memory> mems;
      for (Handle h : bufs) {
        if (h == nullptr) throw ValueError("INTERP", fmt::format("kernel {}: null buffer argument", p_.name));
        mems.push_back({buf(h)->data, buf(h)->nbytes});
      }
      Timer t;
      execute(p_, mems, vals, dims);
      if (seconds != nullptr) *seconds = t.seconds();
    });
  }

 private:
  runtime::interp::Program p_;
};

// The reference for graph recording (sdk/graph.hpp): a recorded list of launches, run one by one, so that the
// JIT's graph replay is exercised wherever INTERP runs.
class InterpGraph final : public sdk::LaunchGraph {
 public:
  explicit InterpGraph(std::span<const sdk::GraphLaunch> launches) {
    for (const sdk::GraphLaunch& l : launches)
      launches_.push_back(
          {l.program, {l.bufs.begin(), l.bufs.end()}, {l.vals.begin(), l.vals.end()}, l.dims});
  }
  Status update(size_t i, std::span<const Handle> bufs, std::span<const int64_t> vals,
                const LaunchDims& dims) noexcept override {
    return guard([&] {
      Recorded& r = launches_.at(i);
      if (bufs.size() != r.bufs.size() || vals.size() != r.vals.size())
        throw ValueError("INTERP", fmt::format("graph launch {}: other argument counts than recorded", i));
      r.bufs.assign(bufs.begin(), bufs.end()), r.vals.assign(vals.begin(), vals.end()), r.dims = dims;
    });
  }
  Status run(bool wait, double* seconds) noexcept override {
    Timer t;
    for (Recorded& r : launches_)
      if (Status s = r.program->launch(r.bufs, r.vals, r.dims, wait, nullptr); !s.ok()) return s;
    if (seconds != nullptr) *seconds = t.seconds();
    return {};
  }

 private:
  struct Recorded {
    sdk::Program* program;
    std::vector<Handle> bufs;
    std::vector<int64_t> vals;
    LaunchDims dims;
  };
  std::vector<Recorded> launches_;
};

struct InterpGraphs final : sdk::LaunchGraphs {
  Status build(std::span<const sdk::GraphLaunch> launches, sdk::LaunchGraph** out) noexcept override {
    return guard([&] { *out = new InterpGraph(launches); });
  }
};

class InterpDevice final : public sdk::Device {
 public:
  static constexpr int32_t priority = 0;  // the last resort among usable devices
  static Status probe() { return {}; }
  explicit InterpDevice(int32_t) {}
  Allocator& allocator() noexcept override { return allocator_; }
  Renderer& renderer() noexcept override { return renderer_; }
  Compiler& compiler() noexcept override { return compiler_; }
  Status load(std::string_view name, std::span<const std::byte> binary,
              sdk::Program** out) noexcept override {
    return guard([&] {
      runtime::interp::Program p =
          parse(std::string_view(reinterpret_cast<const char*>(binary.data()), binary.size()));
      if (p.name != name)
        throw ValueError("INTERP", fmt::format("the binary holds kernel '{}', not '{}'", p.name, name));
      *out = new InterpProgram(std::move(p));
    });
  }
  Status synchronize() noexcept override { return {}; }
  std::string_view description() const noexcept override {
    return "reference interpreter of linear UOps on the host (slow, exact semantics)";
  }
  const void* extension(uint32_t id) noexcept override {
    if (id == sdk::kForeignMemoryExtension) return static_cast<const sdk::ForeignMemory*>(&foreign_);
    return id == sdk::kLaunchGraphExtension ? static_cast<const sdk::LaunchGraphs*>(&graphs_) : nullptr;
  }

 private:
  InterpAllocator allocator_;
  InterpForeignMemory foreign_;
  InterpRenderer renderer_;
  InterpCompiler compiler_;
  InterpGraphs graphs_;
};

}  // namespace

sdk::TensorCore cuda_mma_m16n8k16() {
  // groupID = lane >> 2 is A's and C's row and B's column, threadID_in_group = lane & 3 picks two
  // neighbouring columns (A, C) or rows (B); a lane's elements step by 1 within such a pair, then by 8.
  constexpr uint8_t L = sdk::TensorCore::kLaneBit, E = sdk::TensorCore::kElemBit;
  sdk::TensorCore tc;
  tc.m = 16, tc.n = 8, tc.k = 16, tc.threads = 32;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {L + 2, L + 3, L + 4, E + 1, E + 0, L + 0, L + 1, E + 2};  // rows (m), then columns (k)
  const uint8_t b[] = {E + 0, L + 0, L + 1, E + 1, L + 2, L + 3, L + 4};         // rows (k), then columns (n)
  const uint8_t c[] = {L + 2, L + 3, L + 4, E + 1, E + 0, L + 0, L + 1};         // rows (m), then columns (n)
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

sdk::TensorCore hip_mfma_16x16x16() {
  // 64 lanes (AMD's matrix instruction calculator): A[i][k] is element k % 4 of lane i + 16 * (k / 4),
  // B[k][j] element k % 4 of lane j + 16 * (k / 4), D[i][j] element i % 4 of lane j + 16 * (i / 4).
  constexpr uint8_t L = sdk::TensorCore::kLaneBit, E = sdk::TensorCore::kElemBit;
  sdk::TensorCore tc;
  tc.m = 16, tc.n = 16, tc.k = 16, tc.threads = 64;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {L + 0, L + 1, L + 2, L + 3, E + 0, E + 1, L + 4, L + 5};  // rows (m), then columns (k)
  const uint8_t b[] = {E + 0, E + 1, L + 4, L + 5, L + 0, L + 1, L + 2, L + 3};  // rows (k), then columns (n)
  const uint8_t c[] = {E + 0, E + 1, L + 4, L + 5, L + 0, L + 1, L + 2, L + 3};  // rows (m), then columns (n)
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

sdk::TensorCore hip_wmma_16x16x16() {
  // 32 lanes (RDNA3 ISA; the HIP plugin fetches each lane's other 8 halves from lane ^ 16): A[i][k] is
  // element k % 8 of lane i + 16 * (k / 8), B[k][j] likewise with j, D[i][j] element i / 2 of lane
  // j + 16 * (i % 2).
  constexpr uint8_t L = sdk::TensorCore::kLaneBit, E = sdk::TensorCore::kElemBit;
  sdk::TensorCore tc;
  tc.m = 16, tc.n = 16, tc.k = 16, tc.threads = 32;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t a[] = {L + 0, L + 1, L + 2, L + 3, E + 0, E + 1, E + 2, L + 4};  // rows (m), then columns (k)
  const uint8_t b[] = {E + 0, E + 1, E + 2, L + 4, L + 0, L + 1, L + 2, L + 3};  // rows (k), then columns (n)
  const uint8_t c[] = {L + 4, E + 0, E + 1, E + 2, L + 0, L + 1, L + 2, L + 3};  // rows (m), then columns (n)
  std::copy(std::begin(a), std::end(a), tc.a_bits);
  std::copy(std::begin(b), std::end(b), tc.b_bits);
  std::copy(std::begin(c), std::end(c), tc.c_bits);
  return tc;
}

sdk::TensorCore metal_simdgroup_8x8() {
  // Each of the 32 threads holds two neighbouring columns of one row of every 8x8 tile:
  // row = 4*lane[4] + 2*lane[2] + lane[1], column = 4*lane[3] + 2*lane[0] + element; A, B and C alike.
  constexpr uint8_t L = sdk::TensorCore::kLaneBit, E = sdk::TensorCore::kElemBit;
  sdk::TensorCore tc;
  tc.m = 8, tc.n = 8, tc.k = 8, tc.threads = 32;
  tc.in = static_cast<uint8_t>(Scalar::FLOAT16), tc.acc = static_cast<uint8_t>(Scalar::FLOAT32);
  const uint8_t layout[] = {L + 1, L + 2, L + 4, E + 0, L + 0, L + 3};  // row bits, then column bits
  std::copy(std::begin(layout), std::end(layout), tc.a_bits);
  std::copy(std::begin(layout), std::end(layout), tc.b_bits);
  std::copy(std::begin(layout), std::end(layout), tc.c_bits);
  return tc;
}

sdk::RendererCaps interp_caps() {
  RendererCaps c;
  for (int s = 1; s < static_cast<int>(Scalar::INDEX); s++) c.dtypes |= uint64_t{1} << s;
  group::ALU.for_each(
      [&](Ops o) { c.native_ops[static_cast<int>(o) / 64] |= uint64_t{1} << (static_cast<int>(o) % 64); });
  c.max_vector_width = 16;
  c.has_local = c.has_shared = true;
  for (int i = 0; i < 3; i++) c.global_max[i] = 0x7fffffff;
  c.local_max[0] = c.local_max[1] = 1024, c.local_max[2] = 64;
  c.max_local_size = 1024, c.max_shared_bytes = 1u << 16;
  std::strncpy(c.dialect, "interp", sizeof c.dialect - 1);
  return c;
}

sdk::Device* create_interp_device() { return new InterpDevice(0); }

}  // namespace tg::runtime::interp

namespace tg::runtime {
const tg_plugin_descriptor interp_device_descriptor =
    builtin_descriptor<runtime::interp::InterpDevice>("INTERP");
}
