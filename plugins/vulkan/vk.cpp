// Loading the Vulkan API at run time (vk.hpp): dlopen, instance creation, compute-capable devices.
#include "plugins/vulkan/vk.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::vk {

PFN_vkGetInstanceProcAddr loader_entry(std::string* why) {
  static void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);  // never closed: plugins stay loaded
  if (lib == nullptr) {
    if (why) *why = "unavailable: libvulkan.so.1 not found; install libvulkan1 and a driver (mesa-vulkan-drivers)";
    return nullptr;
  }
  auto* f = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (f == nullptr && why) *why = "unavailable: libvulkan.so.1 has no vkGetInstanceProcAddr; reinstall libvulkan1";
  return f;
}

std::string_view result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VK_ERROR (unknown)";
  }
}

void check(VkResult r, std::string_view what) {
  if (r != VK_SUCCESS) throw DeviceError("VULKAN", fmt::format("{} failed: {}", what, result_name(r)));
}

Instance::Instance() {
  std::string why;
  fn_.get_instance_proc = loader_entry(&why);
  if (fn_.get_instance_proc == nullptr) throw DeviceError("VULKAN", why);
#define TG_VK_LOAD_GLOBAL(name) \
  fn_.name = reinterpret_cast<PFN_##name>(fn_.get_instance_proc(VK_NULL_HANDLE, #name));
  TG_VK_GLOBAL_FNS(TG_VK_LOAD_GLOBAL)
#undef TG_VK_LOAD_GLOBAL
  if (fn_.vkCreateInstance == nullptr)
    throw DeviceError("VULKAN", "unavailable: the Vulkan loader has no vkCreateInstance; reinstall libvulkan1");
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (fn_.vkEnumerateInstanceVersion) fn_.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_1)
    throw DeviceError("VULKAN", "unavailable: the Vulkan loader is 1.0; Vulkan 1.1 or newer is needed");
  // 1.2 brings the 8-bit storage and float16/int8 feature structs; ask for it when the loader has it.
  api_ = loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tinygrad.cpp";
  app.apiVersion = api_;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = fn_.vkCreateInstance(&ci, nullptr, &fn_.instance);
  // The loader fails instance creation with INCOMPATIBLE_DRIVER when it finds no driver at all.
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw DeviceError("VULKAN", "unavailable: no Vulkan device with a compute queue (the loader found no driver; "
                                "install mesa-vulkan-drivers or a GPU driver)");
  if (r != VK_SUCCESS)
    throw DeviceError("VULKAN", fmt::format("unavailable: vkCreateInstance failed ({}); install a Vulkan driver "
                                            "(mesa-vulkan-drivers)",
                                            result_name(r)));
#define TG_VK_LOAD_INSTANCE(name)                                                         \
  fn_.name = reinterpret_cast<PFN_##name>(fn_.get_instance_proc(fn_.instance, #name)); \
  if (fn_.name == nullptr) throw DeviceError("VULKAN", "unavailable: the Vulkan loader has no " #name);
  try {
    TG_VK_INSTANCE_FNS(TG_VK_LOAD_INSTANCE)
  } catch (...) {
    if (fn_.vkDestroyInstance) fn_.vkDestroyInstance(fn_.instance, nullptr);
    throw;
  }
#undef TG_VK_LOAD_INSTANCE
}

Instance::~Instance() {
  if (fn_.instance != VK_NULL_HANDLE) fn_.vkDestroyInstance(fn_.instance, nullptr);
}

int compute_queue_family(const Loader& fn, VkPhysicalDevice pd) {
  uint32_t n = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, qs.data());
  for (uint32_t i = 0; i < n; i++)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

std::vector<VkPhysicalDevice> compute_devices(const Instance& inst) {
  const Loader& fn = inst.fn();
  uint32_t n = 0;
  check(fn.vkEnumeratePhysicalDevices(inst.get(), &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> all(n), out;
  if (n > 0) check(fn.vkEnumeratePhysicalDevices(inst.get(), &n, all.data()), "vkEnumeratePhysicalDevices");
  for (VkPhysicalDevice pd : all) {
    VkPhysicalDeviceProperties p;
    fn.vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion >= VK_API_VERSION_1_1 && compute_queue_family(fn, pd) >= 0) out.push_back(pd);
  }
  return out;
}

}  // namespace tg::vk
