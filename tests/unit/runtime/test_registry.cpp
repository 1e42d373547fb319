// The registry on fixture plugins: discovery, shadowing, selection (DEV, NAME=1, priority), errors,
// devices, buffers, and the built-in NULL device.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "paths.hpp"
#include "runtime/buffer.hpp"
#include "runtime/builtins.hpp"
#include "runtime/registry.hpp"
#include "tg/sdk/plugin.hpp"

namespace fs = std::filesystem;

namespace {
const tg_plugin_descriptor* const kOnlyNull[] = {&tg::runtime::null_device_descriptor};

// A registry that sees only the NULL built-in and TG_PLUGIN_PATH, so devices built elsewhere in the
// tree cannot change the outcome.
tg::runtime::Registry make(std::map<std::string, std::string, std::less<>> env) {
  return tg::runtime::Registry(tg::runtime::RegistryConfig{
      .env = std::move(env), .search_installed = false, .search_build_tree = false, .builtins = kOnlyNull});
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "no error";
}

std::string file_name(const tg::runtime::Candidate& c) { return fs::path(c.path).filename().string(); }
}  // namespace

BOOST_AUTO_TEST_CASE(discovery_lists_builtins_then_every_file_in_order) {
  auto reg = make({{"TG_PLUGIN_PATH", test::fixture_dir()}});
  auto cands = reg.candidates();
  BOOST_REQUIRE(cands.size() >= 13u);
  BOOST_TEST(cands[0].name == "NULL");
  BOOST_TEST(cands[0].path == "built-in");
  BOOST_TEST(cands[0].usable);
  std::vector<std::string> files;
  for (const auto& c : cands.subspan(1))  // the conformance suite's broken plugins exist only with CLANG
    if (!file_name(c).starts_with("libtg-broken-")) files.push_back(file_name(c));
  std::vector<std::string> expected = {"libtg-badabi.so",   "libtg-bogus.so",    "libtg-good.so",
                                       "libtg-good2.so",    "libtg-mismatch.so", "libtg-needsdep.so",
                                       "libtg-nodriver.so", "libtg-noplugin.so", "libtg-probefail.so",
                                       "libtg-short.so",    "libtg-stripped.so", "libtg-twodesc.so"};
  BOOST_TEST(files == expected, boost::test_tools::per_element());
  const tg::runtime::Candidate* good = reg.find("FIXTURE_GOOD");
  BOOST_REQUIRE(good != nullptr);
  BOOST_TEST(file_name(*good) == "libtg-good.so");
  BOOST_TEST(good->usable);
  BOOST_TEST(good->version == "1.2.3");
  BOOST_TEST(good->priority == 10);
  BOOST_TEST(good->abi_major == TG_ABI_MAJOR);
  BOOST_TEST(good->origin == "TG_PLUGIN_PATH");
  auto by_file = [&](const std::string& f) {
    for (const auto& c : cands)
      if (file_name(c) == f) return c;
    BOOST_FAIL("no candidate " << f);
    return tg::runtime::Candidate{};
  };
  tg::runtime::Candidate good2 = by_file("libtg-good2.so");  // comes later in the same folder
  BOOST_TEST(good2.name == "FIXTURE_GOOD");
  BOOST_TEST(!good2.usable);
  BOOST_TEST(good2.reason == "shadowed by " + good->path);
  BOOST_TEST(reg.find("FIXTURE_PROBEFAIL")->reason == "unavailable: libfoo.so.1 not found");
  BOOST_TEST(reg.find("FIXTURE_BADABI")->abi_major == 99);
  BOOST_TEST(!reg.find("FIXTURE_BADABI")->usable);
  BOOST_TEST(reg.find("FIXTURE_SHORT")->reason == "descriptor is 8 bytes, this core reads 48");
  BOOST_TEST(by_file("libtg-bogus.so").reason == "not a tinygrad.cpp plugin: not an ELF file");
  BOOST_TEST(
      reg.find("FIXTURE_NEEDSDEP")->reason ==
      "cannot load: libtg-fixture-absent.so.1: cannot open shared object file: No such file or directory");
  BOOST_TEST(reg.find("NOPE") == nullptr);
}

