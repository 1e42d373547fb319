#include "plugins/metal/api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "base/env.hpp"

namespace tg::metal {

namespace {

template <class F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

}  // namespace

const ObjcApi* objc_api(std::string* why) {
  static std::once_flag once;
  static ObjcApi api;
  static std::string reason;
  std::call_once(once, [] {
    // Metal first: without macOS there is nothing to talk to, whatever Objective-C runtime is installed.
    std::string metal_path = env::get("TG_METAL_FRAMEWORK");
    void* metal = dlopen(metal_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (metal == nullptr) {
      reason = "unavailable: Metal needs macOS (Metal.framework not found)";
      return;
    }
    void* objc = dlopen("/usr/lib/libobjc.A.dylib", RTLD_NOW | RTLD_LOCAL);
    if (objc == nullptr) objc = dlopen("libobjc.A.dylib", RTLD_NOW | RTLD_LOCAL);
    if (objc == nullptr) {
      reason = "unavailable: Metal.framework loaded but the Objective-C runtime (libobjc.A.dylib) did not";
      return;
    }
    ObjcApi a;
    bool ok = bind(objc, "objc_getClass", a.objc_getClass) &&
              bind(objc, "sel_registerName", a.sel_registerName) &&
              bind(objc, "objc_msgSend", a.objc_msgSend) &&
              bind(objc, "objc_autoreleasePoolPush", a.objc_autoreleasePoolPush) &&
              bind(objc, "objc_autoreleasePoolPop", a.objc_autoreleasePoolPop);
    if (!ok) {
      reason = "unavailable: libobjc lacks objc_msgSend or the autorelease pool functions";
      return;
    }
    if (!bind(metal, "MTLCreateSystemDefaultDevice", a.MTLCreateSystemDefaultDevice)) {
      reason = "unavailable: Metal.framework has no MTLCreateSystemDefaultDevice";
      return;
    }
    api = a;
  });
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return nullptr;
  }
  return &api;
}

id ns_string(const ObjcApi& api, const std::string& s) {
  return msg(api, api.objc_getClass("NSString"), "stringWithUTF8String:", s.c_str());
}

std::string text_of(const ObjcApi& api, id obj) {
  if (obj == nullptr) return "(no description)";
  if (msg<bool>(api, obj, "isKindOfClass:", api.objc_getClass("NSError")))
    obj = msg(api, obj, "localizedDescription");
  const char* s = msg<const char*>(api, obj, "UTF8String");
  return s != nullptr ? s : "";
}

Owned& Owned::operator=(Owned&& o) noexcept {
  if (this != &o) {
    if (obj_ != nullptr) msg<void>(*api_, obj_, "release");
    api_ = o.api_, obj_ = o.obj_, o.obj_ = nullptr;
  }
  return *this;
}

Owned::~Owned() {
  if (obj_ != nullptr) msg<void>(*api_, obj_, "release");
}

}  // namespace tg::metal
