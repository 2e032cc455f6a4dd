// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_MULTI_HEAD_ATTENTION_HPP
#define HPF_LAYERS_MULTI_HEAD_ATTENTION_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/layers/detail/reduce.hpp>
#include <hpf/layers/detail/rows.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/math.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// \brief Multi-head self-attention on a batch of sequences `x(d, j, t)` (feature d, sample j,
/// position t), as PyTorch's F.multi_head_attention_forward computes it without dropout:
///     [q; k; v] = W_in x + b_in        one GEMM over all N*T positions, as Dense
///     p(t, u) = softmax_u(q_t . k_u / sqrt(dh)) per head, u > t left out when causal
///     o_t = sum_u p(t, u) v_u           per head, heads concatenated
///     y = W_o o + b_o                   one GEMM
/// The attention kernels run one team per (sample, head, query) or, for the key and value
/// gradients, per (sample, head); every value is written by one thread summing in a fixed order,
/// so results do not depend on thread counts or on the other samples of the batch (no atomics).
template <class T, class Space>
class MultiHeadAttentionImpl {
 public:
  /// What backward reads: the projections (q already divided by sqrt(dh)), the probabilities and
  /// the concatenated head outputs (out_proj's input, for its weight gradient).
  struct tape_type {
    Buffer<T, Space> qkv;    // [3D][N][T]
    Buffer<T, Space> probs;  // [N][Heads][T][T], row (j, h, t) over keys u
    Buffer<T, Space> heads;  // [D][N][T]
  };
  using team_policy = Kokkos::TeamPolicy<Space>;
  using member = typename team_policy::member_type;

  MultiHeadAttentionImpl(std::size_t positions, std::size_t features, std::size_t heads, bool causal, bool bias)
      : positions_(positions),
        features_(features),
        heads_(heads),
        causal_(causal),
        bias_(bias),
        // PyTorch divides q by math.sqrt(head_dim), a double rounded to T.
        root_(static_cast<T>(std::sqrt(static_cast<double>(features / heads)))) {}