BOOST_AUTO_TEST_CASE(plugin_path_files_and_dirs_in_order_first_wins) {
  std::string good2 = test::fixture("libtg-good2.so");
  auto reg = make({{"TG_PLUGIN_PATH", good2 + ":" + test::fixture_dir()}});
  const tg::runtime::Candidate* owner = reg.find("FIXTURE_GOOD");
  BOOST_TEST(owner->version == "2.0.0");
  BOOST_TEST(owner->path == fs::canonical(good2).string());
  auto cands = reg.candidates();
  auto count = std::count_if(cands.begin(), cands.end(),
                             [](const auto& c) { return file_name(c) == "libtg-good2.so"; });
  BOOST_TEST(count == 1);  // reached twice, listed once
  auto good =
      std::find_if(cands.begin(), cands.end(), [](const auto& c) { return file_name(c) == "libtg-good.so"; });
  BOOST_TEST(good->reason == "shadowed by " + owner->path);
  auto missing = make({{"TG_PLUGIN_PATH", test::fixture("libtg-none.so")}});
  BOOST_TEST(missing.candidates().back().reason == "no such file");
}

BOOST_AUTO_TEST_CASE(builtins_come_first_and_null_is_never_the_default) {
  tg::runtime::Registry reg(
      tg::runtime::RegistryConfig{.search_installed = false, .search_build_tree = false});
  auto builtins = tg::runtime::builtin_devices();
  BOOST_REQUIRE(reg.candidates().size() == builtins.size());
  for (size_t i = 0; i < builtins.size(); ++i) {
    BOOST_TEST(reg.candidates()[i].name == builtins[i]->name);
    BOOST_TEST(reg.candidates()[i].path == "built-in");
  }
  BOOST_TEST(reg.find("NULL") != nullptr);
  try {
    BOOST_TEST(reg.default_spec().name != "NULL");
  } catch (const tg::DeviceError&) {  // no other built-in: nothing to pick
  }
}

BOOST_AUTO_TEST_CASE(default_is_the_highest_priority_usable_device_never_null) {
  auto reg = make({{"TG_PLUGIN_PATH", test::fixture_dir()}});
  std::string why;
  BOOST_TEST(reg.default_spec(&why).str() == "FIXTURE_GOOD:0");
  BOOST_TEST(why == "highest priority usable device");
  auto empty = make({});
  BOOST_TEST(error_of([&] { empty.default_spec(); }) ==
             "[device] no usable device; run `tg devices` to see why each candidate was rejected");
  BOOST_TEST(empty.device("NULL").name() == "NULL");  // usable, but only when named
}

BOOST_AUTO_TEST_CASE(dev_and_name_shorthand_select_devices) {
  std::string dir = test::fixture_dir();
  std::string why;
  auto reg = make({{"TG_PLUGIN_PATH", dir}, {"DEV", "fixture_good:1"}});
  BOOST_TEST(reg.default_spec(&why).str() == "FIXTURE_GOOD:1");
  BOOST_TEST(why == "DEV=fixture_good:1");
  tg::runtime::Device& d = reg.default_device();
  BOOST_TEST(d.index() == 1);
  BOOST_TEST(&reg.device("FIXTURE_GOOD:1") == &d);  // opened once
  BOOST_TEST(&reg.device("FIXTURE_GOOD") != &d);
  auto flag = make({{"TG_PLUGIN_PATH", dir}, {"NULL", "1"}});
  BOOST_TEST(flag.default_spec(&why).str() == "NULL:0");
  BOOST_TEST(why == "NULL=1");
  auto both = make({{"TG_PLUGIN_PATH", dir}, {"NULL", "1"}, {"DEV", "FIXTURE_GOOD"}});
  BOOST_TEST(both.default_spec().name == "FIXTURE_GOOD");  // DEV wins over NAME=1
  auto off = make({{"TG_PLUGIN_PATH", dir}, {"NULL", "0"}});
  BOOST_TEST(off.default_spec().name == "FIXTURE_GOOD");
}

