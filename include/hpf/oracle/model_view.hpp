// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_MODEL_VIEW_HPP
#define HPF_ORACLE_MODEL_VIEW_HPP

#include <hpf/layers/kernel_options.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/oracle/model_facts.hpp>
#include <hpf/oracle/predict.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/tensor/spatial_part.hpp>

#include <array>
#include <string>
#include <vector>

namespace hpf::oracle {

namespace detail {
/// What calibration times a top-level layer as: its kind and sizes (a Repeat: its block) at its
/// input shape. Layers with the same key cost the same, in this model or another.
template <class Layer, class Bound>
std::string layer_key() {
  if constexpr (hpf::detail::repeat_traits<Layer>::is_repeat) {
    return Bound::block::describe() + " @ " + shape_string<typename Bound::input_shape>();
  } else {
    return Bound::describe() + " @ " + shape_string<typename Bound::input_shape>();
  }
}
template <class Layers, class BoundLayers>
struct layer_keys;
template <class... Layers, class... Bound>
struct layer_keys<type_list<Layers...>, type_list<Bound...>> {
  static std::vector<std::string> get() { return {layer_key<Layers, Bound>()...}; }
};
}  // namespace detail

/// What a layer's calibration key adds for the precision of its products: nothing in the scalar
/// type, " [bf16 products]" under MatmulPrecision::bf16 (another kernel, another time).
inline std::string precision_key_suffix(MatmulPrecision precision) {
  return precision == MatmulPrecision::bf16 ? " [bf16 products]" : "";
}

/// The calibration key of each top-level layer of Model, trained with `precision`'s products; with
/// a filter or channel `split`, of one member's part of it (split_key_suffix).
template <class Model>
std::vector<std::string> layer_keys(MatmulPrecision precision = MatmulPrecision::full, const LayerSplit& split = {}) {
  std::vector<std::string> keys = detail::layer_keys<typename Model::layers, typename Model::bound_layers>::get();
  for (std::string& key : keys) key += precision_key_suffix(precision) + split_key_suffix(split);
  return keys;
}

/// \brief Model as the oracle's run-time search reads it (facts from the type, nothing run).
/// \param name how tables and errors name it
/// \param optimizer_values values the optimizer keeps per parameter: 1 for SGD with momentum
///        (hpf's default), 0 without momentum, 2 for Adam
/// \param precision the products' inputs (NetworkOptions::matmul_precision): which calibration
///        the layers' times come from
template <class Model>
ModelView view_of(std::string name, std::size_t optimizer_values = 1, MatmulPrecision precision = MatmulPrecision::full) {
  using In = typename Model::input_shape;
  static_assert(!spatial_peers_v<In> || spatial_held_v<In> == 1,
                "hpf::oracle::view_of: the view of a spatial split is one slab rank's, SpatialSplit<Model, G, 1>");
  ModelView v;
  v.name = std::move(name);
  v.units = model_facts<Model>::units;
  v.layer_keys = layer_keys<Model>(precision);
  v.leaves = Model::leaves;
  v.cut_places = cut_places_v<Model>;
  v.classifier = ClassificationLoss<at_t<typename Model::bound_layers, Model::size - 1>>;
  v.label_size = loss_label_size_v<at_t<typename Model::bound_layers, Model::size - 1>>;
  v.optimizer_values = optimizer_values;
  v.balanced_bounds = &balanced_bounds<Model>;
  v.spatial_group = spatial_peers_v<In> ? spatial_group_v<In> : 1;
  return v;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_MODEL_VIEW_HPP
