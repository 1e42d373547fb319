#include "plugins/qcom/api.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <CL/cl_icd.h>
#include <fmt/format.h>

#include "base/env.hpp"

namespace tg::qcom {

namespace {

struct Loaded {
  QcomCl api;
  std::string why;
};

Loaded load() {
  Loaded out;
  std::string path = env::get("QCOM_ICD");
  if (path.empty()) {
    if (access("/dev/kgsl-3d0", F_OK) != 0) {
      out.why = "unavailable: no Adreno GPU (/dev/kgsl-3d0 not found); set QCOM_ICD=<OpenCL ICD library with image "
                "support> to run the QCOM dialect on another driver";
      return out;
    }
    path = "/vendor/lib64/libOpenCL.so";
  }
  out.api.library = path;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    out.why = fmt::format("unavailable: the OpenCL ICD {} cannot be loaded ({}); point QCOM_ICD at an OpenCL "
                          "library with image support",
                          path, dlerror());
    return out;
  }
  if (dlsym(lib, "clGetPlatformIDs") != nullptr) {  // the whole API is exported
#define TG_QCOM_LOAD(fn)                                             \
  out.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn));   \
  if (out.api.fn == nullptr && out.why.empty())                      \
    out.why = fmt::format("unavailable: the OpenCL library {} has no " #fn, path);
    TG_QCOM_CL_FUNCTIONS(TG_QCOM_LOAD)
#undef TG_QCOM_LOAD
    return out;
  }
  // A bare ICD driver: its first platform, whose dispatch table holds every entry point.
  using GetAddress = void* (*)(const char*);
  using IcdGetPlatforms = cl_int (*)(cl_uint, cl_platform_id*, cl_uint*);
  auto get_address = reinterpret_cast<GetAddress>(dlsym(lib, "clGetExtensionFunctionAddress"));
  auto icd_platforms =
      get_address ? reinterpret_cast<IcdGetPlatforms>(get_address("clIcdGetPlatformIDsKHR")) : nullptr;
  cl_uint n = 0;
  if (icd_platforms == nullptr || icd_platforms(1, &out.api.platform, &n) != CL_SUCCESS || n == 0) {
    out.why = fmt::format("unavailable: {} is neither an OpenCL library nor an ICD with a platform", path);
    return out;
  }
  const auto* d = *reinterpret_cast<const cl_icd_dispatch* const*>(out.api.platform);
#define TG_QCOM_DISPATCH(fn) out.api.fn = reinterpret_cast<decltype(&::fn)>(d->fn);
  TG_QCOM_CL_FUNCTIONS(TG_QCOM_DISPATCH)
#undef TG_QCOM_DISPATCH
  return out;
}

}  // namespace

const QcomCl* qcom_cl(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.why.empty()) {
    if (why != nullptr) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

std::string cl_error(cl_int code) { return fmt::format("OpenCL error {}", code); }

}  // namespace tg::qcom