  void bind(ParameterBinder<T, Space>& binder) {
    const std::size_t d = features_;
    auto w_in = binder.parameter("in_proj_weight", {3 * d, d}, InitRule::xavier_uniform(d, 3 * d));
    in_weight_ = Matrix<T, Space>(w_in.value.data(), 3 * d, d);
    in_weight_grad_ = Matrix<T, Space>(w_in.grad.data(), 3 * d, d);
    if (bias_) {
      auto b_in = binder.parameter("in_proj_bias", {3 * d}, InitRule::zeros());
      in_bias_ = b_in.value;
      in_bias_grad_ = b_in.grad;
    }
    auto w_out = binder.parameter("out_proj.weight", {d, d}, InitRule::weight(d, d));
    out_weight_ = Matrix<T, Space>(w_out.value.data(), d, d);
    out_weight_grad_ = Matrix<T, Space>(w_out.grad.data(), d, d);
    if (bias_) {
      auto b_out = binder.parameter("out_proj.bias", {d}, InitRule::zeros());
      out_bias_ = b_out.value;
      out_bias_grad_ = b_out.grad;
    }
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    const std::size_t positions = capacity * positions_;
    ensure_capacity(tape.qkv, 3 * features_ * positions, "hpf::MultiHeadAttention::qkv");
    ensure_capacity(tape.probs, heads_ * positions_ * positions, "hpf::MultiHeadAttention::probs");
    ensure_capacity(tape.heads, features_ * positions, "hpf::MultiHeadAttention::heads");
  }
  /// Backward's scratch: dQKV, dO and the score gradients dS. They live only within one backward,
  /// so they come from the workspace all layers share rather than from each tape (a pipeline
  /// keeps several tapes in flight).
  std::size_t workspace(std::size_t capacity) const {
    return capacity * (4 * features_ * positions_ + heads_ * positions_ * positions_);
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::MultiHeadAttention::forward");
    const std::size_t n = x.extent(1);
    const auto qkv = activation_view(tape.qkv, 3 * features_, n, positions_);
    const auto heads = activation_view(tape.heads, features_, n, positions_);
    if (bias_) broadcast_rows(ctx.space, in_bias_, as_matrix(qkv), "hpf::MultiHeadAttention::in_proj_bias");
    gemm("N", "N", T(1), in_weight_, as_matrix(x), bias_ ? T(1) : T(0), as_matrix(qkv));
    attend(ctx, qkv, probabilities(tape, n), heads);
    const auto out = as_matrix(y);
    if (bias_) broadcast_rows(ctx.space, out_bias_, out, "hpf::MultiHeadAttention::out_proj.bias");
    gemm("N", "N", T(1), out_weight_, as_matrix(heads), bias_ ? T(1) : T(0), out);
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::MultiHeadAttention::backward");
    const std::size_t n = x.extent(1), d = features_, t = positions_;
    KOKKOS_ASSERT(ctx.workspace.extent(0) >= workspace(n));
    T* scratch = ctx.workspace.data();
    const Activation<T, Space> dqkv(scratch, 3 * d, n, t);
    const Activation<T, Space> dheads(scratch + 3 * d * n * t, d, n, t);
    const Matrix<T, Space> dscores(scratch + 4 * d * n * t, n * heads_ * t, t);
    const auto heads = activation_view(tape.heads, d, n, t);
    const auto grad_out = as_matrix(dy);

    gemm("N", "T", T(1), grad_out, as_matrix(heads), T(1), out_weight_grad_);  // dW_o += dY O^T
    if (bias_) add_row_sums(ctx.space, grad_out, out_bias_grad_, "hpf::MultiHeadAttention::out_proj.bias_grad");
    gemm("T", "N", T(1), out_weight_, grad_out, T(0), as_matrix(dheads));  // dO = W_o^T dY

    const auto qkv = activation_view(tape.qkv, 3 * d, n, t);
    const auto probs = probabilities(tape, n);
    query_gradients(ctx, qkv, probs, dheads, dscores, dqkv);
    key_value_gradients(ctx, qkv, probs, dheads, dscores, dqkv);

    const Matrix<const T, Space> grad_qkv(as_matrix(dqkv));
    gemm("N", "T", T(1), grad_qkv, as_matrix(x), T(1), in_weight_grad_);  // dW_in += dQKV X^T
    if (bias_) add_row_sums(ctx.space, grad_qkv, in_bias_grad_, "hpf::MultiHeadAttention::in_proj_bias_grad");
    if (!is_empty(dx)) gemm("T", "N", T(1), in_weight_, grad_qkv, T(0), as_matrix(dx));  // dX = W_in^T dQKV
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions). Row
  // r = (j * Heads + h) * T + t of `probs` and `dscores` is query t of head h of sample j; head h
  // reads rows h*dh.. of q, D + h*dh.. of k and 2D + h*dh.. of v in qkv (each row contiguous
  // over positions). Sums over a head's features or over positions run in index order, sums
  // along a row of probabilities in lane_sum's order. One-thread teams (host backends, whose AUTO
  // teams always have one thread) run the loops with positions innermost, contiguous and
  // vectorised; larger teams (GPUs) give each thread its own elements. Either way an element's
  // value depends on its own sample only: the same operations in the same order (compilers may
  // still fuse multiply-adds differently in the two forms, GCC's AMD tunings do, which is why the
  // form depends on the backend alone).

