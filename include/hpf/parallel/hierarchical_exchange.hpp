// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_HIERARCHICAL_EXCHANGE_HPP
#define HPF_PARALLEL_HIERARCHICAL_EXCHANGE_HPP

#include <hpf/comm/host_groups.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace hpf {

/// \brief Sums pieces of a flat gradient array over the ranks of HostGroups in three phases per
/// piece: in the host (to its leader, through shared memory), among the hosts' leaders, and back
/// in the host (a broadcast from the leader). Each host's link then carries one share per host
/// instead of one per rank.
///
/// GradientReduction::ordered gathers the host's copies to the leader, which adds them in
/// hpf::ordered_sum's tree, then gathers the hosts' sums among the leaders and adds those: with
/// HostGroups::aligned each host's sum is a subtree of the tree over all ranks, so the result is
/// the flat ordered reduction's, bit for bit. ::allreduce reduces with MPI_Ireduce and
/// MPI_Iallreduce (the MPI library's order).
///
/// Pieces start in order, and each phase is posted in piece order on its own communicator
/// (MPI matches collectives by their order), whenever the piece's previous phase is seen done:
/// progress() advances every piece in flight and is cheap to call between layers.
template <class T, class Space>
class HierarchicalExchange {
 public:
  /// `pieces`: [begin, end) ranges of `gradients`, in the order they will be started.
  HierarchicalExchange(comm::HostGroups hosts, Buffer<T, Space> gradients, GradientReduction reduction,
                       std::vector<std::pair<std::size_t, std::size_t>> pieces)
      : hosts_(std::move(hosts)), gradients_(gradients), ordered_(reduction == GradientReduction::ordered),
        pieces_(std::move(pieces)), at_(pieces_.size(), 0), flying_(pieces_.size(), false), spans_(pieces_.size()),
        waits_(pieces_.size()), requests_(pieces_.size()) {
    const bool shares_host = hosts_.host.size() > 1;
    if (shares_host) phases_.push_back(Phase::in_host);
    if (hosts_.leader() && hosts_.hosts > 1) phases_.push_back(Phase::among_hosts);
    if (shares_host) phases_.push_back(Phase::back_in_host);
    next_.assign(phases_.size(), 0);
    if (ordered_ && hosts_.leader()) {
      copies_ = static_cast<std::size_t>(std::max(hosts_.host.size(), hosts_.hosts));
      gathered_ = Buffer<T, Space>("hpf::HierarchicalExchange::gathered", gradients.extent(0) * copies_);
    }
  }

  /// Starts piece k (the next in order): `wait` describes it for the watchdog, `span` (a trace
  /// span) ends when it is done.
  void start(std::size_t k, const comm::WaitFor& wait, trace::Pending span = {}) {
    KOKKOS_ASSERT(k == started_);
    ++started_;
    waits_[k] = wait;
    spans_[k] = std::move(span);
    if (phases_.empty()) {
      finished(k);
      return;
    }
    progress();
  }

  /// Advances every piece: completes the phases that are done (adding what arrived) and posts
  /// the next phases in order.
  void progress() {
    for (std::size_t k = 0; k < pieces_.size(); ++k) {
      if (flying_[k] && requests_[k].test()) complete(k);
    }
    post_ready();
  }

  /// Waits for every started piece, in order (each wait at most hpf::comm::wait_limit()).
  void finish(std::size_t started) {
    for (std::size_t k = 0; k < started; ++k) {
      while (at_[k] < phases_.size()) {
        if (flying_[k]) {
          trace::wait(requests_[k], "allreduce", tags(k));
          complete(k);
        }
        post_ready();
      }
    }
  }

  /// Whether piece k holds its sum.
  bool done(std::size_t k) const { return at_[k] == phases_.size() && !flying_[k]; }

  /// Prepares the next step: no piece started.
  void reset() {
    std::fill(at_.begin(), at_.end(), 0);
    std::fill(next_.begin(), next_.end(), 0);
    started_ = 0;
  }

 private:
  enum class Phase { in_host, among_hosts, back_in_host };

