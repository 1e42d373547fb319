// The local communicator and the loader of the MPI backend (a library of its own, so that libtg and the
// tg binary start without MPI and `--dist mpi` can say what is missing).
#include "dist/communicator.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "base/env.hpp"
#include "build_config.hpp"
#include "runtime/loader.hpp"

namespace tg::dist {

namespace {

// One process, nothing to exchange: every collective is already complete.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  int start_all_reduce(void*, size_t, Elem, ReduceOp) override { return 0; }
  void wait(int) override {}
  bool test(int) override { return true; }
  void broadcast(std::span<std::byte>, int root) override {
    if (root != 0) throw ValueError("broadcast", fmt::format("root {} is not a rank of 1", root));
  }
  void barrier() override {}
  void mark_failed() noexcept override {}
  bool failed() const noexcept override { return false; }
};

constexpr const char* kMpiLib = "libtg-mpi.so";

// The backend library: beside libtg's plugin folder when installed, in the build tree when run from there.
std::filesystem::path mpi_backend_path() {
  namespace fs = std::filesystem;
  if (runtime::running_from_build_tree()) return fs::path(TG_BUILD_ROOT) / "modules" / "dist" / "mpi" / kMpiLib;
  return fs::path(runtime::installed_plugin_dir()).parent_path() / kMpiLib;
}

std::shared_ptr<Communicator> load_mpi() {
  std::filesystem::path path = mpi_backend_path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw NotSupportedError("dist", fmt::format("this build has no MPI support ({} was not built: install "
                                                "libopenmpi-dev and reconfigure with -Dmpi=enabled)",
                                                path.filename().string()));
  // RTLD_GLOBAL: MPI libraries load components of their own that expect MPI's symbols to be global.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr)
    throw NotSupportedError("dist", fmt::format("cannot load the MPI backend {}: {} (is the MPI runtime "
                                                "installed? on Debian: apt-get install openmpi-bin)",
                                                path.string(), dlerror()));
  using Open = Communicator* (*)();
  auto open = reinterpret_cast<Open>(dlsym(lib, "tg_dist_mpi_open"));
  if (open == nullptr)
    throw NotSupportedError("dist", fmt::format("{} has no tg_dist_mpi_open: not an MPI backend of this "
                                                "version", path.string()));
  // Never deleted: MPI is finalized (or the job aborted) by the backend at exit, not by a destructor.
  return std::shared_ptr<Communicator>(open(), [](Communicator*) {});
}

}  // namespace

void Communicator::set_timeout(double seconds) {
  if (!(seconds > 0)) throw ValueError("set_timeout", fmt::format("timeout must be > 0 s, got {}", seconds));
  timeout_ = seconds;
}

std::shared_ptr<Communicator> init(std::string_view backend) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Communicator>, std::less<>> made;
  std::lock_guard lock(mu);
  if (auto it = made.find(backend); it != made.end()) return it->second;
  std::shared_ptr<Communicator> c;
  if (backend == "local")
    c = std::make_shared<LocalCommunicator>();
  else if (backend == "mpi")
    c = load_mpi();
  else
    throw ValueError("dist", fmt::format("unknown backend '{}' (known: local, mpi)", backend));
  if (std::optional<int> t = env::get_int("TG_DIST_TIMEOUT")) c->set_timeout(*t);
  made.emplace(std::string(backend), c);
  return c;
}

}  // namespace tg::dist
