#pragma once
// The steps of lower_kernel, in pipeline order. Internal to codegen; lower.hpp is the public face.
#include <utility>
#include <vector>

#include "tg/sdk/renderer.hpp"
#include "uop/pattern.hpp"
#include "uop/uop.hpp"

namespace tg::codegen {

// onehot.cpp: sum over r of where(e == r, t, 0), e free of r -> (0 <= e < end(r)) ? t[r := e] : 0 (a gated
// load where one-hot indexing would loop over every row).
UOpRef collapse_onehot_reduces(const UOpRef& sink);

// ends.cpp
UOpRef split_ends(const UOpRef& sink);     // END(x, r0, r1) -> END(END(x, r1), r0); loops of one trip go
UOpRef reduce_to_acc(const UOpRef& sink);  // REDUCE -> DEFINE_REG accumulator: init, update loop, read
UOpRef merge_ends(const UOpRef& sink);     // ENDs of one RANGE side by side -> one END over NOOP(bodies)
const PatternMatcher& end_cleanup();       // END sources that are no longer RANGEs are dropped
UOpRef identity_element(Ops op, DType d);  // 0 for ADD, 1 for MUL, the lowest value for MAX

// expand.cpp: a loop over an UPCAST range -> its body once per value (NOOP of the copies), in lockstep
// chunks of up to vector_width lanes that become vector loads, stores and (with vector_alu) float arithmetic.
UOpRef expand_upcasts(const UOpRef& sink, uint32_t vector_width = 1, bool vector_alu = true);

// group.cpp: a REDUCE over GROUP_REDUCE ranges -> partials in DEFINE_LOCAL memory, BARRIER, their reduce.
UOpRef add_group_reduces(const UOpRef& sink);

// gpudims.cpp: LOCAL and GROUP_REDUCE ranges -> SPECIAL lidx (before split_ends).
UOpRef add_local_ids(const UOpRef& sink, const sdk::RendererCaps& caps);

// gpudims.cpp: output loops -> SPECIAL gidx/lidx for renderers with workgroups; THREAD -> SPECIAL core_id.
UOpRef add_gpudims(const UOpRef& sink, const sdk::RendererCaps& caps);

// index_dtype.cpp: every INDEX-typed node -> int32, or int64 where its range needs it (on a CPU-style
// renderer, every one in a kernel that divides no index).
UOpRef lower_index_dtype(const UOpRef& sink, const sdk::RendererCaps& caps);

// decomp.cpp: rewrites of the ops the renderer lacks.
PatternMatcher decompositions(const sdk::RendererCaps& caps);
// decomp.cpp: scalar float32 a*b+c -> MULACC (fused, one rounding) when the renderer has MULACC.
PatternMatcher form_mulacc(const sdk::RendererCaps& caps);

// emulate.cpp: dtypes in caps.emulated_dtypes -> integer bits in memory, float32 in registers. encode_stores
// runs first (top down: a STORE's value still has its type), then emulate_dtypes retypes everything else.
PatternMatcher encode_stores(const sdk::RendererCaps& caps);
PatternMatcher emulate_dtypes(const sdk::RendererCaps& caps);

// transcendental.cpp: float32/float64 polynomial and bit-trick versions, accurate to about 1 ulp.
UOpRef xexp2(const UOpRef& d);
UOpRef xlog2(const UOpRef& d);
UOpRef xsin(const UOpRef& d);
UOpRef xpow(const UOpRef& base, const UOpRef& exponent);
UOpRef threefry2x32(const UOpRef& x, const UOpRef& key);

// Open loops of every node of a toposort: the RANGEs it depends on that no END between them closed.
// Index-aligned with topo; each list sorted by pointer.
std::vector<std::vector<const UOp*>> open_ranges(const std::vector<const UOp*>& topo);

}  // namespace tg::codegen
