// clCreateProgramWithSource + clBuildProgram; the log on failure, CL_PROGRAM_BINARIES (or the source, when
// the driver's binary is incomplete) on success.
#include "plugins/cl/compiler.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "plugins/cl/opencl_renderer.hpp"

namespace tg::cldev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

constexpr std::array<char, 6> kMagic{'T', 'G', 'O', 'C', 'L', 2};  // format 2, flags in byte 6
constexpr size_t kHeaderSize = 8;
constexpr uint8_t kFlagGlobalIds = 1;  // bit 0: rendered with global ids
constexpr uint8_t kFlagSource = 2;     // bit 1: the payload is the OpenCL C source
constexpr uint8_t kFlagSpirv = 4;      // bit 2: the payload is a SPIR-V module

struct ProgramRef {
  const ClApi& cl;
  cl_program p = nullptr;
  ~ProgramRef() {
    if (p != nullptr) cl.clReleaseProgram(p);
  }
};

}  // namespace

std::optional<ProgramBinary> program_binary(std::span<const std::byte> binary) {
  if (binary.size() <= kHeaderSize || std::memcmp(binary.data(), kMagic.data(), kMagic.size()) != 0)
    return std::nullopt;
  const auto flags = static_cast<unsigned>(binary[6]);
  return ProgramBinary{binary.subspan(kHeaderSize), (flags & kFlagGlobalIds) != 0, (flags & kFlagSource) != 0,
                       (flags & kFlagSpirv) != 0};
}

void write_program_binary(tg::sdk::Blob& out, const ProgramBinary& parts) {
  uint8_t flags = (parts.global_ids ? kFlagGlobalIds : 0) | (parts.source ? kFlagSource : 0) |
                  (parts.spirv ? kFlagSpirv : 0);
  out.resize(0);
  auto bytes = out.resize(kHeaderSize + parts.program.size());  // zero-filled
  std::memcpy(bytes.data(), kMagic.data(), kMagic.size());
  bytes[6] = std::byte{flags};
  std::memcpy(bytes.data() + kHeaderSize, parts.program.data(), parts.program.size());
}

bool rendered_with_global_ids(std::string_view source) {
  return source.starts_with(tg::opencl::OpenCLRenderer::kGlobalIdsMarker);
}

std::string incomplete_driver_binary(std::span<const std::byte> program) {
  if (program.empty()) return "the driver returned an empty program binary";
  constexpr std::array<char, 8> kPocl{'p', 'o', 'c', 'l', 'b', 'i', 'n', '\0'};
  if (program.size() < kPocl.size() || std::memcmp(program.data(), kPocl.data(), kPocl.size()) != 0)
    return "";
  // PoCL: "poclbin\0", device hash (8), format version (4), kernel count (4), then fields that depend on the
  // version, then program.bc as a length-prefixed path ending in "program.bc" and a length-prefixed content,
  // then the kernels. PoCL asserts (aborts the process) on a zero count or an empty program.bc.
  auto u32 = [&](size_t at) -> uint32_t {
    const auto* b = reinterpret_cast<const unsigned char*>(program.data()) + at;
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  };
  if (program.size() < 24 || u32(20) == 0) return "the PoCL binary holds no kernel";
  std::string_view head(reinterpret_cast<const char*>(program.data()), std::min<size_t>(program.size(), 512));
  constexpr std::string_view kBc = "program.bc";
  size_t end = head.find(kBc, 24);
  if (end == std::string_view::npos) return "the PoCL binary names no program.bc";
  end += kBc.size();
  size_t path_len = kBc.size();
  while (path_len + 4 < end - 24 && u32(end - path_len - 4) != path_len) path_len++;
  if (u32(end - path_len - 4) != path_len) return "the PoCL binary's program.bc path has no length";
  if (end + 4 > program.size() || u32(end) == 0) return "the PoCL binary's program.bc is empty";
  if (end + 4 + u32(end) > program.size()) return "the PoCL binary is shorter than its program.bc";
  return "";
}

