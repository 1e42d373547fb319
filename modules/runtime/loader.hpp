#pragma once
// Reading plugin files: where to look, what an ELF says about itself (read without running any of
// its code), loading it once per canonical path (never unloaded) and checking its descriptor.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tg/sdk/plugin.hpp"

namespace tg::runtime {

// An alias name tgplugin_<major>_<minor>_<NAME> from the plugin's "tgplugin" section.
struct AliasName {
  int major = 0, minor = 0;
  std::string name;
};
std::optional<AliasName> parse_alias(std::string_view alias);
// Empty when a plugin built for ABI major.minor can be loaded by a core at core_major with the
// given minor floor, else why not.
std::string check_abi(int major, int minor, int core_major = TG_ABI_MAJOR,
                      int minor_floor = TG_ABI_MINOR_FLOOR);

// What the ELF file says. error is set (and the rest meaningless) when it is not a loadable plugin.
struct PluginFile {
  std::string path;  // canonical
  std::string alias;
  AliasName abi;
  std::string error;
};
PluginFile inspect_plugin(const std::string& path);

// Loads the library (once per canonical path; later calls return the cached result) and checks the
// descriptor behind alias: present, large enough, agreeing with the alias. Never unloaded.
struct LoadResult {
  const tg_plugin_descriptor* descriptor = nullptr;
  std::string error;
};
LoadResult load_plugin(const std::string& path, const std::string& alias, const AliasName& abi);

struct ProbeResult {
  bool usable = false;
  std::string reason;  // why not usable
  double seconds = 0;
};
ProbeResult probe_plugin(const tg_plugin_descriptor& d);
// The same in a forked child that reports back through a pipe: a probe that crashes, exits or runs past
// timeout_seconds (then killed) gives a reason saying so, and this process is untouched.
ProbeResult probe_plugin_isolated(const tg_plugin_descriptor& d, double timeout_seconds);

// Where plugins are searched, in order. A file entry is one candidate; a dir entry contributes every
// libtg-*.so in it; a tree entry every libtg-*.so one level below it (the build tree's plugins/*/).
enum class SearchKind { file, dir, tree };
struct SearchEntry {
  std::string origin;  // "TG_PLUGIN_PATH", "installed", "build tree"
  std::string path;
  SearchKind kind;
};
// plugin_path is TG_PLUGIN_PATH's value; empty entries are skipped (they never mean the current
// directory) and relative ones made absolute.
std::vector<SearchEntry> search_list(std::string_view plugin_path, bool installed, bool build_tree);
// The candidate files of one entry, sorted by name. A missing file entry is still returned so the
// caller can report it.
std::vector<std::string> expand(const SearchEntry& entry);

std::string libtg_path();            // the loaded libtg shared object
std::string installed_plugin_dir();  // <libtg's dir>/TG_PLUGIN_SUBDIR
bool running_from_build_tree();      // libtg lives under TG_BUILD_ROOT

}  // namespace tg::runtime
