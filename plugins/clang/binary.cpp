// The clang-binary path: `clang -shared` in a private temporary folder, loaded back with dlopen from a
// memfd so nothing is written to the current directory and nothing stays on disk.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "plugins/clang/toolchain.hpp"

extern char** environ;

namespace tg::clangdev {

namespace fs = std::filesystem;
using tg::sdk::Code;
using tg::sdk::Status;

namespace {

// Runs argv in cwd with stdin from /dev/null; returns the exit code (-1 if killed) and stdout+stderr.
int run_process(const std::vector<std::string>& argv, const std::string& cwd, std::string& output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw tg::DeviceError("CLANG", fmt::format("pipe: {}", std::strerror(errno)));
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
    throw tg::DeviceError("CLANG", fmt::format("cannot run '{}': {}", argv[0], std::strerror(err)));
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

// A private folder under TMPDIR, removed with everything in it when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tg-clang-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      throw tg::DeviceError("CLANG",
                            fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
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

class BinaryToolchain final : public Toolchain {
 public:
  explicit BinaryToolchain(std::string exe) : exe_(std::move(exe)) {
    flags_ = base_flags();
    for (auto& f : user_flags()) flags_.push_back(std::move(f));
    // `-###` prints the driver's version and the cc1 line (with the resolved -target-cpu) without compiling.
    std::vector<std::string> argv{exe_, "-###"};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), {"-c", "-x", "c", "/dev/null", "-o", "/dev/null"});
    std::string out;
    if (run_process(argv, "", out) != 0)
      throw tg::DeviceError("CLANG", fmt::format("'{}' rejected the flags:\n{}", exe_, out));
    std::smatch m;
    std::string version =
        std::regex_search(out, m, std::regex(R"(clang version (\S+))")) ? m[1].str() : "unknown";
    id_ = fmt::format("clang-{} (binary {})", version, exe_);
    if (std::regex_search(out, m, std::regex(R"re("-target-cpu" "([^"]+)")re"))) cpu_ = m[1].str();
    std::regex feature(R"re("-target-feature" "([^"]+)")re");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), feature); it != std::sregex_iterator(); ++it)
      features_ += (features_.empty() ? "" : ",") + (*it)[1].str();
  }

  std::string_view id() const noexcept override { return id_; }
  std::string_view target_cpu() const noexcept override { return cpu_; }
  std::string_view target_features() const noexcept override { return features_; }

  Status compile(std::string_view source, tg::sdk::Blob& binary) override {
    TempDir dir;
    std::ofstream(dir.path() / "kernel.c", std::ios::binary)
        .write(source.data(), std::streamsize(source.size()));
    std::vector<std::string> argv{exe_};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), {"-shared", "-x", "c", "kernel.c", "-o", "kernel.so", "-lm"});
    std::string log;
    if (run_process(argv, dir.path().string(), log) != 0) return {Code::compile_error, log};
    std::ifstream so(dir.path() / "kernel.so", std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(so), std::istreambuf_iterator<char>()};
    if (bytes.empty())
      return {Code::compile_error, fmt::format("'{}' produced no shared object\n{}", exe_, log)};
    write_binary(binary, BinaryFormat::elf_shared, std::as_bytes(std::span(bytes.data(), bytes.size())));
    return {};
  }

 private:
  std::string exe_, id_, cpu_ = "unknown", features_;
  std::vector<std::string> flags_;
};

class SharedKernel final : public LoadedKernel {
 public:
  SharedKernel(void* handle, KernelFn fn, int fd) : handle_(handle), fn_(fn), fd_(fd) {}
  ~SharedKernel() override {
    dlclose(handle_);
    close(fd_);
  }
  KernelFn entry() const noexcept override { return fn_; }

 private:
  void* handle_;
  KernelFn fn_;
  int fd_;  // kept open while loaded: dlopen of a path another loaded library has returns that library
};

}  // namespace

bool executable_exists(const std::string& exe) {
  if (exe.empty()) return false;
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((fs::path(dir) / exe).c_str(), X_OK) == 0) return true;
  return false;
}

std::unique_ptr<Toolchain> make_binary_toolchain() {
  std::string exe = tg::env::get("TG_CLANG");
  if (!executable_exists(exe))
    throw tg::DeviceError("CLANG",
                          fmt::format("clang binary '{}' not found; install clang or set TG_CLANG", exe));
  return std::make_unique<BinaryToolchain>(exe);
}

Status load_shared(std::string_view name, std::span<const std::byte> shared,
                   std::unique_ptr<LoadedKernel>* out) {
  int fd = memfd_create("tg-clang-kernel", MFD_CLOEXEC);
  if (fd < 0)
    return {Code::runtime_error, fmt::format("[CLANG load] memfd_create: {}", std::strerror(errno))};
  for (size_t done = 0; done < shared.size();) {
    ssize_t n = write(fd, shared.data() + done, shared.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return {Code::runtime_error, fmt::format("[CLANG load] writing the memfd: {}", std::strerror(errno))};
    }
    done += static_cast<size_t>(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    close(fd);
    return {Code::invalid_argument, fmt::format("[CLANG load] dlopen: {}", dlerror())};
  }
  void* sym = dlsym(handle, std::string(name).c_str());
  if (sym == nullptr) {
    dlclose(handle);
    close(fd);
    return {Code::invalid_argument, fmt::format("[CLANG load] no kernel '{}' in the binary", name)};
  }
  *out = std::make_unique<SharedKernel>(handle, reinterpret_cast<KernelFn>(sym), fd);
  return {};
}

}  // namespace tg::clangdev
