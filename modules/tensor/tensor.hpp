#pragma once
// tg::Tensor, the lazy front end. Every op builds tensor-graph UOps (docs/ir-stages.md, stage 1) and
// returns at once; nothing runs until realize(), to_vector(), item(), printing or schedule().
//
// A Tensor is a shared handle, like a Python object: copies refer to the same tensor, so realize(),
// assign() and requires_grad_() are seen through every copy. Ops never change their inputs.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/dtype.hpp"
#include "tensor/realize.hpp"
#include "uop/uop.hpp"

namespace tg {

using Dims = std::vector<int>;

// A scalar argument. It remembers whether it was written as a bool, an integer or a floating-point
// number: that decides its dtype next to a tensor (a weak constant, so int_tensor * 2 stays int and
// half_tensor * 2.5 stays half).
class Number {
 public:
  template <typename T>
  requires std::is_arithmetic_v<T>
  constexpr Number(T v) {
    if constexpr (std::is_same_v<T, bool>)
      v_ = v;
    else if constexpr (std::is_integral_v<T>)
      v_ = static_cast<int64_t>(v);
    else
      v_ = static_cast<double>(v);
  }
  Number(const sint& s) : v_(static_cast<int64_t>(s)) {}  // throws ShapeError for a symbolic size
  const ConstValue& value() const { return v_; }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  double to_double() const;
  DType default_dtype() const;  // bool, dtypes::default_int or dtypes::default_float

 private:
  ConstValue v_;
};

// Axes to reduce over: one axis, a list (negative axes count from the end), or by default all of them.
class Axes {
 public:
  Axes() = default;
  Axes(int axis) : axes_(std::vector<int>{axis}) {}
  Axes(std::initializer_list<int> axes) : axes_(std::vector<int>(axes)) {}
  Axes(std::vector<int> axes) : axes_(std::move(axes)) {}
  bool all() const { return !axes_.has_value(); }
  const std::vector<int>& list() const { return *axes_; }

 private:
  std::optional<std::vector<int>> axes_;
};

// Python slice start:stop:step; empty fields take Python's defaults. Slice{} is ":".
struct Slice {
  std::optional<int64_t> start, stop, step;
};
struct NewAxis {};
inline constexpr NewAxis newaxis{};  // None in Python: inserts an axis of size 1
struct EllipsisIndex {};
inline constexpr EllipsisIndex ellipsis{};  // ... in Python

enum class PadMode { CONSTANT, REFLECT, REPLICATE, CIRCULAR };
enum class Rounding { TRUNC, FLOOR };
enum class Reduction { MEAN, SUM, NONE };

// ---- convolution and pooling arguments ----
// A kernel size, stride or dilation: one value for every spatial axis or one per axis; empty means
// the op's default (a pool's stride defaults to its kernel).
class Sizes {
 public:
  Sizes() = default;
  template <typename T>
  requires std::is_integral_v<T> Sizes(T v) : v_{static_cast<int64_t>(v)} {}
  Sizes(std::initializer_list<int64_t> v) : v_(v) {}
  Sizes(std::vector<int64_t> v) : v_(std::move(v)) {}
  bool empty() const { return v_.empty(); }
  std::vector<int64_t> resolve(int n, std::string_view op, std::string_view what) const;

 private:
  std::vector<int64_t> v_;  // one value applies to every axis
};

// Zero padding of the spatial axes: one size for every side, one per axis (both sides), a
// (before, after) pair per axis, or "same"/"valid" (convolutions only).
class Padding {
 public:
  template <typename T>
  requires std::is_integral_v<T> Padding(T v) : sizes_(v) {}
  Padding(std::initializer_list<int64_t> per_axis) : sizes_(per_axis) {}
  Padding(std::vector<std::pair<int64_t, int64_t>> pairs) : pairs_(std::move(pairs)), has_pairs_(true) {}
  Padding(const char* mode) : mode_(mode) {}
  Padding(std::string mode) : mode_(std::move(mode)) {}
  // (before, after) per spatial axis; "same" needs the kernel, dilation and stride.
  std::vector<std::pair<int64_t, int64_t>> resolve(int n, const std::vector<int64_t>& kernel,
                                                   const std::vector<int64_t>& dilation,
                                                   const std::vector<int64_t>& stride,
                                                   std::string_view op) const;

