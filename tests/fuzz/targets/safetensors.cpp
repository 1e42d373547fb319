// safetensors: the header size, the JSON header (dtype, shape, data_offsets, __metadata__) and the data
// span checks of safe_parse. Tensors go to NULL, which keeps the bytes but runs nothing.
#include <span>

#include "base/error.hpp"
#include "common.hpp"
#include "nn/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::nn::safe_parse(std::as_bytes(std::span(data, size)), "NULL");
  } catch (const tg::Error&) {
  }
  return 0;
}
