// The in-process path: libclang-cpp compiles C held in memory to a relocatable ELF object in memory,
// LLVM ORC (LLJIT over RuntimeDyld) links it into this process. No file is read or written.
#include <atomic>
#include <mutex>

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <fmt/format.h>

#include "base/error.hpp"
#include "plugins/clang/toolchain.hpp"

namespace tg::clangdev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

class LibclangToolchain final : public Toolchain {
 public:
  LibclangToolchain() {
    init_llvm();
    // The driver turns the flags into cc1 arguments once: it resolves -march=native, the triple and PIC.
    std::vector<std::string> args{"clang"};
    for (auto& f : base_flags()) args.push_back(std::move(f));
    for (auto& f : user_flags()) args.push_back(std::move(f));
    args.insert(args.end(), {"-c", "-x", "c", "kernel.c"});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());

    std::string log;
    llvm::raw_string_ostream los(log);
    llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
    clang::TextDiagnosticPrinter printer(los, opts.get());
    clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), opts, &printer, /*ShouldOwnClient=*/false);
    clang::driver::Driver driver(args[0], llvm::sys::getProcessTriple(), diags);
    driver.setCheckInputsExist(false);
    std::unique_ptr<clang::driver::Compilation> comp(driver.BuildCompilation(argv));
    if (!comp || diags.hasErrorOccurred() || comp->getJobs().size() != 1)
      throw tg::DeviceError("CLANG", fmt::format("libclang-cpp cannot compile with flags '{}': {}",
                                                 fmt::join(args, " "), los.str()));
    const auto& cc1 = comp->getJobs().begin()->getArguments();
    for (size_t i = 0; i < cc1.size(); ++i) {
      std::string_view a = cc1[i];
      if (a == "-cc1" || a == "-disable-free") continue;  // -disable-free would leak every compile
      if (a == "-target-cpu" && i + 1 < cc1.size()) cpu_ = cc1[i + 1];
      if (a == "-target-feature" && i + 1 < cc1.size())
        features_ += (features_.empty() ? "" : ",") + std::string(cc1[i + 1]);
      cc1_.emplace_back(a);
    }
    for (const auto& a : cc1_) cc1_ptrs_.push_back(a.c_str());
  }

  std::string_view id() const noexcept override { return id_; }
  std::string_view target_cpu() const noexcept override { return cpu_; }
  std::string_view target_features() const noexcept override { return features_; }

  Status compile(std::string_view source, tg::sdk::Blob& binary) override {
    std::string log;
    llvm::raw_string_ostream los(log);
    clang::CompilerInstance ci;
    {
      llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
      clang::TextDiagnosticPrinter printer(los, opts.get());
      clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), opts, &printer, /*ShouldOwnClient=*/false);
      if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), cc1_ptrs_, diags))
        return {Code::compile_error, los.str()};
    }
    ci.getDiagnosticOpts().ShowColors = false;
    ci.createDiagnostics(new clang::TextDiagnosticPrinter(los, &ci.getDiagnosticOpts()),
                         /*ShouldOwnClient=*/true);
    ci.setVerboseOutputStream(los);
    // The source stays in memory under the name "kernel.c", so diagnostics read "kernel.c:3:5: error".
    auto buffer =
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()), "kernel.c");
    auto& frontend = ci.getFrontendOpts();
    frontend.Inputs.clear();
    frontend.Inputs.emplace_back(buffer->getMemBufferRef(), clang::InputKind(clang::Language::C));
    llvm::SmallVector<char, 0> object;
    ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
    clang::EmitObjAction action;
    if (!ci.ExecuteAction(action)) return {Code::compile_error, los.str()};
    write_binary(binary, BinaryFormat::elf_object, std::as_bytes(std::span(object.data(), object.size())));
    return {};
  }

 private:
  std::string id_ = "clang-" LLVM_VERSION_STRING " (libclang-cpp)", cpu_ = "unknown", features_;
  std::vector<std::string> cc1_;
  std::vector<const char*> cc1_ptrs_;
};

// One JIT for the process (plugins are never unloaded); it is leaked so no kernel outlives it at exit.
llvm::orc::LLJIT& jit() {
  static llvm::orc::LLJIT* instance = [] {
    init_llvm();
    auto j = llvm::orc::LLJITBuilder()
                 .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
                   return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                       es, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
                 })
                 .create();
    if (!j) throw tg::DeviceError("CLANG", "cannot start LLVM ORC: " + llvm::toString(j.takeError()));
    // Link failures come back from lookup(); don't also print them.
    (*j)->getExecutionSession().setErrorReporter([](llvm::Error e) { llvm::consumeError(std::move(e)); });
    return j->release();
  }();
  return *instance;
}

class OrcKernel final : public LoadedKernel {
 public:
  OrcKernel(llvm::orc::JITDylib& lib, KernelFn fn) : lib_(lib), fn_(fn) {}
  ~OrcKernel() override { llvm::consumeError(jit().getExecutionSession().removeJITDylib(lib_)); }
  KernelFn entry() const noexcept override { return fn_; }

 private:
  llvm::orc::JITDylib& lib_;
  KernelFn fn_;
};

}  // namespace

bool libclang_built() noexcept { return true; }

std::unique_ptr<Toolchain> make_libclang_toolchain() { return std::make_unique<LibclangToolchain>(); }

Status load_object(std::string_view name, std::span<const std::byte> object,
                   std::unique_ptr<LoadedKernel>* out) {
  static std::atomic<uint64_t> counter{0};
  auto& j = jit();
  // One JITDylib per kernel: kernels from different binaries may share a name, and each can be removed.
  auto lib = j.createJITDylib(fmt::format("tg_kernel_{}", counter++));
  if (!lib) return {Code::runtime_error, "[CLANG load] " + llvm::toString(lib.takeError())};
  auto fail = [&](Code code, llvm::Error e) -> Status {
    std::string msg = "[CLANG load] " + llvm::toString(std::move(e));
    llvm::consumeError(j.getExecutionSession().removeJITDylib(*lib));
    return {code, msg};
  };
  // Math functions resolve from the process, and from libm in case the host did not load it.
  char prefix = j.getDataLayout().getGlobalPrefix();
  for (const char* file : {static_cast<const char*>(nullptr), "libm.so.6"}) {
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::Load(file, prefix);
    if (!gen) return fail(Code::runtime_error, gen.takeError());
    lib->addGenerator(std::move(*gen));
  }
  auto bytes = llvm::StringRef(reinterpret_cast<const char*>(object.data()), object.size());
  if (auto e = j.addObjectFile(*lib, llvm::MemoryBuffer::getMemBufferCopy(bytes, "kernel.o")))
    return fail(Code::invalid_argument, std::move(e));
  auto sym = j.lookup(*lib, llvm::StringRef(name.data(), name.size()));
  if (!sym) return fail(Code::invalid_argument, sym.takeError());
  *out = std::make_unique<OrcKernel>(*lib, reinterpret_cast<KernelFn>(sym->getAddress()));
  return {};
}

}  // namespace tg::clangdev
