// gguf: the header, every metadata value type, tensor infos, alignment and the dequantization of the
// quantized types, up to host bytes.
#include "nn/checkpoint_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tg::nn::fuzz_gguf_load(data, size);
}
