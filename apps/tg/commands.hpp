#pragma once
// Subcommands of the tg executable. Each takes the arguments after its name and returns the exit code.
#include <span>
#include <string_view>

namespace tg::cli {

using Args = std::span<const std::string_view>;

int devices(Args args);
int env(Args args);
int demo(Args args);
int train_mnist(Args args);
int infer(Args args);
int viz(Args args);
int llm(Args args);
int onnx(Args args);

}  // namespace tg::cli
