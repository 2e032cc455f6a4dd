// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_COMMUNICATOR_HPP
#define HPF_COMM_COMMUNICATOR_HPP

#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/watchdog.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace hpf::comm {

/// \brief An MPI communicator hpf owns: a duplicate (so hpf's messages never match the
/// application's), with errors returned rather than fatal (so they become MpiError), freed when
/// the last copy goes away. Copies share the communicator.
class Communicator {
 public:
  /// A duplicate of `parent` (MPI_COMM_WORLD by default). Collective over `parent`.
  explicit Communicator(MPI_Comm parent = MPI_COMM_WORLD) {
    MPI_Comm dup = MPI_COMM_NULL;
    check(MPI_Comm_dup(parent, &dup), "MPI_Comm_dup");
    adopt(dup);
  }

  MPI_Comm get() const noexcept { return *comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// The rank in MPI_COMM_WORLD of this communicator's rank `rank` (`rank` itself when it is out
  /// of range or its process is not in MPI_COMM_WORLD). Names peers in messages (hpf::comm::WaitFor).
  int world_rank_of(int rank) const noexcept {
    if (!world_ranks_ || rank < 0 || static_cast<std::size_t>(rank) >= world_ranks_->size()) return rank;
    const int world = (*world_ranks_)[static_cast<std::size_t>(rank)];
    return world == MPI_UNDEFINED ? rank : world;
  }

  /// Processes with the same colour form a new communicator, ordered by key. Collective.
  Communicator split(int color, int key) const {
    MPI_Comm part = MPI_COMM_NULL;
    check(MPI_Comm_split(get(), color, key, &part), "MPI_Comm_split");
    Communicator result(adopt_tag{});
    result.adopt(part);
    return result;
  }

  /// The ranks of this communicator on this rank's host (shared-memory node,
  /// MPI_COMM_TYPE_SHARED), in this communicator's rank order. Collective.
  Communicator on_this_host() const {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(get(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    Communicator result(adopt_tag{});
    result.adopt(node);
    return result;
  }

  /// For each of its ranks, whether it runs on this rank's host (shared-memory node,
  /// MPI_COMM_TYPE_SHARED): the same relation seen from both ends. Collective.
  std::vector<bool> ranks_on_this_host() const {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(get(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Group group = MPI_GROUP_NULL, node_group = MPI_GROUP_NULL;
    std::vector<int> ranks(static_cast<std::size_t>(size_)), in_node(ranks.size());
    for (int r = 0; r < size_; ++r) ranks[static_cast<std::size_t>(r)] = r;
    int failed = MPI_Comm_group(get(), &group);
    if (failed == MPI_SUCCESS) failed = MPI_Comm_group(node, &node_group);
    if (failed == MPI_SUCCESS) failed = MPI_Group_translate_ranks(group, size_, ranks.data(), node_group, in_node.data());
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
    if (node_group != MPI_GROUP_NULL) MPI_Group_free(&node_group);
    MPI_Comm_free(&node);
    check(failed, "MPI_Group_translate_ranks");
    std::vector<bool> near(ranks.size());
    for (std::size_t r = 0; r < near.size(); ++r) near[r] = in_node[r] != MPI_UNDEFINED;
    return near;
  }
  /// Whether its processes run on more than one host: the same answer on every rank. Collective.
  bool spans_hosts() const {
    const std::vector<bool> near = ranks_on_this_host();
    return std::find(near.begin(), near.end(), false) != near.end();
  }

  /// Waits until every rank of the communicator has called it (at most hpf::comm::wait_limit()).
  void barrier() const {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(get(), &request), "MPI_Ibarrier");
    watched_wait(request, {.operation = "MPI_Ibarrier", .kind = "barrier", .group = size_});
  }

 private:
  struct adopt_tag {};
  explicit Communicator(adopt_tag) {}
  void adopt(MPI_Comm comm) {
    comm_ = std::shared_ptr<MPI_Comm>(new MPI_Comm(comm), [](MPI_Comm* c) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized && *c != MPI_COMM_NULL) MPI_Comm_free(c);
      delete c;
    });
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
    // Once per communicator, so that messages can name peers by world rank without MPI calls.
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    check(MPI_Comm_group(comm, &group), "MPI_Comm_group");
    check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
    std::vector<int> ranks(static_cast<std::size_t>(size_)), world_ranks(ranks.size());
    for (int r = 0; r < size_; ++r) ranks[static_cast<std::size_t>(r)] = r;
    const int translated = MPI_Group_translate_ranks(group, size_, ranks.data(), world, world_ranks.data());
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    check(translated, "MPI_Group_translate_ranks");
    world_ranks_ = std::make_shared<const std::vector<int>>(std::move(world_ranks));
  }

  std::shared_ptr<MPI_Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
  std::shared_ptr<const std::vector<int>> world_ranks_;
};

}  // namespace hpf::comm

#endif  // HPF_COMM_COMMUNICATOR_HPP
