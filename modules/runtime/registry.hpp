#pragma once
// The device registry: discovers built-in and plugin devices, explains every candidate it found,
// selects the default (DEV, NAME=1, then priority) and owns the Device instances it creates.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/builtins.hpp"
#include "runtime/device.hpp"
#include "runtime/loader.hpp"

namespace tg::runtime {

// One file or built-in that discovery looked at, usable or not.
struct Candidate {
  std::string name;    // device name; empty when the file is not a plugin
  std::string path;    // canonical file path, or "built-in"
  std::string origin;  // "built-in", "TG_PLUGIN_PATH", "installed", "build tree"
  int abi_major = 0, abi_minor = 0;
  std::string version;  // the plugin's own version
  int priority = 0;     // higher is picked first; below 0 only when named
  bool usable = false;
  std::string reason;  // why not usable (rejection, probe failure, "shadowed by <path>")
  double probe_seconds = 0;
  bool probed = false;  // probe() has run (or never will: the file was rejected before loading)
  const tg_plugin_descriptor* descriptor = nullptr;  // set once loaded and checked
};

// What a candidate can compile for with no device present (ABI minor 2): "sm_80 sm_90", empty when
// nothing. Asked on demand: it may load the plugin's toolchain.
std::string compile_targets(const Candidate& c);

struct RegistryConfig {
  // Variables discovery and selection read: TG_PLUGIN_PATH, DEV and NAME=1 flags.
  std::map<std::string, std::string, std::less<>> env;
  bool search_installed = true;   // <libtg dir>/TG_PLUGIN_SUBDIR
  bool search_build_tree = true;  // TG_BUILD_ROOT/plugins/*/, only when libtg runs from there
  std::span<const tg_plugin_descriptor* const> builtins = runtime::builtin_devices();  // searched first
  double probe_timeout_seconds = 10;  // probe_all(isolated): a child still probing after this is killed

  // The process environment: TG_PLUGIN_PATH and DEV through the env registry, plus every NAME=1.
  static RegistryConfig from_environment();
};

class Registry {
 public:
  explicit Registry(RegistryConfig config);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The process-wide registry, built from the environment on first use and never destroyed
  // (plugins are never unloaded, and devices may be in use until exit).
  static Registry& global();

  // Every candidate, each loaded and probed (in this process, unless probe_all(true) ran first).
  std::span<const Candidate> candidates() const;
  // Every candidate as it stands: a plugin nothing asked about yet is found (name, path, ABI from its ELF)
  // but not loaded (descriptor null, version and priority unset).
  std::span<const Candidate> discovered() const;
  // Loads every plugin not loaded yet (their variables join the env registry), probing none.
  void load_all() const;
  std::span<const runtime::SearchEntry> search_list() const { return search_; }
  // The candidate that owns a device name (the first found), probed, or null.
  const Candidate* find(std::string_view name) const;
  // Probes every candidate not probed yet. isolated: each probe runs in a child process, so a plugin whose
  // probe crashes, exits or hangs (killed after probe_timeout_seconds) is reported as such instead of
  // taking this process down; `tg devices` does this. Selection never needs it: it probes only the device
  // it picks (DEV, NAME=1), or candidates in priority order until one is usable.
  void probe_all(bool isolated) const;

  // What default_device() would open: DEV, else the highest-priority NAME=1, else the first usable
  // device by priority (never one with priority < 0). Throws DeviceError when that device is unknown
  // or unusable. why, if given, receives how it was chosen ("DEV=CLANG", "CLANG=1", ...).
  DeviceSpec default_spec(std::string* why = nullptr) const;
  // Opens (once) and returns the device. Throws DeviceError for unknown or unusable devices.
  Device& device(std::string_view spec);
  Device& device(const DeviceSpec& spec);
  Device& default_device() { return device(default_spec()); }
  // Opens the plugin's compile-only device for arch (empty = its default target) as NAME:0, so that
  // tensors on NAME are rendered and compiled for arch but never run. Replaces nothing: throws DeviceError
  // when NAME is already open, unknown, or cannot compile for arch.
  Device& open_compile_only(std::string_view name, std::string_view arch);

 private:
  void add_builtins();
  void add_candidate(const runtime::PluginFile& pf, const std::string& origin);
  const Candidate& require(const std::string& name) const;
  const Candidate& probed(size_t i, bool isolated = false) const;
  const Candidate& loaded(size_t i) const;

  RegistryConfig config_;
  std::vector<runtime::SearchEntry> search_;
  // Loading and probing are lazy: discovery only reads files; a candidate's plugin is loaded and probed the
  // first time its usability is asked. Guarded by probe_mu_.
  mutable std::vector<Candidate> candidates_;
  mutable std::map<size_t, runtime::PluginFile> unloaded_;  // owners whose library is not loaded yet
  mutable std::mutex probe_mu_;
  std::map<std::string, size_t, std::less<>> owner_;  // device name -> the candidate that owns it
  std::mutex mu_;
  std::map<std::pair<std::string, int>, std::unique_ptr<Device>> devices_;
};

// The global registry's device(spec) and default_device().
Device& device(std::string_view spec);
Device& default_device();

}  // namespace tg::runtime
