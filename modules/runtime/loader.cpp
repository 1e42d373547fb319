#include "runtime/loader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "base/log.hpp"
#include "build_config.hpp"
#include "runtime/elf.hpp"

namespace tg::runtime {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kNotPlugin = "not a tinygrad.cpp plugin: ";

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_plugin_file_name(const fs::path& p) {
  std::string n = p.filename().string();
  return n.size() > 9 && n.starts_with("libtg-") && n.ends_with(".so");
}

// Boost wraps the dynamic loader's message in "...(dlerror system message: <msg>): <errno text>".
std::string_view dlerror_of(std::string_view what) {
  constexpr std::string_view key = "dlerror system message: ";
  size_t start = what.find(key), end = what.rfind(')');
  if (start == std::string_view::npos || end == std::string_view::npos || end < start) return what;
  return what.substr(start + key.size(), end - start - key.size());
}

}  // namespace

std::optional<AliasName> parse_alias(std::string_view alias) {
  constexpr std::string_view prefix = "tgplugin_";
  if (!alias.starts_with(prefix)) return std::nullopt;
  alias.remove_prefix(prefix.size());
  size_t a = alias.find('_'), b = a == std::string_view::npos ? a : alias.find('_', a + 1);
  if (b == std::string_view::npos || b + 1 >= alias.size()) return std::nullopt;
  auto major = parse_int(alias.substr(0, a)), minor = parse_int(alias.substr(a + 1, b - a - 1));
  if (!major || !minor) return std::nullopt;
  return AliasName{*major, *minor, std::string(alias.substr(b + 1))};
}

std::string check_abi(int major, int minor, int core_major, int minor_floor) {
  if (major != core_major)
    return fmt::format(
        "ABI mismatch: built for ABI {}.{}, this core is ABI {}.x (the major must match); "
        "rebuild the plugin against this SDK",
        major, minor, core_major);
  if (minor < minor_floor)
    return fmt::format(
        "ABI too old: built for ABI {}.{}, this core loads {}.{} and newer; rebuild the plugin "
        "against this SDK",
        major, minor, core_major, minor_floor);
  return {};
}

PluginFile inspect_plugin(const std::string& path) {
  PluginFile f{.path = path};
  auto fail = [&f](std::string why) {
    f.error = std::move(why);
    return f;
  };
  std::error_code ec;
  fs::path canon = fs::canonical(path, ec);
  if (ec) {
    std::error_code lec;
    if (fs::is_symlink(fs::symlink_status(path, lec)))
      return fail(ec == std::errc::too_many_symbolic_link_levels ? "a symbolic link loop"
                                                                 : "a symbolic link to a missing file");
    return fail("no such file");
  }
  f.path = canon.string();
  fs::file_status st = fs::status(canon, ec);
  if (fs::is_directory(st)) return fail("not a regular file (a directory)");
  if (fs::is_fifo(st)) return fail("not a regular file (a FIFO)");
  if (!fs::is_regular_file(st)) return fail("not a regular file");
  SectionSymbols elf = section_symbols(f.path, "tgplugin");
  if (!elf.error.empty()) return fail(fmt::format("{}{}", kNotPlugin, elf.error));
  std::vector<std::string> aliases;
  for (std::string& s : elf.names)
    if (s.starts_with("tgplugin_")) aliases.push_back(std::move(s));
  if (aliases.empty() && !elf.has_section) return fail(fmt::format("{}no tgplugin section", kNotPlugin));
  if (aliases.empty() && !elf.has_symtab)  // the names come from .symtab, which strip removes
    return fail(fmt::format("{}its tgplugin section has no symbol table (stripped?); install it unstripped",
                            kNotPlugin));
  if (aliases.empty()) return fail(fmt::format("{}its tgplugin section names no descriptor", kNotPlugin));
  std::sort(aliases.begin(), aliases.end());
  if (aliases.size() > 1)
    return fail(
        fmt::format("more than one descriptor ({}); a plugin exports exactly one", fmt::join(aliases, ", ")));
  f.alias = aliases[0];
  auto abi = parse_alias(f.alias);
  if (!abi) return fail(fmt::format("malformed descriptor name '{}'", f.alias));
  f.abi = *abi;
  f.error = check_abi(abi->major, abi->minor);
  return f;
}

// Every library loaded, kept for the process (plugins are never unloaded, and neither are ones whose
// descriptor was refused: their initializers have run), owned here rather than leaked. Under load_plugin's
// lock.
static std::vector<std::unique_ptr<boost::dll::shared_library>>& loaded_libraries() {
  static auto* libs = new std::vector<std::unique_ptr<boost::dll::shared_library>>();  // never destroyed
  return *libs;
}

static LoadResult load_uncached(const std::string& path, const std::string& alias, const AliasName& abi) {
  boost::dll::shared_library* lib = nullptr;
  try {
    namespace mode = boost::dll::load_mode;
    // rtld_now reports missing symbols here, not mid-run.
    lib = loaded_libraries()
              .emplace_back(std::make_unique<boost::dll::shared_library>(path, mode::rtld_now | mode::rtld_local))
              .get();
  } catch (const std::exception& e) {
    return {nullptr, fmt::format("cannot load: {}", dlerror_of(e.what()))};
  }
  if (!lib->has(alias))
    return {nullptr, fmt::format("missing symbol {}: listed in the ELF but not exported", alias)};
  auto* d = static_cast<const tg_plugin_descriptor*>(lib->get<const void*>(alias));
  constexpr size_t need = offsetof(tg_plugin_descriptor, create) + sizeof(tg_plugin_descriptor::create);
  if (d == nullptr) return {nullptr, fmt::format("{} points to no descriptor", alias)};
  if (d->struct_size < need)
    return {nullptr, fmt::format("descriptor is {} bytes, this core reads {}", d->struct_size, need)};
  if (d->name == nullptr || abi.name != d->name || d->abi_major != abi.major || d->abi_minor != abi.minor)
    return {nullptr, fmt::format("descriptor says {} ABI {}.{} but its symbol {} disagrees",
                                 d->name ? d->name : "(null)", d->abi_major, d->abi_minor, alias)};
  if (d->probe == nullptr || d->create == nullptr) return {nullptr, "descriptor has no probe() or create()"};
  return {d, {}};
}