  /// Scales q, then per query row: scores, softmax (max subtracted, as PyTorch), and o_t.
  void attend(const Context<T, Space>& ctx, Activation<T, Space> qkv, Matrix<T, Space> probs,
              Activation<T, Space> heads) const {
    const std::size_t n = qkv.extent(1), len = positions_, d = features_, count = heads_, dh = d / count;
    const bool causal = causal_;
    const T root = root_;
    Kokkos::parallel_for(
        "hpf::MultiHeadAttention::attend", team_policy(ctx.space, n * count * len, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t row = team.league_rank(), t = row % len, h = row / len % count, j = row / len / count;
          const std::size_t q0 = h * dh, k0 = d + h * dh, v0 = 2 * d + h * dh;
          const std::size_t keys = causal ? t + 1 : len;  // masked keys get probability exactly 0
          T* p = &probs(row, 0);
          // Each q_t belongs to one team: scaled here, in place, as backward wants it.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, dh), [&](const std::size_t e) {
            qkv(q0 + e, j, t) = qkv(q0 + e, j, t) / root;
          });
          team.team_barrier();
          if (team.team_size() == 1) {
            for (std::size_t u = 0; u < keys; ++u) p[u] = 0;
            for (std::size_t e = 0; e < dh; ++e) {
              const T q = qkv(q0 + e, j, t);
              const T* k = &qkv(k0 + e, j, 0);
              for (std::size_t u = 0; u < keys; ++u) p[u] += q * k[u];
            }
          } else {
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, keys), [&](const std::size_t u) {
              T s = 0;
              for (std::size_t e = 0; e < dh; ++e) s += qkv(q0 + e, j, t) * qkv(k0 + e, j, u);
              p[u] = s;
            });
          }
          team.team_barrier();
          // Max and sum by one thread: the same bits for every team size.
          T top;
          Kokkos::single(
              Kokkos::PerTeam(team),
              [&](T& m) {
                m = p[0];
                for (std::size_t u = 1; u < keys; ++u) m = p[u] > m ? p[u] : m;
              },
              top);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, keys),
                               [&](const std::size_t u) { p[u] = math::exp(p[u] - top); });
          team.team_barrier();
          T total;
          Kokkos::single(
              Kokkos::PerTeam(team), [&](T& s) { s = lane_sum<T>(keys, [&](std::size_t u) { return p[u]; }); },
              total);
          const T inverse = T(1) / total;  // PyTorch multiplies by the reciprocal of the sum
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len),
                               [&](const std::size_t u) { p[u] = u < keys ? p[u] * inverse : T(0); });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, dh), [&](const std::size_t e) {
            const T* v = &qkv(v0 + e, j, 0);
            heads(q0 + e, j, t) = lane_sum<T>(keys, [&](std::size_t u) { return p[u] * v[u]; });
          });
        });
  }

  /// Per query row: dP = dO_t . v_u, dS = P * (dP - sum_u dP * P) (softmax backward, into
  /// dscores) and dq_t = (sum_u dS(t, u) k_u) / sqrt(dh).
  void query_gradients(const Context<T, Space>& ctx, Activation<T, Space> qkv, Matrix<T, Space> probs,
                       Activation<T, Space> dheads, Matrix<T, Space> dscores, Activation<T, Space> dqkv) const {
    const std::size_t n = qkv.extent(1), len = positions_, d = features_, count = heads_, dh = d / count;
    const bool causal = causal_;
    const T root = root_;
    Kokkos::parallel_for(
        "hpf::MultiHeadAttention::query_gradients", team_policy(ctx.space, n * count * len, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t row = team.league_rank(), t = row % len, h = row / len % count, j = row / len / count;
          const std::size_t q0 = h * dh, k0 = d + h * dh, v0 = 2 * d + h * dh;
          const std::size_t keys = causal ? t + 1 : len;
          const T* p = &probs(row, 0);
          T* g = &dscores(row, 0);
          if (team.team_size() == 1) {
            for (std::size_t u = 0; u < keys; ++u) g[u] = 0;
            for (std::size_t e = 0; e < dh; ++e) {
              const T grad = dheads(q0 + e, j, t);
              const T* v = &qkv(v0 + e, j, 0);
              for (std::size_t u = 0; u < keys; ++u) g[u] += grad * v[u];
            }
          } else {
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, keys), [&](const std::size_t u) {
              T s = 0;
              for (std::size_t e = 0; e < dh; ++e) s += dheads(q0 + e, j, t) * qkv(v0 + e, j, u);
              g[u] = s;
            });
          }
          team.team_barrier();
          T dot;
          Kokkos::single(
              Kokkos::PerTeam(team), [&](T& s) { s = lane_sum<T>(keys, [&](std::size_t u) { return g[u] * p[u]; }); },
              dot);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, keys),
                               [&](const std::size_t u) { g[u] = (g[u] - dot) * p[u]; });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, dh), [&](const std::size_t e) {
            const T* k = &qkv(k0 + e, j, 0);
            dqkv(q0 + e, j, t) = lane_sum<T>(keys, [&](std::size_t u) { return g[u] * k[u]; }) / root;
          });
        });
  }

  /// Per (sample, head): dk_u = sum_t dS(t, u) q_t (q as scaled in forward) and
  /// dv_u = sum_t P(t, u) dO_t, over the queries t that see u (t >= u when causal), t ascending.
  void key_value_gradients(const Context<T, Space>& ctx, Activation<T, Space> qkv, Matrix<T, Space> probs,
                           Activation<T, Space> dheads, Matrix<T, Space> dscores, Activation<T, Space> dqkv) const {
    const std::size_t n = qkv.extent(1), len = positions_, d = features_, count = heads_, dh = d / count;
    const bool causal = causal_;
    Kokkos::parallel_for(
        "hpf::MultiHeadAttention::key_value_gradients", team_policy(ctx.space, n * count, Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t h = team.league_rank() % count, j = team.league_rank() / count;
          const std::size_t q0 = h * dh, k0 = d + h * dh, v0 = 2 * d + h * dh;
          const std::size_t first_row = team.league_rank() * len;  // row (j, h, 0) of probs and dscores
          if (team.team_size() == 1) {
            for (std::size_t e = 0; e < dh; ++e)
              for (std::size_t u = 0; u < len; ++u) dqkv(k0 + e, j, u) = dqkv(v0 + e, j, u) = 0;
            for (std::size_t t = 0; t < len; ++t) {
              const std::size_t keys = causal ? t + 1 : len;
              const T* s = &dscores(first_row + t, 0);
              const T* p = &probs(first_row + t, 0);
              for (std::size_t e = 0; e < dh; ++e) {
                const T q = qkv(q0 + e, j, t), grad = dheads(q0 + e, j, t);
                T* dk = &dqkv(k0 + e, j, 0);
                T* dv = &dqkv(v0 + e, j, 0);
                for (std::size_t u = 0; u < keys; ++u) {
                  dk[u] += s[u] * q;
                  dv[u] += p[u] * grad;
                }
              }
            }
          } else {
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, dh * len), [&](const std::size_t i) {
              const std::size_t e = i / len, u = i % len;
              T dk = 0, dv = 0;
              for (std::size_t t = causal ? u : 0; t < len; ++t) {
                dk += dscores(first_row + t, u) * qkv(q0 + e, j, t);
                dv += probs(first_row + t, u) * dheads(q0 + e, j, t);
              }
              dqkv(k0 + e, j, u) = dk;
              dqkv(v0 + e, j, u) = dv;
            });
          }
        });
  }

 private:
  Matrix<T, Space> probabilities(const tape_type& tape, std::size_t n) const {
    return Matrix<T, Space>(tape.probs.data(), n * heads_ * positions_, positions_);
  }

  std::size_t positions_, features_, heads_;
  bool causal_, bias_;
  T root_;
  Matrix<T, Space> in_weight_, in_weight_grad_, out_weight_, out_weight_grad_;
  Vector<T, Space> in_bias_, in_bias_grad_, out_bias_, out_bias_grad_;
};

}  // namespace detail

