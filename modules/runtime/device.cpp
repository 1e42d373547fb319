#include "runtime/device.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "runtime/check.hpp"
#include "viz/record.hpp"

namespace tg {

DeviceSpec DeviceSpec::parse(std::string_view spec) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  auto bad = [&](std::string_view why) {
    return DeviceError(
        "device", fmt::format("bad device '{}': {}; expected NAME[:index][:renderer[:arch]]", spec, why));
  };
  if (std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); }))
    throw bad("empty field");
  DeviceSpec out;
  for (char c : parts[0]) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      throw bad(fmt::format("'{}' is not a device name (letters, digits, _)", parts[0]));
    out.name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (parts.size() > 1 && parts[1][0] == '-') throw bad("the index is a number from 0");
  size_t next = 1;
  if (parts.size() > 1 && std::isdigit(static_cast<unsigned char>(parts[1][0]))) {
    auto [end, ec] = std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), out.index);
    if (ec != std::errc() || end != parts[1].data() + parts[1].size()) throw bad("index is not a number");
    next = 2;
  }
  if (parts.size() > next + 2) throw bad("too many fields");
  if (parts.size() > next) out.renderer = parts[next];
  if (parts.size() > next + 1) out.arch = parts[next + 1];
  return out;
}

std::string DeviceSpec::str() const {
  std::string s = fmt::format("{}:{}", name, index);
  if (!renderer.empty()) s += ":" + renderer;
  if (!arch.empty()) s += ":" + arch;
  return s;
}

Device::Device(DeviceSpec spec, std::unique_ptr<sdk::Device> impl)
    : spec_(std::move(spec)),
      impl_(std::move(impl)),
      allocator_(std::make_unique<LruAllocator>(impl_->allocator(), str())) {}

sdk::Blob Device::compile(std::string_view source) {
  sdk::Blob binary;
  sdk::Status s = impl_->compiler().compile(source, binary);
  if (s.code() == sdk::Code::compile_error)
    throw CompileError(
        "compile", fmt::format("{} failed to compile:\n{}\n--- source ---\n{}", str(), s.message(), source));
  check(s, "compile", str());
  return binary;
}

std::unique_ptr<sdk::Program> Device::load(std::string_view kernel, std::span<const std::byte> binary) {
  if (env::DEBUG >= 7) {  // every program passes here, compiled now or read from the disk cache
    sdk::Blob text;
    sdk::Status s = impl_->compiler().disassemble(binary, text);
    debug_log(7, "{} {} disassembly:\n{}", str(), kernel,
              s.ok() ? std::string(text.text()) : fmt::format("none: {}", s.message()));
  }
  sdk::Program* program = nullptr;
  check(impl_->load(kernel, binary, &program), "load", fmt::format("{} loading kernel {}", str(), kernel));
  if (program == nullptr)
    throw DeviceError("load", fmt::format("{} returned no program for {}", str(), kernel));
  std::unique_ptr<sdk::Program> p(program);
  if (viz::on()) return viz::record_runs(std::move(p), binary);
  return p;
}

void Device::synchronize() { check(impl_->synchronize(), "synchronize", str()); }

}  // namespace tg
