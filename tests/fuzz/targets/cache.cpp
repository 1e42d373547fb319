// The program cache's records, by the input's first byte (the rest is the record):
//   0: a lowered-kernel record as stored, checksum line first (nearly every mutation fails the checksum);
//   1: a lowered-kernel record's body, sealed with a valid checksum, so the field parser itself is reached;
//   2: a BEAM entry (the opts list stored as a program's binary);
//   3: a whole cache.db, read through DiskCache: the entries of the seed's keys are looked up, then a new
//      entry is written and must read back unchanged.
// A record is accepted only if it is exactly what the writer makes of what was parsed: anything else
// (a second spelling of a record, a stored entry lost or changed) is a wrong acceptance and traps.
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/error.hpp"
#include "codegen/opts.hpp"
#include "codegen/search.hpp"
#include "common.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/lowered_cache.hpp"

namespace {

constexpr std::string_view kKey = "CLANG|lowered-key";

void lowered(std::string_view record) {
  if (std::optional<tg::runtime::LoweredKernel> k = tg::runtime::parse_lowered(kKey, record))
    if (tg::runtime::serialize_lowered(kKey, *k) != record) __builtin_trap();
}

void beam(std::string_view text) {
  if (std::optional<std::vector<tg::codegen::Opt>> opts = tg::codegen::parse_opts(text))
    if (tg::codegen::opts_str(*opts) != text) __builtin_trap();
}

void database(const uint8_t* data, size_t size) {
  const std::filesystem::path& path = tg::fuzz::input_file(data, size);
  std::error_code ec;  // a journal left by the previous input would be replayed into this one
  std::filesystem::remove(path.string() + "-wal", ec);
  std::filesystem::remove(path.string() + "-shm", ec);
  try {
    tg::runtime::DiskCache cache(path.string());
    (void)cache.get("CLANG|key", "int main() { return 0; }");
    if (std::optional<std::string> r = cache.get_lowered(kKey)) lowered(*r);
    const std::string bin = "\x7f" "ELF new binary";
    auto bytes = std::as_bytes(std::span(bin.data(), bin.size()));
    cache.put("CLANG|fuzz", "new source", bytes);
    std::optional<std::vector<std::byte>> back = cache.get("CLANG|fuzz", "new source");
    if (!back || !std::equal(back->begin(), back->end(), bytes.begin(), bytes.end())) __builtin_trap();
  } catch (const tg::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: lowered(rest); break;
    case 1: lowered(tg::runtime::seal_lowered(kKey, rest)); break;
    case 2: beam(rest); break;
    default: database(data + 1, size - 1); break;
  }
  return 0;
}
