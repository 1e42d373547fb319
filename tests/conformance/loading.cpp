// Conformance area "loading": the descriptor read without running plugin code, its ABI fields, a fast
// and side-effect-free probe, behaviour with the driver library hidden, and loading the plugin twice.
#include <boost/test/unit_test.hpp>

#include <sched.h>
#include <unistd.h>
#include <sys/mount.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "conformance.hpp"
#include "runtime/loader.hpp"
#include "runtime/registry.hpp"
#include "runner.hpp"

namespace {

using namespace tg::conformance;
namespace fs = std::filesystem;

const tg::runtime::Candidate& candidate() { return *tg::runtime::Registry::global().find(target().name); }

std::set<std::string> cwd_entries() {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::current_path(), ec)) out.insert(e.path().filename().string());
  return out;
}

size_t thread_count() {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/self/task", ec); !ec && it != fs::directory_iterator(); ++it) n++;
  return n;
}

// Allocates, copies 256 known bytes in and out and frees on dev; empty when all went well.
std::string round_trip(tg::runtime::Device& dev) {
  tg::sdk::Allocator& a = dev.plugin().allocator();
  std::vector<std::byte> in(256), out(256);
  for (size_t i = 0; i < in.size(); i++) in[i] = static_cast<std::byte>(i * 7 + 3);
  tg::sdk::Handle h = nullptr;
  if (auto s = a.alloc(in.size(), {}, &h); !s.ok()) return fmt::format("alloc: {}", s.message());
  std::string err;
  if (auto s = a.copyin(h, in); !s.ok()) err = fmt::format("copyin: {}", s.message());
  if (auto s = a.copyout(out, h); err.empty() && !s.ok()) err = fmt::format("copyout: {}", s.message());
  if (err.empty() && in != out) err = "bytes read back differ from the bytes written";
  a.free(h, in.size(), {});
  return err;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs this executable as the hidden-driver child; returns its wait status and fills out with its output.
int run_hidden_probe(const std::string& plugin, std::string& out) {
  std::string cmd =
      fmt::format("{} --hidden-driver-probe {} 2>&1", quoted(fs::read_symlink("/proc/self/exe").string()), quoted(plugin));
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return ::pclose(p);
}

// Mounts an empty tmpfs over every folder libraries are loaded from, in a private mount namespace of
// this process only. Empty when done, else why not.
std::string hide_libraries() {
  if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
    return fmt::format("no private mount namespace ({})", std::strerror(errno));
  // Never let a mount below propagate to the rest of the system.
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fmt::format("cannot make the mount namespace private ({})", std::strerror(errno));
  std::vector<std::string> dirs{"/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib",
                                "/opt"};
  if (const char* llp = std::getenv("LD_LIBRARY_PATH")) {
    std::istringstream in(llp);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    if (::mount("tmpfs", d.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k") != 0)
      return fmt::format("cannot hide {} ({})", d, std::strerror(errno));
  }
  return "";
}

std::string one_line(const char* s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

}  // namespace

namespace tg::conformance::runner {

int hidden_driver_probe(const std::string& plugin_path) {
  tg::runtime::PluginFile pf = tg::runtime::inspect_plugin(plugin_path);
  tg::runtime::LoadResult lr;
  if (pf.error.empty()) lr = tg::runtime::load_plugin(pf.path, pf.alias, pf.abi);
  if (!pf.error.empty() || !lr.error.empty()) {
    fmt::print("load-failed {}\n", pf.error.empty() ? lr.error : pf.error);
    return 1;
  }
  if (std::string why = hide_libraries(); !why.empty()) {
    fmt::print("hide-failed {}\n", why);
    return 0;
  }
  char reason[1024] = {0};
  int usable = lr.descriptor->probe(reason, sizeof reason);
  fmt::print("probe {} {}\n", usable, one_line(reason));
  std::fflush(stdout);
  if (usable == 0) {
    char err[1024] = {0};
    void* dev = lr.descriptor->create(0, err, sizeof err);
    fmt::print("create {} {}\n", dev != nullptr ? "ok" : "null", one_line(err));
    delete static_cast<tg::sdk::Device*>(dev);
  }
  return 0;
}

}  // namespace tg::conformance::runner

BOOST_AUTO_TEST_SUITE(loading)

BOOST_AUTO_TEST_CASE(descriptor_without_loading) {
  if (target().plugin_path.empty()) {
    record_unsupported("", "built-in device: there is no plugin file to read");
    return;
  }
  tg::runtime::PluginFile pf = tg::runtime::inspect_plugin(target().plugin_path);
  record("library_info", pf.error.empty(), pf.error);
  record("declares_device", pf.abi.name == target().name,
         fmt::format("the tgplugin section names '{}', the device is '{}'", pf.abi.name, target().name));
  std::string abi = tg::runtime::check_abi(pf.abi.major, pf.abi.minor);
  record("abi_accepted", abi.empty(), abi);
}

BOOST_AUTO_TEST_CASE(descriptor_fields) {
  const tg_plugin_descriptor* d = candidate().descriptor;
  if (record("present", d != nullptr, "the registry holds no descriptor for the device") != Outcome::pass) return;
  record("struct_size", d->struct_size >= sizeof(tg_plugin_descriptor) && d->struct_size < 4096,
         fmt::format("struct_size {} (this core's descriptor has {} bytes)", d->struct_size,
                     sizeof(tg_plugin_descriptor)));
  std::string abi = tg::runtime::check_abi(d->abi_major, d->abi_minor);
  record("abi_version", abi.empty(), fmt::format("descriptor ABI {}.{}: {}", d->abi_major, d->abi_minor, abi));
  std::string name = d->name != nullptr ? d->name : "";
  bool upper = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
  record("name", upper && name == target().name,
         fmt::format("name '{}': expected '{}', upper case letters, digits and _", name, target().name));
  record("version", d->version != nullptr && *d->version != '\0', "empty version string");
  record("entry_points", d->probe != nullptr && d->create != nullptr, "probe or create is null");
}

BOOST_AUTO_TEST_CASE(probe_fast_and_side_effect_free) {
  const tg_plugin_descriptor* d = candidate().descriptor;
  BOOST_REQUIRE(d != nullptr && d->probe != nullptr);
  // Probe inside a fresh empty folder, so files other processes write meanwhile cannot be mistaken for its own.
  fs::path home = fs::current_path(),
           empty = fs::temp_directory_path() / fmt::format("tg-conformance-probe-{}", ::getpid());
  fs::create_directories(empty);
  fs::current_path(empty);
  std::set<std::string> files = cwd_entries();
  size_t threads = thread_count();
  for (int i = 0; i < 2; i++) {
    char reason[512] = {0};
    auto t0 = std::chrono::steady_clock::now();
    int usable = d->probe(reason, sizeof reason);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (compile_only())  // the device is absent by design: a reason is all probe owes
      record_unsupported(fmt::format("usable_{}", i), fmt::format("compile-only; probe said: {}", reason));
    else
      record(fmt::format("usable_{}", i), usable == 1, fmt::format("probe returned {} ({})", usable, reason));
    record(fmt::format("fast_{}", i), s < 1.0, fmt::format("probe took {:.3f} s (limit 1 s)", s));
  }
  std::set<std::string> after = cwd_entries();
  fs::current_path(home);
  std::error_code ec;
  fs::remove_all(empty, ec);
  std::vector<std::string> created;
  std::set_difference(after.begin(), after.end(), files.begin(), files.end(), std::back_inserter(created));
  record("no_files", created.empty(), fmt::format("probe created {} in the working directory", fmt::join(created, ", ")));
  size_t now = thread_count();
  record("no_threads", now <= threads, fmt::format("{} threads before probing, {} after", threads, now));
}

BOOST_AUTO_TEST_CASE(driver_hidden) {
  if (target().plugin_path.empty()) {
    record_unsupported("", "built-in device: it opens no driver library");
    return;
  }
  std::string out;
  int status = run_hidden_probe(target().plugin_path, out);
  std::map<std::string, std::string> said;  // first word of each line -> the rest
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    size_t sp = line.find(' ');
    said.emplace(line.substr(0, sp), sp == std::string::npos ? "" : line.substr(sp + 1));
  }
  if (said.contains("hide-failed")) {
    record_unsupported("", fmt::format("cannot hide libraries on this machine: {}", said["hide-failed"]));
    return;
  }
  if (!said.contains("probe")) {
    record("probe_unavailable", false,
           fmt::format("with every system library folder hidden, probing did not complete (exit status {}): {}",
                       status, out));
    return;
  }
  if (said["probe"].starts_with("1")) {
    record_unsupported("", "probe succeeds with every system library folder hidden: the plugin opens no driver "
                           "library (a host device)");
    return;
  }
  std::string reason = said["probe"].substr(std::min<size_t>(2, said["probe"].size()));
  record("probe_unavailable", reason.find("unavailable") != std::string::npos,
         fmt::format("with the driver hidden, probe should say 'unavailable: <what is missing>'; it said '{}'", reason));
  bool clean = said.contains("create") && said["create"].starts_with("null ") && said["create"].size() > 5;
  record("create_unavailable", clean,
         said.contains("create") ? fmt::format("with the driver hidden, create gave: {}", said["create"])
                                 : fmt::format("create did not return (exit status {}): {}", status, out));
}

BOOST_AUTO_TEST_CASE(loading_twice) {
  const tg::runtime::Candidate& c = candidate();
  if (!target().plugin_path.empty()) {
    tg::runtime::PluginFile pf = tg::runtime::inspect_plugin(target().plugin_path);
    tg::runtime::LoadResult again = tg::runtime::load_plugin(pf.path, pf.alias, pf.abi);
    record("same_descriptor", again.error.empty() && again.descriptor == c.descriptor,
           again.error.empty() ? "a second load gave another descriptor" : again.error);
  } else {
    record_unsupported("same_descriptor", "built-in device: never loaded from a file");
  }
  // A second registry opens a second device instance next to the one under test, then destroys it.
  tg::runtime::RegistryConfig cfg;
  if (!target().plugin_path.empty()) cfg.env["TG_PLUGIN_PATH"] = target().plugin_path;
  cfg.search_installed = cfg.search_build_tree = false;
  {
    tg::runtime::Registry other(cfg);
    const tg::runtime::Candidate* oc = other.find(target().name);
    record("found_again", oc != nullptr && oc->usable, oc ? oc->reason : "not discovered by a second registry");
    if (oc == nullptr || !oc->usable) return;
    std::string err;
    try {
      err = round_trip(other.device(target().name));
    } catch (const std::exception& e) {
      err = e.what();
    }
    record("second_instance_works", err.empty(), err);
  }
  std::string err = round_trip(device());
  record("first_instance_still_works", err.empty(), err);
}

BOOST_AUTO_TEST_SUITE_END()
