#include "plugins/cl/spirv/spirv_compiler.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <spirv-tools/libspirv.hpp>

#include <fmt/format.h>

namespace tg::spirv {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

constexpr uint32_t kMagic = 0x07230203;
constexpr spv_target_env kEnv = SPV_ENV_OPENCL_2_1;

// Messages of one SPIRV-Tools call, one per line.
struct Messages {
  std::string text;
  spvtools::MessageConsumer consumer() {
    return [this](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
      text += fmt::format("word {}: {}\n", pos.index, msg);
    };
  }
};

}  // namespace

void limit_caps(tg::sdk::RendererCaps& caps) {
  caps.max_buffers = std::min<uint32_t>(caps.max_buffers, 255);
  caps.max_int_args = std::min<uint32_t>(caps.max_int_args, 253);  // beside an input and an output buffer
}

std::optional<std::vector<uint32_t>> spirv_words(std::span<const std::byte> bytes) {
  uint32_t magic = 0;
  if (bytes.size() < 20 || bytes.size() % 4 != 0) return std::nullopt;
  std::memcpy(&magic, bytes.data(), 4);
  if (magic != kMagic) return std::nullopt;
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

Status validate(std::span<const uint32_t> words) {
  spvtools::SpirvTools tools(kEnv);
  Messages m;
  tools.SetMessageConsumer(m.consumer());
  if (tools.Validate(words.data(), words.size())) return {};
  return {Code::compile_error,
          fmt::format("spirv-val (--target-env opencl2.1) rejected the module:\n{}", m.text)};
}

Status disassemble(std::span<const uint32_t> words, std::string* text) {
  spvtools::SpirvTools tools(kEnv);
  Messages m;
  tools.SetMessageConsumer(m.consumer());
  if (tools.Disassemble(words.data(), words.size(), text,
                        SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    return {};
  return {Code::invalid_argument, "[SPIR-V disassemble] " + m.text};
}

SpirvCompiler::SpirvCompiler(bool fp16, bool fp64) {
  // Unoptimized LLVM (no optnone, so the driver may optimize everything): LLVM 14's optimizer emits
  // instructions (freeze, min/max intrinsics) that translator 14 cannot write, and the drivers optimize
  // anyway. The extensions the target lacks are switched off, so a kernel using them fails here, not in the
  // driver.
  cc1_ = {"-triple",
          "spir64-unknown-unknown",
          "-cl-std=CL1.2",
          "-O0",
          "-disable-O0-optnone",
          "-resource-dir",
          TG_CLANG_RESOURCE_DIR,
          "-finclude-default-header",
          "-fdeclare-opencl-builtins",
          "-cl-ext=" + std::string(fp16 ? "+" : "-") + "cl_khr_fp16," + (fp64 ? "+" : "-") + "cl_khr_fp64",
          "-emit-llvm-only",
          "-x",
          "cl",
          "kernel.cl"};
  cache_key_ =
      fmt::format("clang-{} spir64 {} + llvm-spirv {} (SPIR-V <= 1.2) + spirv-val opencl2.1",
                  LLVM_VERSION_STRING, fmt::join(cc1_.begin() + 2, cc1_.end() - 4, " "), LLVM_VERSION_MAJOR);
}

Status SpirvCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    std::string log;
    llvm::raw_string_ostream los(log);
    std::vector<const char*> argv;
    for (const std::string& a : cc1_) argv.push_back(a.c_str());
    auto context = std::make_unique<llvm::LLVMContext>();
    clang::CompilerInstance ci;
    {
      llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
      clang::TextDiagnosticPrinter printer(los, opts.get());
      clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), opts, &printer, /*ShouldOwnClient=*/false);
      if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), argv, diags))
        return {Code::compile_error, "[SPIR-V compile] clang options: " + los.str()};
    }
    ci.getDiagnosticOpts().ShowColors = false;
    ci.createDiagnostics(new clang::TextDiagnosticPrinter(los, &ci.getDiagnosticOpts()),
                         /*ShouldOwnClient=*/true);
    ci.setVerboseOutputStream(los);
    // The source stays in memory as "kernel.cl", so diagnostics read "kernel.cl:3:5: error".
    auto buffer =
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()), "kernel.cl");
    auto& frontend = ci.getFrontendOpts();
    frontend.Inputs.clear();
    frontend.Inputs.emplace_back(buffer->getMemBufferRef(), clang::InputKind(clang::Language::OpenCL));
    clang::EmitLLVMOnlyAction action(context.get());
    if (!ci.ExecuteAction(action))
      return {Code::compile_error, "[SPIR-V compile] clang (spir64) rejected the kernel:\n" + los.str()};
    std::unique_ptr<llvm::Module> module = action.takeModule();
    if (module == nullptr)
      return {Code::compile_error, "[SPIR-V compile] clang produced no module:\n" + los.str()};

    SPIRV::TranslatorOpts opts(SPIRV::VersionNumber::SPIRV_1_2);
    std::ostringstream spv;
    std::string err;
    if (!llvm::writeSpirv(module.get(), opts, spv, err))
      return {Code::compile_error, "[SPIR-V compile] the LLVM/SPIR-V translator rejected the module: " + err};
    std::string bytes = spv.str();
    std::span<std::byte> out = binary.resize(bytes.size());
    std::memcpy(out.data(), bytes.data(), bytes.size());
    auto words = spirv_words(binary.bytes());
    if (!words)
      return {Code::compile_error, "[SPIR-V compile] the translator's output is not a SPIR-V module"};
    if (Status s = validate(*words); !s.ok())
      return {Code::compile_error, "[SPIR-V compile] " + std::string(s.message())};
    return {};
  });
}

Status SpirvCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  return tg::sdk::guard([&]() -> Status {
    auto words = spirv_words(binary);
    if (!words) return {Code::invalid_argument, "[SPIR-V disassemble] not a SPIR-V module"};
    std::string out;
    if (Status s = tg::spirv::disassemble(*words, &out); !s.ok()) return s;
    text.assign(out);
    return {};
  });
}

}  // namespace tg::spirv
