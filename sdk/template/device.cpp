// TEMPLATE: a complete minimal accelerator plugin that runs on the host. The allocator, compiler,
// runtime and renderer live in their own files; this one ties them together and exports the plugin.
#include <stdexcept>
#include <string>

#include <tg/sdk/plugin.hpp>

#include "allocator.hpp"
#include "compiler.hpp"
#include "program.hpp"
#include "renderer.hpp"

namespace tpl {

using tg::sdk::Status;

class TemplateDevice final : public tg::sdk::Device {
 public:
  // Default selection order: higher first (GPUs ~100, CLANG 50). Low so a copy never becomes the
  // default device by accident; raise it once the device is real.
  static constexpr int32_t priority = 5;
  static constexpr const char* version = TEMPLATE_VERSION;

  // Real device: dlopen the driver library and count devices (no contexts, no threads, no files), and
  // say what is missing and how to fix it. Runs for every `tg devices` and default-device choice.
  static Status probe() {
    if (executable_exists(c_compiler())) return {};
    return tg::sdk::unavailable("unavailable: no C compiler found (install gcc or set TEMPLATE_CC)");
  }

  // Real device: open device `index` (context, queue, memory heaps). Throw to refuse: the message
  // becomes the reason `tg devices` shows.
  explicit TemplateDevice(int32_t index) {
    if (index != 0)
      throw std::runtime_error("TEMPLATE has one device, 0; got index " + std::to_string(index));
    description_ = "host device from the SDK template, compiling with " + std::string(compiler_.id());
  }

  // --- required ---
  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  Status load(std::string_view name, std::span<const std::byte> binary,
              tg::sdk::Program** out) noexcept override {
    return load_program(name, binary, out);
  }
  // Real device: wait for every submitted kernel and copy (vkQueueWaitIdle, cuCtxSynchronize). Here
  // everything is finished when its call returns.
  Status synchronize() noexcept override { return {}; }
  std::string_view description() const noexcept override { return description_; }

 private:
  TemplateAllocator allocator_;
  TemplateCompiler compiler_;
  TemplateRenderer renderer_;
  std::string description_;
};

}  // namespace tpl

// Exports the descriptor: device name TEMPLATE (DEV=TEMPLATE), probe() and create() from the class.
TG_PLUGIN(TEMPLATE, tpl::TemplateDevice)
