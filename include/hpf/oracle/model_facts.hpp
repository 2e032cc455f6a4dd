// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_MODEL_FACTS_HPP
#define HPF_ORACLE_MODEL_FACTS_HPP

#include <hpf/layers/cost.hpp>
#include <hpf/model/chain_roles.hpp>
#include <hpf/parallel/partition.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hpf::oracle {

/// \brief One piece of a model between two places a stage may begin: a top-level layer, or one
/// copy of a Repeat. Costs are per sample (parameters per copy). Layers without leaves (Identity)
/// are units of their own with an empty leaf range.
struct UnitFacts {
  std::size_t layer = 0;  ///< index of the top-level layer
  std::size_t first_leaf = 0, end_leaf = 0;
  LayerCost cost{};
  std::size_t input_elements = 0, output_elements = 0;  ///< per sample
  hpf::detail::ChainChild chain{};     ///< what a stage's chain knows of its top-level layer
  bool repeated = false;               ///< one copy of a Repeat's block (re-materialization applies)
};

/// \brief The facts of one stage [first_leaf, end_leaf) of a model, per sample: those of the
/// stage's chain (hpf::Stage::cost), whose activations are what its tape holds.
struct StageFacts {
  std::size_t first_leaf = 0, end_leaf = 0;
  LayerCost cost{};
  std::size_t input_elements = 0;   ///< received from the previous stage (or loaded)
  std::size_t output_elements = 0;  ///< sent to the next stage (the last stage: the loss layer's output)
  /// Largest output of the stage's top-level layers but its last: the stage's chain keeps two
  /// gradient buffers of that size during backward.
  std::size_t largest_inner_output = 0;
};

/// \brief Compile-time facts of Model as one array of units, the form the oracle's run-time
/// search and the memory model read (a run-time loop over a table: no code per layer).
template <class Model>
struct model_facts {
  using where = detail::layer_positions<Model>;
  using arrays = typename where::arrays;
  static constexpr std::size_t unit_count = [] {
    std::size_t n = 0;
    for (std::size_t u = 0; u < Model::size; ++u) n += where::first_leaf[u + 1] == where::first_leaf[u] ? 1 : where::copies[u];
    return n;
  }();
  static constexpr std::array<UnitFacts, unit_count> units = [] {
    std::array<UnitFacts, unit_count> r{};
    std::size_t k = 0;
    for (std::size_t u = 0; u < Model::size; ++u) {
      const std::size_t first = where::first_leaf[u];
      const std::size_t copies = first == where::first_leaf[u + 1] ? 1 : where::copies[u];
      const std::size_t per_copy = copies > 1 ? where::unit_leaves[u] : where::first_leaf[u + 1] - first;
      for (std::size_t c = 0; c < copies; ++c, ++k) {
        r[k].layer = u;
        r[k].first_leaf = first + c * per_copy;
        r[k].end_leaf = first + (c + 1) * per_copy;
        r[k].cost = arrays::unit_facts[u];
        r[k].input_elements = arrays::input_elements[u];
        r[k].output_elements = arrays::output_elements[u];
        r[k].chain = arrays::chain_children[u];
        r[k].repeated = copies > 1;
      }
    }
    return r;
  }();
  static constexpr std::size_t leaves = Model::leaves;
  static constexpr std::size_t input_elements = Model::input_shape::size;
};

/// True if unit `u` belongs to the stage [begin, end) (`last`: the model's last stage). A unit
/// without leaves belongs to the stage its position starts, as the partition places it.
constexpr bool in_stage(const UnitFacts& u, std::size_t begin, std::size_t end, bool last) {
  if (u.first_leaf == u.end_leaf) return (begin <= u.first_leaf && u.first_leaf < end) || (last && u.first_leaf == end);
  return begin <= u.first_leaf && u.end_leaf <= end;
}

/// Calls visit(unit, starts_child) for each unit of the stage [begin, end), in order. The stage is
/// a chain of its top-level layers: a Repeat's copies in it are one child, the others each one.
template <class Visit>
constexpr void for_each_stage_unit(std::span<const UnitFacts> units, std::size_t begin, std::size_t end, bool last,
                                   Visit&& visit) {
  bool any = false;
  std::size_t previous_layer = 0;
  for (const UnitFacts& u : units) {
    if (!in_stage(u, begin, end, last)) continue;
    visit(u, !any || u.layer != previous_layer);
    any = true;
    previous_layer = u.layer;
  }
}

