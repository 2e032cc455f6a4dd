// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_PARTITION_HPP
#define HPF_PARALLEL_PARTITION_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/repeat.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hpf {

/// \brief Stage boundaries at explicit leaf positions: `Cuts<4, 9>` makes three stages, leaves
/// [0, 4), [4, 9) and [9, end). `hpf::summary<Model>()` lists every layer's leaf range. A cut may
/// fall between top-level layers or between copies of a Repeat (which it splits), never inside a
/// block. `Cuts<>` is one stage (pure data parallelism).
template <std::size_t... Positions>
struct Cuts {};

/// \brief `Stages` stages placed at compile time so that the largest stage's training FLOPs are
/// as small as possible (from the model's constexpr per-layer costs).
template <std::size_t Stages>
struct Balanced {
  static_assert(Stages >= 1, "hpf::Balanced: at least one stage");
};

/// Compile errors of invalid cuts. Their template arguments carry the numbers the message
/// refers to, and compilers print them on the first lines of the diagnostic.
template <std::size_t Cut, std::size_t ModelLeaves>
struct pipeline_cut_out_of_range {
  static_assert(Cut > 0 && Cut < ModelLeaves,
                "hpf::Pipeline: a cut must lie strictly between leaf 0 and the model's leaf count (template "
                "arguments above: the cut, the model's leaf count)");
};
template <std::size_t PreviousCut, std::size_t Cut>
struct pipeline_cuts_not_increasing {
  static_assert(PreviousCut < Cut,
                "hpf::Pipeline: cuts must increase strictly; this pair (template arguments above) would make an "
                "empty stage");
};
template <std::size_t Cut, std::size_t Layer, std::size_t FirstLeaf, std::size_t LastLeaf>
struct pipeline_cut_inside_block {
  static_assert(Cut <= FirstLeaf || Cut > LastLeaf,
                "hpf::Pipeline: the cut falls inside a block (template arguments above: the cut, the top-level "
                "layer index, the block's first and last leaf) whose skip connection would have to cross stages; "
                "cut at the block's first leaf or after its last");
};
template <std::size_t Stages, std::size_t Places>
struct pipeline_too_many_stages {
  static_assert(Stages <= Places,
                "hpf::Balanced: more stages than places to cut the model (template arguments above: stages, "
                "places); every stage needs at least one layer");
};

namespace detail {

template <class Layer>
struct repeat_traits {
  static constexpr bool is_repeat = false;
};
template <std::size_t N, class Block, std::size_t First>
struct repeat_traits<Repeat<N, Block, First>> {
  static constexpr bool is_repeat = true;
  static constexpr std::size_t count = N;
  static constexpr std::size_t first = First;
  using block = Block;
};

/// Per top-level layer facts as arrays, each from one pack expansion over the layers and their
/// bound forms together (no per-index lookup into the list).
template <class Layer, class Bound>
constexpr std::size_t unit_leaves_of() {
  if constexpr (repeat_traits<Layer>::is_repeat) {
    return Bound::leaves / repeat_traits<Layer>::count;
  } else {
    return Bound::leaves;
  }
}
template <class Layer, class Bound>
constexpr LayerCost unit_facts_of() {
  if constexpr (repeat_traits<Layer>::is_repeat) {
    return Bound::block::cost;
  } else {
    return Bound::cost;
  }
}
template <class Layer, class Bound>
constexpr std::uint64_t unit_cost_of() {
  return unit_facts_of<Layer, Bound>().training_flops();
}
template <class Layer>
constexpr bool is_repeat_of() {
  return repeat_traits<Layer>::is_repeat;
}
template <class Layer>
constexpr std::size_t copies_of() {
  if constexpr (repeat_traits<Layer>::is_repeat) {
    return repeat_traits<Layer>::count;
  } else {
    return 1;
  }
}
template <class Layers, class BoundLayers>
struct layer_arrays;
template <class... Layers, class... Bound>
struct layer_arrays<type_list<Layers...>, type_list<Bound...>> {
  static constexpr std::array<std::size_t, sizeof...(Layers)> leaves{{Bound::leaves...}};
  static constexpr std::array<std::size_t, sizeof...(Layers)> unit_leaves{{unit_leaves_of<Layers, Bound>()...}};
  static constexpr std::array<std::uint64_t, sizeof...(Layers)> unit_cost{{unit_cost_of<Layers, Bound>()...}};
  static constexpr std::array<LayerCost, sizeof...(Layers)> unit_facts{{unit_facts_of<Layers, Bound>()...}};
  static constexpr std::array<std::size_t, sizeof...(Layers)> input_elements{{Bound::input_shape::size...}};
  static constexpr std::array<std::size_t, sizeof...(Layers)> output_elements{{Bound::output_shape::size...}};
  static constexpr std::array<ChainChild, sizeof...(Layers)> chain_children{{chain_child<Bound>()...}};
  static constexpr std::array<std::size_t, sizeof...(Layers)> copies{{copies_of<Layers>()...}};
  static constexpr std::array<bool, sizeof...(Layers)> repeats{{is_repeat_of<Layers>()...}};
};

/// Where each top-level layer of Model sits among the leaves, and its cost per cut unit (one
/// unit per layer, or per copy of a Repeat).
template <class Model>
struct layer_positions {
  static constexpr std::size_t count = Model::size;
  using arrays = layer_arrays<typename Model::layers, typename Model::bound_layers>;

