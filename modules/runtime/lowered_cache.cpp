// Lowered-kernel records in the program disk cache (see lowered_cache.hpp).
#include "runtime/lowered_cache.hpp"

#include <atomic>
#include <exception>
#include <sstream>

#include <fmt/format.h>

#include "base/hash.hpp"
#include "base/log.hpp"
#include "runtime/disk_cache.hpp"
#include "viz/record.hpp"

namespace tg::runtime {

namespace {

constexpr std::string_view kMagic = "tg-lowered-2";

// The checksum line covers the key too, so a record moved to another key is corrupt, not another kernel.
std::string checksum(std::string_view key, std::string_view body) {
  return hash_hex(fmt::format("{}\n{}", key, body));
}

std::atomic<uint64_t>& corrupt_count() {
  static std::atomic<uint64_t> n{0};
  return n;
}

// A name or count token: no whitespace, so the line format stays unambiguous.
bool plain(std::string_view s) { return !s.empty() && s.find_first_of(" \t\r\n") == std::string_view::npos; }

std::optional<LoweredKernel> parse_body(const std::string& body) {
  std::istringstream in(body);
  LoweredKernel k;
  std::string word;
  size_t nbufs = 0, nvars = 0, nsource = 0;
  if (!(in >> word) || word != "name" || !(in >> k.name)) return std::nullopt;
  if (!(in >> word) || word != "bufs" || !(in >> nbufs) || nbufs > 4096) return std::nullopt;
  for (size_t i = 0; i < nbufs; i++) {
    LoweredKernel::Buf b;
    int w = 0;
    if (!(in >> b.index >> w) || (w != 0 && w != 1)) return std::nullopt;
    b.written = w == 1;
    k.bufs.push_back(b);
  }
  if (!(in >> word) || word != "vars" || !(in >> nvars) || nvars > 4096) return std::nullopt;
  for (size_t i = 0; i < nvars; i++)
    if (!(in >> k.vars.emplace_back())) return std::nullopt;
  if (!(in >> word) || word != "global") return std::nullopt;
  for (uint32_t& g : k.dims.global)
    if (!(in >> g)) return std::nullopt;
  if (!(in >> word) || word != "local") return std::nullopt;
  for (uint32_t& l : k.dims.local)
    if (!(in >> l)) return std::nullopt;
  if (!(in >> word) || word != "source" || !(in >> nsource) || in.get() != '\n') return std::nullopt;
  size_t at = static_cast<size_t>(in.tellg());
  if (at + nsource != body.size()) return std::nullopt;
  k.source = body.substr(at);
  return k;
}

}  // namespace

std::string serialize_lowered(std::string_view key, const LoweredKernel& k) {
  std::string body = fmt::format("name {}\nbufs {}", k.name, k.bufs.size());
  for (const LoweredKernel::Buf& b : k.bufs) body += fmt::format(" {} {}", b.index, b.written ? 1 : 0);
  body += fmt::format("\nvars {}", k.vars.size());
  for (const std::string& v : k.vars) body += " " + v;
  body += fmt::format("\nglobal {} {} {}\nlocal {} {} {}\nsource {}\n", k.dims.global[0], k.dims.global[1],
                      k.dims.global[2], k.dims.local[0], k.dims.local[1], k.dims.local[2], k.source.size());
  body += k.source;
  return seal_lowered(key, body);
}

std::string seal_lowered(std::string_view key, std::string_view body) {
  return fmt::format("{} {}\n{}", kMagic, checksum(key, body), body);
}

std::optional<LoweredKernel> parse_lowered(std::string_view key, std::string_view record) {
  size_t nl = record.find('\n');
  if (nl == std::string_view::npos) return std::nullopt;
  std::string_view head = record.substr(0, nl);
  std::string body(record.substr(nl + 1));
  if (head != fmt::format("{} {}", kMagic, checksum(key, body))) return std::nullopt;
  std::optional<LoweredKernel> k = parse_body(body);
  if (!k || !plain(k->name)) return std::nullopt;
  for (const std::string& v : k->vars)
    if (!plain(v)) return std::nullopt;
  for (const LoweredKernel::Buf& b : k->bufs)
    if (b.index < 0) return std::nullopt;
  // Only the writer's own spelling: a second one ("08", extra spaces) is a record it never made.
  if (serialize_lowered(key, *k) != record) return std::nullopt;
  return k;
}

std::optional<LoweredKernel> load_lowered(std::string_view key) {
  DiskCache* cache = program_disk_cache();
  if (cache == nullptr || viz::on()) return std::nullopt;  // VIZ records every kernel's lowering
  std::optional<std::string> record;
  try {
    record = cache->get_lowered(key);
  } catch (const std::exception& e) {
    disable_disk_cache(e);
    return std::nullopt;
  }
  if (!record) return std::nullopt;
  std::optional<LoweredKernel> k = parse_lowered(key, *record);
  if (!k) {
    corrupt_count().fetch_add(1, std::memory_order_relaxed);
    debug_log(0, "warning: [disk cache] {}: lowered kernel {} is corrupt ({} bytes); lowering it again",
              cache->path(), key, record->size());
  }
  return k;
}

void store_lowered(std::string_view key, const LoweredKernel& k) {
  for (const std::string& v : k.vars)
    if (!plain(v)) return;  // a name the record cannot hold: lower it every time instead
  if (!plain(k.name)) return;
  DiskCache* cache = program_disk_cache();
  if (cache == nullptr) return;
  try {
    cache->put_lowered(key, serialize_lowered(key, k));
  } catch (const std::exception& e) {
    disable_disk_cache(e);
  }
}

uint64_t corrupt_lowered_records() { return corrupt_count().load(std::memory_order_relaxed); }

}  // namespace tg::runtime
