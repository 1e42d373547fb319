#pragma once
// Internal fast path of UOp::make for the builders: sources as plain pointers, so a node that already
// exists is found without building a vector or touching reference counts.
#include <span>

#include "uop/uop.hpp"

namespace tg::detail {

UOpRef make_view(Ops op, DType dtype, std::span<const UOp* const> src, Arg arg = {});

}  // namespace tg::detail
