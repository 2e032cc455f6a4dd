// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_LAYER_NORM_HPP
#define HPF_LAYERS_LAYER_NORM_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/reduce.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {

/// Layer normalisation of each sample over all of its C*S values in `[C][N][S]` (PyTorch
/// nn.LayerNorm(sample shape): eps 1e-5, biased variance, weight and bias of the sample's shape).
/// A sample's statistics are its own, so the result does not depend on how a batch is split into
/// micro-batches or replicas. One team per sample normalises it; one team per feature sums the
/// weight and bias gradients over the samples.
template <class T, class Space>
class LayerNormImpl {
 public:
  static constexpr double epsilon = 1e-5;
  struct tape_type {
    Buffer<T, Space> mean, inv_std;  // per sample, for backward
  };
  using team_policy = Kokkos::TeamPolicy<Space>;
  /// Sums accumulate in double, as BatchNorm's do: a sample's features may number thousands.
  using accumulator = double;
  using member = typename team_policy::member_type;

  LayerNormImpl(std::size_t channels, std::size_t height, std::size_t width, bool image)
      : channels_(channels), height_(height), width_(width), image_(image) {}

  void bind(ParameterBinder<T, Space>& binder) {
    auto w = image_ ? binder.parameter("weight", {channels_, height_, width_}, InitRule::ones())
                    : binder.parameter("weight", {channels_}, InitRule::ones());
    auto b = image_ ? binder.parameter("bias", {channels_, height_, width_}, InitRule::zeros())
                    : binder.parameter("bias", {channels_}, InitRule::zeros());
    weight_ = w.value;
    weight_grad_ = w.grad;
    bias_ = b.value;
    bias_grad_ = b.grad;
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    ensure_capacity(tape.mean, capacity, "hpf::LayerNorm::mean");
    ensure_capacity(tape.inv_std, capacity, "hpf::LayerNorm::inv_std");
  }
  std::size_t workspace(std::size_t) const { return 0; }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::LayerNorm::forward");
    normalize(ctx, x, y, tape);
  }
  /// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight, per sample.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::LayerNorm::backward");
    parameter_gradients(ctx, x, dy, tape);
    if (!is_empty(dx)) input_gradient(ctx, x, dy, dx, tape);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions). Feature i of
  // sample j is x(i / s, j, i % s): i runs over the sample's m = C*S values.
  void normalize(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                 tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = x.extent(0) * s;
    const auto weight = weight_, bias = bias_;
    const auto mean_out = tape.mean, inv_std_out = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::forward", team_policy(ctx.space, n, Kokkos::AUTO), KOKKOS_LAMBDA(const member& team) {
          const std::size_t j = team.league_rank();
          const auto in = [&](std::size_t i) -> const T& { return x(i / s, j, i % s); };
          const accumulator sum = team_sum<accumulator>(team, m, [&](std::size_t i) { return in(i); });
          const T mean = static_cast<T>(sum / accumulator(m));
          const accumulator squares = team_sum<accumulator>(team, m, [&](std::size_t i) {
            const accumulator d = accumulator(in(i)) - accumulator(mean);
            return d * d;
          });
          const T inv_std = T(1) / math::sqrt(static_cast<T>(squares / accumulator(m)) + T(epsilon));
          const T shift = -inv_std * mean;  // y = (x * inv_std + shift) * weight + bias, as PyTorch forms it
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
            y(i / s, j, i % s) = (in(i) * inv_std + shift) * weight(i) + bias(i);
          });
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            mean_out(j) = mean;
            inv_std_out(j) = inv_std;
          });
        });
  }

  void parameter_gradients(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                           tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = x.extent(0) * s;
    const auto weight_grad = weight_grad_, bias_grad = bias_grad_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::parameter_gradients", team_policy(ctx.space, m, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t i = team.league_rank(), c = i / s, p = i % s;
          const SumPair<accumulator> sums = team_sums<accumulator>(
              team, n,
              [&](std::size_t j) {
                return accumulator(dy(c, j, p)) * (accumulator(x(c, j, p)) - accumulator(saved_mean(j))) *
                       accumulator(saved_inv_std(j));
              },
              [&](std::size_t j) { return dy(c, j, p); });
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            weight_grad(i) += static_cast<T>(sums.first);
            bias_grad(i) += static_cast<T>(sums.second);
          });
        });
  }

  void input_gradient(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                      Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = x.extent(0) * s;
    const auto weight = weight_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::backward", team_policy(ctx.space, n, Kokkos::AUTO), KOKKOS_LAMBDA(const member& team) {
          const std::size_t j = team.league_rank();
          const T mean = saved_mean(j), inv_std = saved_inv_std(j);
          const auto g = [&](std::size_t i) { return dy(i / s, j, i % s) * weight(i); };
          const auto xhat = [&](std::size_t i) { return (x(i / s, j, i % s) - mean) * inv_std; };
          const SumPair<accumulator> sums = team_sums<accumulator>(
              team, m, [&](std::size_t i) { return g(i); },
              [&](std::size_t i) { return accumulator(g(i)) * accumulator(xhat(i)); });
          const T mean_g = static_cast<T>(sums.first / accumulator(m));
          const T mean_g_xhat = static_cast<T>(sums.second / accumulator(m));
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
            dx(i / s, j, i % s) = inv_std * (g(i) - mean_g - xhat(i) * mean_g_xhat);
          });
        });
  }

 private:
  std::size_t channels_, height_, width_;
  bool image_;
  Vector<T, Space> weight_, weight_grad_, bias_, bias_grad_;
};

}  // namespace detail

/// \brief Layer normalisation with learnable scale and shift over all of a sample's values
/// (PyTorch nn.LayerNorm(sample shape): `[D]` for vectors, `[C, H, W]` for images; eps 1e-5).
/// Parameters: weight (ones), bias (zeros), of the sample's shape. Training and evaluation
/// compute the same: the statistics are each sample's own.
struct LayerNorm {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr LayerCost cost{.parameters = 2 * In::size, .forward_flops = 7 * In::size,
                                    .backward_flops = 12 * In::size, .activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "LayerNorm(" + std::to_string(In::size) + ")"; }
    template <class T, class Space>
    struct impl : detail::LayerNormImpl<T, Space> {
      impl() : detail::LayerNormImpl<T, Space>(In::channels, In::height, In::width, In::rank == 3) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_LAYER_NORM_HPP
