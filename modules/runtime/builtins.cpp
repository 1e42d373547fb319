#include "runtime/builtins.hpp"

#include "build_config.hpp"

namespace tg::runtime {

const char core_version[] = TG_VERSION;

std::span<const tg_plugin_descriptor* const> builtin_devices() {
  static const tg_plugin_descriptor* const kBuiltins[] = {&interp_device_descriptor, &null_device_descriptor};
  return kBuiltins;
}

}  // namespace tg::runtime
