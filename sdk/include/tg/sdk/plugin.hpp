#pragma once
// The plugin entry point. A plugin exports exactly one descriptor through TG_PLUGIN. The macro puts
// an alias named tgplugin_<abi major>_<abi minor>_<NAME> into the "tgplugin" section, so the core
// reads name and ABI version with boost::dll::library_info before loading (running) any plugin code.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include <boost/dll/alias.hpp>
#include <boost/preprocessor/cat.hpp>

#include "tg/sdk/device.hpp"

// ABI policy: sdk/ABI.md. Major must match the core's; minor may be older down to TG_ABI_MINOR_FLOOR.
#define TG_ABI_MAJOR 1
#define TG_ABI_MINOR 4
// Minor 4 appended Ops::MULTI, which grew CStyleRenderer's per-op table (its code runs in libtg): a plugin
// built before it is refused by name instead of being read past its end.
#define TG_ABI_MINOR_FLOOR 4

extern "C" {

// Plain C so any compiler can produce and read it. Fields are only ever appended (struct_size says
// how many a plugin has).
struct tg_plugin_descriptor {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;     // device name as used in DEV=NAME, upper case
  const char* version;  // the plugin's own version
  int32_t priority;     // default selection order: higher first (GPUs ~100, CPUs ~50)
  // Cheap and side-effect free: returns 1 if the device can be created here, else 0 with a reason
  // ("unavailable: libcuda.so.1 not found; install the NVIDIA driver") written to reason.
  int (*probe)(char* reason, size_t reason_cap);
  // Creates device `index` (a tg::sdk::Device*), or returns null with the reason written to err.
  // The core owns the device. Never throws.
  void* (*create)(int32_t index, char* err, size_t err_cap);
  // ABI minor 2, optional (null when the plugin cannot): compiling with no device present.
  // The targets it can compile for, space separated, the default first ("sm_80 sm_90"); "" = none here.
  const char* (*compile_targets)(void);
  // A tg::sdk::Device for `arch` whose renderer and compiler work without the hardware (its allocator may
  // hold host memory, load() reports unavailable), or null with the reason in err (unknown arch, missing
  // toolchain). The core owns it. Never throws.
  void* (*create_compile_only)(const char* arch, char* err, size_t err_cap);
};

}  // extern "C"

// The compile-only entry points of d, or null for a plugin built before ABI minor 2 or without them.
inline auto tg_compile_targets_of(const tg_plugin_descriptor& d) {
  constexpr size_t end = offsetof(tg_plugin_descriptor, create_compile_only) + sizeof d.create_compile_only;
  return d.struct_size >= end ? d.compile_targets : nullptr;
}
inline auto tg_create_compile_only_of(const tg_plugin_descriptor& d) {
  constexpr size_t end = offsetof(tg_plugin_descriptor, create_compile_only) + sizeof d.create_compile_only;
  return d.struct_size >= end ? d.create_compile_only : nullptr;
}

namespace tg::sdk::detail {

inline void copy_reason(char* dst, size_t cap, const char* msg) noexcept {
  if (cap == 0) return;
  std::strncpy(dst, msg, cap - 1);
  dst[cap - 1] = '\0';
}

// probe() and create() come from the device class: `static tg::sdk::Status probe()` and a
// constructor taking the device index (it may throw; the message becomes the reason).
template <typename D>
int probe_fn(char* reason, size_t cap) noexcept {
  try {
    Status s = D::probe();
    if (s.ok()) return 1;
    std::string msg(s.message());
    copy_reason(reason, cap, msg.c_str());
  } catch (const std::exception& e) {
    copy_reason(reason, cap, e.what());
  } catch (...) {
    copy_reason(reason, cap, "probe threw an unknown exception");
  }
  return 0;
}

template <typename D>
void* create_fn(int32_t index, char* err, size_t cap) noexcept {
  try {
    return static_cast<Device*>(new D(index));
  } catch (const std::exception& e) {
    copy_reason(err, cap, e.what());
  } catch (...) {
    copy_reason(err, cap, "create threw an unknown exception");
  }
  return nullptr;
}

// Compile-only support comes from the class too: `static std::string compile_targets()` and
// `static tg::sdk::Device* compile_only(std::string_view arch)` (may throw; the message becomes the reason).
template <typename D>
const char* compile_targets_fn() noexcept {
  static std::string targets = [] {
    try {
      return std::string(D::compile_targets());
    } catch (...) {
      return std::string();
    }
  }();
  return targets.c_str();
}

template <typename D>
void* create_compile_only_fn(const char* arch, char* err, size_t cap) noexcept {
  try {
    return static_cast<Device*>(D::compile_only(arch != nullptr ? arch : ""));
  } catch (const std::exception& e) {
    copy_reason(err, cap, e.what());
  } catch (...) {
    copy_reason(err, cap, "compile_only threw an unknown exception");
  }
  return nullptr;
}

template <typename D>
constexpr decltype(tg_plugin_descriptor::compile_targets) compile_targets_of() {
  if constexpr (requires { D::compile_targets(); }) return &compile_targets_fn<D>;
  return nullptr;
}

template <typename D>
constexpr decltype(tg_plugin_descriptor::create_compile_only) create_compile_only_of() {
  if constexpr (requires { D::compile_only(std::string_view()); }) return &create_compile_only_fn<D>;
  return nullptr;
}

template <typename D>
constexpr int32_t priority_of() {
  if constexpr (requires { D::priority; }) return D::priority;
  return 50;
}

template <typename D>
constexpr const char* version_of() {
  if constexpr (requires { D::version; }) return D::version;
  return "0.0.0";
}

}  // namespace tg::sdk::detail

// TG_PLUGIN(MYACCEL, MyDevice): exports the descriptor for device MYACCEL implemented by MyDevice.
#define TG_PLUGIN(NAME, DeviceClass)                                                                   \
  namespace {                                                                                          \
  const tg_plugin_descriptor tg_plugin_descriptor_ = {                                                 \
      sizeof(tg_plugin_descriptor),                                                                    \
      TG_ABI_MAJOR,                                                                                    \
      TG_ABI_MINOR,                                                                                    \
      #NAME,                                                                                           \
      ::tg::sdk::detail::version_of<DeviceClass>(),                                                    \
      ::tg::sdk::detail::priority_of<DeviceClass>(),                                                   \
      &::tg::sdk::detail::probe_fn<DeviceClass>,                                                       \
      &::tg::sdk::detail::create_fn<DeviceClass>,                                                      \
      ::tg::sdk::detail::compile_targets_of<DeviceClass>(),                                            \
      ::tg::sdk::detail::create_compile_only_of<DeviceClass>()};                                       \
  }                                                                                                    \
  BOOST_DLL_ALIAS_SECTIONED(                                                                           \
      tg_plugin_descriptor_,                                                                           \
      BOOST_PP_CAT(BOOST_PP_CAT(BOOST_PP_CAT(tgplugin_, TG_ABI_MAJOR), BOOST_PP_CAT(_, TG_ABI_MINOR)), \
                   BOOST_PP_CAT(_, NAME)),                                                             \
      tgplugin)
