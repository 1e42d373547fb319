// Built instead of libclang.cpp when libclang-cpp/LLVM were not found: only the clang binary path exists.
#include "plugins/clang/toolchain.hpp"

namespace tg::clangdev {

bool libclang_built() noexcept { return false; }

std::unique_ptr<Toolchain> make_libclang_toolchain() { return nullptr; }

tg::sdk::Status load_object(std::string_view name, std::span<const std::byte> object,
                            std::unique_ptr<LoadedKernel>* out) {
  (void)name, (void)object, (void)out;
  return {tg::sdk::Code::unsupported, "[CLANG load] in-process objects need a build with libclang-cpp"};
}

}  // namespace tg::clangdev
