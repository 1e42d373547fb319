#pragma once
// Optional extension: the renderer and arch names a device takes in DEV's fields
// (DEV=NAME[:index][:renderer[:arch]]). `Device::extension(kSpecFieldsExtension)` returns a `SpecFields*`.
// A device without it takes neither field, so the core refuses DEV=CLANG:0:foo instead of ignoring foo.
// The device reads the fields itself (create() receives only the index): parse DEV with the core's rules.
#include <cstdint>

namespace tg::sdk {

inline constexpr uint32_t kSpecFieldsExtension = 0x53504543;  // "SPEC"

struct SpecFields {
  const char* renderers = "";  // space-separated names, e.g. "opencl spirv"; "" = no renderer field
  const char* archs = "";      // space-separated names; "" = no arch field
};

}  // namespace tg::sdk
