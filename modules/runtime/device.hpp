#pragma once
// A device as the core sees it: a plugin's tg::sdk::Device (owned) plus the core's LRU allocator,
// with every plugin Status turned into a tg::Error.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/allocator.hpp"
#include "tg/sdk/device.hpp"

namespace tg::runtime {

// DEV=NAME[:index][:renderer[:arch]], e.g. "CLANG", "CUDA:1", "CUDA:1:ptx:sm_80"; empty fields are errors.
// renderer and arch are kept for the code generator.
struct DeviceSpec {
  std::string name;  // upper case
  int index = 0;
  std::string renderer, arch;

  static DeviceSpec parse(std::string_view spec);  // throws DeviceError when malformed
  std::string str() const;                         // "NAME:index[:renderer[:arch]]"
};

class Device {
 public:
  Device(DeviceSpec spec, std::unique_ptr<sdk::Device> impl);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return spec_.name; }
  int index() const { return spec_.index; }
  const DeviceSpec& spec() const { return spec_; }
  std::string str() const { return spec_.name + ":" + std::to_string(spec_.index); }  // "CLANG:0"
  std::string_view description() const { return impl_->description(); }

  LruAllocator& allocator() { return *allocator_; }
  sdk::Renderer& renderer() { return impl_->renderer(); }
  const sdk::RendererCaps& caps() { return impl_->renderer().caps(); }
  sdk::Compiler& compiler() { return impl_->compiler(); }
  // Source -> binary; CompileError carries the compiler log and the source.
  sdk::Blob compile(std::string_view source);
  std::unique_ptr<sdk::Program> load(std::string_view kernel, std::span<const std::byte> binary);
  void synchronize();
  sdk::Device& plugin() { return *impl_; }

 private:
  DeviceSpec spec_;
  std::unique_ptr<sdk::Device> impl_;
  std::unique_ptr<LruAllocator> allocator_;  // declared after impl_: flushed before the plugin device dies
};

}  // namespace tg::runtime
