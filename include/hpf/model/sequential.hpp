// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_SEQUENTIAL_HPP
#define HPF_MODEL_SEQUENTIAL_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/tensor/shape.hpp>

#include <array>
#include <cstddef>

namespace hpf {

/// \brief First entry of a Sequential: the shape of one input sample (`Input<1, 28, 28>`).
template <std::size_t... Dims>
struct Input {
  using shape = Shape<Dims...>;
};

template <class T>
inline constexpr bool is_input_v = false;
template <std::size_t... Dims>
inline constexpr bool is_input_v<Input<Dims...>> = true;

namespace detail {
template <class T>
struct input_shape_of {
  using type = InvalidShape;  // not an hpf::Input: Sequential has said so
};
template <std::size_t... Dims>
struct input_shape_of<Input<Dims...>> {
  using type = Shape<Dims...>;
};
}  // namespace detail

/// \brief A model: an input shape followed by layers, all known at compile time.
///
///     using Mlp = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<512>, hpf::ReLU,
///                                 hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
///
/// Every shape is inferred (`Mlp::output_shape`), every cost is a constant (`Mlp::cost`), and a
/// layer that cannot take its input is a compile error naming its index and the shapes.
/// Layer I is named "I" in parameter names, as module I of a PyTorch nn.Sequential.
/// \tparam InputLayer hpf::Input<dims...>
/// \tparam Layers the layers, in order; a trainable model ends with a loss layer
template <class InputLayer, class... Layers>
struct Sequential {
  static_assert(is_input_v<InputLayer>,
                "hpf::Sequential: the first entry must be hpf::Input<dims...>, the shape of one sample");
  static_assert(sizeof...(Layers) > 0, "hpf::Sequential: a model needs at least one layer");

  using input_shape = typename detail::input_shape_of<InputLayer>::type;
  using layers = type_list<Layers...>;
  /// The layers bound to their input shapes (each has input_shape, output_shape, cost, ...).
  using bound = typename Chain<Layers...>::template bind<input_shape>;  // InvalidBound children if invalid
  using bound_layers = typename bound::bound_list;
  using output_shape = typename bound::output_shape;

  /// Number of top-level layers (a Repeat or residual block counts once).
  static constexpr std::size_t size = sizeof...(Layers);
  /// Number of leaf layers, the positions a pipeline cut can name.
  static constexpr std::size_t leaves = bound::leaves;
  /// False if some layer rejected its input (the compiler has said which).
  static constexpr bool valid = output_shape::valid;
  /// Whole-model cost per sample (parameters per model).
  static constexpr LayerCost cost = bound::cost;
  /// Per top-level layer costs, in order.
  static constexpr std::array<LayerCost, size> layer_costs = detail::chain_facts<bound_layers>::costs;
  /// True when the model ends with a loss layer and can be trained.
  static constexpr bool trainable = valid && LossLayer<at_t<bound_layers, size - 1>>;
};

}  // namespace hpf

#endif  // HPF_MODEL_SEQUENTIAL_HPP
