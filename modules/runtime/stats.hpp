#pragma once
// Process-wide runtime counters: kernels compiled, program cache hits (memory and disk), launches,
// scheduled graphs, BEAM searches and BEAM cache hits, kernels lowered and lowered kernels read from disk.
// DEBUG output and tests read them; `runtime_stats()` is a consistent-enough snapshot.
#include <cstdint>

namespace tg::runtime {

struct RuntimeStats {
  uint64_t compiled = 0;     // sources the device compiler turned into binaries
  uint64_t disk_hits = 0;    // binaries read from the on-disk program cache instead
  uint64_t memory_hits = 0;  // kernels found already loaded in this process
  uint64_t launched = 0;     // kernel launches
  uint64_t scheduled = 0;    // graphs scheduled (realizes that ran the scheduler)
  uint64_t beam_searched = 0;    // BEAM searches run (kernels whose opts were found by timing candidates)
  uint64_t beam_cache_hits = 0;  // BEAM results read from the on-disk cache instead
  uint64_t lowered = 0;            // kernel ASTs lowered and rendered by codegen
  uint64_t lowered_disk_hits = 0;  // lowered kernels read from the on-disk cache instead (no codegen)
};

enum class Stat {
  compiled,
  disk_hits,
  memory_hits,
  launched,
  scheduled,
  beam_searched,
  beam_cache_hits,
  lowered,
  lowered_disk_hits
};

RuntimeStats runtime_stats();
void count_stat(Stat s, uint64_t n = 1);
void reset_runtime_stats();

}  // namespace tg::runtime