BOOST_AUTO_TEST_CASE(naming_an_unusable_or_unknown_device_throws_with_the_reason) {
  std::string dir = test::fixture_dir();
  auto reg = make({{"TG_PLUGIN_PATH", dir}});
  BOOST_TEST(error_of([&] { reg.device("FIXTURE_PROBEFAIL"); }) ==
             "[device] FIXTURE_PROBEFAIL is unavailable: libfoo.so.1 not found");
  BOOST_TEST(error_of([&] { reg.device("FIXTURE_BADABI"); }) ==
             "[device] FIXTURE_BADABI is unavailable: ABI mismatch: built for ABI 99." +
                 std::to_string(TG_ABI_MINOR) +
                 ", this core is ABI 1.x (the major must match); rebuild the plugin against this SDK");
  BOOST_TEST(error_of([&] { reg.device("FIXTURE_GOOD:2"); }) ==
             "[device] cannot open FIXTURE_GOOD:2: there are devices 0 and 1, not 2");
  auto small = make({{"TG_PLUGIN_PATH", test::fixture("libtg-good.so")}});
  BOOST_TEST(error_of([&] { small.device("CUDA"); }) ==
             "[device] unknown device CUDA; known: NULL, FIXTURE_GOOD");
  auto by_dev = make({{"TG_PLUGIN_PATH", dir}, {"DEV", "FIXTURE_NODRIVER"}});
  BOOST_CHECK_THROW(by_dev.default_device(), tg::DeviceError);
  auto by_flag = make({{"TG_PLUGIN_PATH", dir}, {"FIXTURE_PROBEFAIL", "1"}});
  BOOST_TEST(error_of([&] { by_flag.default_spec(); }) ==
             "[device] FIXTURE_PROBEFAIL is unavailable: libfoo.so.1 not found");
  BOOST_TEST(error_of([&] {
               make({{"DEV", "FOO"}}).default_spec();
             }) == "[device] unknown device FOO; known: NULL");
}

BOOST_AUTO_TEST_CASE(buffers_round_trip_bytes_through_the_plugin) {
  auto reg = make({{"TG_PLUGIN_PATH", test::fixture_dir()}});
  tg::runtime::Device& dev = reg.device("FIXTURE_GOOD");
  BOOST_TEST(dev.description() == "fixture host-memory device");
  std::array<std::byte, 256> in{}, out{};
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(i);
  auto buf = std::make_shared<tg::runtime::Buffer>(dev, in.size());
  BOOST_TEST(!buf->allocated());  // lazy
  buf->copyin(in);
  BOOST_TEST(buf->allocated());
  buf->copyout(out);
  BOOST_TEST((out == in));
  auto view = std::make_shared<tg::runtime::Buffer>(buf, 16, 32);
  std::array<std::byte, 32> part{};
  view->copyout(part);
  BOOST_TEST(std::to_integer<int>(part[0]) == 16);
  BOOST_TEST(std::to_integer<int>(part[31]) == 47);
  tg::runtime::Buffer inner(view, 8, 4);  // a view of a view addresses the root buffer
  BOOST_TEST(inner.offset() == 24u);
  BOOST_TEST(inner.base() == buf);
  std::array<std::byte, 4> four{std::byte(0xaa), std::byte(0xbb), std::byte(0xcc), std::byte(0xdd)};
  inner.copyin(four);
  buf->copyout(out);
  BOOST_TEST(std::to_integer<int>(out[23]) == 23);
  BOOST_TEST(std::to_integer<int>(out[24]) == 0xaa);
  BOOST_TEST(std::to_integer<int>(out[27]) == 0xdd);
  BOOST_TEST(std::to_integer<int>(out[28]) == 28);
  BOOST_CHECK_THROW(tg::runtime::Buffer(buf, 250, 7), tg::IndexError);
  std::array<std::byte, 257> too_big{};
  BOOST_CHECK_THROW(buf->copyin(too_big), tg::ValueError);
}

