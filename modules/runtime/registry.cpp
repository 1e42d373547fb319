#include "runtime/registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "tg/sdk/spec_fields.hpp"

namespace tg::runtime {

namespace {
bool lists(std::string_view names, std::string_view name) {
  for (size_t start = 0; start < names.size();) {
    size_t end = std::min(names.find(' ', start), names.size());
    if (names.substr(start, end - start) == name) return true;
    start = end + 1;
  }
  return false;
}

// DEV's renderer and arch fields must be ones the device takes (sdk/spec_fields.hpp), never ignored.
void check_spec_fields(const DeviceSpec& spec, sdk::Device& dev) {
  const auto* f = static_cast<const sdk::SpecFields*>(dev.extension(sdk::kSpecFieldsExtension));
  auto check = [&](std::string_view field, const std::string& value, const char* accepted) {
    if (value.empty() || (accepted != nullptr && lists(accepted, value))) return;
    throw DeviceError("device", fmt::format("{} has no {} '{}' ({}); DEV is NAME[:index][:renderer[:arch]]",
                                            spec.name, field, value,
                                            accepted != nullptr && *accepted != '\0'
                                                ? fmt::format("it takes: {}", accepted)
                                                : fmt::format("it takes no {} field", field)));
  };
  check("renderer", spec.renderer, f != nullptr ? f->renderers : nullptr);
  check("arch", spec.arch, f != nullptr ? f->archs : nullptr);
}

bool is_device_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void fill_from_descriptor(Candidate& c, const tg_plugin_descriptor& d) {
  c.descriptor = &d;
  c.version = d.version != nullptr ? d.version : "";
  c.priority = d.priority;
  c.probed = false;  // probed when first asked (Registry::probed)
}
}  // namespace

RegistryConfig RegistryConfig::from_environment() {
  RegistryConfig c;
  for (std::string_view name : {"DEV", "TG_PLUGIN_PATH"})
    if (auto v = env::raw(name)) c.env.emplace(name, *v);
  // NAME=1 shorthands name devices that are only known after discovery, so they cannot be declared
  // in the env registry; keep every upper-case variable set to 1 and let selection pick known ones.
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    if (kv.ends_with("=1") && is_device_name(kv.substr(0, kv.size() - 2)))
      c.env.emplace(kv.substr(0, kv.size() - 2), "1");
  }
  return c;
}

Registry::Registry(RegistryConfig config) : config_(std::move(config)) {
  add_builtins();
  auto path = config_.env.find("TG_PLUGIN_PATH");
  search_ = runtime::search_list(path != config_.env.end() ? path->second : "", config_.search_installed,
                                 config_.search_build_tree);
  std::set<std::string> seen;  // canonical paths: a file reachable twice is one candidate
  for (const auto& entry : search_)
    for (const auto& file : runtime::expand(entry)) {
      runtime::PluginFile pf = runtime::inspect_plugin(file);
      if (seen.insert(pf.path).second) add_candidate(pf, entry.origin);
    }
}

Registry::~Registry() = default;

Registry& Registry::global() {
  static Registry* registry = new Registry(RegistryConfig::from_environment());
  return *registry;
}

void Registry::add_builtins() {
  for (const tg_plugin_descriptor* d : config_.builtins) {
    Candidate c{.name = d->name,
                .path = "built-in",
                .origin = "built-in",
                .abi_major = d->abi_major,
                .abi_minor = d->abi_minor};
    fill_from_descriptor(c, *d);
    owner_.emplace(c.name, candidates_.size());
    candidates_.push_back(std::move(c));
  }
}

void Registry::add_candidate(const runtime::PluginFile& pf, const std::string& origin) {
  Candidate& c = candidates_.emplace_back(Candidate{.name = pf.abi.name,
                                                    .path = pf.path,
                                                    .origin = origin,
                                                    .abi_major = pf.abi.major,
                                                    .abi_minor = pf.abi.minor,
                                                    .probed = true});  // until a descriptor is loaded
  if (!pf.error.empty()) {
    c.reason = pf.error;
    return;
  }
  // The first file that passes the ELF and ABI checks owns its name, usable or not.
  if (auto owner = owner_.find(c.name); owner != owner_.end()) {
    c.reason = "shadowed by " + candidates_[owner->second].path;
    return;
  }
  owner_.emplace(c.name, candidates_.size() - 1);
  unloaded_.emplace(candidates_.size() - 1, pf);  // loaded when first asked (Registry::loaded)
}

