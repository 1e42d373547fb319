#pragma once
// TEMPLATE runtime: loads a binary made by TemplateCompiler and launches its kernel.
#include <cstdint>
#include <span>
#include <string_view>

#include <tg/sdk/program.hpp>

namespace tpl {

// The kernel calling convention the renderer (tg::sdk::CDialect) emits.
using KernelFn = void (*)(void* const* bufs, const long long* vals, int core_id);

class TemplateProgram final : public tg::sdk::Program {
 public:
  TemplateProgram(void* library, KernelFn fn) : library_(library), fn_(fn) {}
  ~TemplateProgram() override;

  // --- required ---
  tg::sdk::Status launch(std::span<const tg::sdk::Handle> bufs, std::span<const int64_t> vals,
                         const tg::sdk::LaunchDims& dims, bool wait, double* seconds) noexcept override;

 private:
  void* library_;  // dlopen handle
  KernelFn fn_;
};

// Device::load: binary -> a program running kernel `name` (owned by the caller).
tg::sdk::Status load_program(std::string_view name, std::span<const std::byte> binary,
                             tg::sdk::Program** out);

}  // namespace tpl