  static constexpr std::array<std::size_t, count + 1> first_leaf = [] {
    std::array<std::size_t, count + 1> first{};
    for (std::size_t i = 0; i < count; ++i) first[i + 1] = first[i] + arrays::leaves[i];
    return first;
  }();
  /// Leaves per cut unit: a Repeat's block, or the whole layer.
  static constexpr std::array<std::size_t, count> unit_leaves = arrays::unit_leaves;
  static constexpr std::array<std::uint64_t, count> unit_cost = arrays::unit_cost;
  /// Copies of each layer: a Repeat's count, else 1.
  static constexpr std::array<std::size_t, count> copies = arrays::copies;
  static constexpr std::array<bool, count> repeats = arrays::repeats;

  /// The layer holding leaf `leaf` (for leaf < Model::leaves).
  static constexpr std::size_t layer_of(std::size_t leaf) {
    std::size_t u = 0;
    while (u + 1 < count && first_leaf[u + 1] <= leaf) ++u;
    return u;
  }
  /// True if a stage may begin at `leaf`: a layer boundary or a boundary between Repeat copies.
  static constexpr bool can_cut_at(std::size_t leaf) {
    const std::size_t u = layer_of(leaf);
    return leaf == first_leaf[u] || (unit_leaves[u] > 0 && (leaf - first_leaf[u]) % unit_leaves[u] == 0);
  }

