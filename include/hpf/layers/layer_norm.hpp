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
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf {

namespace detail {

/// Layer normalisation over a group of values in `[C][N][S]`: all C*S values of a sample (PyTorch
/// nn.LayerNorm(sample shape)), or with PerPosition the C features of each of a sequence's S
/// positions (nn.LayerNorm(D) on `[N, T, D]`). Eps 1e-5, biased variance, weight and bias of the
/// group's shape. A group's statistics are its own, so the result does not depend on how a batch
/// is split into micro-batches or replicas. One team per group normalises it; one team per
/// feature sums the weight and bias gradients over the groups.
template <class T, class Space, bool PerPosition>
class LayerNormImpl {
 public:
  static constexpr double epsilon = 1e-5;
  struct tape_type {
    Buffer<T, Space> mean, inv_std;  // per group, for backward
  };
  using team_policy = Kokkos::TeamPolicy<Space>;
  /// Sums accumulate in double, as BatchNorm's do: a sample's features may number thousands.
  using accumulator = double;
  using member = typename team_policy::member_type;

  /// `dims`: the weight's PyTorch extents (the group's shape); `groups_per_sample`: 1, or T.
  LayerNormImpl(std::vector<std::size_t> dims, std::size_t groups_per_sample)
      : dims_(std::move(dims)), groups_per_sample_(groups_per_sample) {}

  void bind(ParameterBinder<T, Space>& binder) {
    auto w = binder.parameter("weight", dims_, InitRule::ones());
    auto b = binder.parameter("bias", dims_, InitRule::zeros());
    weight_ = w.value;
    weight_grad_ = w.grad;
    bias_ = b.value;
    bias_grad_ = b.grad;
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    ensure_capacity(tape.mean, capacity * groups_per_sample_, "hpf::LayerNorm::mean");
    ensure_capacity(tape.inv_std, capacity * groups_per_sample_, "hpf::LayerNorm::inv_std");
  }
  std::size_t workspace(std::size_t) const { return 0; }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::LayerNorm::forward");
    if constexpr (PerPosition) {
      normalize_positions(ctx, x, y, tape);
    } else {
      normalize(ctx, x, y, tape);
    }
  }
  /// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight, per group.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::LayerNorm::backward");
    parameter_gradients(ctx, x, dy, tape);
    if (is_empty(dx)) return;
    if constexpr (PerPosition) {
      input_gradient_positions(ctx, x, dy, dx, tape);
    } else {
      input_gradient(ctx, x, dy, dx, tape);
    }
  }

  /// Value i of group g = (sample j, position p): x(i, j, p) per position, x(i / S, j, i % S) for
  /// a whole sample (p = 0).
  template <class View>
  KOKKOS_INLINE_FUNCTION static auto& at(const View& v, std::size_t j, std::size_t p, std::size_t i) {
    if constexpr (PerPosition) {
      return v(i, j, p);
    } else {
      const std::size_t s = v.extent(2);
      return v(i / s, j, i % s);
    }
  }
  /// Groups in a batch of `[C][N][S]` and values per group.
  static std::size_t group_count(const ConstActivation<T, Space>& x) {
    return PerPosition ? x.extent(1) * x.extent(2) : x.extent(1);
  }
  static std::size_t group_size(const ConstActivation<T, Space>& x) {
    return PerPosition ? x.extent(0) : x.extent(0) * x.extent(2);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions). Team g is
  // group g = j * P + p, P = positions per sample.
  void normalize(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                 tape_type& tape) const {
    const std::size_t m = group_size(x), positions = PerPosition ? x.extent(2) : 1;
    const auto weight = weight_, bias = bias_;
    const auto mean_out = tape.mean, inv_std_out = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::forward", team_policy(ctx.space, group_count(x), Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t g = team.league_rank(), j = g / positions, p = g % positions;
          const auto in = [&](std::size_t i) -> const T& { return at(x, j, p, i); };
          const accumulator sum = team_sum<accumulator>(team, m, [&](std::size_t i) { return in(i); });
          const T mean = static_cast<T>(sum / accumulator(m));
          const accumulator squares = team_sum<accumulator>(team, m, [&](std::size_t i) {
            const accumulator d = accumulator(in(i)) - accumulator(mean);
            return d * d;
          });
          const T inv_std = T(1) / math::sqrt(static_cast<T>(squares / accumulator(m)) + T(epsilon));
          const T shift = -inv_std * mean;  // y = (x * inv_std + shift) * weight + bias, as PyTorch forms it
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
            at(y, j, p, i) = (in(i) * inv_std + shift) * weight(i) + bias(i);
          });
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            mean_out(g) = mean;
            inv_std_out(g) = inv_std;
          });
        });
  }

  // Per position: one team per sample holds a sum per position in scratch and adds the features
  // in order, c = 0, 1, ...: a single-thread team (CPU backends) feature by feature over all
  // positions (contiguous, it vectorises), a wider team one position per thread (GPUs, coalesced).
  // Either way each sum is the same additions in the same order.
  using scratch_sums = Kokkos::View<accumulator*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static team_policy position_policy(const Context<T, Space>& ctx, std::size_t n, std::size_t positions) {
    return team_policy(ctx.space, n, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(2 * scratch_sums::shmem_size(positions)));
  }
  /// first(p) = sum_c f(c, p), second(p) = sum_c g(c, p) for every position p, in feature order;
  /// with g = nullptr only the first sum (forward's mean, then its squares).
  template <class F, class G>
  KOKKOS_INLINE_FUNCTION static void position_sums(const member& team, std::size_t features, std::size_t positions,
                                                   scratch_sums first, scratch_sums second, const F& f, const G& g) {
    if (team.team_size() == 1) {
      for (std::size_t p = 0; p < positions; ++p) first(p) = second(p) = 0;
      for (std::size_t c = 0; c < features; ++c) {
        for (std::size_t p = 0; p < positions; ++p) {
          first(p) += accumulator(f(c, p));
          if constexpr (!std::is_null_pointer_v<G>) second(p) += accumulator(g(c, p));
        }
      }
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, positions), [&](const std::size_t p) {
        accumulator a = 0, b = 0;
        for (std::size_t c = 0; c < features; ++c) {
          a += accumulator(f(c, p));
          if constexpr (!std::is_null_pointer_v<G>) b += accumulator(g(c, p));
        }
        first(p) = a;
        second(p) = b;
      });
    }
    team.team_barrier();
  }

  void normalize_positions(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                           tape_type& tape) const {
    const std::size_t features = x.extent(0), positions = x.extent(2);
    const auto weight = weight_, bias = bias_;
    const auto mean_out = tape.mean, inv_std_out = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::forward", position_policy(ctx, x.extent(1), positions), KOKKOS_LAMBDA(const member& team) {
          const std::size_t j = team.league_rank();
          const scratch_sums sums(team.team_scratch(0), positions), squares(team.team_scratch(0), positions);
          position_sums(team, features, positions, sums, squares, [&](std::size_t c, std::size_t p) { return x(c, j, p); },
                        nullptr);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, positions), [&](const std::size_t p) {
            mean_out(j * positions + p) = static_cast<T>(sums(p) / accumulator(features));
          });
          team.team_barrier();
          position_sums(
              team, features, positions, sums, squares,
              [&](std::size_t c, std::size_t p) {
                const accumulator d = accumulator(x(c, j, p)) - accumulator(mean_out(j * positions + p));
                return d * d;
              },
              nullptr);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, positions), [&](const std::size_t p) {
            inv_std_out(j * positions + p) = T(1) / math::sqrt(static_cast<T>(sums(p) / accumulator(features)) + T(epsilon));
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, features), [&](const std::size_t c) {
            for (std::size_t p = 0; p < positions; ++p) {
              const T mean = mean_out(j * positions + p), inv_std = inv_std_out(j * positions + p);
              y(c, j, p) = (x(c, j, p) * inv_std + -inv_std * mean) * weight(c) + bias(c);
            }
          });
        });
  }

  void input_gradient_positions(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                                Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t features = x.extent(0), positions = x.extent(2);
    const auto weight = weight_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::backward", position_policy(ctx, x.extent(1), positions), KOKKOS_LAMBDA(const member& team) {
          const std::size_t j = team.league_rank();
          const scratch_sums sum_g(team.team_scratch(0), positions), sum_g_xhat(team.team_scratch(0), positions);
          const auto xhat = [&](std::size_t c, std::size_t p) {
            return (x(c, j, p) - saved_mean(j * positions + p)) * saved_inv_std(j * positions + p);
          };
          position_sums(
              team, features, positions, sum_g, sum_g_xhat, [&](std::size_t c, std::size_t p) { return dy(c, j, p) * weight(c); },
              [&](std::size_t c, std::size_t p) { return accumulator(dy(c, j, p) * weight(c)) * accumulator(xhat(c, p)); });
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, features), [&](const std::size_t c) {
            for (std::size_t p = 0; p < positions; ++p) {
              const T mean_g = static_cast<T>(sum_g(p) / accumulator(features));
              const T mean_g_xhat = static_cast<T>(sum_g_xhat(p) / accumulator(features));
              dx(c, j, p) = saved_inv_std(j * positions + p) * (dy(c, j, p) * weight(c) - mean_g - xhat(c, p) * mean_g_xhat);
            }
          });
        });
  }

  /// Team i sums feature i's terms over the batch's groups in group order.
  void parameter_gradients(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                           tape_type& tape) const {
    const std::size_t n = x.extent(1), s = x.extent(2), m = group_size(x);
    const auto weight_grad = weight_grad_, bias_grad = bias_grad_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::parameter_gradients", team_policy(ctx.space, m, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t i = team.league_rank();
          // Feature i's values over the groups: per position a row of N*S contiguous values
          // (group g at g); for whole samples one value per sample, S apart.
          const std::size_t row = PerPosition ? i * n * s : (i / s) * n * s + i % s;
          const std::size_t stride = PerPosition ? 1 : s;
          const T* xs = x.data() + row;
          const T* gs = dy.data() + row;
          const SumPair<accumulator> sums = team_sums<accumulator>(
              team, PerPosition ? n * s : n,
              [&](std::size_t g) {
                return accumulator(gs[g * stride]) * (accumulator(xs[g * stride]) - accumulator(saved_mean(g))) *
                       accumulator(saved_inv_std(g));
              },
              [&](std::size_t g) { return gs[g * stride]; });
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            weight_grad(i) += static_cast<T>(sums.first);
            bias_grad(i) += static_cast<T>(sums.second);
          });
        });
  }

  void input_gradient(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                      Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t m = group_size(x), positions = PerPosition ? x.extent(2) : 1;
    const auto weight = weight_;
    const auto saved_mean = tape.mean, saved_inv_std = tape.inv_std;
    Kokkos::parallel_for(
        "hpf::LayerNorm::backward", team_policy(ctx.space, group_count(x), Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t g = team.league_rank(), j = g / positions, p = g % positions;
          const T mean = saved_mean(g), inv_std = saved_inv_std(g);
          const auto grad = [&](std::size_t i) { return at(dy, j, p, i) * weight(i); };
          const auto xhat = [&](std::size_t i) { return (at(x, j, p, i) - mean) * inv_std; };
          const SumPair<accumulator> sums = team_sums<accumulator>(
              team, m, [&](std::size_t i) { return grad(i); },
              [&](std::size_t i) { return accumulator(grad(i)) * accumulator(xhat(i)); });
          const T mean_g = static_cast<T>(sums.first / accumulator(m));
          const T mean_g_xhat = static_cast<T>(sums.second / accumulator(m));
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::size_t i) {
            at(dx, j, p, i) = inv_std * (grad(i) - mean_g - xhat(i) * mean_g_xhat);
          });
        });
  }

 private:
  std::vector<std::size_t> dims_;
  std::size_t groups_per_sample_;
  Vector<T, Space> weight_, weight_grad_, bias_, bias_grad_;
};

}  // namespace detail

