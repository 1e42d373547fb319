#pragma once
// What main.cpp needs from conformance.cpp beyond the tests' interface: setting the target and manifest,
// hooking the outcome counting into Boost.Test, and the summary and exit code after the run.
#include <string>

#include "conformance.hpp"

namespace tg::conformance::runner {

void set_target(Target t);
// Parses a manifest file; throws std::runtime_error naming the file when it is unreadable or malformed.
Manifest read_manifest(const std::string& path);
void set_manifest(Manifest m);

// Inside Boost's init function: registers the outcome observer and skips test cases the manifest lists as
// unsupported.
void install();

// The child process behind loading/driver_hidden (`tg-conformance --hidden-driver-probe PATH`): loads the
// plugin, hides every system library folder in a private mount namespace, then probes (and creates when the
// probe says unusable) and prints what happened. Returns the process exit code.
int hidden_driver_probe(const std::string& plugin_path);

bool ran();             // a test run happened (not --list_content or --help)
std::string summary();  // one line per area, the total, failures, stale manifest entries
// Non-zero iff any failure or unexpected pass (Boost's own code when it failed for another reason).
int exit_code(int boost_code);

}  // namespace tg::conformance::runner
