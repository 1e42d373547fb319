// idx files (plain and gzip) with hand-derived values and errors, the real Fashion-MNIST files, and
// BatchSampler's batches.
#define BOOST_TEST_MODULE nn_datasets
#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "base/env.hpp"
#include "common/test_support.hpp"
#include "base/error.hpp"
#include "nn/datasets.hpp"
#include "tensor/tensor.hpp"

using namespace tg;
namespace fs = std::filesystem;
using tg::test::RemoveScratch;
using tg::test::scratch;
using Bytes = std::vector<uint8_t>;

namespace {

fs::path write_plain(const std::string& name, const Bytes& b) {
  fs::path p = scratch(name);
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}

fs::path write_gz(const std::string& name, const Bytes& b) {
  fs::path p = scratch(name);
  gzFile f = gzopen(p.c_str(), "wb");
  BOOST_REQUIRE(f);
  BOOST_REQUIRE_EQUAL(gzwrite(f, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
  gzclose(f);
  return p;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// An idx header of uint8 data with these dims.
Bytes idx_header(const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, 8, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<uint8_t>(d >> shift));
  return b;
}

// uint8 (2,3) = 1..6: magic 00 00 08 02, dims 2 and 3 big-endian
const Bytes u8_file = {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6};

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(RemoveScratch);

BOOST_AUTO_TEST_CASE(idx_types_plain_and_gzip) {
  for (bool gz : {false, true}) {
    auto write = [&](const std::string& name, const Bytes& b) {
      return gz ? write_gz(name + ".gz", b) : write_plain(name, b);
    };
    Tensor u8 = nn::read_idx(write("u8", u8_file));
    BOOST_TEST(u8.dtype() == dtypes::uint8);
    BOOST_TEST((u8.shape() == Shape{2, 3}));
    BOOST_TEST(u8.to_vector<int>() == std::vector<int>({1, 2, 3, 4, 5, 6}), boost::test_tools::per_element());
    // int16 (3,): ff fe = -2, 01 02 = 258, 00 01 = 1
    Tensor i16 = nn::read_idx(write("i16", {0, 0, 0x0B, 1, 0, 0, 0, 3, 0xff, 0xfe, 1, 2, 0, 1}));
    BOOST_TEST(i16.dtype() == dtypes::int16);
    BOOST_TEST(i16.to_vector<int>() == std::vector<int>({-2, 258, 1}), boost::test_tools::per_element());
    // int32 (1,2): 01020304 = 16909060, ffffffff = -1
    Tensor i32 = nn::read_idx(
        write("i32", {0, 0, 0x0C, 2, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff}));
    BOOST_TEST((i32.shape() == Shape{1, 2}));
    BOOST_TEST(i32.to_vector<int>() == std::vector<int>({16909060, -1}), boost::test_tools::per_element());
    // float32: 3fc00000 = 1.5, c0000000 = -2; float64: 3fb999999999999a = 0.1; int8: ff = -1, 80 = -128
    Tensor f32 = nn::read_idx(write("f32", {0, 0, 0x0D, 1, 0, 0, 0, 2, 0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0}));
    BOOST_TEST(f32.to_vector<float>() == std::vector<float>({1.5f, -2.0f}), boost::test_tools::per_element());
    Tensor f64 = nn::read_idx(
        write("f64", {0, 0, 0x0E, 1, 0, 0, 0, 1, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}));
    BOOST_TEST(f64.dtype() == dtypes::float64);
    BOOST_TEST(f64.item<double>() == 0.1);
    Tensor i8 = nn::read_idx(write("i8", {0, 0, 0x09, 1, 0, 0, 0, 2, 0xff, 0x80}));
    BOOST_TEST(i8.to_vector<int>() == std::vector<int>({-1, -128}), boost::test_tools::per_element());
  }
  fs::remove_all(scratch("x").parent_path());
}

BOOST_AUTO_TEST_CASE(idx_errors) {
  auto fails = [](const fs::path& p, const std::string& what) {
    test::expect_error<Error>([&] { nn::read_idx(p); }, "[read_idx] '" + p.string() + "': " + what);
  };
  fails(write_plain("magic", {1, 2, 8, 1, 0, 0, 0, 0}), "bad magic 01020801, not an idx file");
  fails(write_plain("type", {0, 0, 0x0A, 1, 0, 0, 0, 0}), "bad magic 00000a01, not an idx file");
  fails(write_plain("short", {0, 0}), "too short for an idx header");
  fails(write_plain("nodims", {0, 0, 8, 0}), "has 0 dimensions");
  fails(write_plain("dims", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0}), "truncated header: 3 dimensions need 12 bytes");
  fails(write_plain("huge", {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0}),
        "dimensions describe more than 2^40 elements");
  Bytes cut(u8_file.begin(), u8_file.end() - 2);
  fails(write_plain("cut", cut), "truncated: the header says 6 bytes of data, the file has 4");
  fails(write_plain("long", cat(u8_file, {9})), "has data after the 6 bytes its header describes");
  fails(write_gz("cut.gz", cut), "truncated: the header says 6 bytes of data, the file has 4");
  // a gzip file cut in the middle of its stream, and one whose deflate data is garbage
  Bytes big = {0, 0, 8, 1, 0, 0, 0x10, 0};
  for (int i = 0; i < 4096; i++) big.push_back(static_cast<uint8_t>(i * 7919 % 251));
  fs::path whole = write_gz("whole.gz", big);
  std::ifstream in(whole, std::ios::binary);
  Bytes gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_REQUIRE(gz.size() > 100);
  fs::path half = write_plain("half.gz", Bytes(gz.begin(), gz.begin() + static_cast<int64_t>(gz.size() / 2)));
  try {
    nn::read_idx(half);
    BOOST_ERROR("expected an error");
  } catch (const FormatError& e) {
    std::string m = e.what(),
                start = "[read_idx] '" + half.string() + "': truncated: the header says 4096 bytes of data";
    BOOST_TEST(m.starts_with(start));
    BOOST_TEST(m.ends_with("(the gzip stream ends early)"));
  }
  Bytes garbage(gz.begin(), gz.begin() + 10);  // a valid gzip header, then bytes that are not deflate data
  for (int i = 0; i < 64; i++) garbage.push_back(0xff);
  fails(write_plain("garbage.gz", garbage), "gzip data is corrupt: invalid block type");
  test::expect_error<Error>([] { nn::read_idx("/nonexistent/file.idx"); },
                       "[read_idx] cannot open '/nonexistent/file.idx': No such file or directory");
  fs::remove_all(scratch("x").parent_path());
}

BOOST_AUTO_TEST_CASE(fashion_mnist_files) {
  // The real data set from its Debian package (reference values read with Python's gzip and NumPy).
  fs::path dir = env::get("TG_FASHION_MNIST");
  BOOST_REQUIRE_MESSAGE(fs::exists(dir / "t10k-labels-idx1-ubyte.gz"),
                        "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist");
  Tensor labels = nn::read_idx(dir / "t10k-labels-idx1-ubyte.gz");
  BOOST_TEST((labels.shape() == Shape{10000}));
  std::vector<int> l = labels.to_vector<int>();
  BOOST_TEST(std::vector<int>(l.begin(), l.begin() + 10) == std::vector<int>({9, 2, 1, 1, 6, 1, 4, 6, 5, 7}),
             boost::test_tools::per_element());

  nn::FashionMnist ds = nn::fashion_mnist();
  BOOST_TEST((ds.X_train.shape() == Shape{60000, 1, 28, 28}));
  BOOST_TEST((ds.Y_train.shape() == Shape{60000}));
  BOOST_TEST((ds.X_test.shape() == Shape{10000, 1, 28, 28}));
  BOOST_TEST((ds.Y_test.shape() == Shape{10000}));
  BOOST_TEST(ds.X_test.dtype() == dtypes::uint8);
  BOOST_TEST(ds.Y_test[0].item<int>() == 9);
  std::vector<int> row = ds.X_test[{0, 0, 20, Slice{10, 20}}].to_vector<int>();
  BOOST_TEST(row == std::vector<int>({126, 127, 146, 185, 195, 209, 208, 255, 209, 177}),
             boost::test_tools::per_element());
  std::vector<uint8_t> first = ds.X_test[0].to_vector<uint8_t>();
  BOOST_TEST(std::accumulate(first.begin(), first.end(), 0) == 33456);
  std::vector<int> y = ds.Y_train.to_vector<int>();
  BOOST_TEST(std::vector<int>(y.begin(), y.begin() + 10) == std::vector<int>({9, 0, 0, 3, 0, 2, 7, 2, 5, 5}),
             boost::test_tools::per_element());
  for (int c = 0; c < 10; c++) BOOST_TEST(std::count(y.begin(), y.end(), c) == 6000);

  test::expect_error<Error>(
      [] { nn::fashion_mnist(fs::path("/nonexistent/fashion")); },
      "[fashion_mnist] '/nonexistent/fashion' has no train-images-idx3-ubyte[.gz]; install the data "
      "set with `apt-get install dataset-fashion-mnist` or set TG_FASHION_MNIST to the folder that "
      "holds it");
}

BOOST_AUTO_TEST_CASE(batch_sampler_in_order) {
  nn::BatchSampler s(10, 4, /*shuffle=*/false);
  BOOST_TEST(s.size() == 3);
  std::vector<std::vector<int64_t>> got(s.begin(), s.end());
  BOOST_TEST(got.size() == 3u);
  BOOST_TEST(got[0] == std::vector<int64_t>({0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(got[2] == std::vector<int64_t>({8, 9}), boost::test_tools::per_element());
  nn::BatchSampler d(10, 4, false, 0, /*drop_last=*/true);
  BOOST_TEST(d.size() == 2);
  BOOST_TEST(d.batch(1) == std::vector<int64_t>({4, 5, 6, 7}), boost::test_tools::per_element());
  BOOST_TEST(nn::BatchSampler(3, 4, false, 0, true).size() == 0);
  test::expect_error<Error>([&] { d.batch(2); }, "[BatchSampler] batch 2 is out of range for 2 batches");
  test::expect_error<Error>([] { nn::BatchSampler(10, 0); }, "[BatchSampler] needs batch_size > 0, got 0");
}

BOOST_AUTO_TEST_CASE(batch_sampler_shuffles) {
  nn::BatchSampler a(100, 32, true, 1234), b(100, 32, true, 1234), c(100, 32, true, 99);
  BOOST_TEST(a.order() == b.order(), boost::test_tools::per_element());  // same seed, same order
  BOOST_TEST(a.order() != c.order());
  std::vector<int64_t> sorted = a.order();
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(100);
  std::iota(iota.begin(), iota.end(), 0);
  BOOST_TEST(sorted == iota, boost::test_tools::per_element());  // a permutation
  BOOST_TEST(a.order() != iota);
  std::vector<int64_t> epoch0 = a.order();
  a.set_epoch(1);
  BOOST_TEST(a.order() != epoch0);
  a.set_epoch(0);
  BOOST_TEST(a.order() == epoch0, boost::test_tools::per_element());
  // every index exactly once over the epoch's batches; the last one is short
  std::set<int64_t> seen;
  for (const std::vector<int64_t>& batch : a) seen.insert(batch.begin(), batch.end());
  BOOST_TEST(seen.size() == 100u);
  BOOST_TEST(a.batch(3).size() == 4u);
  // index tensors select rows: X[i] = 10 * i
  std::vector<float> xs(100);
  for (int i = 0; i < 100; i++) xs[i] = 10.0f * i;
  Tensor X = Tensor(xs).reshape({100, 1});
  Tensor idx = a.indices(1);
  BOOST_TEST(idx.dtype() == dtypes::int32);
  std::vector<float> got = X[idx].reshape({-1}).to_vector<float>();
  std::vector<int64_t> want = a.batch(1);
  BOOST_REQUIRE_EQUAL(got.size(), 32u);
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == 10.0f * static_cast<float>(want[i]));
}

// Minimized inputs that once crashed, hung or were accepted.
BOOST_AUTO_TEST_CASE(idx_hostile_files) {
  auto fails = [](const fs::path& p, const std::string& what) {
    test::expect_error<Error>([&] { nn::read_idx(p); }, "[read_idx] '" + p.string() + "': " + what);
  };
  // a gzip file without its 8-byte trailer: all the data is there, but its CRC was never checked
  Bytes whole = read_all(write_gz("whole.gz", u8_file));
  fs::path no_trailer = write_plain("no_trailer.gz", Bytes(whole.begin(), whole.end() - 8));
  fails(no_trailer, "the gzip stream ends without its trailer (CRC and length)");
  Bytes bad_crc = whole;
  bad_crc[bad_crc.size() - 8] ^= 1;
  fails(write_plain("bad_crc.gz", bad_crc), "gzip data is corrupt: incorrect data check");
  // headers claiming 10^9 and 10^7 images of 28x28: rejected before any memory is sized from them
  long before = peak_rss_kb();
  fails(write_plain("1e9", cat(idx_header({1000000000, 28, 28}), {1, 2, 3})),
        "truncated: the header says 784000000000 bytes of data, the file has 3");
  fails(write_plain("1e7", cat(idx_header({10000000, 28, 28}), {1, 2, 3})),
        "truncated: the header says 7840000000 bytes of data, the file has 3");
  fails(write_gz("1e7.gz", cat(idx_header({10000000, 28, 28}), {1, 2, 3})),
        "truncated: the header says 7840000000 bytes of data, the file has 3");
  BOOST_TEST(peak_rss_kb() - before < 64 * 1024,
             "read_idx grew the peak memory by " << (peak_rss_kb() - before) / 1024 << " MiB");
  // a FIFO would block the reader forever; a link loop or a folder is refused with the reason
  fs::path fifo = scratch("fifo");
  BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  test::expect_error<Error>([&] { nn::read_idx(fifo); },
                            "[read_idx] '" + fifo.string() + "' is not a regular file");
  test::expect_error<Error>([&] { nn::read_idx(fifo.parent_path()); },
                            "[read_idx] '" + fifo.parent_path().string() + "' is not a regular file");
  fs::path loop = scratch("loop");
  fs::create_symlink(loop, loop);
  test::expect_error<Error>([&] { nn::read_idx(loop); }, "[read_idx] cannot open '" + loop.string() +
                                                             "': Too many levels of symbolic links");
  fs::remove_all(scratch("x").parent_path());
}

// A Fashion-MNIST folder whose labels are not classes 0..9 (a label indexes the class names).
BOOST_AUTO_TEST_CASE(fashion_mnist_bad_labels) {
  fs::path dir = scratch("fashion");
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const Bytes& b) {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  write("train-images-idx3-ubyte", cat(idx_header({2, 28, 28}), Bytes(2 * 784, 7)));
  write("t10k-images-idx3-ubyte", cat(idx_header({2, 28, 28}), Bytes(2 * 784, 7)));
  write("t10k-labels-idx1-ubyte", cat(idx_header({2}), {9, 0}));
  write("train-labels-idx1-ubyte", cat(idx_header({2}), {3, 9}));
  nn::FashionMnist ok = nn::fashion_mnist(dir);
  BOOST_TEST(ok.Y_train.to_vector<int>() == std::vector<int>({3, 9}), boost::test_tools::per_element());
  for (uint8_t label : {10, 255}) {
    write("t10k-labels-idx1-ubyte", cat(idx_header({2}), {9, label}));
    test::expect_error<FormatError>([&] { nn::fashion_mnist(dir); },
                                    "[fashion_mnist] '" + (dir / "t10k-labels-idx1-ubyte").string() +
                                        "': label " + std::to_string(label) +
                                        " of image 1 is not a class 0..9");
  }
  // a FIFO named like a data file is refused, not waited on
  fs::remove(dir / "t10k-labels-idx1-ubyte");
  BOOST_REQUIRE(mkfifo((dir / "t10k-labels-idx1-ubyte").c_str(), 0600) == 0);
  test::expect_error<Error>(
      [&] { nn::fashion_mnist(dir); },
      "[read_idx] '" + (dir / "t10k-labels-idx1-ubyte").string() + "' is not a regular file");
  fs::remove_all(dir);
}
