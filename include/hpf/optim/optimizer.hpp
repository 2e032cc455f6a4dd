// SPDX-License-Identifier: MIT
#ifndef HPF_OPTIM_OPTIMIZER_HPP
#define HPF_OPTIM_OPTIMIZER_HPP

#include <hpf/optim/adam.hpp>
#include <hpf/optim/sgd.hpp>
#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>
#include <variant>

namespace hpf {

/// The optimizer a training run uses, chosen at run time (a command-line flag, say).
using OptimizerOptions = std::variant<SgdOptions, AdamOptions>;

/// The optimizer and every hyper-parameter, exactly (17 significant digits):
/// "sgd(learning_rate=0.05, momentum=0.9, weight_decay=0)".
inline std::string describe(const OptimizerOptions& options) {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return std::string(text);
  };
  if (const auto* sgd = std::get_if<SgdOptions>(&options)) {
    return "sgd(learning_rate=" + number(sgd->learning_rate) + ", momentum=" + number(sgd->momentum) +
           ", weight_decay=" + number(sgd->weight_decay) + ")";
  }
  const auto& adam = std::get<AdamOptions>(options);
  return "adam(learning_rate=" + number(adam.learning_rate) + ", beta1=" + number(adam.beta1) + ", beta2=" +
         number(adam.beta2) + ", epsilon=" + number(adam.epsilon) + ", weight_decay=" + number(adam.weight_decay) + ")";
}

/// \brief SGD or Adam behind one `step`, for training loops that take OptimizerOptions.
template <class T, class Space = Kokkos::DefaultExecutionSpace>
class Optimizer {
 public:
  Optimizer(std::size_t size, const OptimizerOptions& options)
      : state_(std::visit(
            [size](const auto& o) -> std::variant<Sgd<T, Space>, Adam<T, Space>> {
              if constexpr (std::is_same_v<std::decay_t<decltype(o)>, SgdOptions>) {
                return Sgd<T, Space>(size, o);
              } else {
                return Adam<T, Space>(size, o);
              }
            },
            options)) {}

  void step(const Buffer<T, Space>& parameters, const Buffer<T, Space>& gradients, Space space = Space{}) {
    std::visit([&](auto& o) { o.step(parameters, gradients, space); }, state_);
  }
  void set_learning_rate(double lr) {
    std::visit([&](auto& o) { o.set_learning_rate(lr); }, state_);
  }
  /// The state the optimizer carries between steps, by PyTorch's per-parameter state names
  /// ("momentum_buffer"; "exp_avg", "exp_avg_sq"), each laid out like the parameters: what a
  /// checkpoint saves and restores (views: writing to them changes the optimizer).
  std::vector<std::pair<std::string, Buffer<T, Space>>> state() const {
    if (const auto* sgd = std::get_if<Sgd<T, Space>>(&state_)) {
      if (sgd->velocity().extent(0) == 0) return {};
      return {{"momentum_buffer", sgd->velocity()}};
    }
    const auto& adam = std::get<Adam<T, Space>>(state_);
    return {{"exp_avg", adam.exp_avg()}, {"exp_avg_sq", adam.exp_avg_sq()}};
  }
  /// Steps taken (Adam's bias-correction count; 0 for SGD, which does not need it).
  std::size_t steps() const {
    const auto* adam = std::get_if<Adam<T, Space>>(&state_);
    return adam ? adam->steps() : 0;
  }
  void set_steps(std::size_t steps) {
    if (auto* adam = std::get_if<Adam<T, Space>>(&state_)) adam->set_steps(steps);
  }

  /// The SGD momentum buffer (laid out like the parameters), or an empty buffer for Adam and
  /// momentum-free SGD. The state a checkpoint or a reference comparison must carry over.
  Buffer<T, Space> momentum() const {
    if (const auto* sgd = std::get_if<Sgd<T, Space>>(&state_)) return sgd->velocity();
    return {};
  }

 private:
  std::variant<Sgd<T, Space>, Adam<T, Space>> state_;
};

}  // namespace hpf

#endif  // HPF_OPTIM_OPTIMIZER_HPP
