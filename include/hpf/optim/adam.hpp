// SPDX-License-Identifier: MIT
#ifndef HPF_OPTIM_ADAM_HPP
#define HPF_OPTIM_ADAM_HPP

#include <hpf/tensor/math.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>

namespace hpf {

struct AdamOptions {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  /// L2 penalty added to the gradient (torch.optim.Adam's weight_decay, not AdamW).
  double weight_decay = 0.0;
};

/// \brief Adam (Kingma & Ba), evaluated exactly as torch.optim.Adam does:
/// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
/// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
template <class T, class Space = Kokkos::DefaultExecutionSpace>
class Adam {
 public:
  Adam(std::size_t size, const AdamOptions& options)
      : options_(options), first_("hpf::Adam::exp_avg", size), second_("hpf::Adam::exp_avg_sq", size) {}

  void step(const Buffer<T, Space>& parameters, const Buffer<T, Space>& gradients, Space space = Space{}) {
    trace::Region region("hpf::Adam::step");
    ++steps_;
    const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
    const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
    const T step_size = T(options_.learning_rate / correction1);
    const T sqrt_correction2 = T(std::sqrt(correction2));
    const T b1 = T(options_.beta1), b2 = T(options_.beta2), eps = T(options_.epsilon), wd = T(options_.weight_decay);
    const auto p = parameters, g = gradients, m = first_, v = second_;
    Kokkos::parallel_for(
        "hpf::Adam::step", Kokkos::RangePolicy<Space>(space, 0, parameters.extent(0)), KOKKOS_LAMBDA(const std::size_t i) {
          const T grad = g(i) + wd * p(i);
          m(i) = m(i) * b1 + (T(1) - b1) * grad;
          v(i) = v(i) * b2 + (T(1) - b2) * grad * grad;
          p(i) -= step_size * m(i) / (math::sqrt(v(i)) / sqrt_correction2 + eps);
        });
  }

  void set_learning_rate(double lr) { options_.learning_rate = lr; }
  const AdamOptions& options() const { return options_; }
  std::size_t steps() const { return steps_; }
  /// Restores the step count of a checkpoint (it sets the bias corrections).
  void set_steps(std::size_t steps) { steps_ = steps; }
  /// First and second moments, laid out like the parameters (PyTorch's exp_avg, exp_avg_sq).
  const Buffer<T, Space>& exp_avg() const { return first_; }
  const Buffer<T, Space>& exp_avg_sq() const { return second_; }

 private:
  AdamOptions options_;
  Buffer<T, Space> first_, second_;
  std::size_t steps_ = 0;
};

}  // namespace hpf

#endif  // HPF_OPTIM_ADAM_HPP
