// tg-conformance: runs every conformance test against one device plugin and prints a per-area summary.
// Its own flags are taken out of argv; everything else goes to Boost.Test (--run_test, --list_content...).
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "conformance.hpp"
#include "runner.hpp"
#include "runtime/loader.hpp"
#include "runtime/registry.hpp"

namespace {

namespace fs = std::filesystem;
using namespace tg::conformance;

constexpr const char* kUsage =
    R"(usage: tg-conformance [--plugin PATH] [--manifest PATH] [--junit FILE] [--summary FILE]
                      [--skip-unusable] [--compile-only [--arch ARCH] [--tc-instruction TEXT]]
                      [Boost.Test options]
Runs the backend conformance suite on one device and prints a summary per area (loading, allocator,
compiler, renderer, program, ops, smoke).
  --plugin PATH    the plugin library to test (its device is the one it declares); without it, DEV=NAME
                   or the default device is tested
  --manifest PATH  known-unsupported and expected-failure tests (default: <plugin dir>/<library
                   stem>.conformance.json when that file exists)
  --junit FILE     also write a JUnit XML report to FILE
  --summary FILE   also write the summary to FILE
  --skip-unusable  exit with 77 (a skipped test) when the device cannot be used on this machine
  --compile-only   no device needed: every kernel the suite would run is rendered and compiled by the
                   plugin's own toolchain for ARCH, and none runs (tests that only run are unsupported)
  --arch ARCH      the target to compile for (default: the plugin's first; `tg devices` lists them)
  --tc-instruction TEXT
                   the disassembly of every tensor-core kernel must contain TEXT (e.g. HMMA)
  --help           this text
Other options go to Boost.Test, e.g. --run_test=ops/* or --list_content.
Exit code: 0 when nothing failed and no expected failure passed, 1 otherwise, 2 when the device cannot be
tested (bad arguments or manifest, not a plugin, not usable here).
)";

struct Options {
  std::string plugin, manifest, junit, summary, arch, tc_instruction;
  bool help = false, skip_unusable = false, compile_only = false;
  std::vector<std::string> boost_args;
};

// Takes our flags out; the rest is left for Boost. Returns an error message or nothing.
std::optional<std::string> parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    bool matched = false;
    for (auto [flag, dst] :
         {std::pair{"--plugin", &o.plugin}, std::pair{"--manifest", &o.manifest},
          std::pair{"--junit", &o.junit}, std::pair{"--summary", &o.summary}, std::pair{"--arch", &o.arch},
          std::pair{"--tc-instruction", &o.tc_instruction}}) {
      std::string f = flag;
      if (a == f) {
        if (i + 1 >= argc) return fmt::format("{} needs a value", f);
        *dst = argv[++i];
      } else if (a.starts_with(f + "=")) {
        *dst = a.substr(f.size() + 1);
      } else {
        continue;
      }
      if (dst->empty()) return fmt::format("{} needs a non-empty value", f);
      matched = true;
      break;
    }
    if (matched) continue;
    if (a == "--skip-unusable") {
      o.skip_unusable = true;
      continue;
    }
    if (a == "--compile-only") {
      o.compile_only = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      o.help = true;
      continue;
    }
    o.boost_args.push_back(a);
  }
  if (!o.compile_only && (!o.arch.empty() || !o.tc_instruction.empty()))
    return std::string("--arch and --tc-instruction need --compile-only");
  if (o.compile_only && o.plugin.empty()) return std::string("--compile-only needs --plugin PATH");
  return std::nullopt;
}

struct Unusable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The device under test: the one the --plugin library declares, else DEV / the default device.
Target choose_target(const Options& o) {
  Target t;
  if (!o.plugin.empty()) {
    tg::runtime::PluginFile pf = tg::runtime::inspect_plugin(o.plugin);
    if (!pf.error.empty()) throw std::runtime_error(fmt::format("{} is not a plugin: {}", o.plugin, pf.error));
    const char* old = std::getenv("TG_PLUGIN_PATH");
    std::string path = pf.path + (old != nullptr && *old != '\0' ? std::string(":") + old : "");
    ::setenv("TG_PLUGIN_PATH", path.c_str(), 1);
    t.name = pf.abi.name;
    const tg::runtime::Candidate* c = tg::runtime::Registry::global().find(t.name);
    if (c == nullptr) throw std::runtime_error(fmt::format("{}: device {} was not discovered", o.plugin, t.name));
    if (c->path != pf.path)
      throw std::runtime_error(fmt::format("{} declares device {}, but {} already provides it ({})", o.plugin,
                                           t.name, c->path, c->origin));
    if (!c->usable && !o.compile_only)
      throw Unusable(fmt::format("{}: {} is not usable here: {}", o.plugin, t.name, c->reason));
    t.plugin_path = pf.path;
  } else {
    std::string why;
    t.name = tg::runtime::Registry::global().default_spec(&why).name;
    const tg::runtime::Candidate* c = tg::runtime::Registry::global().find(t.name);
    if (c != nullptr && c->path != "built-in") t.plugin_path = c->path;
  }
  if (o.compile_only) {
    tg::runtime::Device& d = tg::runtime::Registry::global().open_compile_only(t.name, o.arch);
    t.compile_only = true, t.arch = d.spec().arch, t.tc_pattern = o.tc_instruction;
  }
  if (!o.manifest.empty()) {
    t.manifest_path = o.manifest;
  } else if (!t.plugin_path.empty()) {
    fs::path p(t.plugin_path);
    std::string stem = p.filename().string();
    stem = stem.substr(0, stem.find('.'));  // libtg-cl.so -> libtg-cl
    fs::path m = p.parent_path() / (stem + ".conformance.json");
    if (fs::exists(m)) t.manifest_path = m.string();
  }
  return t;
}

void print_header(const Target& t) {
  const tg::runtime::Candidate* c = tg::runtime::Registry::global().find(t.name);
  tg::runtime::Device& dev = device();
  fmt::print("tg-conformance\n  device:      {} ({})\n  plugin:      {}\n", t.name, dev.str(),
             t.plugin_path.empty() ? "built-in" : t.plugin_path);
  if (c != nullptr) fmt::print("  version:     {}\n  ABI:         {}.{}\n", c->version, c->abi_major, c->abi_minor);
  if (t.compile_only) fmt::print("  mode:        compile-only for {}: nothing runs\n", t.arch);
  fmt::print("  description: {}\n  manifest:    {}\n\n", dev.description(),
             t.manifest_path.empty() ? "none" : t.manifest_path);
  std::fflush(stdout);
}

bool init_tests() {
  boost::unit_test::framework::master_test_suite().p_name.value = "conformance";
  runner::install();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--hidden-driver-probe")  // loading/driver_hidden's child
    return runner::hidden_driver_probe(argv[2]);
  Options o;
  if (auto err = parse(argc, argv, o)) {
    fmt::print(stderr, "tg-conformance: {}\n{}", *err, kUsage);
    return 2;
  }
  if (o.help) {
    fmt::print("{}", kUsage);
    return 0;
  }
  try {
    Target t = choose_target(o);
    Manifest m;
    if (!t.manifest_path.empty()) m = runner::read_manifest(t.manifest_path);
    runner::set_target(t);
    runner::set_manifest(std::move(m));
    print_header(t);
  } catch (const Unusable& e) {
    fmt::print(stderr, "tg-conformance: {}\n", e.what());
    return o.skip_unusable ? 77 : 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tg-conformance: {}\n", e.what());
    return 2;
  }

  std::vector<std::string> args{argv[0]};
  for (const std::string& f : {o.junit, o.summary}) {
    std::error_code ec;
    if (!f.empty() && fs::path(f).has_parent_path()) fs::create_directories(fs::path(f).parent_path(), ec);
  }
  if (!o.junit.empty()) {
    // JUnit next to the usual log: Boost takes one --logger list of format,level,sink entries.
    std::string level = "error";
    for (auto it = o.boost_args.begin(); it != o.boost_args.end();) {
      if (it->starts_with("--log_level=")) {
        level = it->substr(12);
        it = o.boost_args.erase(it);
      } else {
        ++it;
      }
    }
    args.push_back(fmt::format("--logger=HRF,{},stdout:JUNIT,all,{}", level, o.junit));
  }
  args.insert(args.end(), o.boost_args.begin(), o.boost_args.end());
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);

  int rc = boost::unit_test::unit_test_main(&init_tests, static_cast<int>(args.size()), cargs.data());
  if (!runner::ran()) return rc;
  std::string text = runner::summary();
  fmt::print("\n{}", text);
  if (!o.summary.empty()) {
    std::ofstream out(o.summary);
    out << text;
    if (!out) {
      fmt::print(stderr, "tg-conformance: cannot write the summary to {}\n", o.summary);
      return rc != 0 ? rc : 1;
    }
  }
  return runner::exit_code(rc);
}