 private:
  Sizes sizes_;
  std::vector<std::pair<int64_t, int64_t>> pairs_;
  bool has_pairs_ = false;
  std::string mode_;
};

// How Tensor::from_blob uses the caller's memory.
struct BlobOptions {
  std::string_view device;            // empty: the default device
  std::shared_ptr<const void> owner;  // kept while the tensor's buffer needs the memory (see from_blob)
  bool read_only = false;             // in-place writes (assign) go to a private copy, never to the memory
};

class Index;
class Operand;

class Tensor {
 public:
  // ---- construction ----
  Tensor() = default;  // undefined: defined() is false and every op throws
  // A 0-d tensor: bool -> bool, integers -> int32, floats -> float32 unless dtype says otherwise.
  explicit Tensor(Number v, std::optional<DType> dtype = {}, std::string_view device = {});
  // From host data; an empty shape means (data.size(),). The element type sets the dtype (float -> float32,
  // double -> float64, ...) unless dtype is given, then values are converted as a C cast would.
  template <typename T>
  requires std::is_arithmetic_v<T>
  explicit Tensor(const std::vector<T>& data, Shape shape = {}, std::optional<DType> dtype = {},
                  std::string_view device = {});
  // Braced lists follow PyTorch: Tensor({1.0, 2.0}) is float32, Tensor({1, 2}) is int32.
  template <typename T>
  requires std::is_arithmetic_v<T> Tensor(std::initializer_list<T> data, Shape shape = {},
                                          std::optional<DType> dtype = {}, std::string_view device = {});
  // The row-major elements of shape and dtype at data, without a copy on a device that uses host memory in
  // place (CLANG, INTERP: the device's sdk::ForeignMemory): kernels read the caller's memory at each realize,
  // so a change the caller makes shows in the next one, and assign() writes into it unless read_only (then
  // the first write moves the tensor to a private copy). Any other device copies the memory at the first
  // realize that uses the tensor (or reads it); after that the memory is not read again.
  // Lifetime: the memory must stay valid and in place as long as the tensor's buffer uses it (in place: until
  // every tensor on it is gone; other devices: until that first realize), or pass opts.owner, kept exactly
  // that long (e.g. a shared_ptr that owns the memory, or a reference to a Python object).
  // data must be aligned to dtype's size (a misaligned pointer is refused, never copied quietly); null data,
  // a negative or symbolic size and a non-element dtype are errors too.
  static Tensor from_blob(void* data, Shape shape, DType dtype, BlobOptions opts = {});
  // Wraps a tensor-graph UOp computed on device; holds keep the buffers it reads alive.
  Tensor(UOpRef uop, std::string device, std::vector<engine::BufferHold> holds = {});

  static Tensor empty(Shape shape, DType dtype = dtypes::default_float, std::string_view device = {});
  static Tensor zeros(Shape shape, DType dtype = dtypes::default_float, std::string_view device = {});
  static Tensor ones(Shape shape, DType dtype = dtypes::default_float, std::string_view device = {});
  static Tensor full(Shape shape, Number fill, std::optional<DType> dtype = {}, std::string_view device = {});
  // [0, stop) or [start, stop) by step; int32 unless an argument is floating point (then float32).
  static Tensor arange(Number stop, std::optional<DType> dtype = {}, std::string_view device = {});
  static Tensor arange(Number start, Number stop, Number step = 1, std::optional<DType> dtype = {},
                       std::string_view device = {});
  static Tensor linspace(Number start, Number stop, int64_t steps, DType dtype = dtypes::default_float,
                         std::string_view device = {});
  static Tensor eye(int64_t n, std::optional<int64_t> m = {}, DType dtype = dtypes::default_float,
                    std::string_view device = {});
  // A 0-d tensor of a size. A symbolic size keeps its variables, so the value follows their binding: how
  // a size reaches arithmetic (mean over a symbolic axis) and a jitted function (see engine/jit.hpp).
  static Tensor from_size(const sint& size, DType dtype = dtypes::int32, std::string_view device = {});
  Tensor empty_like(std::optional<DType> dtype = {}) const;
  Tensor zeros_like(std::optional<DType> dtype = {}) const;
  Tensor ones_like(std::optional<DType> dtype = {}) const;
  Tensor full_like(Number fill, std::optional<DType> dtype = {}) const;