template <class In>
struct attention_input_not_a_sequence {
  static_assert(In::sequence,
                "hpf::MultiHeadAttention: the input must be a sequence Shape<T, D> (positions x features)");
};
template <std::size_t Heads, class In>
struct attention_heads_do_not_divide_features {
  static_assert(In::channels % Heads == 0,
                "hpf::MultiHeadAttention: the feature count D must be a multiple of Heads (each head sees "
                "D / Heads features)");
};

/// \brief Multi-head scaled dot-product self-attention over a sequence `Shape<T, D>` (PyTorch
/// nn.MultiheadAttention(D, Heads, batch_first=True) called as mha(x, x, x, need_weights=False),
/// without dropout). Output shape = input shape.
///
/// Parameters, with PyTorch's names: in_proj_weight `[3D, D]` (Xavier-uniform), in_proj_bias
/// `[3D]`, out_proj.weight `[D, D]`, out_proj.bias `[D]` (biases zero).
/// \tparam Heads attention heads; must divide D
/// \tparam Options hpf::Causal (position t attends to positions <= t, the attn_mask of a
///   language model), hpf::NoBias (bias=False)
template <std::size_t Heads, class... Options>
struct MultiHeadAttention {
  static constexpr bool has_bias = bias_option_v<Options...>;
  static constexpr bool causal = (std::is_same_v<Options, Causal> || ...);

