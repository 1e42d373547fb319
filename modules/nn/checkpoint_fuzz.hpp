#pragma once
// libFuzzer-ready entry points for the checkpoint readers (not installed): each parses one in-memory file up
// to host bytes (no device is touched), returns 0, and lets only a crash or a non-tg exception escape.
#include <cstddef>
#include <cstdint>

namespace tg::nn {

int fuzz_torch_load(const uint8_t* data, size_t size);
int fuzz_gguf_load(const uint8_t* data, size_t size);

}  // namespace tg::nn
