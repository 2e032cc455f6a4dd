// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_PROTOCOL_HPP
#define HPF_LAYERS_PROTOCOL_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/tensor/views.hpp>

#include <concepts>
#include <cstddef>
#include <string>

namespace hpf {

/// \brief The compile-time side of the layer protocol: what `Layer::bind<In>` must state (see
/// layers/bind.hpp for the whole protocol).
template <class Bound>
concept BoundLayer = requires {
  typename Bound::input_shape;
  typename Bound::output_shape;
  { Bound::cost } -> std::convertible_to<LayerCost>;
  { Bound::leaves } -> std::convertible_to<std::size_t>;
  { Bound::in_place } -> std::convertible_to<bool>;
  { Bound::backward_reads_output } -> std::convertible_to<bool>;
  { Bound::describe() } -> std::convertible_to<std::string>;
};

/// \brief The run-time side: what `Bound::impl<T, Space>` must provide.
template <class Impl, class T, class Space>
concept LayerImplementation =
    std::default_initializable<Impl> &&
    requires(Impl& impl, const Impl& layer, ParameterBinder<T, Space>& binder, typename Impl::tape_type& tape,
             const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, std::size_t n) {
      impl.bind(binder);
      impl.reserve(tape, n);
      { layer.workspace(n) } -> std::convertible_to<std::size_t>;
      layer.forward(ctx, x, y, tape);
      layer.backward(ctx, x, x, x, y, tape);
    };

/// \brief Checks a bound layer against the protocol, one static_assert per member so that the
/// error names what is missing; the template arguments in the instantiation trace name the layer.
/// `value` is true when every check passed.
template <class Bound>
struct layer_protocol_check {
  static_assert(requires { typename Bound::input_shape; }, "hpf: a layer's bind<In> must define input_shape (In)");
  static_assert(requires { typename Bound::output_shape; },
                "hpf: a layer's bind<In> must define output_shape (InvalidShape when it rejects In)");
  static_assert(requires { { Bound::cost } -> std::convertible_to<LayerCost>; },
                "hpf: a layer's bind<In> must define static constexpr LayerCost cost (per sample)");
  static_assert(requires { { Bound::leaves } -> std::convertible_to<std::size_t>; },
                "hpf: a layer's bind<In> must define static constexpr std::size_t leaves (1 for a leaf layer)");
  static_assert(requires { { Bound::in_place } -> std::convertible_to<bool>; },
                "hpf: a layer's bind<In> must define static constexpr bool in_place (may forward overwrite its input?)");
  static_assert(requires { { Bound::backward_reads_output } -> std::convertible_to<bool>; },
                "hpf: a layer's bind<In> must define static constexpr bool backward_reads_output");
  static_assert(requires { { Bound::describe() } -> std::convertible_to<std::string>; },
                "hpf: a layer's bind<In> must define static std::string describe()");
  static constexpr bool value = BoundLayer<Bound>;
};

/// The same for the implementation of a bound layer on (T, Space).
template <class Impl, class T, class Space>
struct layer_implementation_check {
  static_assert(std::default_initializable<Impl>, "hpf: a layer implementation must be default-constructible");
  static_assert(requires { typename Impl::tape_type; },
                "hpf: a layer implementation must define tape_type (NoTape when it keeps nothing for backward)");
  static_assert(requires(Impl& impl, ParameterBinder<T, Space>& binder) { impl.bind(binder); },
                "hpf: a layer implementation must define void bind(ParameterBinder<T, Space>&)");
  static_assert(requires(Impl& impl, typename Impl::tape_type& tape, std::size_t n) { impl.reserve(tape, n); },
                "hpf: a layer implementation must define void reserve(tape_type&, std::size_t capacity)");
  static_assert(requires(const Impl& layer, std::size_t n) { { layer.workspace(n) } -> std::convertible_to<std::size_t>; },
                "hpf: a layer implementation must define std::size_t workspace(std::size_t capacity) const");
  static_assert(requires(const Impl& layer, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                         Activation<T, Space> y, typename Impl::tape_type& tape) { layer.forward(ctx, x, y, tape); },
                "hpf: a layer implementation must define void forward(const Context&, ConstActivation x, "
                "Activation y, tape_type&) const");
  static_assert(requires(const Impl& layer, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                         Activation<T, Space> dx, typename Impl::tape_type& tape) {
                  layer.backward(ctx, x, x, x, dx, tape);
                },
                "hpf: a layer implementation must define void backward(const Context&, ConstActivation x, "
                "ConstActivation y, ConstActivation dy, Activation dx, tape_type&) const");
  static constexpr bool value = LayerImplementation<Impl, T, Space>;
};

}  // namespace hpf

#endif  // HPF_LAYERS_PROTOCOL_HPP
