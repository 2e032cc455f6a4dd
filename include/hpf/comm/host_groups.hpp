// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_HOST_GROUPS_HPP
#define HPF_COMM_HOST_GROUPS_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>

#include <algorithm>
#include <string>

namespace hpf::comm {

/// \brief A communicator's ranks grouped by host (MPI_COMM_TYPE_SHARED), for collectives in two
/// levels: inside each host through shared memory, and across hosts among one leader per host
/// (the host's first rank), as Horovod's hierarchical allreduce does.
struct HostGroups {
  /// The ranks on this host, in the parent's rank order; the host's leader is its rank 0.
  Communicator host;
  /// The same ranks again, for a second stream of collectives whose order may differ from
  /// host's (MPI matches collectives on a communicator by the order they are posted in).
  Communicator host_fanout;
  /// On leaders: the leaders of every host, ordered by their rank in the parent (so by host when
  /// the hosts hold consecutive ranks). On the other ranks: the other non-leaders, unused.
  Communicator leaders;
  int hosts = 1;         ///< hosts the parent spans
  int largest_host = 1;  ///< ranks on its most populated host
  /// Whether host h holds the parent's ranks [h L, h L + its size) for one L that is a power of
  /// two, every host but the last holding L: then each host's ranks are a subtree of
  /// hpf::ordered_sum's tree over the parent's ranks. Always true for a single host.
  bool aligned = true;

  bool leader() const { return host.rank() == 0; }

  /// Collective over `parent`.
  static HostGroups of(const Communicator& parent) {
    Communicator on_host = parent.on_this_host();
    const bool is_leader = on_host.rank() == 0;
    HostGroups g{.host = on_host,
                 .host_fanout = Communicator(on_host.get()),
                 .leaders = parent.split(is_leader ? 0 : 1, parent.rank())};
    const WaitFor what{.what = "the ranks per host"};
    g.hosts = allreduce_value(parent, is_leader ? 1 : 0, MPI_SUM, what);
    g.largest_host = allreduce_value(parent, on_host.size(), MPI_MAX, what);
    const int lowest = allreduce_value(on_host, parent.rank(), MPI_MIN, what);
    const Place place{.rank = parent.rank(), .ranks = parent.size(), .host_rank = on_host.rank(),
                      .host_size = on_host.size(), .lowest_on_host = lowest, .largest_host = g.largest_host};
    const bool mine = g.hosts == 1 || in_aligned_block(place);
    g.aligned = allreduce_value(parent, mine ? 1 : 0, MPI_MIN, what) == 1;
    return g;
  }

  /// One rank's view of the hosts, in the parent's ranks.
  struct Place {
    int rank, ranks;               ///< this rank, of so many
    int host_rank, host_size;      ///< on its host
    int lowest_on_host;            ///< the lowest rank on its host
    int largest_host;              ///< ranks on the most populated host (L)
  };
  /// Whether this rank's host holds exactly [b, b + min(L, ranks - b)) with b = rank - rank % L
  /// and L a power of two (HostGroups::aligned holds when it is true on every rank).
  static bool in_aligned_block(const Place& p) {
    const int width = p.largest_host, base = p.rank - p.rank % width;
    return (width & (width - 1)) == 0 && p.lowest_on_host == base && p.host_rank == p.rank % width &&
           p.host_size == std::min(width, p.ranks - base);
  }

  /// "2 hosts x 2 ranks" (the largest host's count).
  std::string describe() const {
    return std::to_string(hosts) + (hosts == 1 ? " host x " : " hosts x ") + std::to_string(largest_host) +
           (largest_host == 1 ? " rank" : " ranks");
  }
};

}  // namespace hpf::comm

#endif  // HPF_COMM_HOST_GROUPS_HPP
