// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_GRID_HPP
#define HPF_PARALLEL_GRID_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>

#include <cstddef>
#include <string>

namespace hpf {

/// \brief The world as replicas x stages. Rank r is stage r % S of replica r / S, so a
/// pipeline's stages are neighbouring ranks (usually one node) and replicas of a stage are S
/// ranks apart. `pipeline` links the stages of one replica (activations, their gradients);
/// `stage_group` links the replicas of one stage (parameter gradients).
class ProcessGrid {
 public:
  ProcessGrid(const comm::Communicator& world, std::size_t stages)
      : world_(world), stages_(checked(world, stages)), replicas_(static_cast<std::size_t>(world.size()) / stages_),
        stage_(static_cast<std::size_t>(world.rank()) % stages_), replica_(static_cast<std::size_t>(world.rank()) / stages_),
        pipeline_(world.split(static_cast<int>(replica_), static_cast<int>(stage_))),
        stage_group_(world.split(static_cast<int>(stage_), static_cast<int>(replica_))) {}

  std::size_t stages() const { return stages_; }
  std::size_t replicas() const { return replicas_; }
  std::size_t stage() const { return stage_; }
  std::size_t replica() const { return replica_; }
  bool first_stage() const { return stage_ == 0; }
  bool last_stage() const { return stage_ + 1 == stages_; }
  /// World rank of (replica, stage).
  int rank_of(std::size_t replica, std::size_t stage) const { return static_cast<int>(replica * stages_ + stage); }

  const comm::Communicator& world() const { return world_; }
  /// Ranks of this replica, ordered by stage (rank in it = stage).
  const comm::Communicator& pipeline() const { return pipeline_; }
  /// Ranks holding this stage, ordered by replica (rank in it = replica).
  const comm::Communicator& stage_group() const { return stage_group_; }

 private:
  static std::size_t checked(const comm::Communicator& world, std::size_t stages) {
    const auto processes = static_cast<std::size_t>(world.size());
    if (stages == 0 || processes % stages != 0) {
      throw comm::UsageError("hpf: " + std::to_string(processes) + " processes cannot form pipelines of " +
                             std::to_string(stages) + " stages; start a multiple of " + std::to_string(stages) +
                             " processes (replicas x stages)");
    }
    return stages;
  }

  comm::Communicator world_;
  std::size_t stages_, replicas_, stage_, replica_;
  comm::Communicator pipeline_, stage_group_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_GRID_HPP
