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
#include <hpf/tensor/vector_math.hpp>
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
///     S = (q / sqrt(dh))^T k            per (sample, head): a T x T GEMM
///     P = softmax of S's rows           max subtracted, as PyTorch; u > t get exactly 0 when causal
///     o = v P^T                         per (sample, head), heads concatenated
///     y = W_o o + b_o                   one GEMM
/// A head's q, k, v and o are dh x T blocks of the activations (rows of T contiguous positions,
/// N*T apart), which BLAS reads and writes in place through its leading dimension: no copies.
/// Each attention GEMM covers one (sample, head), so its shape does not depend on the batch, and
/// BLAS sums an element along the reduction in one order whatever the leading dimension (it
/// splits only rows and columns among threads, as the projections already rely on); the softmax
/// kernels give each row to one team. No atomics: a sample's results do not depend on thread
/// counts or on the other samples of the batch.
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
    gemm_ = Gemm<T, Space>(binder.kernels());
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
    gemm_("N", "N", T(1), in_weight_, as_matrix(x), bias_ ? T(1) : T(0), as_matrix(qkv));
    attend(ctx, qkv, probabilities(tape, n), heads);
    const auto out = as_matrix(y);
    if (bias_) broadcast_rows(ctx.space, out_bias_, out, "hpf::MultiHeadAttention::out_proj.bias");
    gemm_("N", "N", T(1), out_weight_, as_matrix(heads), bias_ ? T(1) : T(0), out);
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

    gemm_("N", "T", T(1), grad_out, as_matrix(heads), T(1), out_weight_grad_);  // dW_o += dY O^T
    if (bias_) add_row_sums(ctx.space, grad_out, out_bias_grad_, "hpf::MultiHeadAttention::out_proj.bias_grad");
    gemm_("T", "N", T(1), out_weight_, grad_out, T(0), as_matrix(dheads));  // dO = W_o^T dY

    attend_gradients(ctx, activation_view(tape.qkv, 3 * d, n, t), probabilities(tape, n), dheads, dscores, dqkv);

    const Matrix<const T, Space> grad_qkv(as_matrix(dqkv));
    gemm_("N", "T", T(1), grad_qkv, as_matrix(x), T(1), in_weight_grad_);  // dW_in += dQKV X^T
    if (bias_) add_row_sums(ctx.space, grad_qkv, in_bias_grad_, "hpf::MultiHeadAttention::in_proj_bias_grad");
    if (!is_empty(dx)) gemm_("T", "N", T(1), in_weight_, grad_qkv, T(0), as_matrix(dx));  // dX = W_in^T dQKV
  }

  /// Divides q by sqrt(dh) in place (backward wants it so), then S = q^T k per (sample, head)
  /// into probs, the softmax of every row in one kernel, and o = v P^T per (sample, head).
  void attend(const Context<T, Space>& ctx, Activation<T, Space> qkv, Matrix<T, Space> probs,
              Activation<T, Space> heads) const {
    trace::Region region("hpf::MultiHeadAttention::attend");
    const std::size_t n = qkv.extent(1), len = positions_, d = features_, dh = d / heads_;
    divide(ctx, qkv.data(), d * n * len, "hpf::MultiHeadAttention::scale_q");  // q: the first D rows
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t h = 0; h < heads_; ++h) {
        const std::size_t first = (j * heads_ + h) * len;
        const auto p = Kokkos::subview(probs, Kokkos::make_pair(first, first + len), Kokkos::ALL);
        gemm_("T", "N", T(1), head(qkv, h * dh, j), head(qkv, d + h * dh, j), T(0), p);  // S(t, u) = q_t . k_u
      }
    }
    softmax(ctx, probs);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t h = 0; h < heads_; ++h) {
        const std::size_t first = (j * heads_ + h) * len;
        const auto p = Kokkos::subview(probs, Kokkos::make_pair(first, first + len), Kokkos::ALL);
        gemm_("N", "T", T(1), head(qkv, 2 * d + h * dh, j), p, T(0), head(heads, h * dh, j));  // o_t = sum_u P(t, u) v_u
      }
    }
  }

  /// Per (sample, head): dP(t, u) = dO_t . v_u, dS = P * (dP - sum_u dP * P) (softmax backward),
  /// dq_t = sum_u dS(t, u) k_u / sqrt(dh), dk_u = sum_t dS(t, u) q_t (q as scaled in forward),
  /// dv_u = sum_t P(t, u) dO_t. Masked pairs have P = dS = 0, so the GEMMs may run over them.
  void attend_gradients(const Context<T, Space>& ctx, Activation<T, Space> qkv, Matrix<T, Space> probs,
                        Activation<T, Space> dheads, Matrix<T, Space> dscores, Activation<T, Space> dqkv) const {
    trace::Region region("hpf::MultiHeadAttention::attend_gradients");
    const std::size_t n = qkv.extent(1), len = positions_, d = features_, dh = d / heads_;
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t h = 0; h < heads_; ++h) {
        const std::size_t first = (j * heads_ + h) * len, q0 = h * dh, v0 = 2 * d + h * dh;
        const auto g = Kokkos::subview(dscores, Kokkos::make_pair(first, first + len), Kokkos::ALL);
        gemm_("T", "N", T(1), head(dheads, q0, j), head(qkv, v0, j), T(0), g);  // dP
      }
    }
    softmax_backward(ctx, probs, dscores);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t h = 0; h < heads_; ++h) {
        const std::size_t first = (j * heads_ + h) * len, q0 = h * dh, k0 = d + h * dh, v0 = 2 * d + h * dh;
        const auto rows = Kokkos::make_pair(first, first + len);
        const auto p = Kokkos::subview(probs, rows, Kokkos::ALL);
        const auto g = Kokkos::subview(dscores, rows, Kokkos::ALL);
        gemm_("N", "T", T(1), head(qkv, k0, j), g, T(0), head(dqkv, q0, j));  // dq * sqrt(dh)
        gemm_("N", "N", T(1), head(qkv, q0, j), g, T(0), head(dqkv, k0, j));  // dk
        gemm_("N", "N", T(1), head(dheads, q0, j), p, T(0), head(dqkv, v0, j));  // dv
      }
    }
    divide(ctx, dqkv.data(), d * n * len, "hpf::MultiHeadAttention::scale_dq");
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions). Row
  // r = (j * Heads + h) * T + t of `probs` and `dscores` is query t of head h of sample j. Each
  // row belongs to one team; its max and sums are taken by one thread (lane_sum's order), so
  // they have the same bits for every team size.

  /// data[i] /= sqrt(dh) for i < count (a division, as PyTorch's q / math.sqrt(head_dim) and
  /// its backward).
  void divide(const Context<T, Space>& ctx, T* data, std::size_t count, const char* label) const {
    const T root = root_;
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Space>(ctx.space, 0, count),
                         KOKKOS_LAMBDA(const std::size_t i) { data[i] = data[i] / root; });
  }

  /// Softmax of every row of probs, in place; masked keys get exactly 0.
  void softmax(const Context<T, Space>& ctx, Matrix<T, Space> probs) const {
    const std::size_t len = positions_;
    const bool causal = causal_;
    Kokkos::parallel_for(
        "hpf::MultiHeadAttention::softmax", team_policy(ctx.space, probs.extent(0), Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t row = team.league_rank(), t = row % len, keys = causal ? t + 1 : len;
          T* p = &probs(row, 0);
          if (team.team_size() == 1) {  // plain loops, which vectorise
            const T top = lane_max(keys, p);
            for (std::size_t u = 0; u < keys; ++u) p[u] = math::vector_exp(p[u] - top);
            const T inverse = T(1) / lane_sum<T>(keys, [&](std::size_t u) { return p[u]; });
            for (std::size_t u = 0; u < keys; ++u) p[u] = p[u] * inverse;
            for (std::size_t u = keys; u < len; ++u) p[u] = T(0);
            return;
          }
          T top;
          Kokkos::single(Kokkos::PerTeam(team), [&](T& m) { m = lane_max(keys, p); }, top);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, keys),
                               [&](const std::size_t u) { p[u] = math::vector_exp(p[u] - top); });
          team.team_barrier();
          T total;
          Kokkos::single(
              Kokkos::PerTeam(team), [&](T& s) { s = lane_sum<T>(keys, [&](std::size_t u) { return p[u]; }); },
              total);
          const T inverse = T(1) / total;  // PyTorch multiplies by the reciprocal of the sum
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len),
                               [&](const std::size_t u) { p[u] = u < keys ? p[u] * inverse : T(0); });
        });
  }

  /// dS = P * (dP - sum_u dP * P) on every row of dscores (holding dP), in place; masked pairs
  /// get exactly 0 (the GEMMs after it read whole rows).
  void softmax_backward(const Context<T, Space>& ctx, Matrix<T, Space> probs, Matrix<T, Space> dscores) const {
    const std::size_t len = positions_;
    const bool causal = causal_;
    Kokkos::parallel_for(
        "hpf::MultiHeadAttention::softmax_backward", team_policy(ctx.space, dscores.extent(0), Kokkos::AUTO),
        KOKKOS_LAMBDA(const member& team) {
          const std::size_t row = team.league_rank(), t = row % len, keys = causal ? t + 1 : len;
          const T* p = &probs(row, 0);
          T* g = &dscores(row, 0);
          if (team.team_size() == 1) {
            const T dot = lane_sum<T>(keys, [&](std::size_t u) { return g[u] * p[u]; });
            for (std::size_t u = 0; u < keys; ++u) g[u] = (g[u] - dot) * p[u];
            for (std::size_t u = keys; u < len; ++u) g[u] = T(0);
            return;
          }
          T dot;
          Kokkos::single(
              Kokkos::PerTeam(team), [&](T& s) { s = lane_sum<T>(keys, [&](std::size_t u) { return g[u] * p[u]; }); },
              dot);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len),
                               [&](const std::size_t u) { g[u] = u < keys ? (g[u] - dot) * p[u] : T(0); });
        });
  }

  /// max_{u < n} p[u] (n >= 1) over 16 interleaved lanes, which vectorise; a max is exact, so
  /// the order does not change it.
  static KOKKOS_INLINE_FUNCTION T lane_max(std::size_t n, const T* p) {
    T acc[sum_lanes];
    for (std::size_t k = 0; k < sum_lanes; ++k) acc[k] = p[0];
    std::size_t i = 0;
    for (; i + sum_lanes <= n; i += sum_lanes) {
      for (std::size_t k = 0; k < sum_lanes; ++k) acc[k] = p[i + k] > acc[k] ? p[i + k] : acc[k];
    }
    for (std::size_t k = 0; i + k < n; ++k) acc[k] = p[i + k] > acc[k] ? p[i + k] : acc[k];
    for (std::size_t width = sum_lanes / 2; width > 0; width /= 2) {
      for (std::size_t k = 0; k < width; ++k) acc[k] = acc[k + width] > acc[k] ? acc[k + width] : acc[k];
    }
    return acc[0];
  }

 private:
  Matrix<T, Space> probabilities(const tape_type& tape, std::size_t n) const {
    return Matrix<T, Space>(tape.probs.data(), n * heads_ * positions_, positions_);
  }
  /// Rows [first, first + dh) of sample j: a dh x T row-major matrix with leading dimension N*T.
  auto head(const Activation<T, Space>& a, std::size_t first, std::size_t j) const {
    return Kokkos::subview(a, Kokkos::make_pair(first, first + features_ / heads_), j, Kokkos::ALL);
  }

  std::size_t positions_, features_, heads_;
  bool causal_, bias_;
  Gemm<T, Space> gemm_;
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
    /// (query, key) pairs that interact: T^2, or T(T+1)/2 under the causal mask (the work counted;
    /// the GEMMs also run over masked pairs, whose probabilities are 0).
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