BOOST_AUTO_TEST_CASE(freed_buffers_are_reused_and_oom_flushes_the_cache) {
  auto reg = make({{"TG_PLUGIN_PATH", test::fixture_dir()}, {"DEV", "FIXTURE_GOOD:1"}});
  tg::runtime::Device& dev = reg.default_device();  // a 4096-byte pool
  void* first = nullptr;
  {
    tg::runtime::Buffer a(dev, 4096);
    first = a.handle();
  }
  BOOST_TEST(dev.allocator().cached_bytes() == 4096u);
  {
    tg::runtime::Buffer again(dev, 4096);
    BOOST_TEST(again.handle() == first);  // the cached buffer, not a new allocation
  }
  tg::runtime::Buffer other(dev, 1024);  // the pool is held by the cache: OOM, flush, retry
  BOOST_TEST(other.handle() != nullptr);
  BOOST_TEST(dev.allocator().cached_bytes() == 0u);
  BOOST_TEST(dev.allocator().in_use_bytes() == 1024u);
  tg::runtime::Buffer huge(dev, 8192);
  BOOST_TEST(
      error_of([&] { huge.handle(); }) ==
      "[alloc] FIXTURE_GOOD:1 is out of memory allocating 8192 bytes (1024 bytes in use, 0 cached bytes "
      "flushed before the retry): pool of 4096 bytes has 3072 free");
}

BOOST_AUTO_TEST_CASE(device_compile_load_and_errors) {
  auto reg = make({{"TG_PLUGIN_PATH", test::fixture_dir()}});
  tg::runtime::Device& dev = reg.device("FIXTURE_GOOD");
  BOOST_TEST(dev.compile("int k;").text() == "int k;");
  BOOST_TEST(
      error_of([&] { dev.compile("#error here"); }) ==
      "[compile] FIXTURE_GOOD:0 failed to compile:\n1:1: error: #error found\n--- source ---\n#error here");
  auto binary = dev.compile("kernel");
  auto program = dev.load("k", binary.bytes());
  BOOST_TEST(program != nullptr);
  BOOST_CHECK_NO_THROW(dev.synchronize());
  BOOST_TEST(std::string_view(dev.caps().dialect) == "fixture");
}

BOOST_AUTO_TEST_CASE(null_device_runs_nothing) {
  auto reg = make({});
  tg::runtime::Device& null = reg.device("NULL");
  BOOST_TEST(null.caps().max_vector_width >= 4u);
  for (tg::DType d : tg::dtypes::all_scalars())
    BOOST_TEST(tg::sdk::has_dtype(null.caps(), static_cast<unsigned>(d.scalar())));
  tg::runtime::Buffer a(null, 1 << 30), b(null, 0);  // no memory behind either
  BOOST_TEST(a.handle() != nullptr);
  BOOST_TEST(b.handle() != nullptr);
  BOOST_TEST(a.handle() != b.handle());
  auto a_ptr = std::shared_ptr<tg::runtime::Buffer>(&a, [](tg::runtime::Buffer*) {});
  tg::runtime::Buffer view(a_ptr, 64, 64);
  BOOST_TEST(view.handle() != a.handle());
  BOOST_TEST(null.compile("anything").empty());
  auto program = null.load("k", {});
  double seconds = -1;
  BOOST_TEST(program->launch({}, {}, {}, true, &seconds).ok());
  BOOST_TEST(seconds == 0.0);
}

// Plugins whose probe crashes, exits or hangs (tests/fixtures/hostile): selecting another device by DEV
// never probes them, and probe_all(true), as `tg devices` runs it, reports each instead of dying with it.
BOOST_AUTO_TEST_CASE(misbehaving_probes_are_not_run_in_this_process) {
  std::string dir = test::fixture_dir() + "/hostile";
  {
    auto reg = make({{"TG_PLUGIN_PATH", dir}, {"DEV", "NULL"}});
    BOOST_TEST(reg.default_spec().name == "NULL");
    BOOST_TEST(reg.device("NULL").name() == "NULL");
  }
  tg::runtime::Registry reg(tg::runtime::RegistryConfig{.env = {{"TG_PLUGIN_PATH", dir}},
                                                        .search_installed = false,
                                                        .search_build_tree = false,
                                                        .builtins = kOnlyNull,
                                                        .probe_timeout_seconds = 1});
  reg.probe_all(true);
  std::map<std::string, std::string> reasons;
  for (const tg::runtime::Candidate& c : reg.candidates()) reasons[c.name] = c.usable ? "ok" : c.reason;
  BOOST_TEST(reasons["NULL"] == "ok");
  BOOST_TEST(reasons["FIXTURE_CRASH"] == "probe() crashed (Segmentation fault)");
  BOOST_TEST(reasons["FIXTURE_EXIT"] == "probe() ended the process (exit status 3) without answering");
  BOOST_TEST(reasons["FIXTURE_HANG"] == "probe() did not finish in 1 s (stopped)");
  BOOST_TEST(error_of([&] { reg.device("FIXTURE_CRASH"); }) ==
             "[device] FIXTURE_CRASH is unavailable: probe() crashed (Segmentation fault)");
}