  // ---- random (threefry, counter based: the same numbers for a seed on every device) ----
  static void manual_seed(uint64_t seed);
  static Tensor rand(Shape shape, DType dtype = dtypes::default_float, std::string_view device = {});
  static Tensor randn(Shape shape, DType dtype = dtypes::default_float, std::string_view device = {});
  static Tensor randint(Shape shape, int64_t low, int64_t high, DType dtype = dtypes::int32,
                        std::string_view device = {});
  static Tensor uniform(Shape shape, double low = 0.0, double high = 1.0, DType dtype = dtypes::default_float,
                        std::string_view device = {});
  static Tensor normal(Shape shape, double mean = 0.0, double std = 1.0, DType dtype = dtypes::default_float,
                       std::string_view device = {});
  static Tensor scaled_uniform(Shape shape, DType dtype = dtypes::default_float,
                               std::string_view device = {});
  static Tensor glorot_uniform(Shape shape, DType dtype = dtypes::default_float,
                               std::string_view device = {});
  static Tensor kaiming_uniform(Shape shape, double a = 0.01, DType dtype = dtypes::default_float,
                                std::string_view device = {});
  static Tensor kaiming_normal(Shape shape, double a = 0.01, DType dtype = dtypes::default_float,
                               std::string_view device = {});
  Tensor rand_like(std::optional<DType> dtype = {}) const;
  Tensor randn_like(std::optional<DType> dtype = {}) const;
  // 64 random bits per element (uint64), the words rand() is made from.
  static Tensor random_bits(Shape shape, std::string_view device = {});
  // tinygrad's random_bits(key, counter, num): num uint32 values of threefry2x32 under key (uint32 (low,
  // high)) from counter (uint32 (low, high)) on, bit for bit as tinygrad's.
  static Tensor random_bits(const Tensor& key, const Tensor& counter, int64_t num);
  // A random permutation of 0..n-1 (the order of n random keys).
  static Tensor randperm(int64_t n, DType dtype = dtypes::int32, std::string_view device = {});
  // num_samples class indices (int32) per row of this 1-d or 2-d tensor of non-negative weights; without
  // replacement a row gives each class at most once (needs num_samples <= classes).
  Tensor multinomial(int64_t num_samples = 1, bool replacement = false) const;

  // ---- properties ----
  bool defined() const { return impl_ != nullptr; }
  const UOpRef& uop() const;
  const Shape& shape() const;
  sint shape(int dim) const;  // negative dims count from the end
  int ndim() const { return static_cast<int>(shape().size()); }
  sint numel() const;
  // Whether this is a from_size tensor of a variable size, and the size it holds (ValueError otherwise).
  bool holds_size() const;
  sint as_size() const;
  DType dtype() const { return uop()->dtype(); }
  const std::string& device() const;
  const std::vector<engine::BufferHold>& holds() const;
  // A result of ops requires grad when a floating-point input does. requires_grad_() makes a leaf: a lazy
  // tensor is realized first, so every leaf owns its buffer (equal lazy graphs are one shared node).
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const;  // not computed from a tensor that requires grad (PyTorch's is_leaf)
  Tensor grad() const;   // undefined until a gradient is stored; backward() accumulates into it
  void set_grad(const Tensor& g);
  friend struct Autograd;  // tensor.cpp: requires-grad bookkeeping behind backward()

  // ---- realization ----
  Tensor& realize();
  static void realize_all(std::vector<Tensor> tensors);
  // Side effects (assigns) to realize with the next realize on this thread, in the same schedule as what it
  // realizes: a training forward's BatchNorm statistics are then computed from the activations the loss
  // computes anyway, not in a pass of their own. The scheduler still orders them before any assign in that
  // schedule that overwrites what they read (an optimizer step). A realize that throws drops them.
  static void realize_later(std::vector<Tensor> tensors);
  // Row-major values converted from dtype() as a C cast would. T: bool, (u)int8..64, float, double.
  template <typename T>
  std::vector<T> to_vector() const;
  template <typename T>
  T item() const;  // the single element; ValueError unless numel() == 1
  std::vector<std::byte> to_bytes() const;
  // Realizes the row-major elements and returns them where the host reads them without a copy, with a hold
  // that keeps them (realize.hpp's host_view: they stay as they are while it lives, later writes to the
  // tensor go to new memory); empty when the device does not map its buffers to host memory.
  engine::HostView host_view() const;
  std::vector<engine::ScheduleItemView> schedule() const;
  std::string str() const;  // realizes and formats the values

  // ---- dtype ----
  Tensor cast(DType dtype) const;
  Tensor bitcast(DType dtype) const;  // same bits; a different itemsize rescales the last axis

