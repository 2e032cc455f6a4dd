// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_TRANSFER_HPP
#define HPF_COMM_TRANSFER_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/config.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace hpf::comm {

namespace detail {
/// True when MPI may be handed View's pointer directly: host memory, or device memory with a
/// GPU-aware MPI (HPF_ENABLE_GPU_AWARE_MPI). Otherwise data goes through a host mirror.
template <class View>
inline constexpr bool direct_v =
    HPF_ENABLE_GPU_AWARE_MPI || Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;

template <class View>
int count_of(const View& v, const char* operation) {
  if (!v.span_is_contiguous()) {
    throw std::invalid_argument(std::string("hpf::comm: ") + operation + " needs a contiguous view");
  }
  if (v.size() > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument(std::string("hpf::comm: ") + operation + " of more than INT_MAX elements");
  }
  return static_cast<int>(v.size());
}

/// Flat host view of the same size as `v`.
template <class View>
auto host_staging(const View& v) {
  return Kokkos::View<typename View::non_const_value_type*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "hpf::comm::staging"), v.size());
}
template <class View>
auto flat(const View& v) {
  return Kokkos::View<typename View::value_type*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
      v.data(), v.size());
}
/// `w` completed with what the transfer itself knows: the MPI call, the kind of wait, the peer
/// (as a world rank), tag, bytes, group size. A caller's own fields (what, stage, micro-batch,
/// bucket, members) are kept.
inline WaitFor point_to_point(WaitFor w, const char* operation, const char* kind, const Communicator& comm, int peer,
                              int tag, std::int64_t bytes) {
  w.operation = operation;
  if (!w.kind) w.kind = kind;
  w.peer = comm.world_rank_of(peer);
  w.tag = tag;
  w.bytes = bytes;
  return w;
}
inline WaitFor collective(WaitFor w, const char* operation, const char* kind, const Communicator& comm,
                          std::int64_t bytes) {
  w.operation = operation;
  if (!w.kind) w.kind = kind;
  w.group = comm.size();
  if (w.bytes < 0) w.bytes = bytes;
  return w;
}
template <class View>
std::int64_t bytes_of(const View& v) {
  return static_cast<std::int64_t>(v.size() * sizeof(typename View::value_type));
}
}  // namespace detail

// Every wait below lasts at most wait_limit() seconds, then ends the job saying what it waited
// for (hpf/comm/watchdog.hpp); `what` adds to that description (what travels, the pipeline stage
// and micro-batch, the gradient bucket) and is plain data, so passing it costs no allocation.
// Blocking collectives are the non-blocking MPI-3 ones plus that wait: exact for data movement
// and integer or min/max reductions; a floating-point sum may add in another order than the
// blocking call would.

namespace detail {
/// Posts one point-to-point operation on [data, data + count) as `post(first, count)` calls:
/// one, or consecutive pieces of at most `piece` elements (0: one) for the peer to match in order.
template <class Post>
std::vector<MPI_Request> post_pieces(int count, std::size_t piece, const Post& post) {
  const int step = piece == 0 || piece >= static_cast<std::size_t>(count) ? count : static_cast<int>(piece);
  std::vector<MPI_Request> requests;
  requests.reserve(step > 0 ? static_cast<std::size_t>((count + step - 1) / step) : 1);
  for (int first = 0; first < count || requests.empty(); first += step) {
    requests.push_back(MPI_REQUEST_NULL);
    post(first, std::min(step, count - first), requests.back());
  }
  return requests;
}
}  // namespace detail