  template <class In>
  struct bind {
    static_assert(Heads > 0, "hpf::MultiHeadAttention: the number of heads must be positive");
    static_assert(((std::is_same_v<Options, NoBias> || std::is_same_v<Options, Causal>) && ...),
                  "hpf::MultiHeadAttention: the options are hpf::Causal and hpf::NoBias");
    static constexpr bool is_sequence = In::sequence;
    static constexpr bool accepted = Heads > 0 && is_sequence && In::channels % (Heads > 0 ? Heads : 1) == 0;
    static_assert(sizeof(std::conditional_t<is_sequence, char, attention_input_not_a_sequence<In>>));
    static_assert(sizeof(std::conditional_t<!is_sequence || Heads == 0 || accepted, char,
                                            attention_heads_do_not_divide_features<Heads, In>>));
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, In, InvalidShape>;

    static constexpr std::size_t positions = In::positions, features = In::channels;
    /// (query, key) pairs that interact: T^2, or T(T+1)/2 under the causal mask (the kernels skip
    /// masked pairs; the probabilities are kept T x T all the same).
    static constexpr std::size_t pairs = causal ? positions * (positions + 1) / 2 : positions * positions;
    // In (3D x D) and out (D x D) projections of every position; q.k and p v over all heads.
    static constexpr std::size_t projection_macs = 4 * features * features * positions;
    static constexpr std::size_t attention_macs = 2 * pairs * features;
    static constexpr std::size_t bias_flops = has_bias ? 4 * features * positions : 0;
    static constexpr LayerCost cost{
        .parameters = 4 * features * features + (has_bias ? 4 * features : 0),
        // GEMMs, q's scaling, softmax (max, subtract, exp, sum, multiply) and biases.
        .forward_flops = 2 * (projection_macs + attention_macs) + features * positions + 5 * Heads * pairs +
                         bias_flops,
        // Two GEMMs per forward GEMM (dW and dX; dP, dQ for q.k, dK, dV for p v), softmax's
        // backward and the bias sums.
        .backward_flops = 4 * (projection_macs + attention_macs) + features * positions + 4 * Heads * pairs +
                          bias_flops,
        // The tape (q, k, v: 3DT; probabilities: Heads T^2; head outputs: DT) and the output (DT).
        .activations = 5 * features * positions + Heads * positions * positions,
        .macs = projection_macs + attention_macs};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return "MultiHeadAttention(T=" + std::to_string(positions) + ", D=" + std::to_string(features) + ", " +
             std::to_string(Heads) + (Heads == 1 ? " head" : " heads") + (causal ? ", causal" : "") +
             (has_bias ? ")" : ", no bias)");
    }
    template <class Scalar, class Space>
    struct impl : detail::MultiHeadAttentionImpl<Scalar, Space> {
      impl() : detail::MultiHeadAttentionImpl<Scalar, Space>(positions, features, Heads, causal, has_bias) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_MULTI_HEAD_ATTENTION_HPP
