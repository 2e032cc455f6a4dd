// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_BATCH_NORM_HPP
#define HPF_LAYERS_BATCH_NORM_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/layers/detail/reduce.hpp>
#include <hpf/layers/detail/spatial_batch_norm.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// Batch normalisation per channel over the N*S values of `[C][N][S]` (PyTorch BatchNorm2d for
/// images, BatchNorm3d for volumes, BatchNorm1d for vectors): eps 1e-5, momentum 0.1, biased
/// variance to normalise, unbiased variance into running_var. One team per channel reduces its
/// contiguous N*S values.
///
/// Statistics are those of the batch the layer sees: under micro-batching that is each
/// micro-batch (as GPipe and PyTorch's pipeline libraries do), and running statistics are updated
/// once per micro-batch.
template <class T, class Space>
class BatchNormImpl {
 public:
  static constexpr double epsilon = 1e-5;
  static constexpr double momentum = 0.1;
  struct tape_type {
    Buffer<T, Space> mean, inv_std;  // of the micro-batch, for backward
  };
  using team_policy = Kokkos::TeamPolicy<Space>;
  /// Reductions over a channel's N*S values accumulate in double: in float, thousands of terms
  /// with cancellation lose digits that the next step's normalisation then amplifies.
  using accumulator = double;
  using member = typename team_policy::member_type;

  explicit BatchNormImpl(std::size_t channels) : channels_(channels) {}

  void bind(ParameterBinder<T, Space>& binder) {
    auto w = binder.parameter("weight", {channels_}, InitRule::ones());
    auto b = binder.parameter("bias", {channels_}, InitRule::zeros());
    gamma_ = w.value;
    gamma_grad_ = w.grad;
    beta_ = b.value;
    beta_grad_ = b.grad;
    running_mean_ = binder.buffer("running_mean", {channels_}, InitRule::zeros());
    running_var_ = binder.buffer("running_var", {channels_}, InitRule::ones());
    batches_tracked_ = binder.buffer("num_batches_tracked", {}, InitRule::zeros());
  }
  void reserve(tape_type& tape, std::size_t) {
    ensure_capacity(tape.mean, channels_, "hpf::BatchNorm::mean");
    ensure_capacity(tape.inv_std, channels_, "hpf::BatchNorm::inv_std");
  }
  std::size_t workspace(std::size_t) const { return 0; }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::forward");
    normalize<false>(ctx, x, y, tape);
  }
  /// forward, then a ReLU on its output in the same pass (a chain fuses BatchNorm, ReLU).
  void forward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                    tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::forward_relu");
    normalize<true>(ctx, x, y, tape);
  }

  /// Training-mode backward: dx = gamma*inv_std/m * (m*dy - sum(dy) - xhat*sum(dy*xhat)).
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::backward");
    differentiate<false>(ctx, x, x, dy, dx, tape);
  }
  /// The backward of BatchNorm then ReLU, given the ReLU's output and output gradient: the
  /// ReLU's gradient (relu_dy where relu_y > 0) is formed as it is read.
  void backward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> relu_dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::backward_relu");
    differentiate<true>(ctx, x, relu_y, relu_dy, dx, tape);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions).
  template <bool Relu>
  void normalize(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                 tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = n * s;
    const auto gamma = gamma_, beta = beta_, running_mean = running_mean_, running_var = running_var_;
    const auto batches_tracked = batches_tracked_;
    const auto mean_out = tape.mean, inv_std_out = tape.inv_std;
    if (!ctx.training) {
      Kokkos::parallel_for(
          "hpf::BatchNorm::forward_eval", team_policy(ctx.space, channels_, Kokkos::AUTO),
          KOKKOS_LAMBDA(const member& team) {
            const std::size_t c = team.league_rank();
            const T scale = gamma(c) / math::sqrt(running_var(c) + T(epsilon));
            const T shift = beta(c) - running_mean(c) * scale;
            const T* in = &x(c, 0, 0);
            T* out = &y(c, 0, 0);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
              out[i] = relu_if<Relu>(in[i] * scale + shift);
            });
          });
      return;
    }
    const T unbias = m > 1 ? T(m) / T(m - 1) : T(1);
    const bool update_running = !ctx.recomputing;  // forward run again inside backward: already counted
    Kokkos::parallel_for(
        "hpf::BatchNorm::forward", team_policy(ctx.space, channels_, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t c = team.league_rank();
          const T* in = &x(c, 0, 0);
          T* out = &y(c, 0, 0);
          const accumulator sum = team_sum<accumulator>(team, m, [&](std::size_t i) { return in[i]; });
          const T mean = static_cast<T>(sum / accumulator(m));
          const accumulator squares = team_sum<accumulator>(team, m, [&](std::size_t i) {
            const accumulator d = accumulator(in[i]) - accumulator(mean);
            return d * d;
          });
          const T var = static_cast<T>(squares / accumulator(m));
          const T inv_std = T(1) / math::sqrt(var + T(epsilon));
          const T scale = gamma(c) * inv_std, shift = beta(c) - mean * scale;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
            out[i] = relu_if<Relu>(in[i] * scale + shift);
          });
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            mean_out(c) = mean;
            inv_std_out(c) = inv_std;
            if (!update_running) return;
            running_mean(c) = (T(1) - T(momentum)) * running_mean(c) + T(momentum) * mean;
            running_var(c) = (T(1) - T(momentum)) * running_var(c) + T(momentum) * var * unbias;
            if (c == 0) batches_tracked(0) += T(1);
          });
        });
  }

  /// dy is the output gradient (Relu: the ReLU's, masked where relu_y is not positive).
  template <bool Relu>
  void differentiate(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = n * s;
    const auto gamma = gamma_, gamma_grad = gamma_grad_, beta_grad = beta_grad_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    const bool want_dx = !is_empty(dx);
    Kokkos::parallel_for(
        "hpf::BatchNorm::backward", team_policy(ctx.space, channels_, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t c = team.league_rank();
          const T* in = &x(c, 0, 0);
          const T* grad_out = &dy(c, 0, 0);
          const T* relu_out = &relu_y(c, 0, 0);
          // The gradient reaching the normalisation (through the ReLU: where its output is positive).
          const auto grad_at = [&](std::size_t i) {
            if constexpr (Relu) return relu_gradient(grad_out[i], relu_out[i]);
            return grad_out[i];
          };
          const T mean = saved_mean(c), inv_std = saved_inv_std(c);
          const SumPair<accumulator> sums = team_sums<accumulator>(
              team, m, [&](std::size_t i) { return grad_at(i); },
              [&](std::size_t i) {
                return accumulator(grad_at(i)) * (accumulator(in[i]) - accumulator(mean)) * accumulator(inv_std);
              });
          const T sum_dy = static_cast<T>(sums.first), sum_dy_xhat = static_cast<T>(sums.second);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            gamma_grad(c) += sum_dy_xhat;
            beta_grad(c) += sum_dy;
          });
          if (want_dx) {
            T* grad_in = &dx(c, 0, 0);
            const T k = gamma(c) * inv_std / T(m);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
              const T xhat = (in[i] - mean) * inv_std;
              grad_in[i] = k * (T(m) * grad_at(i) - sum_dy - xhat * sum_dy_xhat);
            });
          }
        });
  }

 protected:
  std::size_t channels_;
  Vector<T, Space> gamma_, gamma_grad_, beta_, beta_grad_, running_mean_, running_var_, batches_tracked_;
};

}  // namespace detail