/// Starts sending a contiguous view to `dest`. The view must stay unchanged until the request
/// completes (unless staged, then only until this call returns). `piece_elements` > 0 sends it as
/// messages of at most that many elements, which the receiver must receive in the same pieces
/// (irecv with the same value): over TCP, messages under the eager limit need no rendezvous
/// acknowledgement, which could queue behind the peer's own sending (StepOptions::exchange_piece_bytes).
template <class View>
Request isend(const Communicator& comm, const View& v, int dest, int tag, const WaitFor& what = {},
              std::size_t piece_elements = 0) {
  trace::Region region("hpf::comm::isend");
  const int count = detail::count_of(v, "isend");
  using T = typename View::value_type;
  typename View::execution_space().fence();  // kernels that produced v are done
  const WaitFor w = detail::point_to_point(what, "MPI_Isend", "send", comm, dest, tag, detail::bytes_of(v));
  const auto send_from = [&](const T* data) {
    return detail::post_pieces(count, piece_elements, [&](int first, int n, MPI_Request& request) {
      check(MPI_Isend(data + first, n, datatype<T>(), dest, tag, comm.get(), &request), "MPI_Isend");
    });
  };
  if constexpr (detail::direct_v<View>) {
    return Request(send_from(v.data()), w);
  } else {
    auto staging = std::make_shared<decltype(detail::host_staging(v))>(detail::host_staging(v));
    Kokkos::deep_copy(*staging, detail::flat(v));
    return Request(send_from(staging->data()), w, staging);
  }
}

/// Starts receiving into a contiguous view from `source`; the data is there once the request
/// completes. `piece_elements`: the sender's (isend).
template <class View>
Request irecv(const Communicator& comm, const View& v, int source, int tag, const WaitFor& what = {},
              std::size_t piece_elements = 0) {
  trace::Region region("hpf::comm::irecv");
  const int count = detail::count_of(v, "irecv");
  using T = typename View::value_type;
  const WaitFor w = detail::point_to_point(what, "MPI_Irecv", "receive", comm, source, tag, detail::bytes_of(v));
  const auto receive_into = [&](T* data) {
    return detail::post_pieces(count, piece_elements, [&](int first, int n, MPI_Request& request) {
      check(MPI_Irecv(data + first, n, datatype<T>(), source, tag, comm.get(), &request), "MPI_Irecv");
    });
  };
  if constexpr (detail::direct_v<View>) {
    return Request(receive_into(v.data()), w);
  } else {
    auto staging = std::make_shared<decltype(detail::host_staging(v))>(detail::host_staging(v));
    const auto target = detail::flat(v);
    return Request(receive_into(staging->data()), w, staging, [staging, target] { Kokkos::deep_copy(target, *staging); });
  }
}

/// Sends a contiguous view to `dest` and waits until its buffer may be reused.
template <class View>
void send(const Communicator& comm, const View& v, int dest, int tag, const WaitFor& what = {}) {
  isend(comm, v, dest, tag, what).wait();
}
/// Receives a contiguous view from `source`.
template <class View>
void recv(const Communicator& comm, const View& v, int source, int tag, const WaitFor& what = {}) {
  irecv(comm, v, source, tag, what).wait();
}

/// Starts an in-place reduction of a contiguous view over all ranks of `comm`.
template <class View>
Request iallreduce(const Communicator& comm, const View& v, MPI_Op op = MPI_SUM, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::iallreduce");
  const int count = detail::count_of(v, "iallreduce");
  using T = typename View::value_type;
  typename View::execution_space().fence();
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Iallreduce", "allreduce", comm, detail::bytes_of(v));
  if constexpr (detail::direct_v<View>) {
    check(MPI_Iallreduce(MPI_IN_PLACE, v.data(), count, datatype<T>(), op, comm.get(), &request), "MPI_Iallreduce");
    return Request(request, w);
  } else {
    auto staging = std::make_shared<decltype(detail::host_staging(v))>(detail::host_staging(v));
    const auto target = detail::flat(v);
    Kokkos::deep_copy(*staging, target);
    check(MPI_Iallreduce(MPI_IN_PLACE, staging->data(), count, datatype<T>(), op, comm.get(), &request),
          "MPI_Iallreduce");
    return Request(request, w, staging, [staging, target] { Kokkos::deep_copy(target, *staging); });
  }
}