LoadResult load_plugin(const std::string& path, const std::string& alias, const AliasName& abi) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, LoadResult>();  // never destroyed, like the libraries
  std::lock_guard lock(mu);
  std::string key = path + '\n' + alias;
  if (auto it = cache->find(key); it != cache->end()) return it->second;
  return cache->emplace(key, load_uncached(path, alias, abi)).first->second;
}

ProbeResult probe_plugin(const tg_plugin_descriptor& d) {
  char reason[1024] = {};
  Timer timer;
  int ok = d.probe(reason, sizeof reason);
  ProbeResult r{ok != 0, std::string(reason, strnlen(reason, sizeof reason)), timer.seconds()};
  if (!r.usable && r.reason.empty()) r.reason = "probe() failed without a reason";
  return r;
}

ProbeResult probe_plugin_isolated(const tg_plugin_descriptor& d, double timeout_seconds) {
  Timer timer;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return probe_plugin(d);  // no pipe, no child: as selection does
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return probe_plugin(d);
  }
  if (pid == 0) {  // the child: probe, write "<0|1><reason>", leave without running exit handlers
    close(fds[0]);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})  // the host's crash handlers stay out of it
      signal(sig, SIG_DFL);
    char reason[1024] = {};
    char answer[1 + sizeof reason];
    answer[0] = d.probe(reason, sizeof reason) != 0 ? '1' : '0';
    size_t n = strnlen(reason, sizeof reason);
    std::memcpy(answer + 1, reason, n);
    for (size_t at = 0; at < n + 1;) {
      ssize_t w = write(fds[1], answer + at, n + 1 - at);
      if (w <= 0) break;
      at += static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  bool timed_out = false, unwatched = false;
  for (;;) {
    int left_ms = static_cast<int>((timeout_seconds - timer.seconds()) * 1e3);
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, left_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {  // the pipe cannot be watched: stop the child rather than spin until the deadline
      unwatched = true;
      break;
    }
    if (r == 0) continue;  // the deadline is checked above
    char buf[512];
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child is done (or gone)
    answer.append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  if (timed_out || unwatched) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ProbeResult r{false, {}, timer.seconds()};
  if (timed_out)
    r.reason = fmt::format("probe() did not finish in {:g} s (stopped)", timeout_seconds);
  else if (unwatched)
    r.reason = "probe() could not be watched in its child (poll failed); stopped";
  else if (WIFSIGNALED(status))
    r.reason = fmt::format("probe() crashed ({})", strsignal(WTERMSIG(status)));
  else if (answer.empty())
    r.reason = fmt::format("probe() ended the process (exit status {}) without answering",
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  else {
    r.usable = answer[0] == '1';
    r.reason = answer.substr(1);
    if (!r.usable && r.reason.empty()) r.reason = "probe() failed without a reason";
  }
  return r;
}

std::vector<SearchEntry> search_list(std::string_view plugin_path, bool installed, bool build_tree) {
  std::vector<SearchEntry> out;
  for (size_t start = 0; start <= plugin_path.size();) {
    size_t colon = std::min(plugin_path.find(':', start), plugin_path.size());
    std::string_view item = plugin_path.substr(start, colon - start);
    start = colon + 1;
    if (item.empty()) continue;
    std::error_code ec;
    fs::path p = fs::absolute(fs::path(item), ec);
    out.push_back({"TG_PLUGIN_PATH", p.lexically_normal().string(),
                   fs::is_directory(p, ec) ? SearchKind::dir : SearchKind::file});
  }
  if (installed) out.push_back({"installed", installed_plugin_dir(), SearchKind::dir});
  if (build_tree && running_from_build_tree())
    out.push_back({"build tree", (fs::path(TG_BUILD_ROOT) / "plugins").string(), SearchKind::tree});
  return out;
}

static std::vector<std::string> plugin_files_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  // Everything named like a plugin, so that a link to nothing, a FIFO or a folder is listed with a reason.
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_plugin_file_name(e.path())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> expand(const SearchEntry& entry) {
  if (entry.kind == SearchKind::file) return {entry.path};
  if (entry.kind == SearchKind::dir) return plugin_files_in(entry.path);
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(entry.path, ec))
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  std::vector<std::string> out;
  for (const auto& d : subdirs)
    for (auto& f : plugin_files_in(d)) out.push_back(std::move(f));
  return out;
}

std::string libtg_path() {
  boost::dll::fs::error_code ec;
  std::string p = boost::dll::this_line_location(ec).string();
  std::error_code ec2;
  fs::path canon = fs::canonical(p, ec2);
  return ec2 ? p : canon.string();
}

std::string installed_plugin_dir() {
  return (fs::path(libtg_path()).parent_path() / TG_PLUGIN_SUBDIR).string();
}

bool running_from_build_tree() {
  std::error_code ec;
  fs::path root = fs::canonical(TG_BUILD_ROOT, ec);
  if (ec) return false;
  fs::path lib = libtg_path();
  auto [r, l] = std::mismatch(root.begin(), root.end(), lib.begin(), lib.end());
  return r == root.end();
}

}  // namespace tg::runtime
