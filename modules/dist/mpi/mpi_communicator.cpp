// The "mpi" backend of tg::dist: MPI_COMM_WORLD through non-blocking collectives, each polled against a
// deadline so that a rank that died or hangs makes the others fail with a clear error instead of waiting
// forever. Built as its own library (libtg-mpi.so) and loaded by dist::init("mpi").
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "dist/communicator.hpp"

namespace tg::dist {

namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(len));
}

MPI_Datatype mpi_type(Elem e) {
  switch (e) {
    case Elem::FLOAT32: return MPI_FLOAT;
    case Elem::FLOAT64: return MPI_DOUBLE;
    case Elem::INT64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::SUM ? MPI_SUM : op == ReduceOp::MAX ? MPI_MAX : MPI_MIN; }

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
      throw NotSupportedError("dist", "MPI_Init failed (start the job with mpirun)");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // errors come back to us, to be reported
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    library_ = std::string(version, static_cast<size_t>(len));
    if (size_t cut = library_.find_first_of(",\n"); cut != std::string::npos) library_.resize(cut);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return fmt::format("mpi ({})", library_); }

  int start_all_reduce(void* data, size_t count, Elem elem, ReduceOp op) override {
    if (count > static_cast<size_t>(INT_MAX))
      throw ValueError("all_reduce", fmt::format("{} elements is more than one MPI call takes", count));
    MPI_Request r;
    check("all_reduce", MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(elem), mpi_op(op),
                                       comm_, &r));
    return track(r, "all_reduce");
  }

  void wait(int request) override {
    auto it = pending_.find(request);
    if (it == pending_.end()) throw ValueError("wait", fmt::format("no pending request {}", request));
    Pending p = it->second;
    pending_.erase(it);
    poll(p);
  }

  bool test(int request) override {
    auto it = pending_.find(request);
    if (it == pending_.end()) throw ValueError("test", fmt::format("no pending request {}", request));
    int done = 0;
    check(it->second.op, MPI_Test(&it->second.request, &done, MPI_STATUS_IGNORE));
    if (done) pending_.erase(it);
    return done != 0;
  }

  void broadcast(std::span<std::byte> data, int root) override {
    if (root < 0 || root >= size_)
      throw ValueError("broadcast", fmt::format("root {} is not a rank of {}", root, size_));
    if (data.size() > static_cast<size_t>(INT_MAX))
      throw ValueError("broadcast", fmt::format("{} bytes is more than one MPI call takes", data.size()));
    MPI_Request r;
    check("broadcast", MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, comm_, &r));
    poll({r, "broadcast", clock::now()});
  }

  void barrier() override {
    MPI_Request r;
    check("barrier", MPI_Ibarrier(comm_, &r));
    poll({r, "barrier", clock::now()});
  }

  void mark_failed() noexcept override { failed_ = true; }
  bool failed() const noexcept override { return failed_; }

  // At exit: a clean finish, or, after a failure, an abort that stops every rank (a hung one included).
  void finish() noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (failed_) {
      std::fflush(stdout);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!pending_.empty()) return;  // finalize would wait for them
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

 private:
  using clock = std::chrono::steady_clock;
  struct Pending {
    MPI_Request request;
    const char* op;
    clock::time_point started;
  };

  int track(MPI_Request r, const char* op) {
    pending_.emplace(next_id_, Pending{r, op, clock::now()});
    return next_id_++;
  }

  void check(const char* op, int code) {
    if (code == MPI_SUCCESS) return;
    failed_ = true;
    throw DistError(op, fmt::format("rank {} of {}: {}", rank_, size_, mpi_error(code)));
  }

  // MPI_Test until done or past the deadline.
  void poll(Pending p) {
    auto deadline = p.started + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_));
    for (int tries = 0;; tries++) {
      int done = 0;
      check(p.op, MPI_Test(&p.request, &done, MPI_STATUS_IGNORE));
      if (done) return;
      if (clock::now() > deadline) {
        failed_ = true;
        throw DistError(p.op, fmt::format("rank {} of {}: the other ranks did not join within {} s "
                                          "(TG_DIST_TIMEOUT): a rank died or hangs; aborting the job",
                                          rank_, size_, timeout_));
      }
      // MPI moves data only inside its calls: keep testing, and only after a while (a peer still
      // computing) sleep between tests so that a waiting rank leaves the cores to the others
      if (clock::now() - p.started > std::chrono::milliseconds(200))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      else if (tries % 64 == 63)
        std::this_thread::yield();
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, next_id_ = 1;
  bool failed_ = false;
  std::string library_;
  std::map<int, Pending> pending_;
};

MpiCommunicator* the_communicator = nullptr;

}  // namespace

}  // namespace tg::dist

// The backend's entry point (dist::init looks it up by name); made once, finished at exit.
extern "C" __attribute__((visibility("default"))) tg::dist::Communicator* tg_dist_mpi_open() {
  using tg::dist::the_communicator;
  if (the_communicator == nullptr) {
    the_communicator = new tg::dist::MpiCommunicator();
    std::atexit([] { the_communicator->finish(); });
  }
  return the_communicator;
}
