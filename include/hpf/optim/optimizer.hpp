// SPDX-License-Identifier: MIT
#ifndef HPF_OPTIM_OPTIMIZER_HPP
#define HPF_OPTIM_OPTIMIZER_HPP

#include <hpf/optim/adam.hpp>
#include <hpf/optim/sgd.hpp>
#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <variant>

namespace hpf {

/// The optimizer a training run uses, chosen at run time (a command-line flag, say).
using OptimizerOptions = std::variant<SgdOptions, AdamOptions>;

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
