// The INTERP executor. Each workgroup runs the program once with one lane per local thread in lock-step
// (so BARRIER needs no work); IF masks lanes, loop bounds must agree across lanes.
#include <algorithm>
#include <array>
#include <bit>

#include <fmt/format.h>

#include "base/error.hpp"
#include "codegen/opts.hpp"
#include "runtime/interp/program.hpp"
#include "runtime/interp/values.hpp"

namespace tg::runtime::interp {

namespace {

size_t width(DType d) { return d.is_ptr() ? 1 : d.scalar() == Scalar::VOID ? 0 : d.count(); }

class Executor {
 public:
  Executor(const Program& p, std::span<const Memory> bufs, std::span<const int64_t> vals,
           const sdk::LaunchDims& dims)
      : p_(p),
        dims_(dims),
        v_(p.insts.size()),
        range_end_(p.insts.size(), 0),
        exit_(p.insts.size(), {-1, 0}) {
    mem_.assign(bufs.begin(), bufs.end());
    nbufs_ = bufs.size();
    lanes_ = static_cast<size_t>(dims.local[0]) * dims.local[1] * dims.local[2];
    if (lanes_ == 0) fail(p.insts.size(), "a local size of 0");
    size_t var = 0;
    for (size_t i = 0; i < p.insts.size(); i++) {
      const Inst& in = p.insts[i];
      v_[i].resize(lanes_ * width(in.dtype));
      if (in.op == Ops::DEFINE_GLOBAL && static_cast<size_t>(in.arg_int()) >= bufs.size())
        fail(i, fmt::format("buffer argument {} not given ({} buffers)", in.arg_int(), bufs.size()));
      if (in.op == Ops::DEFINE_VAR) bind_var(i, var++, vals);
      if (in.op == Ops::END)
        for (size_t k = 1; k < in.src.size(); k++) {
          if (p.insts[in.src[k]].op != Ops::RANGE) fail(i, "END closes something that is not a RANGE");
          exit_[in.src[k]] = {static_cast<int32_t>(i), k};
        }
      if (in.op == Ops::ENDIF) exit_.at(in.src.at(0)) = {static_cast<int32_t>(i), 0};
    }
    if (var != vals.size()) fail(0, fmt::format("takes {} variable values, got {}", var, vals.size()));
    for (size_t i = 0; i < p.insts.size(); i++)
      if ((p.insts[i].op == Ops::RANGE || p.insts[i].op == Ops::IF) && exit_[i].first < 0)
        fail(i, "block is never closed");
  }

  void run() {
    for (uint32_t z = 0; z < dims_.global[2]; z++)
      for (uint32_t y = 0; y < dims_.global[1]; y++)
        for (uint32_t x = 0; x < dims_.global[0]; x++) run_group({x, y, z});
  }

 private:
  [[noreturn]] void fail(size_t i, std::string_view why) const {
    std::string op = i < p_.insts.size() ? std::string(op_name(p_.insts[i].op)) : "?";
    throw ValueError("INTERP", fmt::format("kernel {}, uop {} ({}): {}", p_.name, i, op, why));
  }

  void bind_var(size_t i, size_t k, std::span<const int64_t> vals) {
    if (k >= vals.size()) return;  // reported once all are counted
    const VarArg& a = std::get<VarArg>(p_.insts[i].arg);
    if (vals[k] < a.min || vals[k] > a.max)
      fail(i, fmt::format("variable {}={} is outside [{}, {}]", a.name, vals[k], a.min, a.max));
    std::fill(v_[i].begin(), v_[i].end(), cast(int_val(vals[k]), dtypes::int64, p_.insts[i].dtype));
  }

  const Val& at(size_t i, size_t lane, size_t k = 0) const {
    return v_[i][lane * width(p_.insts[i].dtype) + k];
  }
  bool active(size_t lane) const { return masks_.back()[lane]; }

  // Bytes of element `off` (count of them) of the memory a pointer refers to; throws when out of bounds.
  std::byte* address(size_t i, const Val& ptr, DType scalar, size_t count) {
    const Memory& m = mem_.at(static_cast<size_t>(ptr.mem));
    size_t sz = scalar.scalar_itemsize();
    if (ptr.off < 0 || (static_cast<size_t>(ptr.off) + count) * sz > m.nbytes)
      fail(i, fmt::format("access to element {} of a buffer of {} {} elements", ptr.off, m.nbytes / sz,
                          scalar.str()));
    return m.data + static_cast<size_t>(ptr.off) * sz;
  }