  /// Every place a stage may begin (after leaf 0) and the cost from the previous place to it.
  struct Units {
    std::array<std::size_t, Model::leaves + 1> end{};  // unit k covers leaves [end[k-1], end[k])
    std::array<std::uint64_t, Model::leaves + 1> cost{};
    std::size_t size = 0;
  };
  static constexpr Units units = [] {
    Units r{};
    for (std::size_t u = 0; u < count; ++u) {
      const std::size_t n = first_leaf[u + 1] - first_leaf[u];
      if (n == 0) {  // a layer without leaves (Identity) rides with its predecessor
        if (r.size) r.cost[r.size - 1] += unit_cost[u];
        continue;
      }
      for (std::size_t at = first_leaf[u] + unit_leaves[u]; at <= first_leaf[u + 1]; at += unit_leaves[u]) {
        r.end[r.size] = at;
        r.cost[r.size] = unit_cost[u];
        ++r.size;
      }
    }
    return r;
  }();
};

/// Cuts of `stages` stages over places with costs `cost[0..size)` (stage k may end after place k,
/// at leaf `end[k]`): binary search for the smallest stage cost cap a greedy packing meets, then
/// that packing, forced to make exactly `stages` non-empty stages. Writes stages - 1 leaf positions
/// to `cuts`. One function for Balanced<S> at compile time and the oracle's run-time search.
constexpr void balanced_cut_positions(const std::size_t* end, const std::uint64_t* cost, std::size_t size,
                                      std::size_t stages, std::size_t* cuts) {
  auto stages_for = [&](std::uint64_t cap) {
    std::size_t made = 1;
    std::uint64_t load = 0;
    for (std::size_t k = 0; k < size; ++k) {
      if (load > 0 && load + cost[k] > cap) {
        ++made;
        load = 0;
      }
      load += cost[k];
    }
    return made;
  };
  std::uint64_t lo = 0, hi = 0;
  for (std::size_t k = 0; k < size; ++k) {
    lo = cost[k] > lo ? cost[k] : lo;
    hi += cost[k];
  }
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (stages_for(mid) <= stages) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  std::size_t made = 0;
  std::uint64_t load = 0;
  for (std::size_t k = 0; k < size && made + 1 < stages; ++k) {
    const std::size_t units_left = size - k, stages_left = stages - made;  // including the current stage
    if (load > 0 && (load + cost[k] > lo || units_left < stages_left)) {
      cuts[made++] = end[k - 1];
      load = 0;
    }
    load += cost[k];
  }
}

/// Cuts of Balanced<S>.
template <class Model, std::size_t S>
constexpr std::array<std::size_t, S - 1> balanced_cuts() {
  constexpr auto& units = layer_positions<Model>::units;
  std::array<std::size_t, S - 1> cuts{};
  if constexpr (S > 1) balanced_cut_positions(units.end.data(), units.cost.data(), units.size, S, cuts.data());
  return cuts;
}

template <class Model, class Partition>
struct resolve_partition {
  static_assert(dependent_false_v<Partition>, "hpf::Pipeline: the partition must be hpf::Cuts<...> or hpf::Balanced<S>");
};

template <class Model, std::size_t... Positions>
struct resolve_partition<Model, Cuts<Positions...>> {
  static constexpr std::size_t stages = sizeof...(Positions) + 1;
  static constexpr std::array<std::size_t, stages - 1> cuts{Positions...};

