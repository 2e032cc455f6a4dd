// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_PHASED_EXCHANGE_HPP
#define HPF_PARALLEL_PHASED_EXCHANGE_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/host_groups.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/tensor/bf16_arrays.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf {

/// \brief Sums pieces of a flat gradient array over replicas in a chain of collectives per
/// piece, each posted as soon as the one before it is seen complete:
/// - summed per host first (HostGroups): in the host to its leader through shared memory, among
///   the hosts' leaders, back in the host (a broadcast from the leader), so a host's link
///   carries one copy per other host instead of one per rank;
/// - among P >= 3 participants (the replicas, or the hosts' leaders) under the ordered
///   reduction: scattered and collected, as a ring allreduce moves data. Each participant
///   receives every copy of its 1/P of the piece (MPI_Ialltoallv), adds them in
///   hpf::ordered_sum's tree, and every participant collects the sums (MPI_Iallgatherv): each
///   receives 2 (P - 1) / P of the piece instead of the P - 1 copies an allgather brings, and
///   every element is added in the same tree over the same copies, so the bits do not change.
///   With 2 participants an allgather moves as much in one collective.
/// GradientReduction::ordered gathers a host's copies to its leader and adds them in the same
/// tree: with HostGroups::aligned each host's sum is a subtree of the tree over all replicas, so
/// the result is the flat ordered reduction's bit for bit. ::allreduce reduces with MPI_Ireduce,
/// MPI_Iallreduce and MPI_Ibcast (the MPI library's order).
///
/// With ExchangePrecision::bf16 (ordered, float) what carries a replica's own gradient (the
/// gather in the host, the flat exchange or scatter) and what carries a final sum (collect,
/// broadcast) travels as bf16, rounded once each, the sums in float between; a host's partial sum
/// crosses hosts as float, so no rounding depends on where the hosts' boundaries lie.
///
/// Pieces start in order, and each phase is posted in piece order on its own communicator (MPI
/// matches collectives by the order they are posted in): progress() advances every piece in
/// flight and is cheap to call between layers.
template <class T, class Space>
class PhasedExchange {
 public:
  /// `replicas`: every replica; `hosts`: their host groups when summing per host first.
  /// `pieces`: [begin, end) ranges of `gradients`, in the order they will be started.
  /// Collective over `replicas`.
  /// `precision`: ExchangePrecision::bf16 needs float gradients and the ordered reduction.
  PhasedExchange(const comm::Communicator& replicas, std::optional<comm::HostGroups> hosts, Buffer<T, Space> gradients,
                 GradientReduction reduction, std::vector<std::pair<std::size_t, std::size_t>> pieces,
                 ExchangePrecision precision = ExchangePrecision::full)
      : hosts_(std::move(hosts)), across_(hosts_ ? hosts_->leaders : replicas),
        across_collect_(across_.get()), gradients_(gradients), ordered_(reduction == GradientReduction::ordered),
        bf16_(precision == ExchangePrecision::bf16), pieces_(std::move(pieces)), at_(pieces_.size(), 0),
        flying_(pieces_.size(), false), spans_(pieces_.size()), waits_(pieces_.size()), requests_(pieces_.size()) {
    const bool shares_host = hosts_ && hosts_->host.size() > 1, leader = !hosts_ || hosts_->leader();
    const int participants = hosts_ ? hosts_->hosts : replicas.size();
    if (shares_host) phases_.push_back(Phase::in_host);
    if (leader && participants > 1) {
      if (ordered_ && participants >= 3) {
        phases_.push_back(Phase::scatter);
        phases_.push_back(Phase::collect);
      } else {
        phases_.push_back(Phase::among);
      }
    }
    if (shares_host) phases_.push_back(Phase::back_in_host);
    KOKKOS_ASSERT(!phases_.empty());  // made only among 2 or more replicas
    next_.assign(phases_.size(), 0);
    if (bf16_) {
      KOKKOS_ASSERT((std::is_same_v<T, float> && ordered_));  // GradientBuckets checked the options
      wire_ = Kokkos::View<bf16_bits*, memory_space_t<Space>>("hpf::PhasedExchange::wire", gradients_.extent(0));
    }
    if (!ordered_ || !leader) return;
    // A leader's room for what it gathers, a block per piece in the order pieces start: per
    // element, its host's copies, or the 2 participants' whole pieces, or (scattered) one, since
    // it receives every participant's part of its own 1/P; plus one element per participant, as
    // the parts round up.
    const int host_copies = shares_host ? hosts_->host.size() : 1, exchanged = participants >= 3 ? 1 : participants;
    const auto copies = static_cast<std::size_t>(std::max(host_copies, exchanged));
    std::size_t end = 0;
    for (std::size_t k = 0; k < pieces_.size(); ++k) {
      block_begins_.push_back(end);
      end += length(k) * copies + static_cast<std::size_t>(participants);
    }
    if (bf16_) gathered_bf16_ = Kokkos::View<bf16_bits*, memory_space_t<Space>>("hpf::PhasedExchange::gathered_bf16", end);
    if (!bf16_ || hosts_) gathered_ = Buffer<T, Space>("hpf::PhasedExchange::gathered", end);
  }