  void run_group(std::array<uint32_t, 3> gid) {
    mem_.resize(nbufs_);
    scratch_.clear();
    masks_.assign(1, std::vector<bool>(lanes_, true));
    size_t pc = 0;
    while (pc < p_.insts.size()) pc = step(pc, gid);
  }

  int32_t new_memory(size_t nbytes) {
    scratch_.emplace_back(nbytes);
    mem_.push_back({scratch_.back().data(), nbytes});
    return static_cast<int32_t>(mem_.size() - 1);
  }

  // Executes instruction i; returns the next pc.
  size_t step(size_t i, const std::array<uint32_t, 3>& gid) {
    const Inst& in = p_.insts[i];
    std::vector<Val>& out = v_[i];
    const size_t w = width(in.dtype);
    switch (in.op) {
      case Ops::SINK:
      case Ops::NOOP:
      case Ops::BARRIER:
      case Ops::DEFINE_VAR:
        return i + 1;
      case Ops::CONST:
        std::fill(out.begin(), out.end(), from_const(const_of(in), in.dtype.scalar_type()));
        return i + 1;
      case Ops::DEFINE_GLOBAL:
        for (Val& x : out) x = Val{}, x.mem = static_cast<int32_t>(in.arg_int());
        return i + 1;
      case Ops::DEFINE_REG:
      case Ops::DEFINE_LOCAL: {
        size_t nbytes =
            static_cast<size_t>(std::max<int64_t>(in.dtype.ptr_size(), 0)) * in.dtype.base().itemsize();
        int32_t shared = in.op == Ops::DEFINE_LOCAL ? new_memory(nbytes) : -1;
        for (size_t l = 0; l < lanes_; l++)
          out[l] = Val{}, out[l].mem = shared >= 0 ? shared : new_memory(nbytes);
        return i + 1;
      }
      case Ops::SPECIAL: {
        const std::string& name = std::get<std::string>(in.arg);
        int d = name.empty() ? -1 : name.back() - '0';
        for (size_t l = 0; l < lanes_; l++) {
          size_t local[3] = {l % dims_.local[0], l / dims_.local[0] % dims_.local[1],
                             l / dims_.local[0] / dims_.local[1]};
          int64_t v = name == "core_id"                             ? gid[0]
                      : name.starts_with("gidx") && d >= 0 && d < 3 ? gid[d]
                      : name.starts_with("lidx") && d >= 0 && d < 3 ? local[d]
                                                                    : -1;
          if (v < 0) fail(i, fmt::format("unknown launch index '{}'", name));
          out[l] = cast(int_val(v), dtypes::int64, in.dtype);
        }
        return i + 1;
      }
      case Ops::RANGE: {
        int64_t end = at(in.src[0], 0).i;
        for (size_t l = 1; l < lanes_; l++)
          if (at(in.src[0], l).i != end) fail(i, "loop bound differs between lanes");
        range_end_[i] = end;
        std::fill(out.begin(), out.end(), cast(int_val(0), dtypes::int64, in.dtype));
        if (end > 0) return i + 1;
        return finish_loops(static_cast<size_t>(exit_[i].first), exit_[i].second + 1);
      }
      case Ops::END:
        return finish_loops(i, 1);
      case Ops::IF: {
        std::vector<bool> m = masks_.back();
        bool any = false;
        for (size_t l = 0; l < lanes_; l++) any |= (m[l] = m[l] && at(in.src[0], l).i != 0);
        masks_.push_back(std::move(m));
        return any ? i + 1 : static_cast<size_t>(exit_[i].first);
      }
      case Ops::ENDIF:
        masks_.pop_back();
        return i + 1;
      case Ops::AFTER:
        out = v_[in.src[0]];
        return i + 1;
      case Ops::INDEX:
        for (size_t l = 0; l < lanes_; l++) {
          out[l] = at(in.src[0], l);
          out[l].off += at(in.src[1], l).i * p_.insts[in.src[0]].dtype.count();  // in scalar elements
          if (in.src.size() > 2) out[l].valid = out[l].valid && at(in.src[2], l).i != 0;
        }
        return i + 1;
      case Ops::LOAD:
        load(i, in, out, w);
        return i + 1;
      case Ops::STORE:
        store(i, in);
        return i + 1;
      case Ops::WMMA:
        wmma(i, in, out);
        return i + 1;
      default:
        compute(i, in, out, w);
        return i + 1;
    }
  }

