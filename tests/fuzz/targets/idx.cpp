// idx (MNIST's format, plain or gzip): magic, dtype code, rank, big-endian dimensions and data length.
#include "base/error.hpp"
#include "common.hpp"
#include "nn/datasets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::nn::read_idx(tg::fuzz::input_file(data, size), "NULL");
  } catch (const tg::Error&) {
  }
  return 0;
}
