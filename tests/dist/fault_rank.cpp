// One rank misbehaves before the first all-reduce of the job; the others must stop with a clear error.
//   fault_rank hang  : the last rank sleeps (as a hung process would)
//   fault_rank die   : the last rank is killed (SIGKILL)
//   fault_rank shape : the last rank reduces a tensor of another shape
// Every rank prints "rank R: <error>" to stderr and exits 1 when its collective fails. Collectives after
// the first barrier wait 3 s.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "dist/data_parallel.hpp"
#include "tensor/tensor.hpp"

int main(int argc, char** argv) {
  using namespace tg;
  std::string_view mode = argc > 1 ? argv[1] : "";
  std::shared_ptr<dist::Communicator> comm = dist::init("mpi");
  bool odd_one = comm->rank() == comm->size() - 1;
  try {
    comm->barrier();  // everyone is up (within TG_DIST_TIMEOUT: a loaded machine starts ranks slowly)
    comm->set_timeout(3);
    if (odd_one && mode == "hang") sleep(600);
    if (odd_one && mode == "die") raise(SIGKILL);
    Tensor t = odd_one && mode == "shape" ? Tensor::ones({5}) : Tensor::ones({4});
    std::vector<Tensor> ts{t};
    dist::all_reduce_mean(*comm, ts);
    std::printf("rank %d: ok\n", comm->rank());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", comm->rank(), e.what());
    comm->mark_failed();
    return 1;
  }
}
