// Lowered-kernel records: the stored form round-trips exactly, and any damage (truncation, a changed byte,
// a wrong checksum, garbage) is detected instead of launching a wrong kernel.
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "runtime/disk_cache.hpp"
#include "runtime/lowered_cache.hpp"

namespace fs = std::filesystem;
using tg::runtime::LoweredKernel;

namespace {

LoweredKernel sample() {
  LoweredKernel k;
  k.name = "r_16_4";
  k.source =
      "void r_16_4(float* restrict data0, const float* restrict data1, int n) {\n  data0[0] = 1.0f;\n}\n";
  k.bufs = {{0, true}, {1, false}, {3, false}};
  k.vars = {"n", "start_pos"};
  k.dims.global = {16, 2, 1};
  k.dims.local = {4, 1, 1};
  return k;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lowered_record_round_trip) {
  LoweredKernel k = sample();
  std::optional<LoweredKernel> back =
      tg::runtime::parse_lowered("key", tg::runtime::serialize_lowered("key", k));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->name == "r_16_4");
  BOOST_TEST(back->source == k.source);
  BOOST_TEST(back->bufs.size() == 3u);
  BOOST_TEST(back->bufs[0].written);
  BOOST_TEST(back->bufs[2].index == 3);
  BOOST_TEST(back->vars.size() == 2u);
  BOOST_TEST(back->vars[1] == "start_pos");
  BOOST_TEST(back->dims.global[0] == 16u);
  BOOST_TEST(back->dims.local[0] == 4u);
  BOOST_TEST((*back == k));
  LoweredKernel empty;  // no buffers, no variables, empty source
  empty.name = "E_1";
  BOOST_TEST((tg::runtime::parse_lowered("e", tg::runtime::serialize_lowered("e", empty)) == empty));
}

BOOST_AUTO_TEST_CASE(lowered_record_damage_is_detected) {
  std::string rec = tg::runtime::serialize_lowered("key", sample());
  BOOST_TEST(!tg::runtime::parse_lowered("key", "").has_value());
  BOOST_TEST(!tg::runtime::parse_lowered("key", "garbage\nname x").has_value());
  for (size_t cut : {size_t{1}, size_t{20}, rec.size() / 2, rec.size() - 1})
    BOOST_TEST(!tg::runtime::parse_lowered("key", rec.substr(0, cut)).has_value(), cut);
  for (size_t at = 0; at < rec.size(); at += 7) {  // every 7th byte flipped in turn
    std::string bad = rec;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    BOOST_TEST(!tg::runtime::parse_lowered("key", bad).has_value(), at);
  }
  BOOST_TEST(!tg::runtime::parse_lowered("key", rec + "x").has_value());
  // Intact, but stored under another kernel's key: a swap between entries, not that kernel.
  BOOST_TEST(tg::runtime::parse_lowered("key", rec).has_value());
  BOOST_TEST(!tg::runtime::parse_lowered("other", rec).has_value());
}

BOOST_AUTO_TEST_CASE(lowered_records_in_the_disk_cache) {
  std::string templ = (fs::temp_directory_path() / "tg-lowered-XXXXXX").string();
  BOOST_REQUIRE(mkdtemp(templ.data()) != nullptr);
  {
    tg::runtime::DiskCache cache(templ + "/cache.db");
    BOOST_TEST(!cache.get_lowered("k1").has_value());
    std::string rec = tg::runtime::serialize_lowered("k1", sample());
    cache.put_lowered("k1", rec);
    BOOST_TEST(cache.get_lowered("k1").value() == rec);
    cache.put_lowered("k1", "replaced");
    BOOST_TEST(cache.get_lowered("k1").value() == "replaced");
    BOOST_TEST(!cache.get_lowered("k2").has_value());
  }
  std::error_code ec;
  fs::remove_all(templ, ec);
}