// Loading a plugin runs its static initializers and relocates it against LLVM and the like: milliseconds
// each, so only the plugins a process asks about are loaded. Callers hold probe_mu_.
const Candidate& Registry::loaded(size_t i) const {
  Candidate& c = candidates_[i];
  auto it = unloaded_.find(i);
  if (it == unloaded_.end()) return c;
  runtime::PluginFile pf = std::move(it->second);
  unloaded_.erase(it);
  runtime::LoadResult l = runtime::load_plugin(pf.path, pf.alias, pf.abi);
  if (l.descriptor == nullptr)
    c.reason = l.error;
  else
    fill_from_descriptor(c, *l.descriptor);
  return c;
}

void Registry::load_all() const {
  std::lock_guard lock(probe_mu_);
  for (size_t i = 0; i < candidates_.size(); i++) loaded(i);
}

std::span<const Candidate> Registry::discovered() const {
  std::lock_guard lock(probe_mu_);
  return candidates_;
}

const Candidate& Registry::probed(size_t i, bool isolated) const {
  std::lock_guard lock(probe_mu_);
  Candidate& c = candidates_[i];
  loaded(i);
  if (!c.probed && c.descriptor != nullptr) {
    runtime::ProbeResult p = isolated ? runtime::probe_plugin_isolated(*c.descriptor, config_.probe_timeout_seconds)
                                      : runtime::probe_plugin(*c.descriptor);
    c.usable = p.usable, c.reason = std::move(p.reason), c.probe_seconds = p.seconds;
    debug_log(3, "[device] probed {} in {:.2f} ms{}: {}", c.name, p.seconds * 1e3, isolated ? " (in a child)" : "",
              c.usable ? "usable" : c.reason);
  }
  c.probed = true;
  return c;
}

std::span<const Candidate> Registry::candidates() const {
  probe_all(false);
  return candidates_;
}

void Registry::probe_all(bool isolated) const {
  for (size_t i = 0; i < candidates_.size(); i++) probed(i, isolated);
}

const Candidate* Registry::find(std::string_view name) const {
  if (auto owner = owner_.find(name); owner != owner_.end()) return &probed(owner->second);
  auto it = std::find_if(candidates_.begin(), candidates_.end(),
                         [&](const Candidate& c) { return c.name == name; });
  return it != candidates_.end() ? &probed(static_cast<size_t>(it - candidates_.begin())) : nullptr;
}

const Candidate& Registry::require(const std::string& name) const {
  const Candidate* c = find(name);
  if (c == nullptr) {
    std::vector<std::string_view> known;
    for (const auto& k : candidates_)
      if (!k.name.empty() && std::find(known.begin(), known.end(), k.name) == known.end())
        known.push_back(k.name);
    throw DeviceError("device", fmt::format("unknown device {}; known: {}", name, fmt::join(known, ", ")));
  }
  if (!c->usable) {
    std::string_view reason = c->reason;
    if (reason.starts_with("unavailable: ")) reason.remove_prefix(13);  // plugins' probe convention
    throw DeviceError("device", fmt::format("{} is unavailable: {}", name, reason));
  }
  return *c;
}

DeviceSpec Registry::default_spec(std::string* why) const {
  std::string ignored;
  std::string& because = why != nullptr ? *why : ignored;
  auto dev = config_.env.find("DEV");
  if (dev != config_.env.end() && !dev->second.empty()) {
    because = "DEV=" + dev->second;
    DeviceSpec spec = DeviceSpec::parse(dev->second);
    require(spec.name);
    return spec;
  }
  // Priorities live in the descriptors: only the devices named by NAME=1 are loaded to sort them, and
  // without any, every plugin is.
  std::vector<size_t> owners;
  for (const auto& [name, i] : owner_)
    if (config_.env.contains(name) && config_.env.find(name)->second == "1") owners.push_back(i);
  if (owners.empty())
    for (const auto& [name, i] : owner_) owners.push_back(i);
  {
    std::lock_guard lock(probe_mu_);
    for (size_t i : owners) loaded(i);
  }
  std::sort(owners.begin(), owners.end(), [&](size_t a, size_t b) {
    const Candidate &ca = candidates_[a], &cb = candidates_[b];
    return ca.priority != cb.priority ? ca.priority > cb.priority : a < b;  // ties: discovery order
  });
  for (size_t i : owners)
    if (auto flag = config_.env.find(candidates_[i].name); flag != config_.env.end() && flag->second == "1") {
      because = candidates_[i].name + "=1";
      require(candidates_[i].name);
      return DeviceSpec{.name = candidates_[i].name};
    }
  for (size_t i : owners)  // probing stops at the first usable one
    if (candidates_[i].priority >= 0 && probed(i).usable) {
      because = "highest priority usable device";
      return DeviceSpec{.name = candidates_[i].name};
    }
  because = "no usable device";
  throw DeviceError("device", "no usable device; run `tg devices` to see why each candidate was rejected");
}

