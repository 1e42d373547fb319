#pragma once
// What every conformance test sees: the device under test (chosen by --plugin PATH or DEV before any
// test runs), its manifest of known-unsupported and expected-failure tests, and the outcome recorder
// behind the per-area summary. Areas are the top-level Boost.Test suites (loading, allocator, ...).
#include <map>
#include <string>
#include <string_view>

#include "runtime/device.hpp"
#include "runtime/registry.hpp"

namespace tg::conformance {

// The plugin under test. For built-ins (INTERP) plugin_path is empty.
struct Target {
  std::string name;         // device name as used in DEV= and Tensor device strings ("CLANG")
  std::string plugin_path;  // the shared library, when the device is a plugin
  std::string manifest_path;  // the manifest that was read, empty when none
  // --compile-only: every kernel is rendered and compiled for arch by the plugin's compile-only device and
  // nothing runs; tc_pattern, when set, must occur in the disassembly of every tensor-core kernel.
  bool compile_only = false;
  std::string arch, tc_pattern;
};
const Target& target();
runtime::Device& device();  // Registry::global().device(target().name)

// Per-plugin manifest (JSON, next to the plugin as <library stem>.conformance.json or --manifest PATH):
//   {"unsupported": {"<test id>": "why"}, "xfail": {"<test id>": "why"}}
// A test id is "<area>/<test case>" or "<area>/<test case>/<item>" (e.g. "ops/binary/ADD/bfloat16").
// A key ending in "*" matches every id that starts with the rest; a key without "*" matches that id and
// the items under it ("compiler/deterministic" covers "compiler/deterministic/compile").
struct Manifest {
  using Entries = std::map<std::string, std::string, std::less<>>;  // test id or prefix -> reason
  Entries unsupported, xfail;
  const std::string* find_unsupported(std::string_view id) const;  // the reason, or null
  const std::string* find_xfail(std::string_view id) const;
};
const Manifest& manifest();
inline bool compile_only() { return target().compile_only; }

// Outcomes of single items inside test cases, counted per area in the summary. Call them from inside a
// Boost test case; `item` is appended to the current test's id ("<area>/<test case>/<item>").
//   pass:        the check ran and held
//   fail:        the check ran and did not hold (also raises a Boost error naming the id and detail)
//   unsupported: the device's caps or manifest say it cannot do this; nothing ran, not a pass
//   xfail:       failed and the manifest lists it as expected to fail (no Boost error)
//   xpass:       a manifest xfail entry under which nothing failed (counted once per entry at the end of the
//                run and listed in the summary: fix the manifest); record() itself never returns it
enum class Outcome { pass, fail, unsupported, xfail, xpass };
// Records `ok` for item (applying the manifest's xfail list) and returns the outcome.
Outcome record(std::string_view item, bool ok, std::string_view detail = {});
// Records an unsupported item with the reason (no Boost error).
void record_unsupported(std::string_view item, std::string_view reason);
// The manifest's reason when the current test's item is listed as unsupported, else null. Tests call it
// before running an item and record_unsupported(item, *reason) instead of running it.
const std::string* manifest_unsupported(std::string_view item);

}  // namespace tg::conformance
