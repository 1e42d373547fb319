// TEMPLATE compiler: writes the kernel to a private temporary folder, runs `cc -shared` there and returns
// the shared object's bytes as the binary. The folder is removed after every compile.
#include "compiler.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace tpl {

namespace fs = std::filesystem;
using tg::sdk::Code;
using tg::sdk::Status;

namespace {

// Kernels are self-contained C (-nostdinc). -ffp-contract=off keeps a*b+c two roundings and -fwrapv makes
// signed overflow wrap, as the INTERP reference defines them; the conformance suite compares against it.
const std::vector<std::string> kFlags = {"-O2",     "-fPIC",           "-shared",  "-ffp-contract=off",
                                         "-fwrapv", "-fno-math-errno", "-nostdinc"};

// A private folder under TMPDIR, removed with its contents when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tg-template-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error(std::string("cannot create a temporary folder: ") + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::string c_compiler() {
  const char* cc = std::getenv("TEMPLATE_CC");
  return cc != nullptr && *cc != '\0' ? cc : "cc";
}

bool executable_exists(const std::string& exe) {
  if (exe.empty()) return false;
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / exe).c_str(), X_OK) == 0) return true;
  return false;
}

int run_process(const std::vector<std::string>& argv, const std::string& cwd, std::string& output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    output += std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    output += "cannot run '" + argv[0] + "': " + std::strerror(err);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0)
      output.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Real device: find and initialise the vendor compiler once here (dlopen its library, query its version
// and the device's architecture) and fold everything that changes its output into the cache key.
TemplateCompiler::TemplateCompiler() : cc_(c_compiler()) {
  std::string version, machine;
  if (run_process({cc_, "--version"}, "", version) != 0)
    throw std::runtime_error("unavailable: C compiler '" + cc_ + "' does not run: " + first_line(version));
  if (run_process({cc_, "-dumpmachine"}, "", machine) != 0)
    throw std::runtime_error("unavailable: C compiler '" + cc_ +
                             "' has no -dumpmachine: " + first_line(machine));
  id_ = first_line(version);
  cache_key_ = cc_ + " (" + id_ + ") target=" + first_line(machine);
  for (const auto& f : kFlags) cache_key_ += " " + f;
}

// Real device: compile source to the device's binary format (SPIR-V, PTX/cubin, a code object). On
// failure return Code::compile_error with the compiler's log, which the core shows with the source.
Status TemplateCompiler::compile(std::string_view source, tg::sdk::Blob& binary) noexcept {
  return tg::sdk::guard([&]() -> Status {
    TempDir dir;
    std::ofstream(dir.path() / "kernel.c", std::ios::binary)
        .write(source.data(), std::streamsize(source.size()));
    std::vector<std::string> argv{cc_};
    argv.insert(argv.end(), kFlags.begin(), kFlags.end());
    argv.insert(argv.end(), {"-x", "c", "kernel.c", "-o", "kernel.so", "-lm"});
    std::string log;
    if (run_process(argv, dir.path().string(), log) != 0)
      return {Code::compile_error, "[TEMPLATE compile] " + cc_ + " failed:\n" + log};
    std::ifstream so(dir.path() / "kernel.so", std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(so), std::istreambuf_iterator<char>()};
    if (bytes.empty())
      return {Code::compile_error, "[TEMPLATE compile] " + cc_ + " wrote no shared object\n" + log};
    binary.assign(bytes);
    return {};
  });
}

}  // namespace tpl
