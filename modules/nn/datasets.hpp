#pragma once
// Data sets: idx files (plain or gzip), Fashion-MNIST from its Debian package, and a seeded batch sampler.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::nn {

// An idx file (MNIST's format: magic 0 0 type ndim, big-endian dims and data), read as plain or gzip.
// The tensor has the file's dims and element type (uint8, int8, int16, int32, float32 or float64).
Tensor read_idx(const std::filesystem::path& path, std::string_view device = {});

struct FashionMnist {
  Tensor X_train, Y_train, X_test, Y_test;  // X: (n,1,28,28) uint8; Y: (n,) uint8 class 0..9
};
// dir defaults to TG_FASHION_MNIST (the Debian package's folder unless set); files may be .gz or not.
FashionMnist fashion_mnist(std::optional<std::filesystem::path> dir = {}, std::string_view device = {});

// Splits [0, n) into batches, shuffled per epoch from (seed, epoch) with the same order on every
// platform. Batches index a data set: X[sampler.indices(i)].
class BatchSampler {
 public:
  BatchSampler(int64_t n, int64_t batch_size, bool shuffle = true, uint64_t seed = 0, bool drop_last = false);

  int64_t size() const;  // batches per epoch
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }
  const std::vector<int64_t>& order() const { return order_; }    // this epoch's permutation
  std::vector<int64_t> batch(int64_t i) const;                    // host indices of batch i
  Tensor indices(int64_t i, std::string_view device = {}) const;  // the same as an int32 tensor

  class Iterator {  // an input iterator over the batches of the current epoch
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::vector<int64_t>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;
    Iterator() = default;
    Iterator(const BatchSampler* s, int64_t i) : s_(s), i_(i) {}
    value_type operator*() const { return s_->batch(i_); }
    Iterator& operator++() { return ++i_, *this; }
    Iterator operator++(int) {
      Iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }

   private:
    const BatchSampler* s_ = nullptr;
    int64_t i_ = 0;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  int64_t n_, batch_size_;
  bool shuffle_, drop_last_;
  uint64_t seed_, epoch_ = 0;
  std::vector<int64_t> order_;
};

}  // namespace tg::nn