  // ---- elementwise (binary ops broadcast and promote dtypes) ----
  Tensor add(const Operand& x, bool reverse = false) const;
  Tensor sub(const Operand& x, bool reverse = false) const;
  Tensor mul(const Operand& x, bool reverse = false) const;
  // True division (ints give float32); with a rounding mode, ints stay ints.
  Tensor div(const Operand& x, std::optional<Rounding> mode = {}, bool reverse = false) const;
  Tensor mod(const Operand& x, bool reverse = false) const;  // Python %: sign of the divisor
  Tensor fmod(const Operand& x) const;                       // C %: sign of the dividend
  Tensor pow(const Operand& x, bool reverse = false) const;
  Tensor maximum(const Operand& x) const;
  Tensor minimum(const Operand& x) const;
  Tensor where(const Operand& x, const Operand& y) const;  // this ? x : y
  Tensor clamp(std::optional<Number> min, std::optional<Number> max = {}) const;
  Tensor clamp(const Tensor& min, const Tensor& max) const;
  Tensor lt(const Operand& x) const;
  Tensor le(const Operand& x) const;
  Tensor gt(const Operand& x) const;
  Tensor ge(const Operand& x) const;
  Tensor eq(const Operand& x) const;
  Tensor ne(const Operand& x) const;
  Tensor logical_not() const;
  Tensor logical_and(const Operand& x) const;
  Tensor logical_or(const Operand& x) const;
  Tensor logical_xor(const Operand& x) const;
  Tensor bitwise_not() const;
  Tensor bitwise_and(const Operand& x, bool reverse = false) const;
  Tensor bitwise_or(const Operand& x, bool reverse = false) const;
  Tensor bitwise_xor(const Operand& x, bool reverse = false) const;
  Tensor lshift(const Operand& x, bool reverse = false) const;
  Tensor rshift(const Operand& x, bool reverse = false) const;
  Tensor isnan() const;
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;
  Tensor isfinite() const;
  Tensor logaddexp(const Operand& x) const;
  Tensor threefry(const Tensor& key) const;  // counter-based random bits of uint64 values

  Tensor neg() const;
  Tensor reciprocal() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor leaky_relu(double neg_slope = 0.01) const;
  // approximate "tanh" (the default, as tinygrad) or "none": x * Phi(x) with erf (PyTorch's default).
  Tensor gelu(std::string_view approximate = "tanh") const;
  Tensor silu() const;
  Tensor softplus(double beta = 1.0) const;
  Tensor logsigmoid() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even

  // ---- more math, composed from the ops above. asin/acos/atan and erf use polynomials with an absolute
  // error under 2e-7: float32 accuracy in every float dtype. ----
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor erf() const;
  Tensor log10() const;
  Tensor copysign(const Operand& sign) const;  // |this| with the sign bit of sign (-0 and NaN signs too)
  // this + weight * (end - this), computed from the nearer end as PyTorch does (exact at weight 0 and 1).
  Tensor lerp(const Operand& end, const Operand& weight) const;

  // ---- activations (PyTorch's definitions and defaults) ----
  Tensor elu(double alpha = 1.0) const;
  Tensor celu(double alpha = 1.0) const;
  Tensor selu() const;
  Tensor mish() const;
  Tensor hardsigmoid() const;  // relu6(x + 3) / 6
  Tensor hardswish() const;    // x * relu6(x + 3) / 6
  Tensor hardtanh(double min_val = -1.0, double max_val = 1.0) const;
  Tensor relu6() const;
  Tensor softsign() const;    // x / (1 + |x|)
  Tensor quick_gelu() const;  // x * sigmoid(1.702 x)
  Tensor softmin(int axis = -1) const;

  // ---- masks ----
  // value where mask (bool, broadcast to this shape) is true; keeps this dtype.
  Tensor masked_fill(const Tensor& mask, const Operand& value) const;
  // The lower (upper) triangle of the last two axes: elements with col - row <= (>=) diagonal; zero
  // elsewhere.
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  // ---- reduce ----
  Tensor sum(Axes axis = {}, bool keepdim = false, std::optional<DType> dtype = {}) const;
  Tensor prod(Axes axis = {}, bool keepdim = false, std::optional<DType> dtype = {}) const;
  Tensor max(Axes axis = {}, bool keepdim = false) const;
  Tensor min(Axes axis = {}, bool keepdim = false) const;
  Tensor mean(Axes axis = {}, bool keepdim = false) const;
  Tensor var(Axes axis = {}, bool keepdim = false, double correction = 1) const;
  Tensor std(Axes axis = {}, bool keepdim = false, double correction = 1) const;
  Tensor any(Axes axis = {}, bool keepdim = false) const;
  Tensor all(Axes axis = {}, bool keepdim = false) const;
  Tensor logsumexp(Axes axis = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int> axis = {}, bool keepdim = false) const;  // int32, first maximum
  Tensor argmin(std::optional<int> axis = {}, bool keepdim = false) const;
  Tensor cumsum(int axis = 0) const;
  Tensor cumprod(int axis = 0) const;
  // Running maximum (minimum) and its int32 index: the last position holding it, as PyTorch.
  std::pair<Tensor, Tensor> cummax(int axis = 0) const;
  std::pair<Tensor, Tensor> cummin(int axis = 0) const;
  Tensor logcumsumexp(int axis = 0) const;

