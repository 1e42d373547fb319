// OUTOFTREE: a host-memory device with just enough to be listed, selected and to move bytes.
#include <cstdlib>
#include <cstring>

#include <tg/sdk/sdk.hpp>

using namespace tg::sdk;

struct HostAllocator final : Allocator {
  Status alloc(size_t nbytes, const AllocOptions&, Handle* out) noexcept override {
    *out = std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    return *out ? Status{} : Status{Code::out_of_memory, "host allocation failed"};
  }
  void free(Handle buf, size_t, const AllocOptions&) noexcept override { std::free(buf); }
  Status copyin(Handle dst, std::span<const std::byte> src) noexcept override {
    if (!src.empty()) std::memcpy(dst, src.data(), src.size());
    return {};
  }
  Status copyout(std::span<std::byte> dst, Handle src) noexcept override {
    if (!dst.empty()) std::memcpy(dst.data(), src, dst.size());
    return {};
  }
  size_t alignment() const noexcept override { return 64; }
};

struct NoRenderer final : Renderer {
  RendererCaps caps_{.dtypes = 1u << 12, .dialect = "none"};
  const RendererCaps& caps() const noexcept override { return caps_; }
  Status render(std::string_view, std::span<const tg::UOp* const>, Blob&) noexcept override {
    return unsupported("this example device runs no kernels");
  }
};

struct NoCompiler final : Compiler {
  std::string_view cache_key() const noexcept override { return "none"; }
  Status compile(std::string_view, Blob&) noexcept override { return unsupported("no compiler"); }
};

class OutOfTreeDevice final : public Device {
 public:
  static constexpr int32_t priority = 10;
  static constexpr const char* version = "9.8.7";
  static Status probe() { return {}; }
  explicit OutOfTreeDevice(int32_t) {}
  Allocator& allocator() noexcept override { return allocator_; }
  Renderer& renderer() noexcept override { return renderer_; }
  Compiler& compiler() noexcept override { return compiler_; }
  Status load(std::string_view, std::span<const std::byte>, Program**) noexcept override {
    return unsupported("no programs");
  }
  Status synchronize() noexcept override { return {}; }
  std::string_view description() const noexcept override { return "out-of-tree example"; }

 private:
  HostAllocator allocator_;
  NoRenderer renderer_;
  NoCompiler compiler_;
};

TG_PLUGIN(OUTOFTREE, OutOfTreeDevice)
