// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_SPATIAL_SPLIT_HPP
#define HPF_MODEL_SPATIAL_SPLIT_HPP

#include <hpf/layers/cost.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/tensor/spatial_part.hpp>

#include <array>
#include <cstddef>

namespace hpf {

namespace detail {
/// The compile error of an input that does not split into G slabs.
template <class In, std::size_t Group>
struct input_does_not_split {
  static_assert(Group == 0,
                "hpf::Spatial<G>: the model's input must be an image or a volume whose height (depth for a volume) "
                "divides into G slabs of equal thickness");
};
template <class List>
struct chain_of;
template <class... Layers>
struct chain_of<type_list<Layers...>> {
  using type = Chain<Layers...>;
};
template <class In, std::size_t Group>
constexpr bool splits_into_slabs() {
  if constexpr (In::rank == 3) {
    return In::height % Group == 0;
  } else if constexpr (In::rank == 4) {
    return In::depth % Group == 0;
  } else {
    return false;
  }
}
}  // namespace detail

/// \brief Model with every sample split into Group slabs of rows (hpf::Spatial<G>, ParaDL's
/// spatial parallelism): the same layers, parameters and names, bound to a SpatialPart input of
/// which a process holds `Held` members' slabs. Layers up to the first Flatten or GlobalAvgPool
/// compute on the slabs (a slab's activations are 1/G of a sample's); those two gather the whole
/// sample, and the layers after them run whole on every member.
///
/// `hpf::Trainer<hpf::SpatialSplit<Model, G>>` computes every member's part in one process and
/// gets the bits of G processes (hpf::fit with Spatial<G> holds one slab per rank).
/// \tparam Model an hpf::Sequential whose input is an image or a volume
template <class Model, std::size_t Group, std::size_t Held = Group>
struct SpatialSplit {
  static_assert(Group >= 1, "hpf::Spatial<G>: a group has at least one member");
  static_assert(sizeof(std::conditional_t<detail::splits_into_slabs<typename Model::input_shape, Group>(), char,
                                          detail::input_does_not_split<typename Model::input_shape, Group>>));
  static constexpr bool input_splits = detail::splits_into_slabs<typename Model::input_shape, Group>();

  using whole_model = Model;
  using input_shape = std::conditional_t<input_splits, SpatialPart<typename Model::input_shape, Group, Held>, InvalidShape>;
  using layers = typename Model::layers;
  using bound = typename detail::chain_of<layers>::type::template bind<input_shape>;
  using bound_layers = typename bound::bound_list;
  using output_shape = typename bound::output_shape;

  static constexpr std::size_t size = Model::size;
  static constexpr std::size_t leaves = bound::leaves;
  static constexpr bool valid = output_shape::valid;
  /// Per sample, on one process: the layers on slabs count the slabs it holds.
  static constexpr LayerCost cost = bound::cost;
  static constexpr std::array<LayerCost, size> layer_costs = detail::chain_facts<bound_layers>::costs;
  static constexpr bool trainable = valid && LossLayer<at_t<bound_layers, size - 1>>;
};

}  // namespace hpf

#endif  // HPF_MODEL_SPATIAL_SPLIT_HPP
