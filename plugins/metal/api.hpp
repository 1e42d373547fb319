#pragma once
// The Objective-C runtime (libobjc) and Metal.framework, dlopened: the plugin links no Apple library, so
// it builds and loads anywhere and says what is missing. Messages go through objc_msgSend cast to the
// exact signature of each call, as tinygrad's ops_metal does from Python.
#include <cstdint>
#include <string>

namespace tg::metal {

using id = void*;
using SEL = void*;

struct ObjcApi {
  id (*objc_getClass)(const char*) = nullptr;
  SEL (*sel_registerName)(const char*) = nullptr;
  void* objc_msgSend = nullptr;
  void* (*objc_autoreleasePoolPush)() = nullptr;
  void (*objc_autoreleasePoolPop)(void*) = nullptr;
  id (*MTLCreateSystemDefaultDevice)() = nullptr;
};

// The loaded runtime, or nullptr with *why saying what is missing ("unavailable: ...").
const ObjcApi* objc_api(std::string* why);

// [obj sel args...] with R the return type; sel like "setBuffer:offset:atIndex:".
template <class R = id, class... A>
R msg(const ObjcApi& api, id obj, const char* sel, A... args) {
  return reinterpret_cast<R (*)(id, SEL, A...)>(api.objc_msgSend)(obj, api.sel_registerName(sel), args...);
}

// An autoreleased NSString, and the UTF-8 text of an NSString or NSError (its localizedDescription).
id ns_string(const ObjcApi& api, const std::string& s);
std::string text_of(const ObjcApi& api, id string_or_error);

// An owned Objective-C object (from alloc/new/copy or retained), released once.
class Owned {
 public:
  Owned() = default;
  Owned(const ObjcApi* api, id obj) : api_(api), obj_(obj) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : api_(o.api_), obj_(o.obj_) { o.obj_ = nullptr; }
  Owned& operator=(Owned&& o) noexcept;
  ~Owned();
  id get() const { return obj_; }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  const ObjcApi* api_ = nullptr;
  id obj_ = nullptr;
};

// An autorelease pool for the current scope: objects the framework autoreleases die at its end.
class AutoreleasePool {
 public:
  explicit AutoreleasePool(const ObjcApi& api) : api_(api), pool_(api.objc_autoreleasePoolPush()) {}
  AutoreleasePool(const AutoreleasePool&) = delete;
  AutoreleasePool& operator=(const AutoreleasePool&) = delete;
  ~AutoreleasePool() { api_.objc_autoreleasePoolPop(pool_); }

 private:
  const ObjcApi& api_;
  void* pool_;
};

}  // namespace tg::metal
