// Reading plugin files: alias names, ABI checks, every rejection reason, the search order.
#include <boost/test/unit_test.hpp>

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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
  BOOST_TEST(rt::inspect_plugin(test::fixture_dir()).error == "not a regular file (a directory)");
  // The ABI was read from the file even though it was rejected.
  BOOST_TEST(rt::inspect_plugin(test::fixture("libtg-badabi.so")).abi.major == 99);
}

// A folder in the plugin path holding things named like plugins that are not files: each is listed by
// expand() and inspect_plugin says what it is, rather than the folder scan dropping it unseen.
BOOST_AUTO_TEST_CASE(links_fifos_and_folders_named_like_plugins_get_reasons) {
  std::string templ = (fs::temp_directory_path() / "tg-odd-plugins-XXXXXX").string();
  BOOST_REQUIRE(mkdtemp(templ.data()) != nullptr);
  fs::path dir = templ;
  fs::create_symlink(dir / "nowhere.so", dir / "libtg-dangling.so");
  fs::create_symlink(dir / "libtg-loop.so", dir / "libtg-loop.so");
  BOOST_REQUIRE(mkfifo((dir / "libtg-fifo.so").c_str(), 0600) == 0);
  fs::create_directory(dir / "libtg-folder.so");
  std::vector<std::string> files = rt::expand({"TG_PLUGIN_PATH", dir.string(), rt::SearchKind::dir});
  std::vector<std::string> reasons;
  for (const std::string& f : files)
    reasons.push_back(fs::path(f).filename().string() + ": " + rt::inspect_plugin(f).error);
  std::vector<std::string> expected = {"libtg-dangling.so: a symbolic link to a missing file",
                                       "libtg-fifo.so: not a regular file (a FIFO)",
                                       "libtg-folder.so: not a regular file (a directory)",
                                       "libtg-loop.so: a symbolic link loop"};
  BOOST_TEST(reasons == expected, boost::test_tools::per_element());
  std::error_code ec;
  fs::remove_all(dir, ec);
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

namespace {
std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
template <typename T>
void put(std::vector<char>& b, size_t at, T v) {
  if (at + sizeof v <= b.size()) std::memcpy(b.data() + at, &v, sizeof v);
}
}  // namespace

// Plugin files damaged the ways a disk or an attacker would (headers pointing outside the file, names without
// their NUL, truncation, another architecture, random bytes in the section tables) are rejected with a reason
// by inspection, never crash it, and never make it allocate what the headers claim.
BOOST_AUTO_TEST_CASE(damaged_plugin_files_are_rejected_without_crashing) {
  const std::vector<char> good = read_all(test::fixture("libtg-good.so"));
  Elf64_Ehdr eh;
  BOOST_REQUIRE(good.size() > sizeof eh);
  std::memcpy(&eh, good.data(), sizeof eh);
  fs::path dir = fs::temp_directory_path() / fmt::format("tg-elf-test-{}", ::getpid());
  fs::create_directories(dir);
  auto inspect = [&](const std::vector<char>& bytes) {
    std::string path = (dir / "libtg-damaged.so").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return rt::inspect_plugin(path).error;
  };
  auto mutant = [&](auto change) {
    std::vector<char> b = good;
    change(b);
    return inspect(b);
  };
  BOOST_TEST(inspect(good) == "");
  BOOST_TEST(mutant([&](auto& b) { put<uint64_t>(b, offsetof(Elf64_Ehdr, e_shoff), uint64_t{1} << 60); }) ==
             "not a tinygrad.cpp plugin: damaged ELF: the section header table lies outside the file");
  BOOST_TEST(mutant([&](auto& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_shnum), 65535); }) ==
             "not a tinygrad.cpp plugin: damaged ELF: the section header table lies outside the file");
  BOOST_TEST(mutant([&](auto& b) { put<uint16_t>(b, offsetof(Elf64_Ehdr, e_shstrndx), eh.e_shnum); }) ==
             "not a tinygrad.cpp plugin: damaged ELF: the section name table's index is out of range");
  BOOST_TEST(mutant([&](auto& b) { b[EI_CLASS] = ELFCLASS32; }) ==
             "not a tinygrad.cpp plugin: built for another architecture (not a 64-bit little-endian ELF)");
  BOOST_TEST(mutant([&](auto& b) {
               put<uint16_t>(b, offsetof(Elf64_Ehdr, e_machine), EM_RISCV);
             }).starts_with("not a tinygrad.cpp plugin: built for another architecture (ELF machine 243"));
  // Every section name and offset pushed past the end of its table or the file.
  for (size_t field : {offsetof(Elf64_Shdr, sh_name), offsetof(Elf64_Shdr, sh_offset)})
    for (uint16_t i = 0; i < eh.e_shnum; i++) {
      std::string why = mutant(
          [&](auto& b) { put<uint32_t>(b, eh.e_shoff + i * sizeof(Elf64_Shdr) + field, 0xfffffff0u); });
      BOOST_TEST((!why.empty() || field == offsetof(Elf64_Shdr, sh_offset)), "section " << i);
    }
  // Truncations and a few hundred random byte changes in the header and section tables: any outcome but a
  // crash.
  for (size_t n = 0; n < good.size(); n += good.size() / 64 + 1)
    BOOST_TEST(
        !inspect(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))).empty());
  uint64_t seed = 12345;
  auto next = [&seed] { return (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int m = 0; m < 300; m++)
    (void)mutant([&](auto& b) {
      size_t region = m % 2 ? eh.e_shoff : 0,
             span = m % 2 ? size_t{eh.e_shnum} * sizeof(Elf64_Shdr) : sizeof eh;
      for (int k = 0; k < 4; k++)
        b[std::min(b.size() - 1, region + next() % span)] = static_cast<char>(next());
    });
  fs::remove_all(dir);
}
