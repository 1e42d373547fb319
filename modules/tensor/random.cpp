// Random numbers from THREEFRY UOps: element i of a draw is threefry(counter + i, key), so the values
// depend only on the seed and on how many numbers the device has drawn, never on the device itself.
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

struct RngState {
  std::mutex mu;
  uint64_t seed = 0;
  std::map<std::string, uint64_t> counters;  // per device: numbers drawn since the seed was set
};

RngState& rng() {
  static RngState s;
  return s;
}

// 64 random bits per element, as uint64.
Tensor draw_bits(int64_t n, const std::string& device) {
  uint64_t seed, start;
  {
    RngState& r = rng();
    std::lock_guard lock(r.mu);
    seed = r.seed;
    start = r.counters[device];
    r.counters[device] += static_cast<uint64_t>(n);
  }
  Tensor counter = Tensor::arange(n, {}, device).cast(dtypes::uint64) + start;
  return counter.threefry(Tensor(seed, dtypes::uint64, device).expand({n}));
}

struct FloatBits {
  int mantissa;
  DType uint;
  uint64_t one;  // the bit pattern of 1.0
};

FloatBits float_bits(DType d) {
  switch (d.scalar()) {
    case Scalar::FLOAT16:
      return {10, dtypes::uint16, 0x3C00};
    case Scalar::BFLOAT16:
      return {7, dtypes::uint16, 0x3F80};
    case Scalar::FLOAT32:
      return {23, dtypes::uint32, 0x3F800000};
    case Scalar::FLOAT64:
      return {52, dtypes::uint64, 0x3FF0000000000000};
    case Scalar::FP8E4M3:
      return {3, dtypes::uint8, 0x38};
    case Scalar::FP8E5M2:
      return {2, dtypes::uint8, 0x3C};
    default:
      throw DTypeError("rand", fmt::format("needs a float dtype, got {}", d.name()));
  }
}

void check_shape(const Shape& shape, std::string_view op) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(op, fmt::format("negative size in shape {}", detail::shape_str(shape)));
}

int64_t fan_in(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); i++) n *= shape[i];
  return n;
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  RngState& r = rng();
  std::lock_guard lock(r.mu);
  r.seed = seed;
  r.counters.clear();
}

// The top mantissa bits of the random word under the exponent of 1.0 give a float in [1, 2); minus one
// is uniform in [0, 1).
Tensor Tensor::rand(Shape shape, DType dtype, std::string_view device) {
  check_shape(shape, "rand");
  FloatBits fb = float_bits(dtype);
  std::string dev = device.empty() ? engine::default_device_name() : engine::canonical_device(device);
  int64_t n = detail::prod(shape);
  Tensor mant = (draw_bits(n, dev) >> (64 - fb.mantissa)).cast(fb.uint);
  Tensor one = (mant | static_cast<uint64_t>(fb.one)).bitcast(dtype);
  return (one - 1).reshape(shape).contiguous();
}

Tensor Tensor::randn(Shape shape, DType dtype, std::string_view device) {
  Shape two = shape;
  two.insert(two.begin(), 2);
  Tensor u = rand(two, dtypes::float32, device);
  // Box-Muller: cos(2 pi u0) * sqrt(-2 ln(1 - u1)) is standard normal
  Tensor u0 = u[0], u1 = u[1];
  return (u0 * (2 * std::numbers::pi)).cos().mul((1 - u1).log().mul(-2).sqrt()).cast(dtype);
}

Tensor Tensor::uniform(Shape shape, double low, double high, DType dtype, std::string_view device) {
  if (!(low < high)) throw ValueError("uniform", fmt::format("needs low < high, got {} and {}", low, high));
  return ((high - low) * rand(std::move(shape), dtypes::default_float, device)).cast(dtype) + low;
}

Tensor Tensor::randint(Shape shape, int64_t low, int64_t high, DType dtype, std::string_view device) {
  if (!dtype.is_int())
    throw DTypeError("randint", fmt::format("needs an integer dtype, got {}", dtype.name()));
  if (low >= high) throw ValueError("randint", fmt::format("needs low < high, got {} and {}", low, high));
  Tensor u = rand(std::move(shape), dtypes::default_float, device);
  return (u * static_cast<double>(high - low)).cast(dtype) + low;
}

Tensor Tensor::normal(Shape shape, double mean, double stddev, DType dtype, std::string_view device) {
  if (stddev < 0) throw ValueError("normal", fmt::format("needs std >= 0, got {}", stddev));
  return stddev * randn(std::move(shape), dtype, device) + mean;
}

Tensor Tensor::scaled_uniform(Shape shape, DType dtype, std::string_view device) {
  double scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, detail::prod(shape))));
  return uniform(std::move(shape), -1.0, 1.0, dtype, device) * scale;
}

Tensor Tensor::glorot_uniform(Shape shape, DType dtype, std::string_view device) {
  double fan =
      static_cast<double>((shape.empty() ? int64_t{1} : static_cast<int64_t>(shape[0])) + fan_in(shape));
  double bound = std::sqrt(6.0 / fan);
  return uniform(std::move(shape), -bound, bound, dtype, device);
}

Tensor Tensor::kaiming_uniform(Shape shape, double a, DType dtype, std::string_view device) {
  double bound = std::sqrt(6.0 / (1 + a * a) / static_cast<double>(fan_in(shape)));
  return uniform(std::move(shape), -bound, bound, dtype, device);
}