/// Starts gathering every rank's contiguous `part` into `all` (comm.size() times its size, in
/// rank order).
template <class PartView, class AllView>
Request iallgather(const Communicator& comm, const PartView& part, const AllView& all, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::iallgather");
  const int count = detail::count_of(part, "iallgather");
  if (all.size() != part.size() * static_cast<std::size_t>(comm.size())) {
    throw std::invalid_argument("hpf::comm: iallgather needs a receive view of size x part size");
  }
  detail::count_of(all, "iallgather");
  using T = typename PartView::value_type;
  static_assert(std::is_same_v<std::remove_const_t<T>, typename AllView::value_type>,
                "hpf::comm::iallgather: part and result must hold the same scalar type");
  typename PartView::execution_space().fence();
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Iallgather", "allgather", comm, detail::bytes_of(part));
  if constexpr (detail::direct_v<PartView> && detail::direct_v<AllView>) {
    check(MPI_Iallgather(part.data(), count, datatype<T>(), all.data(), count, datatype<T>(), comm.get(), &request),
          "MPI_Iallgather");
    return Request(request, w);
  } else {
    struct Staging {
      decltype(detail::host_staging(part)) send;
      decltype(detail::host_staging(all)) receive;
    };
    auto staging = std::make_shared<Staging>(Staging{detail::host_staging(part), detail::host_staging(all)});
    Kokkos::deep_copy(staging->send, detail::flat(part));
    check(MPI_Iallgather(staging->send.data(), count, datatype<T>(), staging->receive.data(), count, datatype<T>(),
                         comm.get(), &request),
          "MPI_Iallgather");
    const auto target = detail::flat(all);
    return Request(request, w, staging, [staging, target] { Kokkos::deep_copy(target, staging->receive); });
  }
}

/// In-place reduction of a contiguous view over all ranks of `comm`.
template <class View>
void allreduce(const Communicator& comm, const View& v, MPI_Op op = MPI_SUM, const WaitFor& what = {}) {
  iallreduce(comm, v, op, what).wait();
}

/// Reduction of one host scalar over all ranks of `comm`.
template <class T>
T allreduce_value(const Communicator& comm, T value, MPI_Op op = MPI_SUM, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::allreduce");
  T result{};
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(&value, &result, 1, datatype<T>(), op, comm.get(), &request), "MPI_Iallreduce");
  watched_wait(request, detail::collective(what, "MPI_Iallreduce", "allreduce", comm, sizeof(T)));
  return result;
}

/// Starts copying `root`'s contiguous view into the same view on every rank of `comm`.
template <class View>
Request ibroadcast(const Communicator& comm, const View& v, int root, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::ibroadcast");
  const int count = detail::count_of(v, "broadcast");
  using T = typename View::value_type;
  typename View::execution_space().fence();
  const WaitFor w = detail::collective(what, "MPI_Ibcast", "broadcast", comm, detail::bytes_of(v));
  MPI_Request request = MPI_REQUEST_NULL;
  if constexpr (detail::direct_v<View>) {
    check(MPI_Ibcast(v.data(), count, datatype<T>(), root, comm.get(), &request), "MPI_Ibcast");
    return Request(request, w);
  } else {
    auto staging = std::make_shared<decltype(detail::host_staging(v))>(detail::host_staging(v));
    const auto target = detail::flat(v);
    if (comm.rank() == root) Kokkos::deep_copy(*staging, target);
    check(MPI_Ibcast(staging->data(), count, datatype<T>(), root, comm.get(), &request), "MPI_Ibcast");
    return Request(request, w, staging, [staging, target] { Kokkos::deep_copy(target, *staging); });
  }
}

/// Copies `root`'s contiguous view into the same view on every rank of `comm`.
template <class View>
void broadcast(const Communicator& comm, const View& v, int root, const WaitFor& what = {}) {
  ibroadcast(comm, v, root, what).wait();
}

