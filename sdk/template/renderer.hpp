#pragma once
// TEMPLATE renderer: linear UOps -> C source, reusing the SDK's C dialect as it is.
#include <tg/sdk/cstyle.hpp>

namespace tpl {

// tg::sdk::CDialect emits `void NAME(void* const* bufs, const long long* vals, int core_id)`, which
// program.cpp calls. A device with its own language subclasses tg::sdk::CStyleRenderer instead and
// overrides the dialect hooks (type names, launch indices, the kernel signature): see NEW_ACCELERATOR.md.
class TemplateRenderer final : public tg::sdk::CDialect {
 public:
  TemplateRenderer();
};

}  // namespace tpl