  template <std::size_t I>
  static constexpr bool check_cut() {
    using where = layer_positions<Model>;
    constexpr std::size_t cut = cuts[I];
    if constexpr (!(cut > 0 && cut < Model::leaves)) {
      (void)pipeline_cut_out_of_range<cut, Model::leaves>{};
      return false;
    } else if constexpr (I > 0 && !(cuts[I > 0 ? I - 1 : 0] < cut)) {
      (void)pipeline_cuts_not_increasing<cuts[I > 0 ? I - 1 : 0], cut>{};
      return false;
    } else if constexpr (!where::can_cut_at(cut)) {
      constexpr std::size_t layer = where::layer_of(cut);
      constexpr std::size_t per_copy = where::unit_leaves[layer];  // the block (or Repeat copy) cut into
      constexpr std::size_t first = where::first_leaf[layer] + (cut - where::first_leaf[layer]) / per_copy * per_copy;
      (void)pipeline_cut_inside_block<cut, layer, first, first + per_copy - 1>{};
      return false;
    } else {
      return true;
    }
  }
  static constexpr bool valid = [] {
    bool ok = true;
    for_each_index<stages - 1>([&](auto i) { ok = check_cut<i>() && ok; });
    return ok;
  }();
};

template <class Model, std::size_t S>
struct resolve_partition<Model, Balanced<S>> {
  // Balanced<S>'s own check (S >= 1) fires only when the type is completed: complete it here,
  // and carry on with one stage so that S - 1 wraps nowhere.
  static_assert(sizeof(Balanced<S>) > 0);
  static constexpr std::size_t places = layer_positions<Model>::units.size;
  static constexpr bool valid = S >= 1 && (S <= places || !sizeof(pipeline_too_many_stages<S, places>));
  static constexpr std::size_t stages = S >= 1 ? S : 1;
  static constexpr std::array<std::size_t, stages - 1> cuts =
      valid ? balanced_cuts<Model, stages>() : std::array<std::size_t, stages - 1>{};
};

/// What top-level layer u contributes to stage [begin, end): the whole layer, or copies
/// [copy_begin, copy_end) of a Repeat; `any` when that is not nothing.
struct StagePieceRange {
  bool whole = false;
  std::size_t copy_begin = 0, copy_end = 0;
  bool any = false;
};
/// The top-level layers with a piece in stage [Begin, End): a contiguous range [begin, end), since
/// leaves are in order, whose inner layers are whole; only the first and the last can be part of
/// a Repeat. Found by one constexpr loop. (A class per layer keyed on the model would put the
/// whole model's name into thousands of symbols, and reading a model-sized constexpr array once
/// per layer costs g++ a copy of the array each time: both quadratic in a flat list's length.)
template <class Model, std::size_t Begin, std::size_t End, bool Last>
struct stage_span {
  static constexpr std::array<StagePieceRange, Model::size> ranges = [] {
    using where = layer_positions<Model>;
    std::array<StagePieceRange, Model::size> r{};
    for (std::size_t u = 0; u < Model::size; ++u) {
      const std::size_t first = where::first_leaf[u], last_end = where::first_leaf[u + 1];
      const std::size_t per_copy = where::unit_leaves[u] ? where::unit_leaves[u] : 1;
      const std::size_t copies = where::copies[u];
      auto clamp = [&](std::size_t v) { return v < copies ? v : copies; };
      r[u].whole = (Begin <= first && first < End) || (Last && first == End);
      r[u].copy_begin = first >= Begin ? 0 : clamp((Begin - first) / per_copy);
      r[u].copy_end = last_end <= End ? copies : (End > first ? clamp((End - first) / per_copy) : 0);
      r[u].any = where::repeats[u] ? r[u].copy_end > r[u].copy_begin : r[u].whole;
    }
    return r;
  }();
  static constexpr std::size_t begin = [] {
    std::size_t u = 0;
    while (u < Model::size && !ranges[u].any) ++u;
    return u;
  }();
  static constexpr std::size_t end = [] {
    std::size_t u = begin;
    while (u < Model::size && ranges[u].any) ++u;
    return u;
  }();
};

/// The layers a top-level layer contributes to a stage: none or the layer (Whole), or the part of
/// a Repeat between the cuts (a shorter Repeat of the same block, named as before).
template <class Layer, bool Whole, std::size_t CopyBegin, std::size_t CopyEnd,
          bool IsRepeat = repeat_traits<Layer>::is_repeat>
struct stage_piece {
  using type = std::conditional_t<Whole, type_list<Layer>, type_list<>>;
};
template <class Layer, bool Whole, std::size_t CopyBegin, std::size_t CopyEnd>
struct stage_piece<Layer, Whole, CopyBegin, CopyEnd, true> {
  using traits = repeat_traits<Layer>;
  using type = std::conditional_t<(CopyEnd > CopyBegin),
                                  type_list<Repeat<(CopyEnd > CopyBegin ? CopyEnd - CopyBegin : 1),
                                                   typename traits::block, traits::first + CopyBegin>>,
                                  type_list<>>;
};

/// The layers of stage [Begin, End): the span's first and last layers as pieces, the inner ones
/// as a slice of the model's list.
template <class Model, std::size_t Begin, std::size_t End, bool Last,
          std::size_t Count = stage_span<Model, Begin, End, Last>::end - stage_span<Model, Begin, End, Last>::begin>
struct stage_layers {
  using span = stage_span<Model, Begin, End, Last>;
  template <std::size_t U>
  using piece = typename stage_piece<at_t<typename Model::layers, U>, span::ranges[U].whole, span::ranges[U].copy_begin,
                                     span::ranges[U].copy_end>::type;
  using type = join_t<type_list<piece<span::begin>, slice_t<typename Model::layers, span::begin + 1, span::end - 1>,
                                piece<span::end - 1>>>;
};
template <class Model, std::size_t Begin, std::size_t End, bool Last>
struct stage_layers<Model, Begin, End, Last, 1> {
  using span = stage_span<Model, Begin, End, Last>;
  using type = typename stage_piece<at_t<typename Model::layers, span::begin>, span::ranges[span::begin].whole,
                                    span::ranges[span::begin].copy_begin, span::ranges[span::begin].copy_end>::type;
};
template <class Model, std::size_t Begin, std::size_t End, bool Last>
struct stage_layers<Model, Begin, End, Last, 0> {
  using type = type_list<>;
};

template <std::size_t NameBase, class List>
struct stage_chain;
template <std::size_t NameBase, class... Layers>
struct stage_chain<NameBase, type_list<Layers...>> {
  using type = chain_named_from<NameBase, Layers...>;
};

}  // namespace detail