/// \brief Layer normalisation with learnable scale and shift (PyTorch nn.LayerNorm, eps 1e-5):
/// over all of a sample's values for vectors (`[D]`) and images (`[C, H, W]`), over each
/// position's D features for a sequence `Shape<T, D>` (nn.LayerNorm(D), as transformers use it).
/// Parameters: weight (ones), bias (zeros), of that shape. Training and evaluation compute the
/// same: the statistics are each group's own.
struct LayerNorm {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    // The tape keeps a mean and an inverse deviation per group besides the output.
    static constexpr LayerCost cost{.parameters = 2 * (In::size / In::positions), .forward_flops = 7 * In::size,
                                    .backward_flops = 12 * In::size, .activations = In::size + 2 * In::positions};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return In::sequence ? "LayerNorm(" + std::to_string(In::channels) + " per position)"
                          : "LayerNorm(" + std::to_string(In::size) + ")";
    }
    template <class T, class Space>
    struct impl : detail::LayerNormImpl<T, Space, In::sequence> {
      impl()
          : detail::LayerNormImpl<T, Space, In::sequence>(
                In::sequence ? std::vector<std::size_t>{In::channels}
                             : std::vector<std::size_t>(In::dims.begin(), In::dims.end()),
                In::positions) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_LAYER_NORM_HPP
