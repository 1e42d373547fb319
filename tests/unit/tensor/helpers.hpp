#pragma once
// Shared checks for the tensor tests: values against hand-derived expectations.
#include "common/test_support.hpp"
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tensor/tensor.hpp"

namespace tg::test {

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(want[i])) {
      BOOST_CHECK_MESSAGE(std::isnan(got[i]), "element " << i << ": got " << got[i] << ", want nan");
      continue;
    }
    double err = std::abs(got[i] - want[i]), scale = std::max(1.0, std::abs(want[i]));
    BOOST_CHECK_MESSAGE(err <= tol * scale || got[i] == want[i],
                        "element " << i << ": got " << got[i] << ", want " << want[i]);
  }
}

inline void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  expect_close(t.to_vector<double>(), want, tol);
}

template <typename T>
void expect_exact(const Tensor& t, const std::vector<T>& want) {
  std::vector<T> got = t.to_vector<T>();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    BOOST_CHECK_MESSAGE(got[i] == want[i], "element " << i << ": got " << +got[i] << ", want " << +want[i]);
}


}  // namespace tg::test