  /// Whether pieces are summed per host first.
  bool summed_per_host() const { return hosts_.has_value(); }

  /// Starts piece k (the next in order): `wait` describes it for the watchdog, `span` (a trace
  /// span) ends when it is done.
  void start(std::size_t k, const comm::WaitFor& wait, trace::Pending span = {}) {
    KOKKOS_ASSERT(k == started_);
    ++started_;
    waits_[k] = wait;
    spans_[k] = std::move(span);
    progress();
  }

  /// Advances every piece: completes the phases that are done (adding what arrived) and posts
  /// the next phases in order.
  void progress() {
    for (std::size_t k = 0; k < started_; ++k) {
      if (flying_[k] && requests_[k].test()) complete(k);
    }
    post_ready();
  }

  /// Waits for every started piece, in order (each wait at most hpf::comm::wait_limit()). After
  /// each wait every piece is tested, so the phases that completed meanwhile post their next
  /// ones at once: pieces keep moving through their chains side by side, not one after another.
  void finish() {
    for (std::size_t k = 0; k < started_; ++k) {
      while (at_[k] < phases_.size()) {
        if (flying_[k]) {
          trace::wait(requests_[k], "allreduce", tags(k));
          complete(k);
        }
        progress();
      }
    }
  }

  /// Prepares the next step: no piece started.
  void reset() {
    std::fill(at_.begin(), at_.end(), 0);
    std::fill(next_.begin(), next_.end(), 0);
    started_ = 0;
  }

 private:
  enum class Phase { in_host, scatter, collect, among, back_in_host };

  /// Piece k's trace tags; a phase that moves bf16 names half the bytes.
  trace::Tags tags(std::size_t k, bool in_bf16 = false) const {
    const std::size_t element = in_bf16 ? sizeof(bf16_bits) : sizeof(T);
    return {.bucket = waits_[k].bucket, .bytes = static_cast<std::int64_t>(length(k) * element)};
  }
  /// Whether phase `phase` moves the replicas' own gradients (one copy per replica, not a partial
  /// sum): bf16 on the wire under ExchangePrecision::bf16.
  bool carries_own_copies(Phase phase) const {
    return phase == Phase::in_host || (!hosts_ && (phase == Phase::scatter || phase == Phase::among));
  }
  /// Whether phase `phase` moves bf16: its own copies, or the rounded sums (collect, broadcast).
  bool in_bf16(Phase phase) const {
    return bf16_ && (carries_own_copies(phase) || phase == Phase::collect || phase == Phase::back_in_host);
  }
  /// Piece k's part of wire_ (by offset, as in gradients_).
  auto wire(std::size_t k) const { return Kokkos::subview(wire_, Kokkos::make_pair(pieces_[k].first, pieces_[k].second)); }
  /// wire_ = bf16 of gradients_ over [offset, offset + n) of piece k.
  void encode(std::size_t k, std::size_t offset, std::size_t n) {
    if constexpr (std::is_same_v<T, float>) {
      const std::size_t begin = pieces_[k].first + offset;
      encode_bf16(Space{}, gradients_.data() + begin, wire_.data() + begin, n);
    }
  }
  void encode(std::size_t k) { encode(k, 0, length(k)); }
  /// gradients_ over piece k rounded to bf16 in place (nothing sent).
  void round_piece(std::size_t k) {
    if constexpr (std::is_same_v<T, float>) round_to_bf16_in_place(Space{}, gradients_.data() + pieces_[k].first, length(k));
  }
  /// gradients_ = what wire_ holds over piece k.
  void decode(std::size_t k) {
    if constexpr (std::is_same_v<T, float>) {
      decode_bf16(Space{}, wire(k).data(), gradients_.data() + pieces_[k].first, length(k));
    }
  }
  std::size_t length(std::size_t k) const { return pieces_[k].second - pieces_[k].first; }
  auto piece(std::size_t k) const { return Kokkos::subview(gradients_, Kokkos::make_pair(pieces_[k].first, pieces_[k].second)); }
  /// Piece k's block of the leader's gathered copies, `used` elements of it (nothing on a rank
  /// that only sends: igather's other ranks).
  auto gathered(std::size_t k, std::size_t used) const { return block(gathered_, k, used); }
  auto gathered_bf16(std::size_t k, std::size_t used) const { return block(gathered_bf16_, k, used); }
  template <class V>
  auto block(const V& copies, std::size_t k, std::size_t used) const {
    const std::size_t begin = block_begins_.empty() ? 0 : block_begins_[k];
    return Kokkos::subview(copies, Kokkos::make_pair(begin, block_begins_.empty() ? 0 : begin + used));
  }
  /// Piece k cut into the participants' parts (scatter, collect): part p is [p n / P, (p + 1) n / P).
  comm::Parts parts(std::size_t k) const {
    const std::size_t n = length(k), P = static_cast<std::size_t>(across_.size());
    comm::Parts out;
    for (std::size_t p = 0; p < P; ++p) {
      out.offsets.push_back(static_cast<int>(p * n / P));
      out.counts.push_back(static_cast<int>((p + 1) * n / P - p * n / P));
    }
    return out;
  }

