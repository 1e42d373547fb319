// clCreateProgramWithSource + clBuildProgram; the log on failure, CL_PROGRAM_BINARIES on success.
#include "plugins/cl/compiler.hpp"

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "plugins/cl/opencl_renderer.hpp"

namespace tg::cldev {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

constexpr std::array<char, 6> kMagic{'T', 'G', 'O', 'C', 'L', 2};  // format 2: flag bit 0 = global ids
constexpr size_t kHeaderSize = 8;

// Rendered with global ids: the launch runs exactly `global` work items and the driver picks the group size.
bool global_ids(std::string_view source) {
  return source.starts_with(tg::opencl::OpenCLRenderer::kGlobalIdsMarker);
}

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
  return ProgramBinary{binary.subspan(kHeaderSize), (static_cast<unsigned>(binary[6]) & 1u) != 0};
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

Status ClCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    const ClApi& cl = ctx_->cl();
    const char* text = source.data();
    size_t len = source.size();
    cl_int err = CL_SUCCESS;
    ProgramRef prog{cl, cl.clCreateProgramWithSource(ctx_->context(), 1, &text, &len, &err)};
    if (prog.p == nullptr) return cl_status(err, "[CL compile] clCreateProgramWithSource");
    cl_device_id dev = ctx_->device();
    err = cl.clBuildProgram(prog.p, 1, &dev, options_.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      std::string log = build_log(*ctx_, prog.p);
      return {err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ? Code::compile_error
                                                                                 : Code::runtime_error,
              fmt::format("[CL compile] clBuildProgram failed with {}:\n{}", cl_error(err), log)};
    }
    size_t size = 0;
    if ((err = cl.clGetProgramInfo(prog.p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr)) !=
        CL_SUCCESS)
      return cl_status(err, "[CL compile] CL_PROGRAM_BINARY_SIZES");
    if (size == 0) return {Code::unsupported, "[CL compile] the driver returned an empty program binary"};
    binary.resize(0);
    auto out = binary.resize(kHeaderSize + size);  // zero-filled
    std::memcpy(out.data(), kMagic.data(), kMagic.size());
    out[6] = std::byte{global_ids(source) ? uint8_t{1} : uint8_t{0}};
    unsigned char* dst = reinterpret_cast<unsigned char*>(out.data() + kHeaderSize);
    if ((err = cl.clGetProgramInfo(prog.p, CL_PROGRAM_BINARIES, sizeof dst, &dst, nullptr)) != CL_SUCCESS)
      return cl_status(err, "[CL compile] CL_PROGRAM_BINARIES");
    return {};
  });
}

}  // namespace tg::cldev