Device& Registry::device(std::string_view spec) { return device(DeviceSpec::parse(spec)); }

Device& Registry::device(const DeviceSpec& spec) {
  auto key = std::make_pair(spec.name, spec.index);
  {
    std::lock_guard lock(mu_);  // an open device (compile-only ones included) needs no probe
    if (auto it = devices_.find(key); it != devices_.end()) {
      const DeviceSpec& open = it->second->spec();
      if (open.renderer != spec.renderer || open.arch != spec.arch) check_spec_fields(spec, it->second->plugin());
      return *it->second;
    }
  }
  const Candidate& c = require(spec.name);
  std::lock_guard lock(mu_);
  if (auto it = devices_.find(key); it != devices_.end()) return *it->second;
  char err[1024] = {};
  void* raw = c.descriptor->create(spec.index, err, sizeof err);
  if (raw == nullptr)
    throw DeviceError("device", fmt::format("cannot open {}:{}: {}", spec.name, spec.index,
                                            err[0] != '\0' ? std::string(err, strnlen(err, sizeof err))
                                                           : "create() failed without a reason"));
  std::unique_ptr<sdk::Device> impl(static_cast<sdk::Device*>(raw));
  check_spec_fields(spec, *impl);
  auto dev = std::make_unique<Device>(spec, std::move(impl));
  debug_log(2, "[device] opened {} from {}: {}", dev->str(), c.path, dev->description());
  return *devices_.emplace(key, std::move(dev)).first->second;
}

std::string compile_targets(const Candidate& c) {
  auto fn = c.descriptor != nullptr ? tg_compile_targets_of(*c.descriptor) : nullptr;
  const char* t = fn != nullptr ? fn() : nullptr;
  return t != nullptr ? t : "";
}

Device& Registry::open_compile_only(std::string_view name, std::string_view arch) {
  const Candidate* c = find(name);
  if (c == nullptr || c->descriptor == nullptr)
    throw DeviceError("compile-only", fmt::format("{} is not a loaded device plugin", name));
  auto create = tg_create_compile_only_of(*c->descriptor);
  std::string targets = compile_targets(*c);
  if (create == nullptr || targets.empty())
    throw DeviceError("compile-only",
                      fmt::format("{} cannot compile without its device{}", name,
                                  create == nullptr ? " (the plugin has no compile-only entry)"
                                                    : " here (it lists no targets)"));
  std::string a(arch.empty() ? targets.substr(0, targets.find(' ')) : arch);
  std::lock_guard lock(mu_);
  auto key = std::make_pair(std::string(name), 0);
  if (devices_.contains(key))
    throw DeviceError("compile-only", fmt::format("{}:0 is already open as a running device", name));
  char err[4096] = {};
  void* raw = create(a.c_str(), err, sizeof err);
  if (raw == nullptr)
    throw DeviceError("compile-only", fmt::format("{} cannot compile for {}: {} (targets: {})", name, a,
                                                  err[0] != '\0' ? std::string(err, strnlen(err, sizeof err))
                                                                 : "no reason given",
                                                  targets));
  DeviceSpec spec{.name = std::string(name), .index = 0, .renderer = "", .arch = a};
  auto dev = std::make_unique<Device>(spec, std::unique_ptr<sdk::Device>(static_cast<sdk::Device*>(raw)));
  debug_log(2, "[device] opened {} compile-only for {}: {}", dev->str(), a, dev->description());
  return *devices_.emplace(key, std::move(dev)).first->second;
}

Device& device(std::string_view spec) { return Registry::global().device(spec); }
Device& default_device() { return Registry::global().default_device(); }

}  // namespace tg::runtime
