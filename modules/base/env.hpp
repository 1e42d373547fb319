#pragma once
// The one registry of environment variables the project reads (tinygrad names where tinygrad has one).
// The core's are declared in env.cpp, a plugin's by the plugin itself (env::Declare) when it is loaded;
// `tg env` prints them all with their values.
#include <atomic>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::env {

struct VarInfo {
  std::string_view name;
  std::string_view default_value;
  std::string_view meaning;
  bool integer = false;   // read as an int: any other value is an error
  std::string_view owner;  // the plugin that declared it (its device name); empty for the core's
};

// Every declared variable: the core's in declaration order, then each loaded plugin's in the order declared.
std::vector<VarInfo> all();
// Declares the variables a plugin reads, so get() and raw() accept them and `tg env` lists them under the
// plugin. The strings must live as long as the process (literals: plugins are never unloaded). A name the
// core or another plugin already declared differently is a ValueError; the same declaration again is not.
void declare(std::string_view owner, std::span<const VarInfo> vars);
// A plugin's declaration as a static object, made when the plugin is loaded:
//   const tg::env::Declare kEnv{"CLANG", {{"TG_CLANG", "clang", "clang binary ..."}}};
// A conflict is printed to stderr (nothing may throw while a library loads) and the first declaration kept.
class Declare {
 public:
  Declare(std::string_view owner, std::initializer_list<VarInfo> vars) noexcept;
};
// The raw value from the process environment, if set. Throws ValueError for undeclared names
// (so a typo in the code is caught, not silently read as unset).
std::optional<std::string> raw(std::string_view name);
// The value, or the declared default.
std::string get(std::string_view name);
// An integer variable's value (or default) as an int; nullopt when empty. ValueError "[env] NAME='v' is
// not an integer" for anything else (tinygrad raises on int() too).
std::optional<int> get_int(std::string_view name);
// Checks every integer variable that is set, so junk fails at startup, not when (or if) it is first read
// (a plugin's: those of the plugins loaded so far).
void check_all();

// An integer variable read once from the environment, overridable at run time (tinygrad's ContextVar).
class IntVar {
 public:
  explicit IntVar(std::string_view name) : name_(name) {}
  int value() const;
  operator int() const { return value(); }
  void set(int v) { value_.store(v), loaded_.store(true); }
  std::string_view name() const { return name_; }

 private:
  std::string_view name_;
  mutable std::atomic<int> value_{0};
  mutable std::atomic<bool> loaded_{false};
};

// Sets an IntVar for the lifetime of the scope, then restores it: `Scoped d(DEBUG, 4);`.
class Scoped {
 public:
  Scoped(IntVar& var, int v) : var_(var), old_(var.value()) { var_.set(v); }
  ~Scoped() { var_.set(old_); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;

 private:
  IntVar& var_;
  int old_;
};

extern IntVar DEBUG;       // 1..7: more detail about every realize and kernel
extern IntVar BEAM;        // width of the kernel-optimization beam search (0 = heuristic)
extern IntVar NOOPT;       // 1 = no kernel optimizations
extern IntVar VIZ;         // 1 = serve the graph/rewrite viewer
extern IntVar JIT;         // 0 = disable jit capture
extern IntVar CACHELEVEL;  // 0 = no disk cache, 1 = cache compiled programs and BEAM results
extern IntVar CONV_IM2COL; // largest conv window matrix (elements) built so conv is a matmul
extern IntVar SCHEDULE_CACHE;  // graphs whose schedules are remembered (0 = off)
extern IntVar BUILD_THREADS;   // threads building a realize's new kernels (0 = one a core)

}  // namespace tg::env
