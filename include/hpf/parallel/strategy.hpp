// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STRATEGY_HPP
#define HPF_PARALLEL_STRATEGY_HPP

#include <hpf/layers/layer_split.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/spatial_split.hpp>
#include <hpf/parallel/partition.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

namespace hpf {

/// \brief Layer split of a Pipeline: every Dense layer's outputs (filters) divided among a
/// group of G processes, which gather the outputs in forward and add their input gradients in
/// backward (ParaDL's filter parallelism, Megatron's column-parallel linear layer).
template <std::size_t G>
struct Filter {
  static_assert(G >= 1 && G <= ordered_sum_max_parts, "hpf::Filter<G>: a group has 1 to 64 processes");
  static constexpr LayerSplit split = LayerSplit::filter(G);
};

/// \brief Layer split of a Pipeline: every Dense layer's inputs (channels) divided among a
/// group of G processes, which add their partial outputs in forward and gather the input
/// gradient in backward (ParaDL's channel parallelism, Megatron's row-parallel linear layer).
template <std::size_t G>
struct Channel {
  static_assert(G >= 1 && G <= ordered_sum_max_parts, "hpf::Channel<G>: a group has 1 to 64 processes");
  static constexpr LayerSplit split = LayerSplit::channel(G);
};

/// \brief Layer split of a Pipeline: every sample split into G slabs of rows (of planes, for a
/// volume), one per process of a group (ParaDL's spatial parallelism, LBANN's distconv). The
/// layers up to the first Flatten or GlobalAvgPool compute on their slab, convolutions exchanging
/// halos with the neighbouring slabs and BatchNorm adding its statistics over the group; those
/// two gather the whole sample, and the layers after them run whole on every process of the
/// group. A slab's activations are 1/G of a sample's (hpf::SpatialSplit).
template <std::size_t G>
struct Spatial {
  static_assert(G >= 1 && G <= ordered_sum_max_parts, "hpf::Spatial<G>: a group has 1 to 64 processes");
  static constexpr LayerSplit split = LayerSplit::spatial(G);
};

namespace detail {
template <class Option>
inline constexpr bool is_layer_split_v = false;
template <std::size_t G>
inline constexpr bool is_layer_split_v<Filter<G>> = true;
template <std::size_t G>
inline constexpr bool is_layer_split_v<Channel<G>> = true;
template <std::size_t G>
inline constexpr bool is_layer_split_v<Spatial<G>> = true;

/// The options of a Pipeline that are not a layer split: its stage spaces.
template <class... Options>
using stage_spaces_of = join_t<type_list<std::conditional_t<is_layer_split_v<Options>, type_list<>, type_list<Options>>...>>;

template <class Option>
constexpr LayerSplit split_of_option() {
  if constexpr (is_layer_split_v<Option>) {
    return Option::split;
  } else {
    return {};
  }
}
template <class... Options>
constexpr LayerSplit layer_split_of() {
  LayerSplit split{};
  ((is_layer_split_v<Options> ? (void)(split = split_of_option<Options>()) : void()), ...);
  return split;
}
}  // namespace detail

/// \brief Parallel strategy: the model split into the stages of Partition (Cuts<...> or
/// Balanced<S>), replicated over every group of S processes. With S processes it is model
/// parallelism, with R x S hybrid parallelism; micro-batches are pipelined through the stages.
/// The replica count comes from the world size at run time.
/// \tparam Partition where the stages begin
/// \tparam Options optionally one Kokkos execution space per stage (a CPU stage next to a GPU
///         stage; by default every stage runs on fit's execution space), and at most one layer
///         split, Filter<G>, Channel<G> or Spatial<G>: each stage of each replica then runs on G
///         processes that divide its Dense and convolution layers, or its samples' rows
///         (R x S x G processes). Activations crossing between
///         stages move through MPI, staged through host memory where a space's memory is not
///         host-accessible (unless hpf is configured for a GPU-aware MPI).
template <class Partition, class... Options>
struct Pipeline {
  static_assert((std::size_t{0} + ... + std::size_t{detail::is_layer_split_v<Options>}) <= 1,
                "hpf::Pipeline: name at most one layer split (Filter<G>, Channel<G> or Spatial<G>)");
  using partition = Partition;
  using stage_spaces = detail::stage_spaces_of<Options...>;
  /// How each stage's Dense and convolution layers divide among a group (LayerSplit{} without a split).
  static constexpr LayerSplit split = detail::layer_split_of<Options...>();
};

namespace detail {
template <class Model, bool Slabs, std::size_t Group>
struct split_model {
  using type = Model;
};
template <class Model, std::size_t Group>
struct split_model<Model, true, Group> {
  using type = SpatialSplit<Model, Group, 1>;
};
}  // namespace detail

/// The model a process of a group of Strategy runs: Model, or under Spatial<G> the model on one
/// slab of each sample (SpatialSplit<Model, G, 1>).
template <class Model, class Strategy>
using split_model_t = typename detail::split_model<Model, Strategy::split.kind == SplitKind::spatial && Strategy::split.splits(),
                                                   Strategy::split.group>::type;

/// \brief Parallel strategy: the whole model on every process (one stage), gradients averaged
/// among all of them.
using DataParallel = Pipeline<Cuts<>>;

/// \brief Parallel strategy chosen when training starts by the performance oracle (hpf/oracle):
/// for the world size and the global batch, the fastest predicted Pipeline<Balanced<S>> among
/// the stage counts `Stages` (each compiled in), with its micro-batches and schedule, from the
/// machine profile TrainOptions::oracle_profile (or $HPF_ORACLE_PROFILE). Rank 0 chooses and
/// every rank runs its choice. `Auto<>` tries 1, 2 and 4 stages.
template <std::size_t... Stages>
struct Auto;

namespace detail {
template <std::size_t... Stages>
struct auto_stages {
  static constexpr std::array<std::size_t, sizeof...(Stages)> value{Stages...};
};
template <>
struct auto_stages<> {
  static constexpr std::array<std::size_t, 3> value{1, 2, 4};
};
}  // namespace detail

template <std::size_t... Stages>
struct Auto {
  /// The stage counts compiled in, one of which the oracle picks.
  static constexpr auto stages = detail::auto_stages<Stages...>::value;
};

/// \brief Parallel strategy chosen when training starts by the performance oracle among the
/// partitions compiled in (Cuts<...> or Balanced<S>: for example the cuts `hpf-oracle partition`
/// prints beside Balanced<S>), each with the micro-batches and schedule it predicts fastest, as
/// Auto chooses among stage counts.
template <class... Partitions>
struct AutoAmong {
  static_assert(sizeof...(Partitions) >= 1, "hpf::AutoAmong: name at least one partition (hpf::Cuts<...> or hpf::Balanced<S>)");
};

/// The execution space of stage Stage under Strategy, or Default if the strategy names none.
template <class Strategy, std::size_t Stage, class Default>
using stage_space_t = typename std::conditional_t<(Strategy::stage_spaces::size == 0), std::type_identity<Default>,
                                                  detail::at_impl<typename Strategy::stage_spaces,
                                                                  Strategy::stage_spaces::size == 0 ? 0 : Stage>>::type;

}  // namespace hpf

#endif  // HPF_PARALLEL_STRATEGY_HPP