  // WMMA: per warp (`threads` consecutive lanes) D = A * B + C over the tile, each operand gathered from the
  // lanes and D scattered back to them by the tensor core's bit layout; the products and their sum exact,
  // rounded once to the accumulator type.
  void wmma(size_t i, const Inst& in, std::vector<Val>& out) {
    sdk::TensorCore tc;
    try {
      tc = codegen::wmma_core(std::get<IntVec>(in.arg));
    } catch (const ValueError& e) {
      fail(i, e.what());
    }
    const int64_t m = tc.m, n = tc.n, k = tc.k, threads = tc.threads;
    DType acc = DType(static_cast<Scalar>(tc.acc));
    if (threads < 1 || lanes_ % static_cast<size_t>(threads) != 0)
      fail(i, fmt::format("a workgroup of {} lanes is not whole warps of {}", lanes_, threads));
    for (size_t l = 0; l < lanes_; l++)
      if (!active(l)) fail(i, "WMMA needs every lane of the warp");
    auto bits_of = [](int64_t v) { return std::countr_zero(static_cast<uint64_t>(v)); };
    // Element e of lane l of an operand with `rows` x `cols` tiles laid out by bits[0..]: its place in the
    // tile.
    auto place = [&](const uint8_t* bits, int64_t rows, int64_t cols, int64_t l, int64_t e) {
      int64_t at[2] = {0, 0};
      int nb[2] = {bits_of(rows), bits_of(cols)};
      for (int c = 0, j = 0; c < 2; c++)
        for (int b = 0; b < nb[c]; b++, j++) {
          int64_t src = bits[j];
          int64_t bit = src >= sdk::TensorCore::kElemBit ? e >> (src - sdk::TensorCore::kElemBit) : l >> src;
          at[c] |= (bit & 1) << b;
        }
      return at[0] * cols + at[1];
    };
    const uint8_t *la = tc.a_bits, *lb = tc.b_bits, *lc = tc.c_bits;
    const size_t t = static_cast<size_t>(threads);
    const int64_t ea = m * k / threads, eb = k * n / threads, ec = m * n / threads;
    for (size_t w0 = 0; w0 < lanes_; w0 += t) {
      std::vector<double> A(static_cast<size_t>(m * k)), B(static_cast<size_t>(k * n)),
          C(static_cast<size_t>(m * n));
      for (size_t l = 0; l < t; l++) {
        auto lane = static_cast<int64_t>(l);
        for (int64_t e = 0; e < ea; e++)
          A.at(static_cast<size_t>(place(la, m, k, lane, e))) = at(in.src[0], w0 + l, e).f;
        for (int64_t e = 0; e < eb; e++)
          B.at(static_cast<size_t>(place(lb, k, n, lane, e))) = at(in.src[1], w0 + l, e).f;
        for (int64_t e = 0; e < ec; e++)
          C.at(static_cast<size_t>(place(lc, m, n, lane, e))) = at(in.src[2], w0 + l, e).f;
      }
      for (size_t l = 0; l < t; l++)
        for (int64_t e = 0; e < ec; e++) {
          int64_t p = place(lc, m, n, static_cast<int64_t>(l), e), r = p / n, c = p % n;
          double d = C[static_cast<size_t>(p)];
          for (int64_t q = 0; q < k; q++)
            d += A[static_cast<size_t>(r * k + q)] * B[static_cast<size_t>(q * n + c)];
          out[(w0 + l) * static_cast<size_t>(ec) + static_cast<size_t>(e)] =
              cast(float_val(d), dtypes::float64, acc);
        }
    }
  }

  // END of loops [k..]: the first that still has iterations goes round again, else fall through.
  size_t finish_loops(size_t end_pc, size_t k) {
    const Inst& e = p_.insts[end_pc];
    for (; k < e.src.size(); k++) {
      size_t r = static_cast<size_t>(e.src[k]);
      std::vector<Val>& counter = v_[r];
      int64_t next = counter[0].i + 1;
      if (next < range_end_[r]) {
        for (Val& c : counter) c = cast(int_val(next), dtypes::int64, p_.insts[r].dtype);
        return r + 1;
      }
    }
    return end_pc + 1;
  }