  // ---- statistics ----
  std::pair<Tensor, Tensor> std_mean(Axes axis = {}, bool keepdim = false, double correction = 1) const;
  std::pair<Tensor, Tensor> var_mean(Axes axis = {}, bool keepdim = false, double correction = 1) const;
  // |this - other| <= atol + rtol |other| elementwise (equal infinities are close; NaNs only with equal_nan).
  Tensor isclose(const Operand& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool allclose(const Operand& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  // this / max(||this||_p along dim, eps) (F.normalize).
  Tensor normalize(double p = 2.0, int dim = 1, double eps = 1e-12) const;

  // ---- sorting: a rank per element (how many elements come before it), then a one-hot gather by rank.
  // Stable: equal values keep their order, so indices match PyTorch's stable sort; NaN sorts as the largest
  // value. ----
  std::pair<Tensor, Tensor> sort(int dim = -1, bool descending = false) const;  // values, int32 indices
  Tensor argsort(int dim = -1, bool descending = false) const;
  // The k largest (smallest) along dim, in sorted order, with int32 indices.
  std::pair<Tensor, Tensor> topk(int64_t k, int dim = -1, bool largest = true) const;

  // ---- movement (zero copy) ----
  Tensor reshape(Shape shape) const;  // one -1 is inferred
  Tensor expand(Shape shape) const;   // -1 keeps a size; new leading axes may be added
  Tensor permute(Dims order) const;
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> padding, PadMode mode = PadMode::CONSTANT,
             Number value = 0) const;      // (before, after) per axis; negative pads crop
  Tensor shrink(ShapePairs bounds) const;  // [begin, end) per axis
  Tensor flip(Dims axes) const;
  Tensor transpose(int dim0 = 1, int dim1 = 0) const;
  Tensor flatten(int start_dim = 0, int end_dim = -1) const;
  Tensor unflatten(int dim, Shape sizes) const;
  Tensor squeeze(std::optional<int> dim = {}) const;
  Tensor unsqueeze(int dim) const;
  Tensor repeat(Shape repeats) const;
  static Tensor cat(std::vector<Tensor> tensors, int dim = 0);
  static Tensor stack(std::vector<Tensor> tensors, int dim = 0);
  std::vector<Tensor> split(int64_t size, int dim = 0) const;
  std::vector<Tensor> split(Shape sizes, int dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int dim = 0) const;
  // Elements shifted by shifts[i] along dims[i], wrapping around; without dims, over the flattened tensor.
  Tensor roll(std::vector<int64_t> shifts, Dims dims = {}) const;
  // 1-d: a square matrix with this on a diagonal; 2-d: that diagonal (above the main one for diagonal > 0).
  Tensor diag(int64_t diagonal = 0) const;
  // The diagonal of the dim1 x dim2 planes, moved to a new last axis.
  Tensor diagonal(int64_t offset = 0, int dim1 = 0, int dim2 = 1) const;
  // Coordinate grids of 1-d tensors; indexing "ij" (matrix) or "xy" (Cartesian: the first two axes swapped).
  static std::vector<Tensor> meshgrid(std::vector<Tensor> tensors, std::string_view indexing = "ij");
  // Each element repeats times in a row along dim (without dim: of the flattened tensor).
  Tensor repeat_interleave(int64_t repeats, std::optional<int> dim = {}) const;
  // Windows of size elements every step along dim: that axis becomes the window count, a new last axis the
  // window (PyTorch's Tensor.unfold).
  Tensor unfold(int dim, int64_t size, int64_t step) const;
  // Zero padding at the end (shrinking from the start) of each axis to shape; -1 keeps an axis.
  Tensor pad_to(Shape shape) const;
  Tensor shrink_to(Shape shape) const;
  // einops rearrange: "b c (h w) -> b (h w) c" splits, reorders and merges named axes; sizes name the parts
  // of a split that cannot be inferred. "..." stands for the axes the pattern does not name, "1" for a unit
  // axis.
  Tensor rearrange(std::string_view pattern, std::vector<std::pair<std::string, int64_t>> sizes = {}) const;
  Tensor contiguous() const;
  // The identity, whose gradient is made contiguous (realized) before it flows on (tinygrad's).
  Tensor contiguous_backward() const;
  Tensor to(std::string_view device) const;
  // ---- several devices (multi.cpp) ----
  // This tensor on every device of devices: split along axis into equal parts, or a full copy on each
  // without an axis. Ops on the result run per device; a reduction over the split axis combines the parts
  // by an all-reduce across devices. device() names every device, joined by ','; to(one device) gathers.
  Tensor shard(const std::vector<std::string>& devices, std::optional<int> axis = {}) const;
  // shard in place (model parameters): every copy of this handle sees the sharded tensor. Returns *this.
  Tensor& shard_(const std::vector<std::string>& devices, std::optional<int> axis = {});

  // ---- indexing ----
  Tensor operator[](const Index& i) const;
  Tensor operator[](std::vector<Index> indices) const;
  Tensor index(std::vector<Index> indices) const;
  Tensor gather(int dim, const Tensor& index) const;
  Tensor one_hot(int64_t num_classes) const;  // int32, a new last axis
  // A copy with this[.., index[i][j].., ..] = src[i][j] (index along dim). Which of several writes to one
  // element wins is unspecified, as in PyTorch.
  Tensor scatter(int dim, const Tensor& index, const Operand& src) const;
  // Combines src into the elements index names with reduce "sum", "prod", "mean", "amax" or "amin"; with
  // include_self the original values take part, else only elements no index names keep them.
  Tensor scatter_reduce(int dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                        bool include_self = true) const;
  // Data-dependent sizes: these realize the count of nonzero (selected) elements first, on the host, then
  // build a lazy graph of that size.
  Tensor nonzero() const;                          // (count, ndim) int32 coordinates in row-major order
  Tensor masked_select(const Tensor& mask) const;  // 1-d, the elements where mask (broadcast) is true

  // ---- linear algebra (reshape + expand + mul + sum; there is no matmul op) ----
  Tensor dot(const Tensor& w, std::optional<DType> dtype = {}) const;
  Tensor matmul(const Tensor& w, std::optional<DType> dtype = {}) const;
  // This weight (..., k, n) realized in the layout matmul reads a weight in on its device (a CPU packs it in
  // strips of columns; elsewhere it is only made contiguous), viewed back as (..., k, n): a constant weight
  // kept like this is not packed again by each product that uses it (an ONNX initializer, a served model's
  // layers). Values and results are unchanged.
  Tensor packed_for_matmul() const;
  static Tensor einsum(std::string_view formula, std::vector<Tensor> operands,
                       std::optional<DType> dtype = {});
  // dtype: the product's accumulation and result dtype, as dot's.
  Tensor linear(const Tensor& weight, const Tensor& bias = Tensor(), std::optional<DType> dtype = {}) const;
  // Reduced QR of the last two axes (m, n): Q (m, k) with orthonormal columns and upper-triangular R (k, n),
  // k = min(m, n), with LAPACK's signs (Householder reflections), as torch.linalg.qr.
  std::pair<Tensor, Tensor> qr() const;
  // Reduced SVD of the last two axes: U (m, k), S (k) descending, Vh (k, n), by one-sided Jacobi rotations
  // run to convergence (the sweep count is read back from the device). Singular vectors are unique only up
  // to sign (and rotation within equal singular values); the signs may differ from LAPACK's.
  std::tuple<Tensor, Tensor, Tensor> svd() const;

  // ---- nn functional ----
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;
  Tensor layernorm(Axes axis = -1, double eps = 1e-5) const;
  Tensor sparse_categorical_crossentropy(const Tensor& y, int64_t ignore_index = -1,
                                         double label_smoothing = 0.0,
                                         Reduction reduction = Reduction::MEAN) const;
  // y holds class probabilities (same shape) or class indices (shape without the class axis).
  Tensor cross_entropy(const Tensor& y, Reduction reduction = Reduction::MEAN,
                       double label_smoothing = 0.0) const;
  Tensor binary_crossentropy(const Tensor& y, Reduction reduction = Reduction::MEAN) const;
  Tensor binary_crossentropy_logits(const Tensor& y, Reduction reduction = Reduction::MEAN) const;

  // ---- convolution and pooling (movement ops + multiply-reduce, so autograd covers them) ----
  // x (N, Cin, *spatial) or (Cin, *spatial), weight (Cout, Cin/groups, *kernel); PyTorch argument order.
  Tensor conv2d(const Tensor& weight, const Tensor& bias = Tensor(), Sizes stride = 1, Padding padding = 0,
                Sizes dilation = 1, int64_t groups = 1) const;
  Tensor conv1d(const Tensor& weight, const Tensor& bias = Tensor(), Sizes stride = 1, Padding padding = 0,
                Sizes dilation = 1, int64_t groups = 1) const;
  // Any number of spatial axes (weight.ndim() - 2).
  Tensor conv(const Tensor& weight, const Tensor& bias = Tensor(), Sizes stride = 1, Padding padding = 0,
              Sizes dilation = 1, int64_t groups = 1, std::string_view op = "conv") const;
  // weight (Cin, Cout/groups, *kernel); the gradient of conv with respect to its input.
  Tensor conv_transpose2d(const Tensor& weight, const Tensor& bias = Tensor(), Sizes stride = 1,
                          Sizes padding = 0, Sizes output_padding = 0, int64_t groups = 1,
                          Sizes dilation = 1) const;
  Tensor conv_transpose(const Tensor& weight, const Tensor& bias = Tensor(), Sizes stride = 1,
                        Sizes padding = 0, Sizes output_padding = 0, int64_t groups = 1, Sizes dilation = 1,
                        std::string_view op = "conv_transpose") const;
  // Windows over the last kernel.size() axes: (..., *in) -> (..., *out, *kernel). No padding.
  Tensor pool(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& dilation, std::string_view op = "pool") const;
  Tensor max_pool2d(Sizes kernel, Sizes stride = {}, Padding padding = 0, Sizes dilation = 1,
                    bool ceil_mode = false) const;
  Tensor avg_pool2d(Sizes kernel, Sizes stride = {}, Padding padding = 0, bool ceil_mode = false,
                    bool count_include_pad = true) const;
  Tensor max_pool1d(Sizes kernel, Sizes stride = {}, Padding padding = 0, Sizes dilation = 1,
                    bool ceil_mode = false) const;
  Tensor avg_pool1d(Sizes kernel, Sizes stride = {}, Padding padding = 0, bool ceil_mode = false,
                    bool count_include_pad = true) const;
  // Resizes the last size.size() axes (F.interpolate with a size): mode "nearest", "linear" (any number of
  // axes), "bilinear", "bicubic" (2), "trilinear" (3); align_corners as PyTorch. Computed in at least
  // float32.
  Tensor interpolate(Shape size, std::string_view mode = "linear", bool align_corners = false) const;
  // The inverse of max_pool2d with return_indices: each value goes to the flat position (within its H x W
  // plane) indices names, the rest is zero. output_size (its last two entries) may pick a size within a
  // stride of the default (H - 1) * stride - 2 * padding + kernel.
  Tensor max_unpool2d(const Tensor& indices, Sizes kernel, Sizes stride = {}, Sizes padding = 0,
                      Shape output_size = {}) const;
  // softmax(q k^T / sqrt(E) + mask) v. A bool mask keeps where true; a float mask is added.
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value, const Tensor& mask = Tensor(),
                                      bool causal = false, double dropout_p = 0.0) const;
  // Zeroes elements with probability p and scales the rest by 1/(1-p); the identity unless training.
  Tensor dropout(double p = 0.5, bool training = true) const;
  // (x - mean) * invstd * weight + bias with the 1-d statistics along axis; weight/bias may be undefined.
  Tensor batchnorm(const Tensor& weight, const Tensor& bias, const Tensor& mean, const Tensor& invstd,
                   int axis = 1) const;