  /// Posts, phase by phase, every started piece whose previous phase is done, in piece order.
  void post_ready() {
    for (std::size_t p = 0; p < phases_.size(); ++p) {
      while (next_[p] < started_ && at_[next_[p]] == p && !flying_[next_[p]]) post(p, next_[p]++);
    }
  }

  /// Posts phase p of piece k, traced as a span of its own (the timeline's row of that phase)
  /// until it is seen complete.
  void post(std::size_t p, std::size_t k) {
    comm::WaitFor w = waits_[k];
    if (bf16_ && hosts_ && hosts_->host.size() == 1 && (phases_[p] == Phase::scatter || phases_[p] == Phase::among)) {
      round_piece(k);  // alone on its host: its own gradient, rounded, is the host's sum
    }
    const auto v = piece(k);
    const char* name = "broadcast in host";
    switch (phases_[p]) {
      case Phase::in_host:
        w.members = "ranks on this host";
        w.kind = ordered_ ? "gather" : "reduce";
        name = ordered_ ? "gather in host" : "reduce in host";
        if (bf16_) {
          encode(k);
          requests_[k] = comm::igather(hosts_->host, wire(k), gathered_bf16(k, length(k) * hosts_->host.size()), 0, w);
        } else {
          requests_[k] = ordered_ ? comm::igather(hosts_->host, v, gathered(k, length(k) * hosts_->host.size()), 0, w)
                                  : comm::ireduce(hosts_->host, v, 0, MPI_SUM, w);
        }
        break;
      case Phase::scatter: {
        w.members = hosts_ ? "hosts' leaders" : "replicas";
        w.kind = "all-to-all";
        name = "scatter";
        const comm::Parts send = parts(k);
        const int mine = send.counts[static_cast<std::size_t>(across_.rank())];
        comm::Parts receive{std::vector<int>(send.counts.size(), mine), {}};
        for (std::size_t q = 0; q < send.counts.size(); ++q) receive.offsets.push_back(static_cast<int>(q) * mine);
        const std::size_t received = static_cast<std::size_t>(mine) * send.counts.size();
        if (in_bf16(Phase::scatter)) {
          encode(k);
          requests_[k] = comm::ialltoallv(across_, wire(k), send, gathered_bf16(k, received), std::move(receive), w);
        } else {
          requests_[k] = comm::ialltoallv(across_, v, send, gathered(k, received), std::move(receive), w);
        }
        break;
      }
      case Phase::collect:
        w.members = hosts_ ? "hosts' leaders" : "replicas";
        w.kind = "allgather";
        name = "collect";
        requests_[k] = bf16_ ? comm::iallgatherv_in_place(across_collect_, wire(k), parts(k), w)
                             : comm::iallgatherv_in_place(across_collect_, v, parts(k), w);
        break;
      case Phase::among:
        w.members = hosts_ ? "hosts' leaders" : "replicas";
        w.kind = ordered_ ? "allgather" : "allreduce";
        name = hosts_ ? "exchange among hosts" : "exchange";
        if (in_bf16(Phase::among)) {
          encode(k);
          requests_[k] = comm::iallgather(across_, wire(k), gathered_bf16(k, length(k) * across_.size()), w);
        } else {
          requests_[k] = ordered_ ? comm::iallgather(across_, v, gathered(k, length(k) * across_.size()), w)
                                  : comm::iallreduce(across_, v, MPI_SUM, w);
        }
        break;
      case Phase::back_in_host:
        w.members = "ranks on this host";
        w.kind = "broadcast";
        requests_[k] = bf16_ ? comm::ibroadcast(hosts_->host_fanout, wire(k), 0, w)
                             : comm::ibroadcast(hosts_->host_fanout, v, 0, w);
        break;
    }
    requests_[k].trace_until_complete(trace::Pending::open(trace::Track::collective, name, tags(k, in_bf16(phases_[p]))));
    flying_[k] = true;
  }

