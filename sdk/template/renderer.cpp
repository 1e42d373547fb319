// TEMPLATE renderer caps: what codegen may emit for this device. The conformance suite checks each claim.
#include "renderer.hpp"

namespace tpl {

namespace {

// Real device: declare exactly what the hardware and your dialect do: the dtypes kernels can load,
// store and compute (everything else is reported unsupported), the ops it has natively (the rest are
// decomposed by codegen), vector width, workgroups (has_local, local_max, max_local_size), shared memory
// (has_shared, max_shared_bytes), grid limits (global_max) and argument limits.
tg::sdk::RendererCaps template_caps() {
  // bool, int8..uint64, float32, float64; native + - * / % compares bit ops where sqrt trunc.
  tg::sdk::RendererCaps caps = tg::sdk::CDialect::default_caps();
  caps.max_vector_width = 1;      // CDialect's vectors are clang ext_vector_type; `cc` may be gcc
  caps.has_threads = true;        // a THREAD opt becomes `core_id`, launched as global[0] tasks
  caps.thread_count = 1;          // tasks run one after the other (program.cpp), so no automatic split
  caps.global_max[0] = 1u << 16;  // tasks per launch
  return caps;
}

}  // namespace

TemplateRenderer::TemplateRenderer() : tg::sdk::CDialect(template_caps()) {}

}  // namespace tpl
