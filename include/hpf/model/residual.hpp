// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_RESIDUAL_HPP
#define HPF_MODEL_RESIDUAL_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/layers/identity.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/trace/region.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

/// Compile error for a residual block whose two paths end in different shapes; the template
/// arguments name both shapes.
template <class BodyOutput, class ShortcutOutput>
struct residual_paths_disagree {
  static_assert(std::is_same_v<BodyOutput, ShortcutOutput>,
                "hpf::Residual: the body and the shortcut produce different shapes (see the template "
                "arguments of hpf::residual_paths_disagree above); give the shortcut a projection, e.g. "
                "Chain<Conv2D<Out, 1, Stride<S>, NoBias>, BatchNorm>, or SubsampleZeroPad<Out, S>");
  static constexpr bool value = std::is_same_v<BodyOutput, ShortcutOutput>;
};

namespace detail {

/// Whether a residual block's bound shortcut is the identity.
template <class BodyBound, class ShortcutBound>
inline constexpr bool shortcut_is_identity = std::is_same_v<ShortcutBound, typename Identity::template bind<typename BodyBound::input_shape>>;

/// Whether a residual block of these bound paths takes a following ReLU's backward: an identity
/// shortcut adds that gradient as it is, and the body's last layer takes it through the ReLU. The
/// one statement of the rule, for the block's bind (what its chain sees) and its implementation.
template <class BodyBound, class ShortcutBound>
inline constexpr bool residual_takes_relu_backward =
    shortcut_is_identity<BodyBound, ShortcutBound> && hpf::applies_next_relu_backward<BodyBound>();

/// y = body(x) + shortcut(x). Gradient-readiness notifications from inside are held back: the
/// shortcut's parameters come after the body's in flat storage but finish their backward later.
template <class BodyBound, class ShortcutBound, class T, class Space>
class ResidualImpl {
  static constexpr bool identity = shortcut_is_identity<BodyBound, ShortcutBound>;
  using In = typename BodyBound::input_shape;
  using Out = typename BodyBound::output_shape;
  using body_impl = typename BodyBound::template impl<T, Space>;
  using shortcut_impl = typename ShortcutBound::template impl<T, Space>;
  static constexpr bool fuses_relu_backward = residual_takes_relu_backward<BodyBound, ShortcutBound>;

 public:
  struct tape_type {
    typename body_impl::tape_type body;
    typename shortcut_impl::tape_type shortcut;
    Buffer<T, Space> body_output, shortcut_output;
  };