  // ---- graph and in-place ----
  Tensor detach() const;  // the same values, cut from the graph: no gradient flows through it
  // Accumulates d(this)/d(leaf) * gradient into leaf.grad() for every leaf with requires_grad that this
  // depends on, as lazy tensors. Without a gradient this must have one element (a loss). Works after this
  // or a leaf was realized or assigned: gradients are keyed by the graph the tensor was built from.
  Tensor& backward(const Tensor& gradient = Tensor());
  // d(this)/d(target) * grad_output for each target (tensors this was computed from; requires_grad is not
  // needed). Throws ValueError for a target this does not depend on (only through detach() counts as not).
  std::vector<Tensor> gradient(std::vector<Tensor> targets, const Tensor& grad_output = Tensor()) const;
  // Makes this tensor write x (broadcast, same dtype) into its buffer when realized; returns *this.
  Tensor& assign(const Operand& x);
  // Makes this tensor refer to x's data (tinygrad's replace; nothing is written): same shape and dtype, and x
  // must not require grad. Every copy of this handle sees it. A lazy x is realized now, into a buffer of its
  // own: equal lazy graphs are one node, so tensors replaced by them (ones_like(p).contiguous() for every
  // parameter) would share one buffer and an assign to one would change the others. Returns *this.
  Tensor& replace(const Tensor& x);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;