std::string build_log(const Context& ctx, cl_program program) {
  size_t n = 0;
  if (ctx.cl().clGetProgramBuildInfo(program, ctx.device(), CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) !=
      CL_SUCCESS)
    return "";
  std::string log(n, '\0');
  ctx.cl().clGetProgramBuildInfo(program, ctx.device(), CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

ClCompiler::ClCompiler(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  // Division and sqrt correctly rounded (as in the reference) where the device offers it.
  if (ctx_->info().correctly_rounded_divide_sqrt) options_ = "-cl-fp32-correctly-rounded-divide-sqrt";
  const DeviceInfo& i = ctx_->info();
  cache_key_ = fmt::format("opencl {} | {} | {} | driver {} | {}", i.platform_version, i.device_name,
                           i.device_version, i.driver_version, options_);
}

Status build_source(const Context& ctx, std::string_view source, const std::string& options,
                    std::string_view what, cl_program* out) {
  const ClApi& cl = ctx.cl();
  const char* text = source.data();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  ProgramRef prog{cl, cl.clCreateProgramWithSource(ctx.context(), 1, &text, &len, &err)};
  if (prog.p == nullptr) return cl_status(err, fmt::format("{} clCreateProgramWithSource", what));
  cl_device_id dev = ctx.device();
  err = cl.clBuildProgram(prog.p, 1, &dev, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(ctx, prog.p);
    return {err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ? Code::compile_error
                                                                               : Code::runtime_error,
            fmt::format("{} clBuildProgram failed with {}:\n{}", what, cl_error(err), log)};
  }
  size_t kernels = 0;  // CL_PROGRAM_NUM_KERNELS is a size_t
  if ((err = cl.clGetProgramInfo(prog.p, CL_PROGRAM_NUM_KERNELS, sizeof kernels, &kernels, nullptr)) !=
      CL_SUCCESS)
    return cl_status(err, fmt::format("{} CL_PROGRAM_NUM_KERNELS", what));
  if (kernels == 0) return {Code::compile_error, fmt::format("{} the program defines no __kernel", what)};
  *out = std::exchange(prog.p, nullptr);
  return {};
}

Status build_il(const Context& ctx, std::span<const std::byte> spirv, const std::string& options,
                std::string_view what, cl_program* out) {
  const ClApi& cl = ctx.cl();
  if (cl.clCreateProgramWithIL == nullptr)
    return tg::sdk::unavailable(
        fmt::format("{} the OpenCL loader has no clCreateProgramWithIL (OpenCL 2.1)", what));
  cl_int err = CL_SUCCESS;
  ProgramRef prog{cl, cl.clCreateProgramWithIL(ctx.context(), spirv.data(), spirv.size(), &err)};
  if (prog.p == nullptr)
    return {Code::invalid_argument,
            fmt::format("{} clCreateProgramWithIL refused the module: {}", what, cl_error(err))};
  cl_device_id dev = ctx.device();
  if ((err = cl.clBuildProgram(prog.p, 1, &dev, options.c_str(), nullptr, nullptr)) != CL_SUCCESS)
    return {Code::invalid_argument, fmt::format("{} building the SPIR-V module failed with {}:\n{}", what,
                                                cl_error(err), build_log(ctx, prog.p))};
  *out = std::exchange(prog.p, nullptr);
  return {};
}

Status ClCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    const ClApi& cl = ctx_->cl();
    ProgramRef prog{cl};
    if (Status s = build_source(*ctx_, source, options_, "[CL compile]", &prog.p); !s.ok()) return s;
    ProgramBinary parts{{}, rendered_with_global_ids(source), false, false};
    size_t size = 0;
    cl_int err = CL_SUCCESS;
    if ((err = cl.clGetProgramInfo(prog.p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr)) !=
        CL_SUCCESS)
      return cl_status(err, "[CL compile] CL_PROGRAM_BINARY_SIZES");
    std::vector<unsigned char> bytes(size);
    unsigned char* dst = bytes.data();
    if (size > 0 &&
        (err = cl.clGetProgramInfo(prog.p, CL_PROGRAM_BINARIES, sizeof dst, &dst, nullptr)) != CL_SUCCESS)
      return cl_status(err, "[CL compile] CL_PROGRAM_BINARIES");
    std::span<const std::byte> payload = std::as_bytes(std::span(bytes));
    if (!incomplete_driver_binary(payload).empty()) {
      // The driver's binary would not load (PoCL serializes it from its on-disk kernel cache, which another
      // process building the same source may not have finished): keep the source, load builds it.
      payload = std::as_bytes(std::span(source.data(), source.size()));
      parts.source = true;
    }
    parts.program = payload;
    write_program_binary(binary, parts);
    return {};
  });
}

tg::sdk::Status ClCompiler::disassemble(std::span<const std::byte> binary, tg::sdk::Blob& text) noexcept {
  (void)binary, (void)text;
  return tg::sdk::unsupported(
      "[CL disassemble] OpenCL has no disassembly API and the driver's program binary is its own format; "
      "DEV=CL:spirv shows each kernel as SPIR-V");
}

}  // namespace tg::cldev
