#pragma once
// The integer algebra behind the symbolic rules: a canonical order of nodes, sums as (term, coefficient)
// lists, and folding of div/mod and comparisons with range analysis. Internal to uop/.
#include <vector>

#include "uop/range.hpp"

namespace tg {

// A total order on nodes, structural so it is the same from run to run; constants sort last.
int uop_order(const UOp* a, const UOp* b);

struct Term {
  UOpRef base;  // never a CONST, never a MUL by a constant
  i128 coef;
};
// x == sum(coef * base) + k. `exact` when no ADD or MUL-by-constant inside x wraps, so the identity holds
// over the integers and not only modulo 2^bits.
struct LinearSum {
  std::vector<Term> terms;
  i128 k = 0;
  bool exact = true;
};
LinearSum split_sum(const UOpRef& x);
// Rebuilds sum(coef * base) + k in dtype d (coefficients wrap to d), terms in the order given.
UOpRef build_sum(DType d, const std::vector<Term>& terms, i128 k);

// Canonical integer sums and products: flattened, like terms collected, sorted, constant last.
// nullptr when x is already canonical.
UOpRef normalize_sum(const UOpRef& x);
UOpRef normalize_product(const UOpRef& x);

UOpRef fold_divmod(const UOpRef& d);                  // IDIV / MOD of integers
UOpRef fold_cmplt(const UOpRef& x, const UOpRef& y);  // x < y for integers, nullptr if nothing applies

}  // namespace tg
