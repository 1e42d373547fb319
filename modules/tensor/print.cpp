// Printing: realizes the tensor and formats it like NumPy, eliding the middle of long axes.
#include <algorithm>

#include <fmt/format.h>

#include "tensor/host_value.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

constexpr int64_t kSummarizeOver = 1000;  // elements; larger tensors show kEdge items per axis end
constexpr int64_t kEdge = 3;

std::string format_element(DType d, ConstValue v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v))
    return d.scalar() == Scalar::UINT64 ? fmt::format("{}", static_cast<uint64_t>(*i))
                                        : fmt::format("{}", *i);
  double x = std::get<double>(v);
  std::string s = d == dtypes::float64 ? fmt::format("{}", x) : fmt::format("{}", static_cast<float>(x));
  if (s.find_first_of(".enia") == std::string::npos) s += ".";  // 1 -> "1." marks a float, as NumPy does
  return s;
}

struct Printer {
  const Shape& shape;
  DType dtype;
  const std::vector<std::byte>& bytes;
  bool summarize;
  size_t indent;
  std::string out;

  void element(int64_t flat) {
    out += format_element(dtype, host::load(dtype, bytes.data() + flat * dtype.itemsize()));
  }

  void axis(size_t level, int64_t offset, int64_t stride) {
    if (level == shape.size()) return element(offset);
    int64_t n = shape[level], inner = stride / std::max<int64_t>(n, 1);
    std::string sep = level + 1 == shape.size() ? ", " : ",\n" + std::string(indent + level + 1, ' ');
    out += "[";
    for (int64_t i = 0; i < n; i++) {
      if (summarize && n > 2 * kEdge && i == kEdge) {
        out += "..." + sep;
        i = n - kEdge;
      }
      axis(level + 1, offset + i * inner, inner);
      if (i + 1 < n) out += sep;
    }
    out += "]";
  }
};

}  // namespace

std::string Tensor::str() const {
  std::vector<std::byte> bytes = to_bytes();
  const std::string prefix = "Tensor(";
  Shape at;  // the elements at the variables' bound values; the shape printed keeps the variables
  for (const sint& d : shape()) at.push_back(d.bound());
  int64_t n = numel().bound();
  Printer p{at, dtype(), bytes, n > kSummarizeOver, prefix.size(), {}};
  p.axis(0, 0, n);
  return fmt::format("{}{}, shape={}, dtype={}, device={})", prefix, p.out, detail::shape_str(shape()),
                     dtype().str(), device());
}

}  // namespace tg
