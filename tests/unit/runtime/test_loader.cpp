// Reading plugin files: alias names, ABI checks, every rejection reason, the search order.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "paths.hpp"
#include "runtime/loader.hpp"
#include "tg/sdk/plugin.hpp"

namespace rt = tg::runtime;
namespace fs = std::filesystem;

namespace {
std::string alias(std::string_view name) {
  return fmt::format("tgplugin_{}_{}_{}", TG_ABI_MAJOR, TG_ABI_MINOR, name);
}
}  // namespace

BOOST_AUTO_TEST_CASE(alias_names_parse) {
  auto a = rt::parse_alias("tgplugin_1_0_CLANG");
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->major == 1);
  BOOST_TEST(a->minor == 0);
  BOOST_TEST(a->name == "CLANG");
  a = rt::parse_alias("tgplugin_12_34_LEVEL_ZERO");
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(a->major == 12);
  BOOST_TEST(a->minor == 34);
  BOOST_TEST(a->name == "LEVEL_ZERO");
  for (const char* bad :
       {"tgplugin_1_CLANG", "tgplugin_x_0_A", "tgplugin_1_0_", "plugin_1_0_A", "tgplugin__0_A"})
    BOOST_TEST(!rt::parse_alias(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(abi_major_must_match_and_minor_reach_the_floor) {
  BOOST_TEST(rt::check_abi(1, 0, 1, 0).empty());
  BOOST_TEST(rt::check_abi(1, 7, 1, 2).empty());  // newer minors are fine
  BOOST_TEST(
      rt::check_abi(2, 0, 1, 0) ==
      "ABI mismatch: built for ABI 2.0, this core is ABI 1.x (the major must match); rebuild the plugin "
      "against this SDK");
  BOOST_TEST(
      rt::check_abi(1, 1, 1, 2) ==
      "ABI too old: built for ABI 1.1, this core loads 1.2 and newer; rebuild the plugin against this SDK");
}

BOOST_AUTO_TEST_CASE(inspect_reads_the_descriptor_name_without_loading) {
  auto f = rt::inspect_plugin(test::fixture("libtg-good.so"));
  BOOST_TEST(f.error == "");
  BOOST_TEST(f.alias == alias("FIXTURE_GOOD"));
  BOOST_TEST(f.abi.name == "FIXTURE_GOOD");
  BOOST_TEST(f.path == fs::canonical(test::fixture("libtg-good.so")).string());
}

BOOST_AUTO_TEST_CASE(inspect_rejects_with_a_reason) {
  auto reason = [](const char* file) { return rt::inspect_plugin(test::fixture(file)).error; };
  BOOST_TEST(reason("libtg-bogus.so") == "not a tinygrad.cpp plugin: not an ELF file");
  BOOST_TEST(reason("libtg-noplugin.so") == "not a tinygrad.cpp plugin: no tgplugin section");
  BOOST_TEST(reason("libtg-stripped.so") ==
             "not a tinygrad.cpp plugin: its tgplugin section has no symbol table (stripped?); install it "
             "unstripped");
  BOOST_TEST(reason("libtg-badabi.so") ==
             "ABI mismatch: built for ABI 99." + std::to_string(TG_ABI_MINOR) +
                 ", this core is ABI 1.x (the major must match); rebuild the plugin against this SDK");
  BOOST_TEST(reason("libtg-twodesc.so") ==
             fmt::format("more than one descriptor ({}, {}); a plugin exports exactly one",
                         alias("FIXTURE_ONE"), alias("FIXTURE_TWO")));
  BOOST_TEST(reason("libtg-missing.so") == "no such file");
  BOOST_TEST(rt::inspect_plugin(test::fixture_dir()).error == "not a regular file");
  // The ABI was read from the file even though it was rejected.
  BOOST_TEST(rt::inspect_plugin(test::fixture("libtg-badabi.so")).abi.major == 99);
}

BOOST_AUTO_TEST_CASE(load_checks_the_descriptor_and_caches_per_file) {
  auto load = [](const char* file) {
    auto f = rt::inspect_plugin(test::fixture(file));
    BOOST_REQUIRE(f.error.empty());
    return rt::load_plugin(f.path, f.alias, f.abi);
  };
  auto good = load("libtg-good.so");
  BOOST_REQUIRE(good.descriptor != nullptr);
  BOOST_TEST(std::string(good.descriptor->name) == "FIXTURE_GOOD");
  BOOST_TEST(std::string(good.descriptor->version) == "1.2.3");
  BOOST_TEST(good.descriptor->priority == 10);
  BOOST_TEST(load("libtg-good.so").descriptor == good.descriptor);  // loaded once
  BOOST_TEST(load("libtg-mismatch.so").error ==
             fmt::format("descriptor says FIXTURE_BETA ABI {}.{} but its symbol {} disagrees", TG_ABI_MAJOR,
                         TG_ABI_MINOR, alias("FIXTURE_ALPHA")));
  // struct_size, two uint16, two pointers, int32 (+4 padding), two function pointers = 48 bytes.
  BOOST_TEST(load("libtg-short.so").error == "descriptor is 8 bytes, this core reads 48");
  auto f = rt::inspect_plugin(test::fixture("libtg-good.so"));
  BOOST_TEST(rt::load_plugin(f.path, "tgplugin_1_0_NOPE", {1, 0, "NOPE"}).error ==
             "missing symbol tgplugin_1_0_NOPE: listed in the ELF but not exported");
}

BOOST_AUTO_TEST_CASE(probe_reports_the_plugins_reason) {
  auto probe = [](const char* file) {
    auto f = rt::inspect_plugin(test::fixture(file));
    auto l = rt::load_plugin(f.path, f.alias, f.abi);
    BOOST_REQUIRE(l.descriptor != nullptr);
    return rt::probe_plugin(*l.descriptor);
  };
  auto good = probe("libtg-good.so");
  BOOST_TEST(good.usable);
  BOOST_TEST(good.reason == "");
  BOOST_TEST(good.seconds >= 0.0);
  auto fail = probe("libtg-probefail.so");
  BOOST_TEST(!fail.usable);
  BOOST_TEST(fail.reason == "unavailable: libfoo.so.1 not found");
  // The dynamic loader's own message, as glibc words it for a library that does not exist.
  BOOST_TEST(
      probe("libtg-nodriver.so").reason ==
      "unavailable: libtg-fixture-vendor-driver.so.1 not found (libtg-fixture-vendor-driver.so.1: cannot "
      "open shared object file: No such file or directory); install the vendor driver");
}

BOOST_AUTO_TEST_CASE(search_order_is_plugin_path_then_installed_then_build_tree) {
  std::string dir = test::fixture_dir(), good = test::fixture("libtg-good.so");
  auto list = rt::search_list("::" + good + ":" + dir + ":", true, true);  // empty entries never mean "."
  BOOST_REQUIRE(list.size() == 4u);
  BOOST_TEST(list[0].origin == "TG_PLUGIN_PATH");
  BOOST_TEST(list[0].path == good);
  BOOST_TEST((list[0].kind == rt::SearchKind::file));
  BOOST_TEST(list[1].path == dir);
  BOOST_TEST((list[1].kind == rt::SearchKind::dir));
  // libtg is built into <build>/modules, so "installed" resolves beside it.
  BOOST_TEST(list[2].origin == "installed");
  BOOST_TEST(list[2].path == test::build_root() + "/modules/tinygrad-cpp/plugins");
  BOOST_TEST(list[3].origin == "build tree");
  BOOST_TEST(list[3].path == test::build_root() + "/plugins");
  BOOST_TEST((list[3].kind == rt::SearchKind::tree));
  BOOST_TEST(rt::running_from_build_tree());
  BOOST_TEST(rt::search_list("", false, false).empty());
}

BOOST_AUTO_TEST_CASE(directory_entries_list_only_libtg_so_files_sorted) {
  fs::path root = fs::temp_directory_path() / fmt::format("tg-runtime-test-{}", ::getpid());
  fs::create_directories(root / "b" / "libtg-x.so.p");
  fs::create_directories(root / "a");
  for (const char* f :
       {"a/libtg-z.so", "a/libtg-y.so", "b/libtg-x.so", "b/libfoo.so", "b/libtg-x.so.1", "b/notes"})
    std::ofstream(root / f) << "x";
  auto tree = rt::expand({"build tree", root.string(), rt::SearchKind::tree});
  BOOST_REQUIRE(tree.size() == 3u);
  BOOST_TEST(tree[0] == (root / "a/libtg-y.so").string());
  BOOST_TEST(tree[1] == (root / "a/libtg-z.so").string());
  BOOST_TEST(tree[2] == (root / "b/libtg-x.so").string());
  auto dir = rt::expand({"TG_PLUGIN_PATH", (root / "b").string(), rt::SearchKind::dir});
  BOOST_REQUIRE(dir.size() == 1u);
  BOOST_TEST(dir[0] == (root / "b/libtg-x.so").string());
  BOOST_TEST(rt::expand({"installed", (root / "none").string(), rt::SearchKind::dir}).empty());
  fs::remove_all(root);
}
