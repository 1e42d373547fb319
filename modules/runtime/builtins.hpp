#pragma once
// Devices compiled into libtg. They are described by the same descriptor a plugin exports, so the
// registry treats them alike (path "built-in"); they are simply not found through a file.
#include <span>

#include "tg/sdk/plugin.hpp"

namespace tg::runtime {

extern const char core_version[];  // TG_VERSION, the version built-ins report

// A descriptor for a built-in device class (same contract as TG_PLUGIN, without the export).
template <typename D>
constexpr tg_plugin_descriptor builtin_descriptor(const char* name) {
  return {sizeof(tg_plugin_descriptor),
          TG_ABI_MAJOR,
          TG_ABI_MINOR,
          name,
          core_version,
          sdk::detail::priority_of<D>(),
          &sdk::detail::probe_fn<D>,
          &sdk::detail::create_fn<D>,
          sdk::detail::compile_targets_of<D>(),
          sdk::detail::create_compile_only_of<D>()};
}

// Built-in devices in discovery order. To add one, define its descriptor with builtin_descriptor()
// in its own file, declare it below and list it in builtins.cpp.
std::span<const tg_plugin_descriptor* const> builtin_devices();

extern const tg_plugin_descriptor null_device_descriptor;    // null_device.cpp
extern const tg_plugin_descriptor interp_device_descriptor;  // interp/interp.cpp

}  // namespace tg::runtime
