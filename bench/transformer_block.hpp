#pragma once
// The suite's pre-norm transformer block (W6, W7): x + attn(ln(x)), then h + mlp(ln(h)).
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/layers.hpp"
#include "tensor/tensor.hpp"

namespace tg::bench {

struct Block {
  int64_t dim, heads;
  std::shared_ptr<tg::nn::Linear> q, k, v, o, up, down;
  Block(int64_t d, int64_t h)
      : dim(d),
        heads(h),
        q(lin(d, d)),
        k(lin(d, d)),
        v(lin(d, d)),
        o(lin(d, d)),
        up(lin(d, 4 * d)),
        down(lin(4 * d, d)) {}
  static std::shared_ptr<tg::nn::Linear> lin(int64_t i, int64_t o) {
    return std::make_shared<tg::nn::Linear>(i, o);
  }
  std::vector<std::shared_ptr<tg::nn::Linear>> layers() const { return {q, k, v, o, up, down}; }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> ps;
    for (auto& l : layers())
      for (Tensor& p : l->parameters()) ps.push_back(p);
    return ps;
  }
  Tensor forward(const Tensor& x) const {
    int64_t b = x.shape()[0], t = x.shape()[1], hd = dim / heads;
    Tensor a = x.layernorm();
    auto split = [&](const Tensor& z) { return z.reshape({b, t, heads, hd}).transpose(1, 2); };
    Tensor att = split((*q)(a)).scaled_dot_product_attention(split((*k)(a)), split((*v)(a)));
    Tensor h = x + (*o)(att.transpose(1, 2).reshape({b, t, dim}));
    return h + (*down)((*up)(h.layernorm()).gelu());
  }
};

}  // namespace tg::bench