  /// Piece k's current phase has completed: add what the leader gathered, go to the next phase.
  void complete(std::size_t k) {
    flying_[k] = false;
    const Phase phase = phases_[at_[k]];
    const bool leader = !hosts_ || hosts_->leader();
    if (ordered_ && leader && (phase == Phase::in_host || phase == Phase::among || phase == Phase::scatter)) {
      const std::size_t P = static_cast<std::size_t>(across_.size());
      std::size_t copies = P, n = length(k), offset = 0;
      if (phase == Phase::in_host) copies = static_cast<std::size_t>(hosts_->host.size());
      if (phase == Phase::scatter) {  // this participant's part of the piece
        const std::size_t me = static_cast<std::size_t>(across_.rank());
        offset = me * length(k) / P;
        n = (me + 1) * length(k) / P - offset;
      }
      trace::Span span(trace::Track::compute, "reduce bucket", tags(k));
      T* const out = gradients_.data() + pieces_[k].first + offset;
      if (in_bf16(phase)) {
        if constexpr (std::is_same_v<T, float>) ordered_sum(Space{}, gathered_bf16(k, copies * n).data(), copies, n, out, n);
      } else {
        ordered_sum(Space{}, gathered(k, copies * n).data(), copies, n, out, n);
      }
      if (bf16_ && phase == Phase::scatter) encode(k, offset, n);  // this participant's rounded sums, to collect
      if (bf16_ && (phase == Phase::among || (phase == Phase::in_host && !exchanged_after(at_[k])))) {
        encode(k);  // the whole sum: rounded as a bf16 message brings it, and broadcast so
        decode(k);
      }
    }
    if (bf16_ && (phase == Phase::collect || phase == Phase::back_in_host)) decode(k);
    if (++at_[k] == phases_.size()) spans_[k].close();
  }
  /// Whether a phase after phases_[at] exchanges among the participants (the sum is not final).
  bool exchanged_after(std::size_t at) const {
    return std::any_of(phases_.begin() + static_cast<std::ptrdiff_t>(at) + 1, phases_.end(),
                       [](Phase p) { return p == Phase::among || p == Phase::scatter; });
  }

  std::optional<comm::HostGroups> hosts_;
  comm::Communicator across_;          // the participants: replicas, or the hosts' leaders
  comm::Communicator across_collect_;  // the same, for the collect phase's own order
  Buffer<T, Space> gradients_;
  bool ordered_;
  bool bf16_;  // ExchangePrecision::bf16
  std::vector<std::pair<std::size_t, std::size_t>> pieces_;
  std::vector<Phase> phases_;        // this rank's phases, in order
  std::vector<std::size_t> at_;      // by piece: index of its current phase in phases_ (phases_.size(): done)
  std::vector<bool> flying_;         // by piece: its current phase is posted and not seen complete
  std::vector<trace::Pending> spans_;
  std::vector<comm::WaitFor> waits_;
  std::vector<comm::Request> requests_;
  std::vector<std::size_t> next_;    // by phase: the next piece to post it for
  std::size_t started_ = 0;          // pieces started in this step
  std::vector<std::size_t> block_begins_;  // by piece: where its block of gathered_ begins
  Buffer<T, Space> gathered_;        // ordered, on leaders: the copies each piece's sums add
  Kokkos::View<bf16_bits*, memory_space_t<Space>> gathered_bf16_;  // the same, of copies that travel as bf16
  Kokkos::View<bf16_bits*, memory_space_t<Space>> wire_;           // bf16: what this rank sends and receives, by offset
};

}  // namespace hpf

#endif  // HPF_PARALLEL_PHASED_EXCHANGE_HPP
