// PyTorch .pth/.pt: the zip container (local headers, central directory, stored and deflated entries) and
// the restricted pickle of torch_load, up to host bytes. Pickle code is never run: globals other than the
// tensor rebuilders are refused.
#include "nn/checkpoint_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tg::nn::fuzz_torch_load(data, size);
}
