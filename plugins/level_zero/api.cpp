#include "plugins/level_zero/api.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "base/env.hpp"

namespace tg::level_zero {

namespace {

constexpr const char* kInstall =
    "install a Level Zero GPU driver (Debian/Ubuntu: intel-level-zero-gpu with an Intel GPU and its kernel "
    "driver)";

}  // namespace

const ZeApi* ze_api(std::string* why) {
  static ZeApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string override = env::get("TG_LIBZE");
    std::string name = override.empty() ? "libze_loader.so.1" : override;
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      error = fmt::format(
          "unavailable: the Level Zero loader is not installed ({}); install libze1 and a Level "
          "Zero driver, or set TG_LIBZE to libze_loader.so.1",
          e != nullptr ? e : name);
      return;
    }
    api.path = name;
    std::string missing;
#define TG_ZE_BIND(fn)                                          \
  api.fn = reinterpret_cast<decltype(api.fn)>(dlsym(lib, #fn)); \
  if (api.fn == nullptr && missing.empty()) missing = #fn;
    TG_ZE_FUNCTIONS(TG_ZE_BIND)
#undef TG_ZE_BIND
    if (!missing.empty())
      error = fmt::format("unavailable: {} has no {}: the Level Zero loader is too old (1.0 or newer needed)",
                          name, missing);
  });
  if (!error.empty()) {
    if (why != nullptr) *why = error;
    return nullptr;
  }
  return &api;
}

std::string ze_error(ze_result_t r) {
  static const std::pair<ze_result_t, const char*> names[] = {
      {ZE_RESULT_SUCCESS, "ZE_RESULT_SUCCESS"},
      {ZE_RESULT_NOT_READY, "ZE_RESULT_NOT_READY"},
      {ZE_RESULT_ERROR_DEVICE_LOST, "ZE_RESULT_ERROR_DEVICE_LOST"},
      {ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"},
      {ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"},
      {ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"},
      {ZE_RESULT_ERROR_MODULE_LINK_FAILURE, "ZE_RESULT_ERROR_MODULE_LINK_FAILURE"},
      {ZE_RESULT_ERROR_UNINITIALIZED, "ZE_RESULT_ERROR_UNINITIALIZED"},
      {ZE_RESULT_ERROR_UNSUPPORTED_VERSION, "ZE_RESULT_ERROR_UNSUPPORTED_VERSION"},
      {ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"},
      {ZE_RESULT_ERROR_INVALID_ARGUMENT, "ZE_RESULT_ERROR_INVALID_ARGUMENT"},
      {ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "ZE_RESULT_ERROR_INVALID_NULL_HANDLE"},
      {ZE_RESULT_ERROR_INVALID_NULL_POINTER, "ZE_RESULT_ERROR_INVALID_NULL_POINTER"},
      {ZE_RESULT_ERROR_INVALID_SIZE, "ZE_RESULT_ERROR_INVALID_SIZE"},
      {ZE_RESULT_ERROR_UNSUPPORTED_SIZE, "ZE_RESULT_ERROR_UNSUPPORTED_SIZE"},
      {ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_NAME, "ZE_RESULT_ERROR_INVALID_KERNEL_NAME"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX"},
      {ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE"},
      {ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION"},
      {ZE_RESULT_ERROR_UNKNOWN, "ZE_RESULT_ERROR_UNKNOWN"},
  };
  for (const auto& [code, name] : names)
    if (code == r) return fmt::format("{} (0x{:x})", name, static_cast<uint32_t>(r));
  return fmt::format("ze_result_t 0x{:x}", static_cast<uint32_t>(r));
}

std::string driver_unusable() {
  std::string why;
  const ZeApi* ze = ze_api(&why);
  if (ze == nullptr) return why;
  static ze_result_t init = ze->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (init == ZE_RESULT_ERROR_UNINITIALIZED)
    return fmt::format("unavailable: no Level Zero driver (zeInit from {} returned {}): {}", ze->path,
                       ze_error(init), kInstall);
  if (init != ZE_RESULT_SUCCESS)
    return fmt::format("unavailable: zeInit returned {}: {}", ze_error(init), kInstall);
  uint32_t drivers = 0;
  if (ze_result_t r = ze->zeDriverGet(&drivers, nullptr); r != ZE_RESULT_SUCCESS || drivers == 0)
    return fmt::format("unavailable: no Level Zero driver (zeDriverGet: {}, {} drivers): {}", ze_error(r),
                       drivers, kInstall);
  return "";
}

}  // namespace tg::level_zero