  Impl& impl() const;
  void init_from_host(std::span<const std::byte> bytes, DType src, Shape shape, std::optional<DType> dtype,
                      std::string_view device);
};

// The dtype of a C++ element type: same kind, signedness and width.
template <typename T>
consteval DType dtype_of() {
  static_assert(std::is_arithmetic_v<T> && sizeof(T) <= 8 && !std::is_same_v<T, long double>);
  if constexpr (std::is_same_v<T, bool>)
    return dtypes::bool_;
  else if constexpr (std::is_floating_point_v<T>)
    return sizeof(T) == 4 ? dtypes::float32 : dtypes::float64;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1   ? dtypes::int8
           : sizeof(T) == 2 ? dtypes::int16
           : sizeof(T) == 4 ? dtypes::int32
                            : dtypes::int64;
  else
    return sizeof(T) == 1   ? dtypes::uint8
           : sizeof(T) == 2 ? dtypes::uint16
           : sizeof(T) == 4 ? dtypes::uint32
                            : dtypes::uint64;
}

// Either a tensor or a plain number, for the right-hand side of binary ops.
class Operand {
 public:
  Operand(const Tensor& t) : v_(t) {}
  Operand(Number n) : v_(n) {}
  template <typename T>
  requires std::is_arithmetic_v<T> Operand(T v) : v_(Number(v)) {}
  const Tensor* tensor() const { return std::get_if<Tensor>(&v_); }
  const Number* number() const { return std::get_if<Number>(&v_); }