/// Starts gathering every rank's contiguous `part` into `all` on `root` (comm.size() times its
/// size, in rank order; `all` is not used on other ranks).
template <class PartView, class AllView>
Request igather(const Communicator& comm, const PartView& part, const AllView& all, int root, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::igather");
  const int count = detail::count_of(part, "igather");
  const bool receives = comm.rank() == root;
  if (receives && all.size() != part.size() * static_cast<std::size_t>(comm.size())) {
    throw std::invalid_argument("hpf::comm: igather needs a receive view of size x part size on its root");
  }
  using T = typename PartView::value_type;
  static_assert(std::is_same_v<std::remove_const_t<T>, typename AllView::value_type>,
                "hpf::comm::igather: part and result must hold the same scalar type");
  typename PartView::execution_space().fence();
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Igather", "gather", comm, detail::bytes_of(part));
  if constexpr (detail::direct_v<PartView> && detail::direct_v<AllView>) {
    check(MPI_Igather(part.data(), count, datatype<T>(), receives ? all.data() : nullptr, count, datatype<T>(), root,
                      comm.get(), &request),
          "MPI_Igather");
    return Request(request, w);
  } else {
    struct Staging {
      decltype(detail::host_staging(part)) send;
      decltype(detail::host_staging(all)) receive;
    };
    auto staging = std::make_shared<Staging>(Staging{detail::host_staging(part), {}});
    if (receives) staging->receive = detail::host_staging(all);
    Kokkos::deep_copy(staging->send, detail::flat(part));
    check(MPI_Igather(staging->send.data(), count, datatype<T>(), receives ? staging->receive.data() : nullptr, count,
                      datatype<T>(), root, comm.get(), &request),
          "MPI_Igather");
    if (!receives) return Request(request, w, staging);
    const auto target = detail::flat(all);
    return Request(request, w, staging, [staging, target] { Kokkos::deep_copy(target, staging->receive); });
  }
}

/// Where each rank's part of a contiguous view lies: part r is [offsets[r], offsets[r] + counts[r]).
struct Parts {
  std::vector<int> counts, offsets;
};

/// Starts an exchange of parts: `send`'s part r (send_parts) goes to rank r, and rank r's part
/// for this rank lands in `receive`'s part r (receive_parts). The parts must outlive nothing:
/// they are kept with the request.
template <class SendView, class ReceiveView>
Request ialltoallv(const Communicator& comm, const SendView& send, Parts send_parts, const ReceiveView& receive,
                   Parts receive_parts, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::ialltoallv");
  detail::count_of(send, "ialltoallv");
  detail::count_of(receive, "ialltoallv");
  using T = typename SendView::value_type;
  static_assert(std::is_same_v<std::remove_const_t<T>, typename ReceiveView::value_type>,
                "hpf::comm::ialltoallv: sent and received views must hold the same scalar type");
  const auto size = static_cast<std::size_t>(comm.size());
  if (send_parts.counts.size() != size || send_parts.offsets.size() != size || receive_parts.counts.size() != size ||
      receive_parts.offsets.size() != size) {
    throw std::invalid_argument("hpf::comm: ialltoallv needs one part per rank");
  }
  typename SendView::execution_space().fence();
  using SendStaging = decltype(detail::host_staging(send));
  using ReceiveStaging = decltype(detail::host_staging(receive));
  struct Keep {
    Parts sent, received;
    SendStaging send_staging;
    ReceiveStaging receive_staging;
  };
  auto keep = std::make_shared<Keep>(Keep{std::move(send_parts), std::move(receive_parts), {}, {}});
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Ialltoallv", "all-to-all", comm, detail::bytes_of(send));
  const auto post = [&](const T* from, std::remove_const_t<T>* into) {
    check(MPI_Ialltoallv(from, keep->sent.counts.data(), keep->sent.offsets.data(), datatype<std::remove_const_t<T>>(), into,
                         keep->received.counts.data(), keep->received.offsets.data(), datatype<std::remove_const_t<T>>(),
                         comm.get(), &request),
          "MPI_Ialltoallv");
  };
  if constexpr (detail::direct_v<SendView> && detail::direct_v<ReceiveView>) {
    post(send.data(), receive.data());
    return Request(request, w, keep);
  } else {
    keep->send_staging = detail::host_staging(send);
    keep->receive_staging = detail::host_staging(receive);
    Kokkos::deep_copy(keep->send_staging, detail::flat(send));
    post(keep->send_staging.data(), keep->receive_staging.data());
    const auto target = detail::flat(receive);
    return Request(request, w, keep, [keep, target] { Kokkos::deep_copy(target, keep->receive_staging); });
  }
}