/// Number of stages of a partition of Model.
template <class Model, class Partition>
inline constexpr std::size_t stage_count_v = detail::resolve_partition<Model, Partition>::stages;

/// True when the partition's cuts are valid for Model (each violation is a compile error too).
template <class Model, class Partition>
inline constexpr bool valid_partition_v = detail::resolve_partition<Model, Partition>::valid;

/// Leaf positions where stages begin: {0, cuts..., Model::leaves}.
template <class Model, class Partition>
inline constexpr auto stage_bounds_v = [] {
  using r = detail::resolve_partition<Model, Partition>;
  std::array<std::size_t, r::stages + 1> bounds{};
  for (std::size_t i = 0; i + 1 < r::stages; ++i) bounds[i + 1] = r::cuts[i];
  bounds[r::stages] = Model::leaves;
  return bounds;
}();

/// \brief Stage Index of Model under Partition, usable wherever a model is (hpf::Network): its
/// layers are a view of the model's, named as in the whole model.
template <class Model, class Partition, std::size_t Index>
struct Stage {
  static constexpr std::size_t stages = stage_count_v<Model, Partition>;
  static_assert(valid_partition_v<Model, Partition>, "hpf::Pipeline: invalid partition; the error above says why");
  static_assert(Index < stages, "hpf::Stage: stage index out of range");
  static constexpr std::size_t index = Index;
  static constexpr std::size_t first_leaf = stage_bounds_v<Model, Partition>[Index];
  static constexpr std::size_t end_leaf = stage_bounds_v<Model, Partition>[Index + 1];
  static constexpr bool is_first = Index == 0;
  static constexpr bool is_last = Index + 1 == stages;
  using layers = typename detail::stage_layers<Model, first_leaf, end_leaf, is_last>::type;
  /// Index of the stage's first layer in the whole model (names of its layers start there).
  static constexpr std::size_t first_layer = detail::stage_span<Model, first_leaf, end_leaf, is_last>::begin;
  using input_shape = typename at_t<typename Model::bound_layers, first_layer>::input_shape;
  using bound = bind_t<typename detail::stage_chain<first_layer, layers>::type, input_shape>;
  using bound_layers = typename bound::bound_list;
  using output_shape = typename bound::output_shape;
  static constexpr std::size_t size = size_v<layers>;
  static constexpr std::size_t leaves = bound::leaves;
  static constexpr bool valid = output_shape::valid;
  static constexpr LayerCost cost = bound::cost;
  static constexpr bool trainable = valid && is_last && LossLayer<at_t<bound_layers, size - 1>>;
};

template <class Model, class Partition, std::size_t Index>
using stage_t = Stage<Model, Partition, Index>;

}  // namespace hpf

#endif  // HPF_PARALLEL_PARTITION_HPP