  trace::Tags tags(std::size_t k) const {
    return {.bucket = waits_[k].bucket, .bytes = static_cast<std::int64_t>((pieces_[k].second - pieces_[k].first) * sizeof(T))};
  }
  auto piece(std::size_t k) const { return Kokkos::subview(gradients_, Kokkos::make_pair(pieces_[k].first, pieces_[k].second)); }
  /// Piece k's block of the leader's gathered copies (room for copies_ of them), `copies` used.
  auto gathered(std::size_t k, int copies) const {
    const std::size_t begin = pieces_[k].first * copies_;
    return Kokkos::subview(gathered_, Kokkos::make_pair(begin, begin + (pieces_[k].second - pieces_[k].first) * static_cast<std::size_t>(copies)));
  }

  /// Posts, phase by phase, every started piece whose previous phase is done, in piece order.
  void post_ready() {
    for (std::size_t p = 0; p < phases_.size(); ++p) {
      while (next_[p] < started_ && at_[next_[p]] == p && !flying_[next_[p]]) post(p, next_[p]++);
    }
  }

  void post(std::size_t p, std::size_t k) {
    comm::WaitFor w = waits_[k];
    const auto v = piece(k);
    switch (phases_[p]) {
      case Phase::in_host:
        w.members = "ranks on this host";
        w.kind = ordered_ ? "gather" : "reduce";
        requests_[k] = ordered_ ? comm::igather(hosts_.host, v, gathered(k, hosts_.host.size()), 0, w)
                                : comm::ireduce(hosts_.host, v, 0, MPI_SUM, w);
        break;
      case Phase::among_hosts:
        w.members = "hosts' leaders";
        w.kind = ordered_ ? "allgather" : "allreduce";
        requests_[k] = ordered_ ? comm::iallgather(hosts_.leaders, v, gathered(k, hosts_.hosts), w)
                                : comm::iallreduce(hosts_.leaders, v, MPI_SUM, w);
        break;
      case Phase::back_in_host:
        w.members = "ranks on this host";
        w.kind = "broadcast";
        requests_[k] = comm::ibroadcast(hosts_.host_fanout, v, 0, w);
        break;
    }
    flying_[k] = true;
  }

  /// Piece k's current phase has completed: add what the leader gathered, go to the next phase.
  void complete(std::size_t k) {
    flying_[k] = false;
    const Phase phase = phases_[at_[k]];
    if (ordered_ && hosts_.leader() && phase != Phase::back_in_host) {
      const int copies = phase == Phase::in_host ? hosts_.host.size() : hosts_.hosts;
      const std::size_t length = pieces_[k].second - pieces_[k].first;
      trace::Span span(trace::Track::compute, "reduce bucket", tags(k));
      ordered_sum(Space{}, gathered(k, copies).data(), static_cast<std::size_t>(copies), length,
                  gradients_.data() + pieces_[k].first, length);
    }
    if (++at_[k] == phases_.size()) finished(k);
  }
  void finished(std::size_t k) {
    at_[k] = phases_.size();
    spans_[k].close();
  }

  comm::HostGroups hosts_;
  Buffer<T, Space> gradients_;
  bool ordered_;
  std::vector<std::pair<std::size_t, std::size_t>> pieces_;
  std::vector<Phase> phases_;        // this rank's phases, in order (a leader alone on its host: among_hosts only)
  std::vector<std::size_t> at_;      // by piece: index of its current phase in phases_ (phases_.size(): done)
  std::vector<bool> flying_;         // by piece: its current phase is posted and not seen complete
  std::vector<trace::Pending> spans_;
  std::vector<comm::WaitFor> waits_;
  std::vector<comm::Request> requests_;
  std::vector<std::size_t> next_;    // by phase: the next piece to post it for
  std::size_t started_ = 0;         // pieces started in this step
  std::size_t copies_ = 0;          // room per element of gathered_
  Buffer<T, Space> gathered_;        // ordered, on leaders: every copy of each piece, piece by piece
};

}  // namespace hpf

#endif  // HPF_PARALLEL_HIERARCHICAL_EXCHANGE_HPP
