// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_MEAN_SQUARED_ERROR_HPP
#define HPF_LAYERS_MEAN_SQUARED_ERROR_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
/// Squared error against real targets. Output: the predictions themselves. A sample's loss is
/// the mean over its K values of (x - t)^2, so the mean over a batch is PyTorch's
/// nn.MSELoss(reduction='mean') over all N*K values; per-sample losses go to the tape as for
/// the cross-entropy.
template <class T, class Space>
class MeanSquaredErrorImpl : public PerSampleLoss<T, Space> {
 public:
  using typename PerSampleLoss<T, Space>::tape_type;

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::MeanSquaredError::forward");
    const std::size_t channels = x.extent(0), n = x.extent(1), spatial = x.extent(2), k = channels * spatial;
    const auto targets = ctx.targets;
    const bool with_targets = targets.extent(0) >= n * k;
    const auto losses = tape.losses;
    Kokkos::parallel_for(
        "hpf::MeanSquaredError::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, n),
        KOKKOS_LAMBDA(const std::size_t j) {
          T sum = 0;
          for (std::size_t c = 0; c < channels; ++c) {
            for (std::size_t s = 0; s < spatial; ++s) {
              y(c, j, s) = x(c, j, s);
              if (with_targets) {
                const T d = x(c, j, s) - targets(j * k + c * spatial + s);
                sum += d * d;
              }
            }
          }
          if (with_targets) losses(j) = sum / static_cast<T>(k);
        });
  }

  /// dx = 2 (x - t) / K * loss_scale; dy is ignored (this layer starts backward).
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space>, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::MeanSquaredError::backward");
    const std::size_t channels = x.extent(0), n = x.extent(1), spatial = x.extent(2), k = channels * spatial;
    const auto targets = ctx.targets;
    const T factor = T(2) / static_cast<T>(k) * ctx.loss_scale;
    Kokkos::parallel_for(
        "hpf::MeanSquaredError::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, n),
        KOKKOS_LAMBDA(const std::size_t j) {
          for (std::size_t c = 0; c < channels; ++c) {
            for (std::size_t s = 0; s < spatial; ++s) {
              dx(c, j, s) = (x(c, j, s) - targets(j * k + c * spatial + s)) * factor;
            }
          }
        });
  }

};
}  // namespace detail

/// \brief Mean squared error against real-valued targets (PyTorch's nn.MSELoss): the loss of a
/// regression model, its last layer. The targets of a sample are as many values as the input
/// (e.g. Dense<4> before it: 4 targets); the output is the prediction.
struct MeanSquaredError {
  template <class In>
  struct bind {
    static_assert(In::valid && In::size >= 1, "hpf::MeanSquaredError: the input must be a valid, non-empty shape");
    static constexpr bool is_loss = true;
    static constexpr bool classifies = false;
    /// Real values per sample's target.
    static constexpr std::size_t target_size = In::size;
    using input_shape = In;
    using output_shape = In;
    // Activations: its output and the per-sample loss (the tape of detail::PerSampleLoss).
    static constexpr LayerCost cost{.forward_flops = 3 * In::size, .backward_flops = 3 * In::size, .activations = In::size + 1};
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = false;  // the gradient reads the input only
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "MeanSquaredError(" + std::to_string(In::size) + " targets)"; }
    template <class T, class Space>
    using impl = detail::MeanSquaredErrorImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_MEAN_SQUARED_ERROR_HPP
