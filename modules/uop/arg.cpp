// Typed UOp args: hashing, equality and tinygrad-style printing.
#include <bit>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/hash.hpp"
#include "uop/uop.hpp"

namespace tg {

namespace {

template <class... Fs>
struct Overload : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overload(Fs...) -> Overload<Fs...>;  // clang 14 lacks C++20 aggregate deduction

uint64_t double_bits(double d) { return std::isnan(d) ? 0x7FF8000000000000ull : std::bit_cast<uint64_t>(d); }

uint64_t hash_ints(const int64_t* p, size_t n) { return hash_bytes(p, n * sizeof(int64_t)); }

template <typename V>
std::string int_tuple(const V& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

template <typename P>
std::string pair_tuple(const P& v) {
  std::vector<std::string> parts;
  for (const auto& [x, y] : v) parts.push_back(fmt::format("({}, {})", x, y));
  return parts.size() == 1 ? fmt::format("({},)", parts[0]) : fmt::format("({})", fmt::join(parts, ", "));
}

uint64_t hash_sizes(const Shape& v) {
  uint64_t r = v.size();
  for (const sint& x : v) r = hash_combine(r, x.hash());
  return r;
}

}  // namespace

std::string_view axis_type_name(AxisType t) {
  static constexpr std::string_view kNames[] = {"GLOBAL", "LOCAL",  "LOOP",   "THREAD", "GROUP_REDUCE",
                                                "REDUCE", "UPCAST", "UNROLL", "OUTER"};
  return kNames[static_cast<int>(t)];
}

uint64_t hash_arg(const Arg& a) {
  uint64_t h = std::visit(
      Overload{[](std::monostate) -> uint64_t { return 0; }, [](bool b) -> uint64_t { return b ? 1 : 2; },
               [](int64_t v) -> uint64_t { return static_cast<uint64_t>(v); },
               [](double d) -> uint64_t { return double_bits(d); },
               [](const std::string& s) -> uint64_t { return hash_str(s); },
               [](const IntVec& v) -> uint64_t { return hash_ints(v.data(), v.size()); },
               [](const IntPairs& v) -> uint64_t {
                 uint64_t r = v.size();
                 for (auto [x, y] : v) r = hash_combine(hash_combine(r, static_cast<uint64_t>(x)), y);
                 return r;
               },
               [](const AxisArg& x) -> uint64_t {
                 return hash_combine(static_cast<uint64_t>(x.id), static_cast<uint64_t>(x.type));
               },
               [](const ReduceArg& x) -> uint64_t {
                 return hash_combine(static_cast<uint64_t>(x.op), hash_ints(x.axes.data(), x.axes.size()));
               },
               [](const VarArg& x) -> uint64_t {
                 return hash_combine(hash_combine(hash_str(x.name), static_cast<uint64_t>(x.min)),
                                     static_cast<uint64_t>(x.max));
               },
               [](Ops op) -> uint64_t { return static_cast<uint64_t>(op); },
               [](const OpaquePtr& p) -> uint64_t { return p ? p->hash() : 0; },
               [](const Shape& v) -> uint64_t { return hash_sizes(v); },
               [](const ShapePairs& v) -> uint64_t {
                 uint64_t r = v.size();
                 for (const auto& [x, y] : v) r = hash_combine(hash_combine(r, x.hash()), y.hash());
                 return r;
               }},
      a);
  return hash_combine(h, a.index());
}

bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) return double_bits(*x) == double_bits(std::get<double>(b));
  if (const OpaquePtr* x = std::get_if<OpaquePtr>(&a)) {
    const OpaquePtr& y = std::get<OpaquePtr>(b);
    return *x == y || (*x && y && (*x)->equals(*y));
  }
  return a == b;  // only reached for alternatives with a value operator==
}

static std::string float_str(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string arg_str(const Arg& a) {
  return std::visit(Overload{[](std::monostate) -> std::string { return "None"; },
                             [](bool b) -> std::string { return b ? "True" : "False"; },
                             [](int64_t v) -> std::string { return std::to_string(v); },
                             [](double d) -> std::string { return float_str(d); },
                             [](const std::string& s) -> std::string { return fmt::format("'{}'", s); },
                             [](const IntVec& v) -> std::string { return int_tuple(v); },
                             [](const IntPairs& v) -> std::string { return pair_tuple(v); },
                             [](const AxisArg& x) -> std::string {
                               return fmt::format("({}, AxisType.{})", x.id, axis_type_name(x.type));
                             },
                             [](const ReduceArg& x) -> std::string {
                               return fmt::format("(Ops.{}, {})", op_name(x.op), int_tuple(x.axes));
                             },
                             [](const VarArg& x) -> std::string {
                               return fmt::format("('{}', {}, {})", x.name, x.min, x.max);
                             },
                             [](Ops op) -> std::string { return fmt::format("Ops.{}", op_name(op)); },
                             [](const OpaquePtr& p) -> std::string { return p ? p->str() : "None"; },
                             [](const Shape& v) -> std::string { return int_tuple(v); },
                             [](const ShapePairs& v) -> std::string { return pair_tuple(v); }},
                    a);
}

}  // namespace tg
