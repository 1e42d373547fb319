#pragma once
// Process-wide runtime counters: kernels compiled, program cache hits (memory and disk), launches.
// DEBUG output and tests read them; `runtime_stats()` is a consistent-enough snapshot.
#include <cstdint>

namespace tg {

struct RuntimeStats {
  uint64_t compiled = 0;     // sources the device compiler turned into binaries
  uint64_t disk_hits = 0;    // binaries read from the on-disk program cache instead
  uint64_t memory_hits = 0;  // kernels found already loaded in this process
  uint64_t launched = 0;     // kernel launches
};

enum class Stat { compiled, disk_hits, memory_hits, launched };

RuntimeStats runtime_stats();
void count_stat(Stat s, uint64_t n = 1);
void reset_runtime_stats();

}  // namespace tg