 private:
  std::variant<Tensor, Number> v_;
};

// One entry of an index: an integer, a Slice, newaxis, ellipsis or an integer tensor.
class Index {
 public:
  template <typename T>
  requires std::is_integral_v<T> Index(T i) : v_(static_cast<int64_t>(i)) {}
  Index(Slice s) : v_(s) {}
  Index(NewAxis n) : v_(n) {}
  Index(EllipsisIndex e) : v_(e) {}
  Index(Tensor t) : v_(std::move(t)) {}
  const auto& value() const { return v_; }

 private:
  std::variant<int64_t, Slice, NewAxis, EllipsisIndex, Tensor> v_;
};

// ---- operators ----
#define TG_TENSOR_BINARY(OP, FN)                                                   \
  inline Tensor operator OP(const Tensor& a, const Operand& b) { return a.FN(b); } \
  inline Tensor operator OP(Number a, const Tensor& b) { return b.FN(a, true); }
TG_TENSOR_BINARY(+, add)
TG_TENSOR_BINARY(-, sub)
TG_TENSOR_BINARY(*, mul)
TG_TENSOR_BINARY(%, mod)
TG_TENSOR_BINARY(&, bitwise_and)
TG_TENSOR_BINARY(|, bitwise_or)
TG_TENSOR_BINARY(^, bitwise_xor)
TG_TENSOR_BINARY(<<, lshift)
TG_TENSOR_BINARY(>>, rshift)
#undef TG_TENSOR_BINARY
inline Tensor operator/(const Tensor& a, const Operand& b) { return a.div(b); }
inline Tensor operator/(Number a, const Tensor& b) { return b.div(a, std::nullopt, true); }
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator~(const Tensor& a) { return a.bitwise_not(); }
inline Tensor operator<(const Tensor& a, const Operand& b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, const Operand& b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, const Operand& b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, const Operand& b) { return a.ge(b); }
inline Tensor operator==(const Tensor& a, const Operand& b) { return a.eq(b); }
// exact Tensor/Tensor overloads keep C++20 from also trying the reversed == and != candidates
inline Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor operator!=(const Tensor& a, const Operand& b) { return a.ne(b); }
inline Tensor operator<(Number a, const Tensor& b) { return b.gt(a); }
inline Tensor operator<=(Number a, const Tensor& b) { return b.ge(a); }
inline Tensor operator>(Number a, const Tensor& b) { return b.lt(a); }
inline Tensor operator>=(Number a, const Tensor& b) { return b.le(a); }
inline Tensor operator==(Number a, const Tensor& b) { return b.eq(a); }
inline Tensor operator!=(Number a, const Tensor& b) { return b.ne(a); }

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- templates ----
template <typename T>
requires std::is_arithmetic_v<T> Tensor::Tensor(const std::vector<T>& data, Shape shape,
                                                std::optional<DType> dtype, std::string_view device) {
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed
    std::vector<uint8_t> bytes(data.begin(), data.end());
    init_from_host(std::as_bytes(std::span(bytes)), dtypes::bool_, std::move(shape), dtype, device);
  } else {
    init_from_host(std::as_bytes(std::span(data)), dtype_of<T>(), std::move(shape), dtype, device);
  }
}

template <typename T>
requires std::is_arithmetic_v<T> Tensor::Tensor(std::initializer_list<T> data, Shape shape,
                                                std::optional<DType> dtype, std::string_view device)
    : Tensor(std::vector<T>(data), std::move(shape),
             dtype ? dtype : std::optional<DType>(Number(T{}).default_dtype()), device) {}

}  // namespace tg
