// Runs the built tg binary with a controlled environment (env -i) and checks what it prints:
// `tg devices` over the fixture plugins, default selection from DEV and NAME=1, `tg env`, usage.
#define BOOST_TEST_MODULE loader
#include <boost/test/unit_test.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/env.hpp"
#include "common/test_support.hpp"
#include "tg/sdk/plugin.hpp"

namespace {

using Run = tg::test::CommandResult;  // out holds stdout and stderr
using tg::test::shell_quote;

std::string arg(int i) {
  auto& suite = boost::unit_test::framework::master_test_suite();
  BOOST_REQUIRE_MESSAGE(suite.argc > i,
                        "run through meson test: tg, the fixture dir and the version are arguments");
  return suite.argv[i];
}

Run run_tg(const std::string& args, const std::map<std::string, std::string>& env = {}) {
  std::string cmd = tg::test::clean_env();
  for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
  cmd += " " + shell_quote(arg(1)) + " " + args + " 2>&1";
  return tg::test::run_command(cmd);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The table row for a plugin file: the line before the one that shows its path.
std::string row_for(const std::vector<std::string>& ls, const std::string& file) {
  for (size_t i = 1; i < ls.size(); ++i)
    if (words(ls[i]).size() == 2 && words(ls[i])[0].ends_with("/" + file)) return ls[i - 1];
  return "";
}

// The table row for a built-in device.
std::string builtin_row(const std::vector<std::string>& ls, const std::string& name) {
  for (size_t i = 0; i + 1 < ls.size(); ++i) {
    auto w = words(ls[i]);
    if (w.size() > 1 && (w[0] == name || w[1] == name) &&
        ls[i + 1].find(" built-in (built-in)") != std::string::npos)
      return ls[i];
  }
  return "";
}

bool has_line(const std::vector<std::string>& ls, const std::string& want) {
  for (const auto& l : ls)
    if (l == want) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(help_version_and_unknown_commands) {
  Run help = run_tg("--help");
  BOOST_TEST(help.status == 0);
  BOOST_TEST(help.out.starts_with("usage: tg <command> [args]\n"));
  BOOST_TEST(help.out.find("\n  devices ") != std::string::npos);
  BOOST_TEST(help.out.find("\n  env ") != std::string::npos);
  Run version = run_tg("--version");
  BOOST_TEST(version.status == 0);
  BOOST_TEST(version.out ==
             "tg (tinygrad.cpp) " + arg(3) + ", plugin ABI 1." + std::to_string(TG_ABI_MINOR) + "\n");
  Run none = run_tg("");
  BOOST_TEST(none.status == 2);
  BOOST_TEST(none.out.starts_with("usage: tg"));
  Run unknown = run_tg("frobnicate");
  BOOST_TEST(unknown.status == 2);
  BOOST_TEST(unknown.out.starts_with("tg: unknown command 'frobnicate'\n\nusage: tg <command> [args]\n"));
  BOOST_TEST(run_tg("devices extra").status == 2);
}

BOOST_AUTO_TEST_CASE(devices_lists_every_candidate_with_its_reason) {
  std::string dir = arg(2);
  Run r = run_tg("devices", {{"TG_PLUGIN_PATH", dir}, {"DEV", "FIXTURE_GOOD:1"}});
  BOOST_TEST(r.status == 0);
  auto ls = lines(r.out);
  BOOST_REQUIRE(ls.size() > 4u);
  BOOST_TEST(ls[1].starts_with("search order: built-in; TG_PLUGIN_PATH " + dir + " (dir); installed "));
  BOOST_TEST(has_line(ls, "default: FIXTURE_GOOD:1 (DEV=FIXTURE_GOOD:1)"));

  auto good = words(row_for(ls, "libtg-good.so"));  // * NAME ABI VERSION PRIO <t> ms STATUS
  BOOST_REQUIRE(good.size() == 8u);
  BOOST_TEST(good[0] == "*");
  BOOST_TEST(good[1] == "FIXTURE_GOOD");
  BOOST_TEST(good[2] == "1." + std::to_string(TG_ABI_MINOR));
  BOOST_TEST(good[3] == "1.2.3");
  BOOST_TEST(good[4] == "10");
  BOOST_TEST(good[6] == "ms");
  BOOST_TEST(good[7] == "ok");
  BOOST_TEST(builtin_row(ls, "NULL").starts_with("  NULL "));

  auto ends_with = [&](const char* file, const std::string& status) {
    std::string row = row_for(ls, file);
    BOOST_TEST_INFO(file << ": " << row);
    BOOST_TEST(row.ends_with("  " + status));
  };
  ends_with("libtg-good2.so", "shadowed by " + dir + "/libtg-good.so");
  ends_with("libtg-probefail.so", "unavailable: libfoo.so.1 not found");
  ends_with("libtg-nodriver.so",
            "unavailable: libtg-fixture-vendor-driver.so.1 not found (libtg-fixture-vendor-driver.so.1: "
            "cannot open "
            "shared object file: No such file or directory); install the vendor driver");
  ends_with("libtg-bogus.so", "not a tinygrad.cpp plugin: not an ELF file");
  ends_with("libtg-noplugin.so", "not a tinygrad.cpp plugin: no tgplugin section");
  ends_with("libtg-stripped.so",
            "not a tinygrad.cpp plugin: its tgplugin section has no symbol table (stripped?); install it "
            "unstripped");
  ends_with("libtg-badabi.so",
            "ABI mismatch: built for ABI 99." + std::to_string(TG_ABI_MINOR) +
                ", this core is ABI 1.x (the major must match); rebuild the plugin against this SDK");
  ends_with("libtg-twodesc.so", "more than one descriptor (tgplugin_1_" + std::to_string(TG_ABI_MINOR) +
                                    "_FIXTURE_ONE, tgplugin_1_" + std::to_string(TG_ABI_MINOR) +
                                    "_FIXTURE_TWO); a plugin exports exactly one");
  ends_with(
      "libtg-needsdep.so",
      "cannot load: libtg-fixture-absent.so.1: cannot open shared object file: No such file or directory");
  ends_with("libtg-short.so", "descriptor is 8 bytes, this core reads 48");
  ends_with("libtg-mismatch.so", "descriptor says FIXTURE_BETA ABI 1." + std::to_string(TG_ABI_MINOR) +
                                     " but its symbol tgplugin_1_" + std::to_string(TG_ABI_MINOR) +
                                     "_FIXTURE_ALPHA disagrees");
  BOOST_TEST(words(row_for(ls, "libtg-badabi.so"))[1] == "99." + std::to_string(TG_ABI_MINOR));
}

BOOST_AUTO_TEST_CASE(devices_shows_how_the_default_was_chosen) {
  std::string dir = arg(2);
  auto ls = lines(run_tg("devices", {{"TG_PLUGIN_PATH", dir}, {"NULL", "1"}}).out);
  BOOST_TEST(has_line(ls, "default: NULL:0 (NULL=1)"));
  BOOST_TEST(builtin_row(ls, "NULL").starts_with("* NULL "));
  BOOST_TEST(row_for(ls, "libtg-good.so").starts_with("  FIXTURE_GOOD "));

  Run unusable = run_tg("devices", {{"TG_PLUGIN_PATH", dir}, {"DEV", "FIXTURE_PROBEFAIL"}});
  BOOST_TEST(unusable.status == 0);
  BOOST_TEST(has_line(lines(unusable.out),
                      "default: none (DEV=FIXTURE_PROBEFAIL; [device] FIXTURE_PROBEFAIL is "
                      "unavailable: libfoo.so.1 not found)"));
  auto unknown = lines(run_tg("devices", {{"TG_PLUGIN_PATH", dir + "/libtg-good.so"}, {"DEV", "FOO"}}).out);
  bool found = false;  // built-ins, the plugin on the path, and whatever the build tree holds
  for (const auto& l : unknown)
    found |= l.starts_with("default: none (DEV=FOO; [device] unknown device FOO; known: ") &&
             l.find(" NULL, ") != std::string::npos && l.find(" FIXTURE_GOOD") != std::string::npos;
  BOOST_TEST(found);
  auto bad = lines(run_tg("devices", {{"DEV", "CLANG::x"}}).out);
  BOOST_TEST(has_line(bad,
                      "default: none (DEV=CLANG::x; [device] bad device 'CLANG::x': empty field; expected "
                      "NAME[:index][:renderer[:arch]])"));
}

// Plugins whose probe crashes, exits or hangs are listed with that reason, and `tg devices` finishes.
BOOST_AUTO_TEST_CASE(devices_survives_probes_that_crash_exit_or_hang) {
  Run r = run_tg("devices", {{"TG_PLUGIN_PATH", arg(2) + "/hostile"}, {"DEV", "NULL"}});
  BOOST_TEST(r.status == 0, r.out);
  auto ls = lines(r.out);
  BOOST_TEST(row_for(ls, "libtg-crash.so").ends_with("probe() crashed (Segmentation fault)"), r.out);
  BOOST_TEST(row_for(ls, "libtg-exit.so").ends_with("probe() ended the process (exit status 3) without answering"));
  BOOST_TEST(row_for(ls, "libtg-hang.so").ends_with("probe() did not finish in 10 s (stopped)"));
  BOOST_TEST(has_line(ls, "default: NULL:0 (DEV=NULL)"));
}

BOOST_AUTO_TEST_CASE(env_lists_every_declared_variable) {
  Run r = run_tg("env", {{"BEAM", "3"}, {"DEV", "NULL:0"}});
  BOOST_TEST(r.status == 0);
  auto ls = lines(r.out);
  BOOST_TEST(has_line(ls, "BEAM=3"));
  BOOST_TEST(has_line(ls, "DEV=NULL:0"));
  BOOST_TEST(has_line(ls, "DEBUG=0 (default)"));
  BOOST_TEST(has_line(ls, "TG_CACHE_DIR=~/.cache/tinygrad.cpp (default)"));
  BOOST_TEST(has_line(ls, "TG_PLUGIN_PATH= (default)"));
  BOOST_TEST(has_line(ls, "    beam width for kernel optimization search; results cached on disk"));
  // Two lines per variable: the core's first, in declaration order (this process loads no plugin, so
  // all() here is the core's), then each loaded plugin's, its meaning tagged with the plugin.
  auto vars = tg::env::all();
  BOOST_REQUIRE(ls.size() >= 2 * vars.size());
  BOOST_REQUIRE(ls.size() % 2 == 0);
  for (size_t i = 0; i < vars.size(); ++i) {
    BOOST_TEST(ls[2 * i].starts_with(std::string(vars[i].name) + "="));
    BOOST_TEST(ls[2 * i + 1] == "    " + std::string(vars[i].meaning));
  }
  for (size_t i = 2 * vars.size(); i < ls.size(); i += 2) BOOST_TEST(ls[i + 1].starts_with("    ["), ls[i + 1]);
  // The CLANG plugin declares its own (no device name is declared in the core).
  if (run_tg("devices", {}).out.find("CLANG") != std::string::npos) {
    BOOST_TEST(has_line(ls, "TG_CLANG=clang (default)"), r.out);
    BOOST_TEST(has_line(ls, "    [CLANG] clang binary the CLANG device uses when libclang-cpp is not available"));
  }
  for (const auto& v : vars) BOOST_TEST(!v.name.starts_with("TG_CLANG"), v.name);
}
