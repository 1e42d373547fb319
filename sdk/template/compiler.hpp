#pragma once
// TEMPLATE compiler: C source -> shared object, by running the system C compiler as a child process.
// A real accelerator calls its own compiler here (shaderc, NVRTC, the OpenCL driver, an offline tool).
#include <string>
#include <string_view>
#include <vector>

#include <tg/sdk/compiler.hpp>

namespace tpl {

// The C compiler to run: $TEMPLATE_CC, else "cc".
std::string c_compiler();
// True when `exe` is an executable file (a path, or a name found in PATH). Runs nothing: probe() uses it.
bool executable_exists(const std::string& exe);
// Runs argv (argv[0] looked up in PATH) in folder cwd; returns its exit code (-1 when it could not run or
// was killed) and appends its stdout and stderr to output.
int run_process(const std::vector<std::string>& argv, const std::string& cwd, std::string& output);

class TemplateCompiler final : public tg::sdk::Compiler {
 public:
  // Asks the compiler for its version and target; throws std::runtime_error when it cannot run.
  TemplateCompiler();

  // --- required ---
  std::string_view cache_key() const noexcept override { return cache_key_; }
  tg::sdk::Status compile(std::string_view source, tg::sdk::Blob& binary) noexcept override;

  std::string_view id() const { return id_; }

 private:
  std::string cc_, id_, cache_key_;
};

}  // namespace tpl
