#pragma once
// Lowered kernels by content: what a launch needs from codegen (name, source, arguments, launch sizes),
// kept in the program disk cache next to the binary so a warm process skips lowering and rendering.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/program.hpp"

namespace tg::runtime {

struct LoweredKernel {
  struct Buf {
    int64_t index = 0;  // DEFINE_GLOBAL index, in ScheduleItem::bufs order
    bool written = false;
    friend bool operator==(const Buf&, const Buf&) = default;
  };
  std::string name;    // "r_16_4"
  std::string source;  // the renderer's output: the compiler's input and the binary's disk-cache key
  std::vector<Buf> bufs;
  std::vector<std::string> vars;  // variable names in launch order
  sdk::LaunchDims dims;           // launch sizes (only kernels with static sizes are stored)
  friend bool operator==(const LoweredKernel& a, const LoweredKernel& b) {
    return a.name == b.name && a.source == b.source && a.bufs == b.bufs && a.vars == b.vars &&
           a.dims.global == b.dims.global && a.dims.local == b.dims.local;
  }
};

// The stored form: a checksum line (of the key and the fields), then the fields. parse_lowered returns
// nullopt for anything that is not exactly such a record for this key (truncated, edited, bit flips, a
// record stored under another key).
std::string serialize_lowered(std::string_view key, const LoweredKernel& k);
std::optional<LoweredKernel> parse_lowered(std::string_view key, std::string_view record);
// A record of any body under key: the checksum line, then body (serialize_lowered's last step; the fuzz
// target `cache` seals bodies with it to reach the field parser behind the checksum).
std::string seal_lowered(std::string_view key, std::string_view body);

// The record stored under key in the program disk cache, if any (nullopt when CACHELEVEL=0). A corrupt
// record is reported (DEBUG>=1), deleted by the caller's store and treated as a miss.
std::optional<LoweredKernel> load_lowered(std::string_view key);
void store_lowered(std::string_view key, const LoweredKernel& k);

// Counts of corrupt records seen by load_lowered in this process (for tests and DEBUG).
uint64_t corrupt_lowered_records();

}  // namespace tg::runtime