  void bind(ParameterBinder<T, Space>& binder) {
    {
      auto scope = binder.scope("body");
      body_.bind(binder);
    }
    if constexpr (!identity) {
      auto scope = binder.scope("shortcut");
      shortcut_.bind(binder);
    }
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    body_.reserve(tape.body, capacity);
    ensure_capacity(tape.body_output, Out::size * capacity, "hpf::Residual::body_output");
    if constexpr (!identity) {
      shortcut_.reserve(tape.shortcut, capacity);
      ensure_capacity(tape.shortcut_output, Out::size * capacity, "hpf::Residual::shortcut_output");
    }
  }
  /// The shortcut's input gradient, then the deeper of the two paths' scratch.
  std::size_t scratch(std::size_t capacity) const {
    const std::size_t b = scratch_of(body_, capacity), s = identity ? 0 : scratch_of(shortcut_, capacity);
    return own_scratch(capacity) + (b > s ? b : s);
  }
  std::size_t workspace(std::size_t capacity) const {
    const std::size_t b = body_.workspace(capacity), s = identity ? 0 : shortcut_.workspace(capacity);
    return b > s ? b : s;
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    forward_then<false>(ctx, x, y, tape);
  }
  /// forward, with a following ReLU applied as the paths are added (a chain fuses Residual, ReLU).
  void forward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                    tape_type& tape) const {
    forward_then<true>(ctx, x, y, tape);
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    backward_through<false>(ctx, x, {}, dy, dx, tape);
  }
  /// backward, given the output gradient of a ReLU that follows the block and that ReLU's output:
  /// the body's last layer and the shortcut's sum form the gradient through the ReLU as they read
  /// it (a chain fuses Residual, ReLU), instead of a pass that writes it first.
  void backward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> relu_dy, Activation<T, Space> dx, tape_type& tape) const
    requires(fuses_relu_backward)
  {
    backward_through<true>(ctx, x, relu_y, relu_dy, dx, tape);
  }

 private:
  template <bool Relu>
  void backward_through(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                        ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1);
    Context<T, Space> inner = ctx.after_scratch(own_scratch(n));
    inner.gradients_ready = nullptr;
    if constexpr (Relu) {  // dy is the ReLU's: the body and the identity shortcut take it through the ReLU
      body_.backward_relu(inner, x, relu_y, dy, dx, tape.body);  // dx = d body
      if (!is_empty(dx)) accumulate_relu_gradient(ctx.space, dy, relu_y, dx, "hpf::Residual::shortcut_grad");
    } else {
      body_.backward(inner, x, output_view(tape.body_output, n), dy, dx, tape.body);  // dx = d body
      if constexpr (identity) {
        if (!is_empty(dx)) accumulate(ctx.space, dy, dx, "hpf::Residual::shortcut_grad");
      } else {
        Activation<T, Space> shortcut_dx;
        if (!is_empty(dx)) shortcut_dx = Activation<T, Space>(ctx.scratch_at(own_scratch(n)), In::channels, n, In::spatial);
        shortcut_.backward(inner, x, output_view(tape.shortcut_output, n), dy, shortcut_dx, tape.shortcut);
        if (!is_empty(dx)) accumulate(ctx.space, shortcut_dx, dx, "hpf::Residual::shortcut_grad");
      }
    }
  }

  template <bool Relu>
  void forward_then(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                    tape_type& tape) const {
    const std::size_t n = x.extent(1);
    const auto body_out = output_view(tape.body_output, n);
    body_.forward(ctx, x, body_out, tape.body);
    ConstActivation<T, Space> shortcut_out = x;
    if constexpr (!identity) {
      const auto out = output_view(tape.shortcut_output, n);
      shortcut_.forward(ctx, x, out, tape.shortcut);
      shortcut_out = out;
    }
    trace::Region region("hpf::Residual::add");
    add<Relu>(ctx.space, body_out, shortcut_out, y, Relu ? "hpf::Residual::add_relu" : "hpf::Residual::add");
  }
  static constexpr std::size_t own_scratch(std::size_t n) { return identity ? 0 : In::size * n; }
  static Activation<T, Space> output_view(const Buffer<T, Space>& buffer, std::size_t n) {
    return activation_view(buffer, Out::channels, n, Out::spatial);
  }
  body_impl body_;
  [[no_unique_address]] shortcut_impl shortcut_;
};

}  // namespace detail

/// \brief A residual block: y = Body(x) + Shortcut(x).
///
/// Parameters are named "body.<i>..." and "shortcut.<i>..." (PyTorch: a module with `body` and
/// `shortcut` nn.Sequential children). A pipeline cut may not fall inside a residual block: its
/// skip connection would have to cross processes.
/// \tparam Body the main path, usually a Chain<...>
/// \tparam Shortcut Identity (default), SubsampleZeroPad<Out, S>, or a projection Chain<...>
template <class Body, class Shortcut = Identity>
struct Residual {
  template <class In>
  struct bind {
    using body = bind_t<Body, In>;
    using shortcut = bind_t<Shortcut, In>;
    static constexpr bool paths_valid = body::output_shape::valid && shortcut::output_shape::valid;
    static constexpr bool accepted =
        !paths_valid || std::is_same_v<typename body::output_shape, typename shortcut::output_shape>;
    static_assert(sizeof(std::conditional_t<accepted, char,
                                            residual_paths_disagree<typename body::output_shape, typename shortcut::output_shape>>));
    using input_shape = In;
    using output_shape = std::conditional_t<paths_valid && accepted, typename body::output_shape, InvalidShape>;
    static constexpr bool identity_shortcut = std::is_same_v<Shortcut, Identity>;
    static constexpr LayerCost cost = body::cost + (identity_shortcut ? LayerCost{} : shortcut::cost) +
                                      LayerCost{.forward_flops = output_shape::size,
                                                .backward_flops = identity_shortcut ? 0 : In::size,
                                                .activations = output_shape::size};
    static constexpr std::size_t leaves = body::leaves + shortcut::leaves;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;  // its paths' layers say whether they do
    static constexpr bool backward_reads_output = false;  // reads the paths' outputs, kept apart
    static constexpr bool applies_next_relu_forward = true;  // forward_relu
    static constexpr bool applies_next_relu_backward = detail::residual_takes_relu_backward<body, shortcut>;
    static std::string describe() {
      return "Residual(body " + body::describe() + ", shortcut " + shortcut::describe() + ")";
    }
    template <class T, class Space>
    using impl = detail::ResidualImpl<body, shortcut, T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_MODEL_RESIDUAL_HPP
