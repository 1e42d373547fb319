// NULL: a device that runs nothing. Schedule and codegen tests use it to count and inspect kernels
// without executing them. Handles are distinct numbers backed by no memory.
#include <atomic>
#include <cstdint>
#include <cstring>

#include "base/dtype.hpp"
#include "runtime/builtins.hpp"

namespace tg::runtime {
namespace {
using namespace tg::sdk;

class NullAllocator final : public Allocator {
 public:
  Status alloc(size_t, const AllocOptions&, Handle* out) noexcept override {
    *out = next();
    return {};
  }
  void free(Handle, size_t, const AllocOptions&) noexcept override {}
  Status copyin(Handle, std::span<const std::byte>) noexcept override { return {}; }
  Status copyout(std::span<std::byte>, Handle) noexcept override { return {}; }
  size_t alignment() const noexcept override { return 64; }
  Status offset(Handle, size_t, size_t, Handle* out) noexcept override {
    *out = next();
    return {};
  }

 private:
  Handle next() { return reinterpret_cast<Handle>(static_cast<uintptr_t>(++count_ * 64)); }
  std::atomic<uintptr_t> count_{0};
};

RendererCaps permissive_caps() {
  RendererCaps c;
  c.dtypes = (uint64_t{1} << kScalarCount) - 1;
  for (auto& ops : c.native_ops) ops = ~uint64_t{0};
  c.max_vector_width = 16, c.has_local = c.has_shared = c.has_threads = true;
  for (int i = 0; i < 3; ++i) c.global_max[i] = UINT32_MAX, c.local_max[i] = 1024;
  c.max_local_size = 1024, c.max_shared_bytes = 1u << 20, c.thread_count = 1;
  std::memcpy(c.dialect, "null", 5);
  return c;
}

class NullRenderer final : public Renderer {
 public:
  const RendererCaps& caps() const noexcept override { return caps_; }
  Status render(std::string_view, std::span<const UOp* const>, Blob&) noexcept override { return {}; }

 private:
  RendererCaps caps_ = permissive_caps();
};

struct NullCompiler final : Compiler {
  std::string_view cache_key() const noexcept override { return "null"; }
  Status compile(std::string_view, Blob&) noexcept override { return {}; }
};

struct NullProgram final : Program {
  Status launch(std::span<const Handle>, std::span<const int64_t>, const LaunchDims&, bool,
                double* seconds) noexcept override {
    if (seconds != nullptr) *seconds = 0;
    return {};
  }
};

class NullDevice final : public sdk::Device {
 public:
  static constexpr int32_t priority = -1;  // never picked by default: only DEV=NULL selects it
  static Status probe() { return {}; }
  explicit NullDevice(int32_t) {}
  Allocator& allocator() noexcept override { return allocator_; }
  Renderer& renderer() noexcept override { return renderer_; }
  Compiler& compiler() noexcept override { return compiler_; }
  Status load(std::string_view, std::span<const std::byte>, Program** out) noexcept override {
    return guard([&] { *out = new NullProgram(); });
  }
  Status synchronize() noexcept override { return {}; }
  std::string_view description() const noexcept override {
    return "runs nothing; for schedule and codegen tests";
  }

 private:
  NullAllocator allocator_;
  NullRenderer renderer_;
  NullCompiler compiler_;
};
}  // namespace

const tg_plugin_descriptor null_device_descriptor = builtin_descriptor<NullDevice>("NULL");

}  // namespace tg::runtime