/// The facts of the stage [begin, end) of a model with `units`. As in Chain: a child but the first
/// runs in place when it can and its predecessor's backward does not read its output; the last
/// child (whose output is the stage's) only if its predecessor has a buffer of its own, which it
/// then gives up.
constexpr StageFacts stage_facts(std::span<const UnitFacts> units, std::size_t begin, std::size_t end, bool last) {
  StageFacts s{.first_leaf = begin, .end_leaf = end};
  std::size_t children = 0, in_place_saving = 0, newest_saving = 0;
  bool previous_reads_output = false, newest_in_place = false, before_newest_in_place = false;
  for_each_stage_unit(units, begin, end, last, [&](const UnitFacts& u, bool new_child) {
    if (children == 0) s.input_elements = u.input_elements;
    if (new_child) {
      if (children > 0) s.largest_inner_output = std::max(s.largest_inner_output, s.output_elements);
      before_newest_in_place = newest_in_place;
      newest_in_place = children > 0 && u.chain.runs_in_place && !previous_reads_output;
      newest_saving = newest_in_place ? u.cost.activations : 0;
      in_place_saving += newest_saving;
      previous_reads_output = u.chain.backward_reads_output;
      ++children;
    }
    s.cost += u.cost;
    s.output_elements = u.output_elements;
  });
  const bool last_in_place = newest_in_place && !before_newest_in_place;
  s.cost.activations -= in_place_saving - (last_in_place ? 0 : newest_saving);
  return s;
}

/// Per sample, the elements of the stage chain's two gradient buffers that its backward writes
/// (hpf::detail::gradient_buffers_written), both together. The first stage forms no input
/// gradient.
inline std::size_t stage_gradient_buffers_written(std::span<const UnitFacts> units, std::size_t begin, std::size_t end,
                                                  bool first, bool last) {
  std::vector<hpf::detail::ChainChild> children;
  for_each_stage_unit(units, begin, end, last, [&](const UnitFacts& u, bool new_child) {
    if (new_child) {
      children.push_back(u.chain);
      children.back().parameters = 0;  // a Repeat piece's: its copies' in the stage
    }
    children.back().parameters += u.cost.parameters;
  });
  std::vector<hpf::detail::ChainRole> roles(children.size());
  hpf::detail::assign_chain_roles(children.data(), children.size(), roles.data());
  const auto written = hpf::detail::gradient_buffers_written(children.data(), roles.data(), children.size(), !first);
  return written[0] + written[1];
}

/// Stage facts of a compiled partition of Model (Cuts<...> or Balanced<S>), at compile time.
template <class Model, class Partition>
inline constexpr auto stage_facts_v = [] {
  constexpr auto& bounds = stage_bounds_v<Model, Partition>;
  constexpr std::size_t stages = bounds.size() - 1;
  std::array<StageFacts, stages> r{};
  for (std::size_t s = 0; s < stages; ++s) {
    r[s] = stage_facts(model_facts<Model>::units, bounds[s], bounds[s + 1], s + 1 == stages);
  }
  return r;
}();

/// Where the stages of Balanced<stages> begin, for a stage count known only at run time:
/// {0, cuts..., leaves}. The same search as the compile-time partition (balanced_cut_positions).
template <class Model>
std::vector<std::size_t> balanced_bounds(std::size_t stages) {
  constexpr auto& units = detail::layer_positions<Model>::units;
  std::vector<std::size_t> bounds(stages + 1, 0);
  if (stages > 1) detail::balanced_cut_positions(units.end.data(), units.cost.data(), units.size, stages, bounds.data() + 1);
  bounds[stages] = Model::leaves;
  return bounds;
}

/// Places a stage may begin at (for the run-time search: more stages than this cannot be).
template <class Model>
inline constexpr std::size_t cut_places_v = detail::layer_positions<Model>::units.size;

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_MODEL_FACTS_HPP
