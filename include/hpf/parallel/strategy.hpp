// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STRATEGY_HPP
#define HPF_PARALLEL_STRATEGY_HPP

#include <hpf/parallel/partition.hpp>

namespace hpf {

/// \brief Parallel strategy: the model split into the stages of Partition (Cuts<...> or
/// Balanced<S>), replicated over every group of S processes. With S processes it is model
/// parallelism, with R x S hybrid parallelism; micro-batches are pipelined through the stages.
/// The replica count comes from the world size at run time.
template <class Partition>
struct Pipeline {
  using partition = Partition;
};

/// \brief Parallel strategy: the whole model on every process (one stage), gradients averaged
/// among all of them.
using DataParallel = Pipeline<Cuts<>>;

}  // namespace hpf

#endif  // HPF_PARALLEL_STRATEGY_HPP
