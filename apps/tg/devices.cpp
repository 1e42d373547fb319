// tg devices: every candidate discovery looked at, in discovery order, and the selected default.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "base/error.hpp"
#include "runtime/loader.hpp"
#include "runtime/registry.hpp"

namespace tg::cli {

namespace {
std::string_view kind_name(runtime::SearchKind k) {
  switch (k) {
    case runtime::SearchKind::file:
      return "file";
    case runtime::SearchKind::dir:
      return "dir";
    case runtime::SearchKind::tree:
      return "*/ of dir";
  }
  return "";
}
}  // namespace

int devices(Args args) {
  if (!args.empty()) {
    fmt::print(stderr, "tg devices: takes no arguments\n");
    return 2;
  }
  runtime::Registry& reg = runtime::Registry::global();
  // Each probe in a child: a plugin whose probe crashes or hangs is listed with that reason, not fatal.
  reg.probe_all(true);
  fmt::print("libtg: {}\nsearch order: built-in", runtime::libtg_path());
  for (const auto& e : reg.search_list()) fmt::print("; {} {} ({})", e.origin, e.path, kind_name(e.kind));
  fmt::print("\n\n");

  std::string why, selected;
  std::string default_line;
  try {
    runtime::DeviceSpec spec = reg.default_spec(&why);
    selected = spec.name;
    default_line = fmt::format("default: {} ({})", spec.str(), why);
  } catch (const Error& e) {
    default_line = fmt::format("default: none ({}; {})", why, e.what());
  }

  size_t w = 4;
  for (const auto& c : reg.candidates()) w = std::max(w, c.name.size());
  fmt::print("  {:<{}}  {:<5}  {:<8}  {:>4}  {:>9}  {}\n", "NAME", w, "ABI", "VERSION", "PRIO", "PROBE",
             "STATUS");
  for (const auto& c : reg.candidates()) {
    bool loaded = c.descriptor != nullptr;
    std::string abi = c.abi_major || c.abi_minor ? fmt::format("{}.{}", c.abi_major, c.abi_minor) : "-";
    std::string probe = loaded ? fmt::format("{:.2f} ms", c.probe_seconds * 1e3) : "-";
    std::string prio = loaded ? std::to_string(c.priority) : "-";
    fmt::print("{} {:<{}}  {:<5}  {:<8}  {:>4}  {:>9}  {}\n",
               !selected.empty() && reg.find(selected) == &c ? '*' : ' ', c.name.empty() ? "-" : c.name, w,
               abi, loaded ? c.version : "-", prio, probe, c.usable ? "ok" : c.reason);
    fmt::print("  {:<{}}  {} ({})\n", "", w, c.path, c.origin);
    if (std::string targets = runtime::compile_targets(c); !targets.empty())
      fmt::print("  {:<{}}  {}: {} (tg-conformance --compile-only --arch ARCH)\n", "", w,
                 c.usable ? "also compiles for" : "cannot run here; compiles for", targets);
  }
  fmt::print("\n{}\n", default_line);
  return 0;
}

}  // namespace tg::cli
