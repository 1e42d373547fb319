// Module registry (parameters, buffers, children), train/eval, Sequential and state_dict loading.
#include "nn/module.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"

namespace tg::nn {

namespace {

std::string key_list(const std::vector<std::string>& keys) {
  constexpr size_t kShow = 8;
  std::vector<std::string> shown(keys.begin(),
                                 keys.begin() + static_cast<long>(std::min(keys.size(), kShow)));
  std::string s = fmt::format("{}", fmt::join(shown, ", "));
  return keys.size() > kShow ? fmt::format("{} and {} more", s, keys.size() - kShow) : s;
}

}  // namespace

void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw ValueError("register", fmt::format("name \"{}\" must be non-empty and contain no '.'", name));
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    throw ValueError("register", fmt::format("name \"{}\" is already registered", name));
}

void Module::register_parameter(std::string name, Tensor& slot, Tensor value) {
  check_name(name);
  if (!value.defined()) throw ValueError("register_parameter", fmt::format("\"{}\" is undefined", name));
  slot = value.requires_grad_(true);
  params_.emplace_back(std::move(name), &slot);
}

void Module::register_buffer(std::string name, Tensor& slot, Tensor value) {
  check_name(name);
  if (!value.defined()) throw ValueError("register_buffer", fmt::format("\"{}\" is undefined", name));
  slot = value;
  buffers_.emplace_back(std::move(name), &slot);
}

void Module::add_child(std::string name, std::shared_ptr<Module> m) {
  check_name(name);
  if (!m) throw ValueError("register_module", fmt::format("\"{}\" is null", name));
  m->train(training_);
  children_.emplace_back(std::move(name), std::move(m));
}

void Module::realize_state() {
  std::vector<Tensor> all;
  for (auto& [n, t] : params_)
    if (t->defined()) all.push_back(*t);
  for (auto& [n, t] : buffers_)
    if (t->defined()) all.push_back(*t);
  if (!all.empty()) Tensor::realize_all(all);
}

void Module::to(DType dtype) {
  if (!dtype.is_float())
    throw DTypeError("Module::to", fmt::format("takes a floating-point dtype, got {}", dtype.name()));
  std::vector<Tensor> cast;
  for (auto* list : {&params_, &buffers_})
    for (auto& [name, slot] : *list)
      if (slot->defined() && slot->dtype().is_float() && slot->dtype() != dtype) {
        bool trained = list == &params_;
        *slot = slot->detach().cast(dtype).contiguous();
        if (trained) slot->requires_grad_(true);
        cast.push_back(*slot);
      }
  if (!cast.empty()) Tensor::realize_all(cast);
  for (auto& [name, child] : children_) child->to(dtype);
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [name, slot] : params ? params_ : buffers_) {
    if (!slot->defined()) continue;
    // A tensor assigned to a parameter slot becomes a trained leaf, as the registered one was.
    if (params && !slot->requires_grad()) slot->requires_grad_(true);
    out.emplace_back(prefix + name, *slot);
  }
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, child] : children_) child->train(on);
}

// ---- Sequential ----

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> layers) {
  for (const auto& l : layers) push_back(l);
}

void Sequential::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(size()), std::move(layer));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [n, child] : named_children()) y = (*child)(y);
  return y;
}

// ---- state dict ----

std::map<std::string, Tensor> state_dict(const Module& m) {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : m.named_parameters()) out.emplace(n, t);
  for (auto& [n, t] : m.named_buffers()) out.emplace(n, t);
  return out;
}

void load_state_dict(Module& m, const std::map<std::string, Tensor>& state, bool strict) {
  std::map<std::string, Tensor> own = state_dict(m);
  std::vector<std::string> missing, unexpected, bad;
  for (const auto& [name, t] : own)
    if (!state.contains(name)) missing.push_back(name);
  for (const auto& [name, t] : state)
    if (!own.contains(name)) unexpected.push_back(name);
  if (strict && !missing.empty())
    throw ValueError("load_state_dict", fmt::format("missing keys: {}", key_list(missing)));
  if (strict && !unexpected.empty())
    throw ValueError("load_state_dict", fmt::format("unexpected keys: {}", key_list(unexpected)));
  std::vector<std::pair<Tensor, Tensor>> todo;
  for (const auto& [name, target] : own) {
    auto it = state.find(name);
    if (it == state.end()) continue;
    const Tensor& v = it->second;
    if (!v.defined()) throw ValueError("load_state_dict", fmt::format("\"{}\" is undefined", name));
    if (v.shape() != target.shape())
      throw ShapeError("load_state_dict", fmt::format("\"{}\" has shape {} but the module expects {}", name,
                                                      shape_str(v.shape()), shape_str(target.shape())));
    if (v.dtype() != target.dtype())
      throw DTypeError("load_state_dict", fmt::format("\"{}\" is {} but the module expects {}", name,
                                                      v.dtype().name(), target.dtype().name()));
    todo.emplace_back(target, v.to(target.device()));
  }
  std::vector<Tensor> targets;
  for (auto& [target, v] : todo) targets.push_back(target.assign(v.detach()));
  if (!targets.empty()) Tensor::realize_all(targets);
}

}  // namespace tg::nn
