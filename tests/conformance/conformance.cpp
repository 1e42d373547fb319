// The conformance suite's shared state: the device under test, its manifest, the outcome recorder and
// the per-area summary (a Boost.Test observer counts test cases that record nothing themselves).
#include "conformance.hpp"

#include <boost/test/framework.hpp>
#include <boost/test/execution_monitor.hpp>
#include <boost/test/results_collector.hpp>
#include <boost/test/tree/observer.hpp>
#include <boost/test/tree/test_unit.hpp>
#include <boost/test/tree/traverse.hpp>
#include <boost/test/tree/visitor.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "manifest.hpp"
#include "runner.hpp"

namespace tg::conformance {

namespace ut = boost::unit_test;

namespace {

constexpr std::array<std::string_view, 7> kAreas = {"loading", "allocator", "compiler", "renderer",
                                                    "program", "ops",       "smoke"};

struct Counts {
  int n[5] = {0, 0, 0, 0, 0};  // indexed by Outcome
  int& operator[](Outcome o) { return n[static_cast<int>(o)]; }
  int operator[](Outcome o) const { return n[static_cast<int>(o)]; }
};

struct CaseState {
  int records = 0;        // record*() calls made in it
  int record_errors = 0;  // Boost errors those calls raised
  bool skipped = false;   // by the manifest (or a Boost precondition)
  std::string id;
  std::string exception;  // what an exception that ended it said
};

struct State {
  std::mutex mu;
  Target target;
  Manifest manifest;
  std::set<std::string, std::less<>> matched;  // manifest keys that matched some id
  std::set<std::string, std::less<>> xfail_failed;  // xfail keys under which something failed
  std::map<std::string, Counts, std::less<>> areas;
  std::map<ut::test_unit_id, CaseState> cases;
  std::vector<std::string> problems;  // "FAIL id: detail" / "XPASS id: reason"
  std::map<std::string, std::pair<int, std::string>> unsupported;  // reason -> (items, first id)
  bool ran = false, finished = false;
};

State& state() {
  static State* s = new State();  // never destroyed: read after Boost's shutdown
  return *s;
}

// "<area>/<suite>.../<test case>" for a test unit (the master suite left out).
std::string unit_id(ut::test_unit_id id) {
  std::vector<std::string> parts;
  for (ut::test_unit_id u = id; u != ut::framework::master_test_suite().p_id;) {
    const ut::test_unit& tu = ut::framework::get(u, ut::TUT_ANY);
    parts.push_back(tu.p_name);
    u = tu.p_parent_id;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : "/") + *it;
  return out;
}

std::string area_of(std::string_view id) { return std::string(id.substr(0, id.find('/'))); }

using Entries = Manifest::Entries;

// The manifest entry that covers id (manifest.cpp's match_entry), remembered as matched for the stale list.
const Entries::value_type* find_entry(const Entries& m, std::string_view id) {
  const Entries::value_type* best = match_entry(m, id);
  if (best) state().matched.insert(best->first);
  return best;
}

const std::string* find_in(const Entries& m, std::string_view id) {
  const Entries::value_type* e = find_entry(m, id);
  return e ? &e->second : nullptr;
}

void count(std::string_view id, Outcome o) { state().areas[area_of(id)][o]++; }

void count_unsupported(const std::string& id, std::string_view reason) {
  count(id, Outcome::unsupported);
  auto& [n, first] = state().unsupported[std::string(reason)];
  if (n++ == 0) first = id;
}

CaseState& current_case() {
  const ut::test_case& tc = ut::framework::current_test_case();
  CaseState& c = state().cases[tc.p_id];
  if (c.id.empty()) c.id = unit_id(tc.p_id);
  return c;
}

std::string item_id(const CaseState& c, std::string_view item) {
  return item.empty() ? c.id : c.id + "/" + std::string(item);
}

std::string why_failed(const CaseState& c, std::string_view what) {
  return c.exception.empty() ? fmt::format("{} (see the log above)", what) : c.exception;
}

// Counts test cases that recorded nothing by their Boost result, and failures outside record() in the
// others, once the whole run is over (results are final then).
class Observer final : public ut::test_observer {
 public:
  void test_start(ut::counter_t, ut::test_unit_id) override { state().ran = true; }
  void test_unit_start(const ut::test_unit& tu) override {
    if (tu.p_type != ut::TUT_CASE) return;
    std::lock_guard lock(state().mu);
    CaseState& c = state().cases[tu.p_id];
    if (c.id.empty()) c.id = unit_id(tu.p_id);
  }
  void test_unit_skipped(const ut::test_unit& tu, ut::const_string reason) override {
    if (tu.p_type != ut::TUT_CASE) return;
    std::lock_guard lock(state().mu);
    CaseState& c = state().cases[tu.p_id];
    if (c.id.empty()) c.id = unit_id(tu.p_id);
    c.skipped = true;
    (void)reason;
  }
  void exception_caught(const boost::execution_exception& e) override {
    std::lock_guard lock(state().mu);
    if (auto id = ut::framework::current_test_case_id(); id != ut::INV_TEST_UNIT_ID)
      state().cases[id].exception = std::string(e.what().begin(), e.what().end());
  }
  void test_finish() override {
    std::lock_guard lock(state().mu);
    state().finished = true;
    for (auto& [id, c] : state().cases) {
      const ut::test_results& r = ut::results_collector.results(id);
      if (c.skipped) {
        const std::string* why = find_in(state().manifest.unsupported, c.id);
        if (why != nullptr) count_unsupported(c.id, fmt::format("manifest: {}", *why));
        continue;
      }
      bool failed = r.p_aborted || r.p_assertions_failed > static_cast<ut::counter_t>(c.record_errors);
      const Entries::value_type* xfail = find_entry(state().manifest.xfail, c.id);
      if (failed && xfail) state().xfail_failed.insert(xfail->first);
      if (c.records > 0 && !failed) continue;
      count(c.id, !failed ? Outcome::pass : xfail ? Outcome::xfail : Outcome::fail);
      if (failed && !xfail)
        state().problems.push_back(fmt::format(
            "FAIL {}: {}", c.id, why_failed(c, c.records > 0 ? "failed outside its recorded items" : "failed")));
    }
    // An expected failure under which nothing failed is an unexpected pass: the manifest is out of date.
    for (const auto& [key, why] : state().manifest.xfail) {
      if (!state().matched.contains(key) || state().xfail_failed.contains(key)) continue;
      count(key, Outcome::xpass);
      state().problems.push_back(
          fmt::format("XPASS {}: nothing it covers failed, but the manifest expects a failure ({}); remove it", key,
                      why));
    }
  }
  int priority() override { return 10; }
};

// What compile-only mode cannot do: areas and test cases that exist to run kernels or move memory.
bool needs_device(std::string_view id) {
  for (std::string_view p :
       {"allocator/", "program/", "compiler/cached_compile", "smoke/reuse", "loading/loading_twice"})
    if (id.starts_with(p)) return true;
  return false;
}

// Skips every test case the manifest lists as unsupported (or compile-only mode cannot run) (Boost reports it
// as skipped).
class SkipUnsupported final : public ut::test_tree_visitor {
 public:
  void visit(const ut::test_case& tc) override {
    std::string id = unit_id(tc.p_id);
    std::string reason;
    if (const std::string* why = find_in(state().manifest.unsupported, id))
      reason = fmt::format("unsupported by the manifest: {}", *why);
    else if (state().target.compile_only && needs_device(id))
      reason = "compile-only: this test runs kernels or uses device memory";
    else
      return;
    ut::framework::get<ut::test_case>(tc.p_id).add_precondition(
        [reason](ut::test_unit_id) {
          boost::test_tools::assertion_result r(false);
          r.message() << reason;
          return r;
        });
  }
};

}  // namespace

const Target& target() { return state().target; }
runtime::Device& device() { return runtime::Registry::global().device(state().target.name); }
const Manifest& manifest() { return state().manifest; }

const std::string* Manifest::find_unsupported(std::string_view id) const { return find_in(unsupported, id); }
const std::string* Manifest::find_xfail(std::string_view id) const { return find_in(xfail, id); }

Outcome record(std::string_view item, bool ok, std::string_view detail) {
  std::unique_lock lock(state().mu);
  CaseState& c = current_case();
  std::string id = item_id(c, item);
  c.records++;
  if (const std::string* why = find_in(state().manifest.unsupported, id)) {
    count_unsupported(id, fmt::format("manifest: {}", *why));
    lock.unlock();
    BOOST_TEST_MESSAGE("unsupported " << id << ": " << *why);
    return Outcome::unsupported;
  }
  const Entries::value_type* xfail = find_entry(state().manifest.xfail, id);
  // A passing item under an xfail entry is a pass; the entry is an xpass at the end if nothing under it failed.
  Outcome o = ok ? Outcome::pass : xfail ? Outcome::xfail : Outcome::fail;
  if (o == Outcome::xfail) state().xfail_failed.insert(xfail->first);
  count(id, o);
  if (o == Outcome::pass) {
    lock.unlock();
    BOOST_CHECK_MESSAGE(true, id);
  } else if (o == Outcome::fail) {
    c.record_errors++;
    state().problems.push_back(fmt::format("FAIL {}: {}", id, detail));
    lock.unlock();
    BOOST_ERROR(id << ": " << detail);
  } else if (o == Outcome::xfail) {
    lock.unlock();
    BOOST_TEST_MESSAGE("expected failure " << id << ": " << detail << " (manifest: " << xfail->second << ")");
  }
  return o;
}

void record_unsupported(std::string_view item, std::string_view reason) {
  std::unique_lock lock(state().mu);
  CaseState& c = current_case();
  std::string id = item_id(c, item);
  c.records++;
  (void)find_in(state().manifest.unsupported, id);  // a manifest entry saying the same is not stale
  count_unsupported(id, reason);
  lock.unlock();
  BOOST_TEST_MESSAGE("unsupported " << id << ": " << reason);
}

const std::string* manifest_unsupported(std::string_view item) {
  std::lock_guard lock(state().mu);
  return find_in(state().manifest.unsupported, item_id(current_case(), item));
}

namespace runner {

void set_target(Target t) { state().target = std::move(t); }
void set_manifest(Manifest m) { state().manifest = std::move(m); }

void install() {
  static Observer observer;
  ut::framework::register_observer(observer);
  SkipUnsupported skip;
  ut::traverse_test_tree(ut::framework::master_test_suite(), skip, true);
}

bool ran() { return state().ran; }

std::string summary() {
  State& s = state();
  std::vector<std::string> order(kAreas.begin(), kAreas.end());
  for (const auto& [area, c] : s.areas)
    if (std::find(order.begin(), order.end(), area) == order.end()) order.push_back(area);
  std::ostringstream out;
  out << fmt::format("conformance summary: {}{}\n", s.target.name,
                     s.target.plugin_path.empty() ? " (built-in)" : " (" + s.target.plugin_path + ")");
  if (s.target.compile_only)
    out << fmt::format(
        "mode: compile-only for {}: every kernel went through the target's compiler ({}); none ran\n",
        s.target.arch, device().description());
  if (!s.target.manifest_path.empty()) out << fmt::format("manifest: {}\n", s.target.manifest_path);
  out << fmt::format("{:<10} {:>7} {:>7} {:>12} {:>6} {:>6}\n", "area", "passed", "failed", "unsupported", "xfail",
                     "xpass");
  Counts total;
  for (const std::string& area : order) {
    auto it = s.areas.find(area);
    if (it == s.areas.end()) continue;
    const Counts& c = it->second;
    for (int i = 0; i < 5; i++) total.n[i] += c.n[i];
    out << fmt::format("{:<10} {:>7} {:>7} {:>12} {:>6} {:>6}\n", area, c[Outcome::pass], c[Outcome::fail],
                       c[Outcome::unsupported], c[Outcome::xfail], c[Outcome::xpass]);
  }
  out << fmt::format("{:<10} {:>7} {:>7} {:>12} {:>6} {:>6}\n", "total", total[Outcome::pass],
                     total[Outcome::fail], total[Outcome::unsupported], total[Outcome::xfail], total[Outcome::xpass]);
  for (const auto& [why, seen] : s.unsupported)
    out << fmt::format("unsupported {} ({} item{}{}): {}\n", seen.second, seen.first,
                       seen.first == 1 ? "" : "s", seen.first == 1 ? "" : " like it", why);
  for (const std::string& p : s.problems) out << p << "\n";
  std::vector<std::string> stale;
  for (const auto* section : {&s.manifest.unsupported, &s.manifest.xfail})
    for (const auto& [key, why] : *section)
      if (!s.matched.contains(key)) stale.push_back(key);
  if (!stale.empty()) {
    out << "warning: stale manifest entries (matched no test that ran):\n";
    for (const std::string& k : stale) out << "  " << k << "\n";
  }
  if (!s.finished) out << "the run did not finish: the counts above are incomplete\n";
  bool ok = s.finished && total[Outcome::fail] == 0 && total[Outcome::xpass] == 0;
  out << fmt::format("result: {}\n", ok ? "PASS" : "FAIL");
  return out.str();
}

int exit_code(int boost_code) {
  Counts total;
  for (const auto& [area, c] : state().areas)
    for (int i = 0; i < 5; i++) total.n[i] += c.n[i];
  if (total[Outcome::fail] > 0 || total[Outcome::xpass] > 0) return 1;
  if (!state().ran) return boost_code;               // nothing ran (--list_content, a filter matching nothing)
  if (!state().finished) return boost_code != 0 ? boost_code : 1;  // the run was cut short
  return 0;  // every failure Boost saw was an expected one
}

}  // namespace runner

}  // namespace tg::conformance