/// \brief Batch normalisation with learnable scale and shift (PyTorch BatchNorm2d on images,
/// BatchNorm3d on volumes, BatchNorm1d on vectors; eps 1e-5, momentum 0.1). Uses batch
/// statistics in Mode::train and running statistics in Mode::eval. Parameters: weight, bias;
/// buffers: running_mean, running_var, num_batches_tracked.
struct BatchNorm {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    // On slabs with peers: the group adds the means' and the variances' sums in forward (C each)
    // and the two gradient sums in backward (2 C).
    static constexpr GroupTraffic group =
        spatial_peers_v<In> ? GroupTraffic{.forward_gathers = 2, .forward_fixed = 2 * In::channels, .backward_gathers = 1,
                                           .backward_fixed = 2 * In::channels}
                            : GroupTraffic{};
    static constexpr LayerCost cost{.parameters = 2 * In::channels, .buffers = 2 * In::channels + 1,
                                    .forward_flops = 4 * In::size, .backward_flops = 7 * In::size,
                                    .activations = In::size, .group = group};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr bool applies_next_relu_forward = true;   // forward_relu
    static constexpr bool applies_next_relu_backward = true;  // backward_relu
    static constexpr bool takes_spatial_parts = true;         // statistics over the group's slabs
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "BatchNorm(" + std::to_string(In::channels) + ")"; }
    template <class T, class Space>
    struct whole_impl : detail::BatchNormImpl<T, Space> {
      whole_impl() : detail::BatchNormImpl<T, Space>(In::channels) {}
    };
    template <class T, class Space>
    struct slab_impl : detail::SpatialBatchNormImpl<T, Space, detail::BatchNormImpl<T, Space>> {
      slab_impl()
          : detail::SpatialBatchNormImpl<T, Space, detail::BatchNormImpl<T, Space>>(In::channels, spatial_group_v<In>,
                                                                                     spatial_held_v<In>) {}
    };
    template <class T, class Space>
    using impl = std::conditional_t<is_spatial_part_v<In>, slab_impl<T, Space>, whole_impl<T, Space>>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_BATCH_NORM_HPP