  void load(size_t i, const Inst& in, std::vector<Val>& out, size_t w) {
    DType scalar = in.dtype.scalar_type();
    for (size_t l = 0; l < lanes_; l++) {
      const Val& ptr = at(in.src[0], l);
      bool on = active(l) && ptr.valid && (in.src.size() < 3 || at(in.src[2], l).i != 0);
      for (size_t k = 0; k < w; k++) {
        if (on)
          out[l * w + k] = load_scalar(address(i, ptr, scalar, w) + k * scalar.itemsize(), scalar);
        else
          out[l * w + k] =
              in.src.size() > 1 ? at(in.src[1], l, k) : from_const(ConstValue{int64_t{0}}, scalar);
      }
    }
  }

  void store(size_t i, const Inst& in) {
    DType vt = p_.insts[in.src[1]].dtype;
    DType scalar = vt.scalar_type();
    size_t w = width(vt);
    for (size_t l = 0; l < lanes_; l++) {
      const Val& ptr = at(in.src[0], l);
      if (!active(l) || !ptr.valid || (in.src.size() > 2 && at(in.src[2], l).i == 0)) continue;
      std::byte* p = address(i, ptr, scalar, w);
      for (size_t k = 0; k < w; k++) store_scalar(p + k * scalar.itemsize(), scalar, at(in.src[1], l, k));
    }
  }

  void compute(size_t i, const Inst& in, std::vector<Val>& out, size_t w) {
    auto src_t = [&](size_t s) { return p_.insts[in.src.at(s)].dtype; };
    for (size_t l = 0; l < lanes_; l++) {
      switch (in.op) {
        case Ops::CAST:
          for (size_t k = 0; k < w; k++)
            out[l * w + k] = cast(at(in.src[0], l, k), src_t(0).scalar_type(), in.dtype.scalar_type());
          break;
        case Ops::BITCAST: {
          DType from = src_t(0);
          if (from.itemsize() != in.dtype.itemsize()) fail(i, "BITCAST between sizes");
          std::vector<std::byte> bytes(from.itemsize());
          for (size_t k = 0; k < width(from); k++)
            store_scalar(bytes.data() + k * from.scalar_itemsize(), from.scalar_type(), at(in.src[0], l, k));
          for (size_t k = 0; k < w; k++)
            out[l * w + k] =
                load_scalar(bytes.data() + k * in.dtype.scalar_itemsize(), in.dtype.scalar_type());
          break;
        }
        case Ops::VECTORIZE:
          for (size_t k = 0; k < w; k++) out[l * w + k] = at(in.src.at(k), l);
          break;
        case Ops::GEP: {
          const IntVec& lanes = std::get<IntVec>(in.arg);
          for (size_t k = 0; k < w; k++) out[l * w + k] = at(in.src[0], l, static_cast<size_t>(lanes.at(k)));
          break;
        }
        default: {
          if (!group::ALU.contains(in.op)) fail(i, "INTERP cannot run this op");
          DType operand = src_t(in.op == Ops::WHERE ? 1 : 0).scalar_type();
          Val ops[3];
          for (size_t k = 0; k < w; k++) {
            for (size_t s = 0; s < in.src.size() && s < 3; s++)
              ops[s] = at(in.src[s], l, width(src_t(s)) > 1 ? k : 0);
            out[l * w + k] = alu(in.op, in.dtype.scalar_type(), operand, std::span(ops, in.src.size()));
          }
        }
      }
    }
  }

  static ConstValue const_of(const Inst& in) {
    return std::visit(
        [](const auto& a) -> ConstValue {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
            return a;
          else
            return int64_t{0};
        },
        in.arg);
  }

  const Program& p_;
  const sdk::LaunchDims dims_;
  size_t lanes_ = 1, nbufs_ = 0;
  std::vector<Memory> mem_;  // the kernel's buffers, then this workgroup's registers and locals
  std::vector<std::vector<std::byte>> scratch_;
  std::vector<std::vector<Val>> v_;  // per instruction: lanes x vector width
  std::vector<int64_t> range_end_;
  std::vector<std::pair<int32_t, size_t>> exit_;  // RANGE -> (its END, position there); IF -> (ENDIF, 0)
  std::vector<std::vector<bool>> masks_;
};

}  // namespace

void execute(const Program& p, std::span<const Memory> bufs, std::span<const int64_t> vals,
             const sdk::LaunchDims& dims) {
  Executor(p, bufs, vals, dims).run();
}

}  // namespace tg::runtime::interp