// DEV's renderer and arch fields go to devices that declare them (sdk/spec_fields.hpp); others refuse them
// rather than ignore them.
BOOST_AUTO_TEST_CASE(renderer_and_arch_fields_must_be_taken_by_the_device) {
  auto reg = make({});
  BOOST_TEST(error_of([&] { reg.device("NULL:0:foo"); }) ==
             "[device] NULL has no renderer 'foo' (it takes no renderer field); DEV is "
             "NAME[:index][:renderer[:arch]]");
  BOOST_TEST(error_of([&] { reg.device("NULL:abc"); }) ==
             "[device] NULL has no renderer 'abc' (it takes no renderer field); DEV is "
             "NAME[:index][:renderer[:arch]]");
  BOOST_TEST(reg.device("NULL").name() == "NULL");  // the refused ones left nothing open
}

// Discovery reads the files only: a plugin is loaded when its device is asked about (DEV, find, device),
// every one when all are listed or the default is chosen by priority.
BOOST_AUTO_TEST_CASE(plugins_are_loaded_only_when_asked_about) {
  auto loaded = [](const tg::runtime::Registry& r) {
    std::vector<std::string> out;
    for (const tg::runtime::Candidate& c : r.discovered())
      if (c.descriptor != nullptr && c.path != "built-in") out.push_back(c.name);
    return out;
  };
  std::string dir = test::fixture_dir();
  auto reg = make({{"TG_PLUGIN_PATH", dir}, {"DEV", "FIXTURE_GOOD:1"}});
  BOOST_TEST(loaded(reg).empty());
  const tg::runtime::Candidate* good = nullptr;
  for (const tg::runtime::Candidate& c : reg.discovered())
    if (c.name == "FIXTURE_GOOD" && file_name(c) == "libtg-good.so") good = &c;
  BOOST_REQUIRE(good != nullptr);
  BOOST_TEST(good->version.empty());  // not read before it is loaded
  BOOST_TEST(reg.default_device().index() == 1);
  BOOST_TEST(loaded(reg) == std::vector<std::string>{"FIXTURE_GOOD"}, boost::test_tools::per_element());
  BOOST_TEST(good->version == "1.2.3");
  BOOST_TEST(reg.find("FIXTURE_SHORT")->reason == "descriptor is 8 bytes, this core reads 48");  // on demand
  BOOST_TEST(loaded(reg).size() == 1u);  // that one failed its load: still no descriptor
  auto flag = make({{"TG_PLUGIN_PATH", dir}, {"FIXTURE_GOOD", "1"}});
  BOOST_TEST(flag.default_spec().name == "FIXTURE_GOOD");
  BOOST_TEST(loaded(flag) == std::vector<std::string>{"FIXTURE_GOOD"}, boost::test_tools::per_element());
  auto by_priority = make({{"TG_PLUGIN_PATH", dir}});
  BOOST_TEST(by_priority.default_spec().name == "FIXTURE_GOOD");
  BOOST_TEST(loaded(by_priority).size() > 1u);  // every plugin that loads: the priorities are in them
  auto all = make({{"TG_PLUGIN_PATH", dir}});
  all.load_all();
  BOOST_TEST(loaded(all) == loaded(by_priority), boost::test_tools::per_element());
}
