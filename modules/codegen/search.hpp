#pragma once
// The action space of the BEAM search (runtime/beam.hpp times the candidates): every opt that can extend an
// opts list of a kernel, and opts lists as text for the on-disk cache of search results.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/opts.hpp"

namespace tg::codegen {

// Values unrolled per loop trip (the product of UPCAST and UNROLL amounts) a candidate may have.
inline constexpr int64_t kMaxSearchUpcast = 256;

// Every (op, axis, amount) the search tries, valid or not: UPCAST of each output axis and UNROLL of each
// reduce axis by 2, 3, 4, 5, 8, 16, THREAD of each output axis by caps.thread_count when the device has
// threads and SWAP of two output axes; on a device with workgroups also LOCAL of each output axis by 2, 3,
// 4, 8, 16, 32, GROUP of each reduce axis by 4, 8, 16 and GROUPTOP by 16, 32, 64, 256 (with shared memory),
// and PADTO 32 of an axis above 32 that it does not divide.
std::vector<Opt> search_actions(const UOpRef& ast, const sdk::RendererCaps& caps);

// The opts lists one action longer than base that apply to ast without error and keep the unrolled size
// within kMaxSearchUpcast. ast is a stage-2 kernel AST after the initial symbolic pass (as lower_kernel
// applies opts to it).
std::vector<std::vector<Opt>> search_expand(const UOpRef& ast, std::span<const Opt> base,
                                            const sdk::RendererCaps& caps);

// Whether opts apply to ast (apply_opts does not throw).
bool opts_apply(const UOpRef& ast, std::span<const Opt> opts, const sdk::RendererCaps& caps);

// opts_str's text ("[UPCAST(axis=1, arg=4), UNROLL(axis=2, arg=4)]") parsed back; nullopt for any other text.
std::optional<std::vector<Opt>> parse_opts(std::string_view text);

}  // namespace tg::codegen
