#pragma once
// tg::dist: processes that train one model together (data parallelism). A Communicator joins the
// processes of one job (ranks 0..size-1) and runs collectives on host memory: all-reduce, broadcast and
// barrier. Every collective waits at most timeout() seconds for the other ranks, then throws DistError and
// marks the communicator failed: at exit the job is then aborted (every rank stopped), never left hanging.
//
//   auto comm = tg::dist::init("mpi");        // under `mpirun -np N`; "local" is one rank, no MPI
//   std::vector<float> v{1.f * comm->rank()};
//   comm->all_reduce(std::span(v));           // v[0] = 0 + 1 + ... + (N-1) on every rank
//   comm->broadcast(std::as_writable_bytes(std::span(v)), 0);
//   comm->barrier();
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/error.hpp"

namespace tg::dist {

// A collective that failed: a rank died, hangs past the timeout, or the ranks disagree on what to reduce.
class DistError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { SUM, MAX, MIN };
enum class Elem { FLOAT32, FLOAT64, INT64 };  // the element types collectives carry

class Communicator {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // the backend and its library, e.g. "mpi (Open MPI v4.1.4)"

  // Starts an in-place all-reduce of count elements and returns its request; data must stay put until
  // wait(request). Every rank starts the same collectives in the same order with the same counts.
  virtual int start_all_reduce(void* data, size_t count, Elem elem, ReduceOp op) = 0;
  virtual void wait(int request) = 0;
  // Whether the request has finished (then it is done, as after wait); MPI moves data only inside its
  // calls, so testing between computations lets a started collective progress.
  virtual bool test(int request) = 0;
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;
  // Makes exit abort the whole job instead of finishing it cleanly: call it when this rank gives up
  // while the others may still wait for it. Collectives that fail call it themselves.
  virtual void mark_failed() noexcept = 0;
  virtual bool failed() const noexcept = 0;

  template <typename T>
  void all_reduce(std::span<T> data, ReduceOp op = ReduceOp::SUM) {
    wait(start_all_reduce(data.data(), data.size(), elem_of<T>(), op));
  }
  // Seconds a collective waits for the other ranks (TG_DIST_TIMEOUT, default 300).
  double timeout() const { return timeout_; }
  void set_timeout(double seconds);

  template <typename T>
  static constexpr Elem elem_of() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int64_t>,
                  "collectives carry float, double or int64_t");
    return std::is_same_v<T, float> ? Elem::FLOAT32 : std::is_same_v<T, double> ? Elem::FLOAT64 : Elem::INT64;
  }

 protected:
  double timeout_ = 300;
};

// The communicator of this process for a backend: "local" (one rank) or "mpi" (MPI_COMM_WORLD; the MPI
// backend is a separate library loaded now, so libtg itself never needs MPI). Made once per process: later
// calls return the same object. Throws NotSupportedError when this build or machine has no MPI, saying why.
std::shared_ptr<Communicator> init(std::string_view backend);

}  // namespace tg::dist
