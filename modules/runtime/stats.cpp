// Process-wide runtime counters (see stats.hpp).
#include "runtime/stats.hpp"

#include <array>
#include <atomic>

namespace tg::runtime {

namespace {
constexpr size_t kStats = static_cast<size_t>(Stat::lowered_disk_hits) + 1;
std::array<std::atomic<uint64_t>, kStats>& counters() {
  static std::array<std::atomic<uint64_t>, kStats> c{};
  return c;
}
uint64_t read(Stat s) { return counters()[static_cast<size_t>(s)].load(std::memory_order_relaxed); }
}  // namespace

RuntimeStats runtime_stats() {
  return {read(Stat::compiled), read(Stat::disk_hits), read(Stat::memory_hits), read(Stat::launched),
          read(Stat::scheduled), read(Stat::beam_searched), read(Stat::beam_cache_hits), read(Stat::lowered),
          read(Stat::lowered_disk_hits)};
}

void count_stat(Stat s, uint64_t n) {
  counters()[static_cast<size_t>(s)].fetch_add(n, std::memory_order_relaxed);
}

void reset_runtime_stats() {
  for (auto& c : counters()) c.store(0, std::memory_order_relaxed);
}

}  // namespace tg::runtime
