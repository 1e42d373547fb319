// llm: a gguf's metadata and tensor infos as a model sees them (architecture keys, every tensor's name,
// shape and type against the configuration), then the tokenizer the metadata describes, encoding and
// decoding a fixed text with it.
#include "llm/transformer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tg::llm::fuzz_llm_model(data, size);
}
