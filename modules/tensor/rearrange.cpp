// einops-style rearrange: "b c (h w) -> b (c h) w" is a reshape that splits the input groups into named
// axes, a permute into the output order and a reshape that merges the output groups.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"
#include "tensor/internal.hpp"

namespace tg {

namespace {

// The names in one axis. A lone "..." stands for the axes the pattern does not name, "(...)" for those
// axes merged into a group.
using Group = std::vector<std::string>;

// One side of the pattern: names, "1" (a unit axis), "..." and parenthesized groups.
std::vector<Group> parse_side(std::string_view s, std::string_view pattern) {
  std::vector<Group> groups;
  std::optional<Group> open;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      i++;
    } else if (c == '(' || c == ')') {
      if ((c == '(') == open.has_value())
        throw ValueError("rearrange", fmt::format("unbalanced parentheses in '{}'", pattern));
      if (c == ')') groups.push_back(*open);
      open = c == '(' ? std::optional<Group>(Group{}) : std::nullopt;
      i++;
    } else {
      size_t j = i;
      if (s.substr(i, 3) == "...")
        j += 3;
      else
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) j++;
      if (j == i) throw ValueError("rearrange", fmt::format("unexpected '{}' in '{}'", c, pattern));
      std::string name(s.substr(i, j - i));
      if (std::isdigit(static_cast<unsigned char>(name[0])) && name != "1")
        throw ValueError("rearrange", fmt::format("only 1 may be a number in '{}', got {}", pattern, name));
      if (open)
        open->push_back(name == "..." ? "(...)" : name);
      else
        groups.push_back({name});
      i = j;
    }
  }
  if (open) throw ValueError("rearrange", fmt::format("unbalanced parentheses in '{}'", pattern));
  return groups;
}

// "..." becomes n names "...0", "...1", ...: n axes of their own when it stands alone, merged when it is
// inside parentheses.
std::vector<Group> expand_ellipsis(const std::vector<Group>& groups, int n) {
  std::vector<Group> out;
  for (const Group& g : groups) {
    if (g.size() == 1 && g[0] == "...") {
      for (int k = 0; k < n; k++) out.push_back({"..." + std::to_string(k)});
      continue;
    }
    Group names;
    for (const std::string& name : g) {
      if (name != "(...)") names.push_back(name);
      for (int k = 0; name == "(...)" && k < n; k++) names.push_back("..." + std::to_string(k));
    }
    out.push_back(names);
  }
  return out;
}

}  // namespace

Tensor Tensor::rearrange(std::string_view pattern, std::vector<std::pair<std::string, int64_t>> sizes) const {
  size_t arrow = pattern.find("->");
  if (arrow == std::string_view::npos)
    throw ValueError("rearrange", fmt::format("'{}' has no '->'", pattern));
  std::vector<Group> lhs = parse_side(pattern.substr(0, arrow), pattern),
                     rhs = parse_side(pattern.substr(arrow + 2), pattern);
  int ellipses = 0;
  for (const Group& g : lhs) {
    ellipses += static_cast<int>(std::count(g.begin(), g.end(), "..."));
    if (std::count(g.begin(), g.end(), "(...)"))
      throw ValueError("rearrange",
                       fmt::format("'...' cannot be inside parentheses on the left of '{}'", pattern));
  }
  int lhs_axes = static_cast<int>(lhs.size()) - ellipses;
  if (ellipses > 1 || (ellipses ? lhs_axes > ndim() : lhs_axes != ndim()))
    throw ShapeError("rearrange",
                     fmt::format("'{}' does not fit the shape {}", pattern, detail::shape_str(shape())));
  int extra = ndim() - lhs_axes;
  // split: each input axis into its named axes, one size inferred per group
  std::map<std::string, int64_t> known(sizes.begin(), sizes.end());
  Group order;
  Shape split;
  int axis = 0;
  for (const Group& g : lhs) {
    if (g.size() == 1 && g[0] == "...") {
      for (int k = 0; k < extra; k++, axis++) {
        order.push_back("..." + std::to_string(k));
        known[order.back()] = shape()[axis];
      }
      continue;
    }
    auto total = static_cast<int64_t>(shape()[axis++]);
    int64_t product = 1;
    std::optional<std::string> unknown;
    for (const std::string& n : g) {
      if (n == "1") continue;
      if (std::count(order.begin(), order.end(), n))
        throw ValueError("rearrange", fmt::format("'{}' appears twice on the left of '{}'", n, pattern));
      order.push_back(n);
      if (known.count(n))
        product *= known[n];
      else if (unknown)
        throw ValueError("rearrange",
                         fmt::format("the sizes of '{}' and '{}' are both unknown", *unknown, n));
      else
        unknown = n;
    }
    if (unknown) {
      if (product == 0 || total % product)
        throw ShapeError("rearrange",
                         fmt::format("cannot split axis {} of size {} by {}", axis - 1, total, product));
      known[*unknown] = total / product;
      product = total;
    }
    if (product != total)
      throw ShapeError("rearrange", fmt::format("axis {} has size {}, not {}", axis - 1, total, product));
  }
  for (const std::string& n : order) split.push_back(known[n]);
  // permute into the output order, then merge the output groups
  rhs = expand_ellipsis(rhs, extra);
  Dims perm;
  Shape merged;
  for (const Group& g : rhs) {
    int64_t product = 1;
    for (const std::string& n : g) {
      if (n == "1") continue;
      auto it = std::find(order.begin(), order.end(), n);
      if (it == order.end())
        throw ValueError("rearrange",
                         fmt::format("'{}' is on the right of '{}' but not on the left", n, pattern));
      if (std::count(perm.begin(), perm.end(), it - order.begin()))
        throw ValueError("rearrange", fmt::format("'{}' appears twice on the right of '{}'", n, pattern));
      perm.push_back(static_cast<int>(it - order.begin()));
      product *= known[n];
    }
    merged.push_back(product);
  }
  if (perm.size() != order.size())
    throw ValueError("rearrange",
                     fmt::format("every name on the left of '{}' must appear on the right", pattern));
  return reshape(split).permute(perm).reshape(merged);
}

}  // namespace tg
