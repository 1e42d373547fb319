#define BOOST_TEST_MODULE base
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "tg/sdk/status.hpp"

BOOST_AUTO_TEST_CASE(error_message_names_the_op) {
  tg::ShapeError e("reshape", "cannot reshape (3,4) to (5,)");
  BOOST_TEST(std::string(e.what()) == "[reshape] cannot reshape (3,4) to (5,)");
  BOOST_TEST(e.op() == "reshape");
  BOOST_CHECK_THROW(throw tg::DeviceError("dev", "x"), tg::Error);
}

BOOST_AUTO_TEST_CASE(env_registry_reads_and_overrides) {
  setenv("BEAM", "3", 1);
  tg::env::IntVar beam("BEAM");
  BOOST_TEST(beam.value() == 3);
  {
    tg::env::Scoped s(beam, 7);
    BOOST_TEST(beam.value() == 7);
  }
  BOOST_TEST(beam.value() == 3);
  unsetenv("TG_CACHE_DIR");  // the test runner points it into the build tree
  BOOST_TEST(tg::env::get("TG_CACHE_DIR") == "~/.cache/tinygrad.cpp");
  BOOST_CHECK_THROW(tg::env::raw("NOT_A_DECLARED_VAR"), tg::ValueError);
  setenv("NOOPT", "yes", 1);
  tg::env::IntVar noopt("NOOPT");
  BOOST_CHECK_THROW(noopt.value(), tg::ValueError);
  for (const char* typo : {"2.5", "1x", "3 "}) {  // a trailing part is an error, not silently dropped
    setenv("DEBUG", typo, 1);
    tg::env::IntVar debug("DEBUG");
    BOOST_CHECK_THROW(debug.value(), tg::ValueError);
  }
  unsetenv("DEBUG");
  unsetenv("NOOPT");
  unsetenv("BEAM");
}

// Junk in an integer variable fails at startup, naming the variable and the value, even when the program
// would never read that variable (tinygrad raises on int() when it reads them at import).
BOOST_AUTO_TEST_CASE(env_junk_is_an_error) {
  for (const auto& v : tg::env::all())
    if (v.integer) unsetenv(std::string(v.name).c_str());
  for (const char* name : {"JIT", "SPEC", "DEBUG", "CACHELEVEL"}) {
    setenv(name, "x", 1);
    try {
      tg::env::check_all();
      BOOST_ERROR(name << "=x accepted");
    } catch (const tg::ValueError& e) {
      BOOST_TEST(e.what() == std::string("[env] ") + name + "='x' is not an integer");
    }
    BOOST_CHECK_THROW(tg::env::get_int(name), tg::ValueError);
    setenv(name, "2", 1);
    BOOST_TEST(tg::env::get_int(name).value_or(-1) == 2);
    unsetenv(name);
  }
  BOOST_CHECK_NO_THROW(tg::env::check_all());
  BOOST_TEST(!tg::env::get_int("SPEC").has_value());      // unset and no default: the build's default applies
  BOOST_TEST(tg::env::get_int("JIT").value_or(-1) == 1);  // the declared default
  setenv("DEV", "x", 1);                                  // not an integer variable
  BOOST_CHECK_NO_THROW(tg::env::check_all());
  unsetenv("DEV");
}

BOOST_AUTO_TEST_CASE(hash_is_stable) {
  // XXH3-64 of the empty input with seed 0 is a published constant.
  BOOST_TEST(tg::hash_bytes("", 0) == 0x2D06800538D394C2ull);
  BOOST_TEST(tg::hash_str("abc") != tg::hash_str("abd"));
  BOOST_TEST(tg::hash_hex("abc").size() == 32u);
}

BOOST_AUTO_TEST_CASE(status_and_blob) {
  tg::sdk::Status ok;
  BOOST_TEST(ok.ok());
  tg::sdk::Status bad(tg::sdk::Code::compile_error, "line 1: error");
  BOOST_TEST(!bad.ok());
  BOOST_TEST(bad.message() == "line 1: error");
  tg::sdk::Blob b;
  b.assign(std::string_view("hello"));
  b.append(" world");
  BOOST_TEST(b.text() == "hello world");
  auto s = tg::sdk::guard([]() -> tg::sdk::Status { throw std::runtime_error("boom"); });
  BOOST_TEST((s.code() == tg::sdk::Code::runtime_error));
  BOOST_TEST(s.message() == "boom");
}

// A plugin declares its own variables: then they read like the core's and list under the plugin; a name
// taken by the core or by another plugin is refused, the same declaration twice is not.
BOOST_AUTO_TEST_CASE(env_plugins_declare_their_variables) {
  BOOST_CHECK_THROW(tg::env::get("TG_TEST_PLUGIN_PATHS"), tg::ValueError);
  static const tg::env::VarInfo vars[] = {{"TG_TEST_PLUGIN_PATHS", "/a", "where the test plugin looks"},
                                          {"TG_TEST_PLUGIN_FLAG", "0", "a test flag", true}};
  tg::env::declare("TESTDEV", vars);
  tg::env::declare("TESTDEV", vars);  // loaded again from another folder
  BOOST_TEST(tg::env::get("TG_TEST_PLUGIN_PATHS") == "/a");
  setenv("TG_TEST_PLUGIN_FLAG", "x", 1);
  BOOST_CHECK_THROW(tg::env::check_all(), tg::ValueError);
  setenv("TG_TEST_PLUGIN_FLAG", "1", 1);
  BOOST_TEST(tg::env::get_int("TG_TEST_PLUGIN_FLAG").value_or(0) == 1);
  unsetenv("TG_TEST_PLUGIN_FLAG");
  auto all = tg::env::all();
  BOOST_TEST(all.back().name == "TG_TEST_PLUGIN_FLAG");
  BOOST_TEST(all.back().owner == "TESTDEV");
  const tg::env::VarInfo other[] = {{"TG_TEST_PLUGIN_PATHS", "/b", "another meaning"}};
  BOOST_CHECK_EXCEPTION(tg::env::declare("OTHERDEV", other), tg::ValueError, [](const tg::ValueError& e) {
    return std::string(e.what()) == "[env] OTHERDEV declares TG_TEST_PLUGIN_PATHS, already declared by TESTDEV";
  });
  const tg::env::VarInfo core[] = {{"DEBUG", "0", "mine"}};
  BOOST_CHECK_THROW(tg::env::declare("OTHERDEV", core), tg::ValueError);
  tg::env::Declare quiet{"OTHERDEV", {{"DEBUG", "0", "mine"}}};  // prints a warning instead of throwing
  BOOST_TEST(tg::env::all().size() == all.size());
}
