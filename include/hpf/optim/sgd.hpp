// SPDX-License-Identifier: MIT
#ifndef HPF_OPTIM_SGD_HPP
#define HPF_OPTIM_SGD_HPP

#include <hpf/tensor/blocks.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf {

struct SgdOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

/// \brief Stochastic gradient descent with momentum and L2 weight decay, PyTorch's form:
/// g += wd * p;  v = momentum * v + g;  p -= lr * v  (no dampening, not Nesterov).
/// Updates a network's flat parameter array in one kernel.
template <class T, class Space = Kokkos::DefaultExecutionSpace>
class Sgd {
 public:
  Sgd(std::size_t size, const SgdOptions& options)
      : options_(options), velocity_(options.momentum != 0.0 ? Buffer<T, Space>("hpf::Sgd::velocity", size) : Buffer<T, Space>()) {}

  void step(const Buffer<T, Space>& parameters, const Buffer<T, Space>& gradients, Space space = Space{}) {
    trace::Region region("hpf::Sgd::step");
    const T lr = T(options_.learning_rate), mu = T(options_.momentum), wd = T(options_.weight_decay);
    T* const p = parameters.data();
    const T* const g = gradients.data();
    T* const v = velocity_.data();
    const bool with_momentum = options_.momentum != 0.0;
    detail::for_each_block(space, parameters.extent(0), "hpf::Sgd::step",
                           KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
                             // Local copies and a loop per case: stores to p could alias the
                             // lambda's own float members, and a store under a condition kept
                             // the loop scalar (6x slower on Kokkos OpenMP).
                             const T rate = lr, inertia = mu, decay = wd;
                             if (with_momentum) {
                               for (std::size_t i = begin; i < end; ++i) {
                                 const T d = inertia * v[i] + (g[i] + decay * p[i]);
                                 v[i] = d;
                                 p[i] -= rate * d;
                               }
                             } else {
                               for (std::size_t i = begin; i < end; ++i) p[i] -= rate * (g[i] + decay * p[i]);
                             }
                           });
  }

  void set_learning_rate(double lr) { options_.learning_rate = lr; }
  const SgdOptions& options() const { return options_; }
  /// Momentum buffer (empty without momentum), laid out like the parameters.
  const Buffer<T, Space>& velocity() const { return velocity_; }

 private:
  SgdOptions options_;
  Buffer<T, Space> velocity_;
};

}  // namespace hpf

#endif  // HPF_OPTIM_SGD_HPP
