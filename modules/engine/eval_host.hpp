#pragma once
// Host reference evaluator: interprets a tensor graph (docs/ir-stages.md, stage 1) directly on host
// memory, one whole array per node, no kernels. Slow and simple on purpose: it is the oracle the
// scheduled, generated kernels are checked against.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "uop/uop.hpp"

namespace tg::engine {

// The bytes behind one BUFFER UOp, in its dtype's encoding.
struct Storage {
  DType dtype;
  std::vector<std::byte> bytes;
};

// Finds the storage of a BUFFER UOp; throws when it is gone.
using StorageLookup = std::function<std::shared_ptr<Storage>(const UOp& buffer)>;

// Evaluates every root and returns its elements in row-major order (dtype encoding). ASSIGNs write into
// their target's storage as they are evaluated; reads of that buffer elsewhere see the old values.
std::vector<std::vector<std::byte>> evaluate(std::span<const UOpRef> roots, const StorageLookup& lookup);

}  // namespace tg::engine
