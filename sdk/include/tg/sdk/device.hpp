#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "tg/sdk/allocator.hpp"
#include "tg/sdk/compiler.hpp"
#include "tg/sdk/program.hpp"
#include "tg/sdk/renderer.hpp"
#include "tg/sdk/status.hpp"

namespace tg::sdk {

// One device instance: ties its allocator, renderer, compiler and program loader together.
// Within an ABI major this vtable never changes; new features arrive through extension().
class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  virtual ~Device() = default;

  // --- required ---
  virtual Allocator& allocator() noexcept = 0;
  virtual Renderer& renderer() noexcept = 0;
  virtual Compiler& compiler() noexcept = 0;
  // Loads a binary made by compiler() and finds the kernel `name` in it. The core owns *out.
  virtual Status load(std::string_view name, std::span<const std::byte> binary, Program** out) noexcept = 0;
  // Blocks until all launched work and copies are done.
  virtual Status synchronize() noexcept = 0;
  // Human-readable description: model, driver, arch.
  virtual std::string_view description() const noexcept = 0;

  // --- optional ---
  // Feature tables added after this ABI major was frozen; nullptr = not supported.
  virtual const void* extension(uint32_t id) noexcept {
    (void)id;
    return nullptr;
  }
};

}  // namespace tg::sdk
