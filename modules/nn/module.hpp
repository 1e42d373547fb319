#pragma once
// tg::nn::Module: named parameters, buffers and submodules (PyTorch names such as "conv1.weight"),
// train/eval mode, Sequential, and state_dict / load_state_dict over those names.
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace tg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Recursive, in registration order, with dotted names ("0.weight", "bn.running_mean").
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }

  // Casts every floating-point parameter and buffer, here and in every submodule, to dtype (PyTorch's
  // module.to(torch.float64)); each becomes a realized tensor of its own, a parameter still trained. Integer
  // buffers stay as they are. An optimizer made before holds the old tensors: make it after.
  void to(DType dtype);
  void train(bool on = true);  // this module and every submodule
  void eval() { train(false); }
  bool is_training() const { return training_; }

 protected:
  // A parameter is trained (requires_grad); a buffer is state (running statistics). The module records
  // the slot (a member of the layer), not its value: assigning a new tensor to the member (ln.weight = w)
  // is what named_parameters(), state_dict() and forward all see. An undefined slot is left out.
  void register_parameter(std::string name, Tensor& slot, Tensor value);
  void register_buffer(std::string name, Tensor& slot, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    add_child(std::move(name), m);
    return m;
  }
  // Realizes every parameter and buffer of this module, so later steps read buffers, not initializers.
  void realize_state();

 private:
  void add_child(std::string name, std::shared_ptr<Module> m);
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  std::vector<std::pair<std::string, Tensor*>> params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Runs its children in order; they are named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> layers);
  void push_back(std::shared_ptr<Module> layer);
  size_t size() const { return named_children().size(); }
  Tensor forward(const Tensor& x) override;
};

// Every parameter and buffer by its dotted name.
std::map<std::string, Tensor> state_dict(const Module& m);
// Checks every key, shape and dtype first and changes nothing when one fails; then assigns all values in
// one realize. strict: keys missing from state or not in the module are errors (else they are skipped).
void load_state_dict(Module& m, const std::map<std::string, Tensor>& state, bool strict = true);

}  // namespace tg::nn
