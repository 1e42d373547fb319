// Text form of an INTERP program (program.hpp): write and read back, with structural checks.
#include "runtime/interp/program.hpp"

#include <bit>
#include <charconv>
#include <unordered_map>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::runtime::interp {

namespace {

constexpr std::string_view kMagic = "TGINTERP";
constexpr int kVersion = 1;

std::string str_token(std::string_view s) { return fmt::format("{}:{}", s.size(), s); }

std::string arg_token(const Arg& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return "-";
        else if constexpr (std::is_same_v<T, bool>)
          return fmt::format("b {}", v ? 1 : 0);
        else if constexpr (std::is_same_v<T, int64_t>)
          return fmt::format("i {}", v);
        else if constexpr (std::is_same_v<T, double>)
          return fmt::format("f {:x}", std::bit_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<T, std::string>)
          return "s " + str_token(v);
        else if constexpr (std::is_same_v<T, IntVec>)
          return fmt::format("v {} {}", v.size(), fmt::join(v, " "));
        else if constexpr (std::is_same_v<T, AxisArg>)
          return fmt::format("a {} {}", v.id, static_cast<int>(v.type));
        else if constexpr (std::is_same_v<T, VarArg>)
          return fmt::format("V {} {} {}", v.min, v.max, str_token(v.name));
        else if constexpr (std::is_same_v<T, Ops>)
          return fmt::format("o {}", op_name(v));
        else
          throw NotSupportedError("INTERP", "this uop argument kind cannot run on INTERP");
      },
      a);
}

class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}
  bool at_line_end() {
    while (pos_ < t_.size() && t_[pos_] == ' ') pos_++;
    return pos_ >= t_.size() || t_[pos_] == '\n';
  }
  void next_line() {
    if (!at_line_end()) fail("extra tokens at the end of a line");
    if (pos_ < t_.size()) pos_++;
  }
  bool done() const { return pos_ >= t_.size(); }
  std::string_view word() {
    if (at_line_end()) fail("line ends early");
    size_t start = pos_;
    while (pos_ < t_.size() && t_[pos_] != ' ' && t_[pos_] != '\n') pos_++;
    return t_.substr(start, pos_ - start);
  }
  template <typename T>
  T num(int base = 10) {
    std::string_view w = word();
    T v{};
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v, base);
    if (ec != std::errc() || end != w.data() + w.size()) fail(fmt::format("'{}' is not a number", w));
    return v;
  }
  std::string str() {
    at_line_end();
    size_t colon = t_.find(':', pos_);
    if (colon == std::string_view::npos) fail("string without length");
    size_t len = 0;
    auto [end, ec] = std::from_chars(t_.data() + pos_, t_.data() + colon, len);
    if (ec != std::errc() || end != t_.data() + colon || colon + 1 + len > t_.size())
      fail("bad string length");
    std::string s(t_.substr(colon + 1, len));
    pos_ = colon + 1 + len;
    return s;
  }
  [[noreturn]] void fail(std::string_view why) const {
    size_t line = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); i++) line += t_[i] == '\n';
    throw FormatError("INTERP", fmt::format("program text line {}: {}", line, why));
  }

 private:
  std::string_view t_;
  size_t pos_ = 0;
};

Ops op_from_name(Reader& r) {
  static const std::unordered_map<std::string_view, Ops> names = [] {
    std::unordered_map<std::string_view, Ops> m;
    for (int i = 0; i < kOpsCount; i++) m[op_name(static_cast<Ops>(i))] = static_cast<Ops>(i);
    return m;
  }();
  std::string_view w = r.word();
  auto it = names.find(w);
  if (it == names.end()) r.fail(fmt::format("unknown op '{}'", w));
  return it->second;
}

Arg read_arg(Reader& r) {
  std::string_view tag = r.word();
  if (tag == "-") return std::monostate{};
  if (tag == "b") return r.num<int>() != 0;
  if (tag == "i") return r.num<int64_t>();
  if (tag == "f") return std::bit_cast<double>(r.num<uint64_t>(16));
  if (tag == "s") return r.str();
  if (tag == "v") {
    IntVec v(r.num<size_t>());
    for (int64_t& x : v) x = r.num<int64_t>();
    return v;
  }
  if (tag == "a") {
    AxisArg a;
    a.id = r.num<int64_t>();
    a.type = static_cast<AxisType>(r.num<int>());
    return a;
  }
  if (tag == "V") {
    VarArg v;
    v.min = r.num<int64_t>(), v.max = r.num<int64_t>();
    v.name = r.str();
    return v;
  }
  if (tag == "o") return op_from_name(r);
  r.fail(fmt::format("unknown argument tag '{}'", tag));
}

}  // namespace

int64_t Inst::arg_int() const {
  if (const int64_t* v = std::get_if<int64_t>(&arg)) return *v;
  throw FormatError("INTERP", fmt::format("{} needs an integer argument", op_name(op)));
}

std::string serialize(std::string_view name, std::span<const UOp* const> uops) {
  std::unordered_map<const UOp*, size_t> at;
  std::string out = fmt::format("{} {} {}\n", kMagic, kVersion, str_token(name));
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp* u = uops[i];
    DType d = u->dtype();
    out += fmt::format("{} {} {} {} {} {}", op_name(u->op()), static_cast<int>(d.scalar()), d.count(),
                       static_cast<int>(d.addrspace()), d.ptr_size(), u->src().size());
    for (const UOpRef& s : u->src()) {
      auto it = at.find(s.get());
      if (it == at.end())
        throw ValueError("INTERP", fmt::format("uop {} uses a source that is not earlier in the program", i));
      out += fmt::format(" {}", it->second);
    }
    out += " " + arg_token(u->arg()) + "\n";
    at[u] = i;
  }
  return out;
}

Program parse(std::string_view text) {
  Reader r(text);
  Program p;
  if (r.word() != kMagic) r.fail("not an INTERP program");
  if (int v = r.num<int>(); v != kVersion)
    r.fail(fmt::format("format version {} (this build reads {})", v, kVersion));
  p.name = r.str();
  r.next_line();
  while (!r.done()) {
    Inst in;
    in.op = op_from_name(r);
    int scalar = r.num<int>();
    auto count = r.num<uint16_t>();
    int addr = r.num<int>();
    auto ptr_size = r.num<int64_t>();
    if (scalar < 0 || scalar >= kScalarCount || count == 0 || addr < 0 ||
        addr > static_cast<int>(AddrSpace::REG))
      r.fail("bad dtype");
    in.dtype = DType(static_cast<Scalar>(scalar), count);
    if (addr != 0) in.dtype = in.dtype.ptr(static_cast<AddrSpace>(addr), ptr_size);
    in.src.resize(r.num<size_t>());
    for (int32_t& s : in.src) {
      s = r.num<int32_t>();
      if (s < 0 || static_cast<size_t>(s) >= p.insts.size()) r.fail("source is not an earlier uop");
    }
    in.arg = read_arg(r);
    r.next_line();
    p.insts.push_back(std::move(in));
  }
  return p;
}

}  // namespace tg::runtime::interp
