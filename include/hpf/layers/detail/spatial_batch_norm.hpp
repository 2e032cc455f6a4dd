// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPATIAL_BATCH_NORM_HPP
#define HPF_LAYERS_DETAIL_SPATIAL_BATCH_NORM_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/layers/detail/reduce.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// \brief BatchNorm on samples split into slabs (SplitKind::spatial): the statistics are the
/// whole batch's, over every member's slab. Each member this process holds sums its slab per
/// channel (lane_sum, in double), the group adds the members' sums in its fixed tree, and every
/// member normalises its slab with the result; backward does the same with the two sums of the
/// gradient. One process holding every member and G processes holding one each get the same bits.
/// \tparam Base BatchNormImpl<T, Space>: its parameters, tape, evaluation mode and constants
template <class T, class Space, class Base>
class SpatialBatchNormImpl : public Base {

 public:
  using typename Base::accumulator;
  using typename Base::tape_type;

  SpatialBatchNormImpl(std::size_t channels, std::size_t members, std::size_t held)
      : Base(channels), members_(members), held_(held) {}

  void bind(ParameterBinder<T, Space>& binder) {
    Base::bind(binder);
    group_ = &binder.kernels().template layer_group<T, Space>();
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::forward (slabs)");
    if (!ctx.training) return Base::template normalize<false>(ctx, x, y, tape);  // running statistics: per element
    normalize<false>(ctx, x, y, tape);
  }
  void forward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::forward_relu (slabs)");
    if (!ctx.training) return Base::template normalize<true>(ctx, x, y, tape);
    normalize<true>(ctx, x, y, tape);
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::backward (slabs)");
    differentiate<false>(ctx, x, x, dy, dx, tape);
  }
  void backward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> relu_dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::BatchNorm::backward_relu (slabs)");
    differentiate<true>(ctx, x, relu_y, relu_dy, dx, tape);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions).

  /// parts[k][w * C + c] = the sum over held member k's slab of channel c of term(w, c, value
  /// index), w < Terms; then total = the group's sum of every member's parts.
  template <std::size_t Terms, class Term>
  void slab_sums(const Space& space, std::size_t n, std::size_t per_plane, const Term& term) const {
    const std::size_t channels = this->channels_, held = held_, slab = per_plane / held_, count = n * slab;
    const std::size_t width = Terms * channels;
    ensure_capacity(parts_, held * width, "hpf::BatchNorm::member_sums");
    ensure_capacity(total_, width, "hpf::BatchNorm::group_sums");
    T* parts = parts_.data();
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_sums", Kokkos::RangePolicy<Space>(space, 0, held * channels), KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t k = item / channels, c = item % channels;
          // Bound outside `if constexpr`: nvcc's device lambdas may not first capture inside one.
          T* const part = parts + k * width;
          const std::size_t values = count;
          const Term& f = term;
          // Value i of member k's slab: sample i / slab, position k * slab + i % slab (i itself
          // where this process holds one slab: the same values in the same order).
          const auto sum_at = [&](const auto& at) {
            if constexpr (Terms == 1) {
              part[c] = static_cast<T>(lane_sum<accumulator>(values, [&](std::size_t i) { return f(0, c, at(i)); }));
            } else {
              const SumPair<accumulator> sums = lane_sums<accumulator>(
                  values, [&](std::size_t i) { return f(0, c, at(i)); }, [&](std::size_t i) { return f(1, c, at(i)); });
              part[c] = static_cast<T>(sums.first);
              part[channels + c] = static_cast<T>(sums.second);
            }
          };
          if (held == 1) {
            sum_at([](std::size_t i) { return i; });
          } else {
            sum_at([&](std::size_t i) { return (i / slab) * per_plane + k * slab + i % slab; });
          }
        });
    group_->sum(parts, width, total_.data());
  }

  template <bool Relu>
  void normalize(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), channels = this->channels_;
    const std::size_t m = n * s / held_ * members_;  // values per channel in the whole batch
    const T* in = x.data();
    slab_sums<1>(ctx.space, n, s, KOKKOS_LAMBDA(std::size_t, std::size_t c, std::size_t i) { return in[c * n * s + i]; });
    const auto mean_out = tape.mean, inv_std_out = tape.inv_std;
    const T* total = total_.data();
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_mean", Kokkos::RangePolicy<Space>(ctx.space, 0, channels),
        KOKKOS_LAMBDA(const std::size_t c) { mean_out(c) = static_cast<T>(accumulator(total[c]) / accumulator(m)); });
    slab_sums<1>(ctx.space, n, s, KOKKOS_LAMBDA(std::size_t, std::size_t c, std::size_t i) {
      const accumulator d = accumulator(in[c * n * s + i]) - accumulator(mean_out(c));
      return d * d;
    });
    const auto gamma = this->gamma_, beta = this->beta_, running_mean = this->running_mean_, running_var = this->running_var_;
    const auto batches_tracked = this->batches_tracked_;
    const T unbias = m > 1 ? T(m) / T(m - 1) : T(1);
    const bool update_running = !ctx.recomputing;
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_statistics", Kokkos::RangePolicy<Space>(ctx.space, 0, channels), KOKKOS_LAMBDA(const std::size_t c) {
          const T mean = mean_out(c), var = static_cast<T>(accumulator(total[c]) / accumulator(m));
          inv_std_out(c) = T(1) / math::sqrt(var + T(Base::epsilon));
          if (!update_running) return;
          running_mean(c) = (T(1) - T(Base::momentum)) * running_mean(c) + T(Base::momentum) * mean;
          running_var(c) = (T(1) - T(Base::momentum)) * running_var(c) + T(Base::momentum) * var * unbias;
          if (c == 0) batches_tracked(0) += T(1);
        });
    T* out = y.data();
    const std::size_t m_held = n * s;  // a channel's values here, one after another
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_normalize", Kokkos::RangePolicy<Space>(ctx.space, 0, channels), KOKKOS_LAMBDA(const std::size_t c) {
          const T scale = gamma(c) * inv_std_out(c), shift = beta(c) - mean_out(c) * scale;
          for (std::size_t i = c * m_held; i < (c + 1) * m_held; ++i) out[i] = relu_if<Relu>(in[i] * scale + shift);
        });
  }

  template <bool Relu>
  void differentiate(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), channels = this->channels_;
    const std::size_t m = n * s / held_ * members_;
    const T* in = x.data();
    const T* grad_out = dy.data();
    const T* relu_out = relu_y.data();
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    const auto grad_at = KOKKOS_LAMBDA(std::size_t i)->T {
      // Both read outside `if constexpr`, as above.
      const T gradient = grad_out[i];
      [[maybe_unused]] const T* const relu = relu_out;
      if constexpr (Relu) {
        return relu_gradient(gradient, relu[i]);
      } else {
        return gradient;
      }
    };
    slab_sums<2>(ctx.space, n, s, KOKKOS_LAMBDA(std::size_t term, std::size_t c, std::size_t i) {
      const std::size_t at = c * n * s + i;
      if (term == 0) return accumulator(grad_at(at));
      return accumulator(grad_at(at)) * (accumulator(in[at]) - accumulator(saved_mean(c))) * accumulator(saved_inv_std(c));
    });
    const T* total = total_.data();
    const auto gamma = this->gamma_, gamma_grad = this->gamma_grad_, beta_grad = this->beta_grad_;
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_parameter_gradients", Kokkos::RangePolicy<Space>(ctx.space, 0, channels),
        KOKKOS_LAMBDA(const std::size_t c) {
          gamma_grad(c) += total[channels + c];
          beta_grad(c) += total[c];
        });
    if (is_empty(dx)) return;
    T* grad_in = dx.data();
    const std::size_t m_held = n * s;
    Kokkos::parallel_for(
        "hpf::BatchNorm::slab_input_gradient", Kokkos::RangePolicy<Space>(ctx.space, 0, channels), KOKKOS_LAMBDA(const std::size_t c) {
          const T mean = saved_mean(c), inv_std = saved_inv_std(c);
          const T k = gamma(c) * inv_std / T(m), sum_dy = total[c], sum_dy_xhat = total[channels + c];
          for (std::size_t i = c * m_held; i < (c + 1) * m_held; ++i) {
            const T xhat = (in[i] - mean) * inv_std;
            grad_in[i] = k * (T(m) * grad_at(i) - sum_dy - xhat * sum_dy_xhat);
          }
        });
  }

 private:
  std::size_t members_, held_;
  const LayerGroup<T, Space>* group_ = nullptr;
  mutable Buffer<T, Space> parts_, total_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPATIAL_BATCH_NORM_HPP
