// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STRATEGY_HPP
#define HPF_PARALLEL_STRATEGY_HPP

#include <hpf/meta/type_list.hpp>
#include <hpf/parallel/partition.hpp>

#include <array>
#include <cstddef>

namespace hpf {

/// \brief Parallel strategy: the model split into the stages of Partition (Cuts<...> or
/// Balanced<S>), replicated over every group of S processes. With S processes it is model
/// parallelism, with R x S hybrid parallelism; micro-batches are pipelined through the stages.
/// The replica count comes from the world size at run time.
/// \tparam Partition where the stages begin
/// \tparam StageSpaces optionally one Kokkos execution space per stage (a CPU stage next to a GPU
///         stage); by default every stage runs on fit's execution space. Activations crossing
///         between stages move through MPI, staged through host memory where a space's memory is
///         not host-accessible (unless hpf is configured for a GPU-aware MPI).
template <class Partition, class... StageSpaces>
struct Pipeline {
  using partition = Partition;
  using stage_spaces = type_list<StageSpaces...>;
};

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

/// The execution space of stage Stage under Strategy, or Default if the strategy names none.
template <class Strategy, std::size_t Stage, class Default>
using stage_space_t = typename std::conditional_t<(Strategy::stage_spaces::size == 0), std::type_identity<Default>,
                                                  detail::at_impl<typename Strategy::stage_spaces,
                                                                  Strategy::stage_spaces::size == 0 ? 0 : Stage>>::type;

}  // namespace hpf

#endif  // HPF_PARALLEL_STRATEGY_HPP
