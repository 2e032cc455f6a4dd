// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_GRID_HPP
#define HPF_PARALLEL_GRID_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>

#include <cstddef>
#include <string>

namespace hpf {

/// \brief The world as replicas x stages x group. Rank r is member r % G of the group of
/// stage (r / G) % S of replica r / (G S), so a group's members are neighbouring ranks (one
/// host, as tensor parallelism wants), then a pipeline's stages, and replicas of a stage are G S
/// ranks apart. `pipeline` links the stages of one replica (activations, their gradients);
/// `stage_group` links the replicas of one stage (parameter gradients); `group` links the
/// members that split the layers of one stage of one replica (G = 1 without a split): each
/// member holds the whole stage, and the pipelines and stage groups of member m form a
/// replicas x stages grid of their own.
class ProcessGrid {
 public:
  ProcessGrid(const comm::Communicator& world, std::size_t stages, std::size_t group = 1)
      : world_(world), stages_(checked(world, stages, group)), group_size_(group),
        replicas_(static_cast<std::size_t>(world.size()) / (stages_ * group_size_)),
        member_(static_cast<std::size_t>(world.rank()) % group_size_),
        stage_(static_cast<std::size_t>(world.rank()) / group_size_ % stages_),
        replica_(static_cast<std::size_t>(world.rank()) / (group_size_ * stages_)),
        pipeline_(world.split(static_cast<int>(replica_ * group_size_ + member_), static_cast<int>(stage_))),
        stage_group_(world.split(static_cast<int>(stage_ * group_size_ + member_), static_cast<int>(replica_))),
        group_(world.split(static_cast<int>(replica_ * stages_ + stage_), static_cast<int>(member_))) {}

  std::size_t stages() const { return stages_; }
  std::size_t replicas() const { return replicas_; }
  /// Members of each group (the strategy's Filter<G> or Channel<G>; 1 without).
  std::size_t group_size() const { return group_size_; }
  std::size_t stage() const { return stage_; }
  std::size_t replica() const { return replica_; }
  /// This rank's place in its group.
  std::size_t member() const { return member_; }
  bool first_stage() const { return stage_ == 0; }
  bool last_stage() const { return stage_ + 1 == stages_; }
  /// World rank of (replica, stage), member 0 of its group.
  int rank_of(std::size_t replica, std::size_t stage) const {
    return static_cast<int>((replica * stages_ + stage) * group_size_);
  }

  const comm::Communicator& world() const { return world_; }
  /// Ranks of this replica, ordered by stage (rank in it = stage).
  const comm::Communicator& pipeline() const { return pipeline_; }
  /// Ranks holding this stage, ordered by replica (rank in it = replica).
  const comm::Communicator& stage_group() const { return stage_group_; }
  /// The members of this rank's group, ordered by member (rank in it = member).
  const comm::Communicator& group() const { return group_; }

 private:
  static std::size_t checked(const comm::Communicator& world, std::size_t stages, std::size_t group) {
    const auto processes = static_cast<std::size_t>(world.size());
    if (group == 0) throw comm::UsageError("hpf: a layer split's group needs at least one process");
    if (stages == 0 || processes % (stages * group) != 0) {
      if (group == 1) {
        throw comm::UsageError("hpf: " + std::to_string(processes) + " processes cannot form pipelines of " +
                               std::to_string(stages) + " stages; start a multiple of " + std::to_string(stages) +
                               " processes (replicas x stages)");
      }
      throw comm::UsageError("hpf: " + std::to_string(processes) + " processes cannot form pipelines of " +
                             std::to_string(stages) + " stages whose layers split over groups of " + std::to_string(group) +
                             "; start a multiple of " + std::to_string(stages * group) +
                             " processes (replicas x stages x group)");
    }
    return stages;
  }

  comm::Communicator world_;
  std::size_t stages_, group_size_, replicas_, member_, stage_, replica_;
  comm::Communicator pipeline_, stage_group_, group_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_GRID_HPP