Tensor Tensor::kaiming_normal(Shape shape, double a, DType dtype, std::string_view device) {
  double stddev = std::sqrt(2.0 / (1 + a * a) / static_cast<double>(fan_in(shape)));
  return normal(std::move(shape), 0.0, stddev, dtype, device);
}

Tensor Tensor::random_bits(Shape shape, std::string_view device) {
  check_shape(shape, "random_bits");
  std::string dev = device.empty() ? engine::default_device_name() : engine::canonical_device(device);
  return draw_bits(detail::prod(shape), dev).reshape(shape);
}

Tensor Tensor::randperm(int64_t n, DType dtype, std::string_view device) {
  if (n < 0) throw ValueError("randperm", fmt::format("n must be non-negative, got {}", n));
  if (!dtype.is_int() && !dtype.is_float())
    throw DTypeError("randperm", fmt::format("needs a numeric dtype, got {}", dtype.name()));
  return random_bits({n}, device).argsort().cast(dtype);
}

// With replacement: inverse CDF, the number of cumulative weights at or below u * total. Without: the
// Gumbel-max trick, the top num_samples of log w - log(-log u), which draws classes one after another
// without putting them back.
Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  if (ndim() != 1 && ndim() != 2)
    throw ShapeError("multinomial",
                     fmt::format("needs 1-d or 2-d weights, got {}", detail::shape_str(shape())));
  if (!dtype().is_float())
    throw DTypeError("multinomial", fmt::format("needs float weights, got {}", dtype().name()));
  int64_t classes = shape(-1);
  if (num_samples <= 0)
    throw ValueError("multinomial", fmt::format("num_samples must be positive, got {}", num_samples));
  if (!replacement && num_samples > classes)
    throw ValueError("multinomial", fmt::format("cannot draw {} samples without replacement from {} classes",
                                                num_samples, classes));
  Tensor w = ndim() == 1 ? unsqueeze(0) : *this;
  int64_t rows = w.shape(0);
  Tensor out;
  if (replacement) {
    Tensor cdf = w.cast(dtypes::float32).cumsum(1);
    Tensor total = detail::shrink_axis(cdf, 1, classes - 1, classes).unsqueeze(1);  // (rows, 1, 1)
    Tensor u = rand({rows, num_samples, 1}, dtypes::float32, device()) * total;
    Tensor below = cdf.unsqueeze(1).le(u).sum(2);
    out = below.minimum(classes - 1).cast(dtypes::int32);
  } else {
    Tensor u = rand({rows, classes}, dtypes::float32, device());
    Tensor keys = w.cast(dtypes::float32).log() - (-(1 - u).log()).log();
    out = keys.topk(num_samples, 1).second;
  }
  return ndim() == 1 ? out.squeeze(0) : out;
}

Tensor Tensor::rand_like(std::optional<DType> dtype) const {
  return rand(shape(), dtype.value_or(this->dtype()), device());
}
Tensor Tensor::randn_like(std::optional<DType> dtype) const {
  return randn(shape(), dtype.value_or(this->dtype()), device());
}

namespace {

// threefry2x32 of the counters (c1 << 32 | c0) under key (key[1] << 32 | key[0]): the low words, then the high.
Tensor threefry_words(const Tensor& key, const Tensor& c0, const Tensor& c1) {
  auto u64 = [](const Tensor& t) { return t.cast(dtypes::uint64); };
  Tensor k = u64(key.shrink({{1, 2}})).lshift(32).bitwise_or(u64(key.shrink({{0, 1}})));
  Tensor x = u64(c1).lshift(32).bitwise_or(u64(c0)).threefry(k);
  return Tensor::cat({x.cast(dtypes::uint32), x.rshift(32).cast(dtypes::uint32)});
}

}  // namespace

Tensor Tensor::random_bits(const Tensor& key, const Tensor& counter, int64_t num) {
  for (const auto& [t, what] : {std::pair{&key, "key"}, std::pair{&counter, "counter"}})
    if (t->dtype() != dtypes::uint32 || t->shape() != Shape{2})
      throw ValueError("random_bits", fmt::format("{} must be 2 uint32 values (low, high), got {} {}", what,
                                                  t->dtype().name(), detail::shape_str(t->shape())));
  if (num < 0) throw ValueError("random_bits", fmt::format("num must be >= 0, got {}", num));
  constexpr int64_t kChunk = 0xffffffff;
  Tensor low = counter.shrink({{0, 1}}), high = counter.shrink({{1, 2}});
  std::vector<Tensor> bits;
  for (int64_t i = 0; i < num; i += kChunk) {
    int64_t n = std::min(num - i, kChunk), half = (n + 1) / 2;
    Tensor c_low = low + Tensor(i & 0xffffffff, dtypes::uint32, key.device());
    Tensor c_high = high + Tensor(i >> 32, dtypes::uint32, key.device()) + c_low.lt(low).cast(dtypes::uint32);
    Tensor next = threefry_words(key, c_low, c_high);
    Tensor counts = Tensor::arange(half, dtypes::uint32, key.device());
    bits.push_back(threefry_words(next, counts, counts + half).shrink({{0, n}}));
  }
  return bits.empty() ? counter.shrink({{0, 0}}) : Tensor::cat(bits);
}

}  // namespace tg