/// Starts gathering every rank's part of a contiguous view (`parts`), in place: afterwards
/// every rank's view holds every rank's part.
template <class View>
Request iallgatherv_in_place(const Communicator& comm, const View& v, Parts parts, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::iallgatherv");
  detail::count_of(v, "iallgatherv");
  using T = typename View::value_type;
  if (parts.counts.size() != static_cast<std::size_t>(comm.size()) || parts.offsets.size() != parts.counts.size()) {
    throw std::invalid_argument("hpf::comm: iallgatherv needs one part per rank");
  }
  typename View::execution_space().fence();
  using Staging = decltype(detail::host_staging(v));
  struct Keep {
    Parts parts;
    Staging staging;
  };
  auto keep = std::make_shared<Keep>(Keep{std::move(parts), {}});
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Iallgatherv", "allgather", comm, detail::bytes_of(v));
  const auto post = [&](T* data) {
    check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, keep->parts.counts.data(), keep->parts.offsets.data(),
                          datatype<T>(), comm.get(), &request),
          "MPI_Iallgatherv");
  };
  if constexpr (detail::direct_v<View>) {
    post(v.data());
    return Request(request, w, keep);
  } else {
    keep->staging = detail::host_staging(v);
    const auto target = detail::flat(v);
    Kokkos::deep_copy(keep->staging, target);
    post(keep->staging.data());
    return Request(request, w, keep, [keep, target] { Kokkos::deep_copy(target, keep->staging); });
  }
}

/// Starts reducing a contiguous view over all ranks of `comm` into the same view on `root` (in
/// place there; the other ranks' views are only read).
template <class View>
Request ireduce(const Communicator& comm, const View& v, int root, MPI_Op op = MPI_SUM, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::ireduce");
  const int count = detail::count_of(v, "ireduce");
  using T = typename View::value_type;
  typename View::execution_space().fence();
  const bool receives = comm.rank() == root;
  MPI_Request request = MPI_REQUEST_NULL;
  const WaitFor w = detail::collective(what, "MPI_Ireduce", "reduce", comm, detail::bytes_of(v));
  const auto post = [&](T* data) {
    check(MPI_Ireduce(receives ? MPI_IN_PLACE : data, receives ? data : nullptr, count, datatype<T>(), op, root,
                      comm.get(), &request),
          "MPI_Ireduce");
  };
  if constexpr (detail::direct_v<View>) {
    post(v.data());
    return Request(request, w);
  } else {
    auto staging = std::make_shared<decltype(detail::host_staging(v))>(detail::host_staging(v));
    const auto target = detail::flat(v);
    Kokkos::deep_copy(*staging, target);
    post(staging->data());
    if (!receives) return Request(request, w, staging);
    return Request(request, w, staging, [staging, target] { Kokkos::deep_copy(target, *staging); });
  }
}

/// Every rank's host scalar, in rank order, on every rank of `comm`. Lets a caller add them in
/// an order of its choosing (an allreduce adds in the MPI library's order).
template <class T>
std::vector<T> allgather_value(const Communicator& comm, T value, const WaitFor& what = {}) {
  trace::Region region("hpf::comm::allgather");
  std::vector<T> all(static_cast<std::size_t>(comm.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&value, 1, datatype<T>(), all.data(), 1, datatype<T>(), comm.get(), &request), "MPI_Iallgather");
  watched_wait(request, detail::collective(what, "MPI_Iallgather", "allgather", comm, sizeof(T)));
  return all;
}

}  // namespace hpf::comm

#endif  // HPF_COMM_TRANSFER_HPP
