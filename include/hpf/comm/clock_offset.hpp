// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_CLOCK_OFFSET_HPP
#define HPF_COMM_CLOCK_OFFSET_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/trace/clock.hpp>

#include <cstdint>
#include <limits>

namespace hpf::comm {

/// \brief Measures every rank's offset to rank 0 of `comm` (hpf::trace::now_ns clocks) by
/// Cristian's method: `rounds` ping-pongs, keeping the one with the shortest round trip, whose
/// midpoint is the best estimate. Rank 0 serves the ranks one after another. Collective; each
/// wait lasts at most wait_limit() (hpf/comm/watchdog.hpp).
inline trace::ClockSample measure_clock_offset(const Communicator& comm, int rounds = 16) {
  constexpr int tag = 0x7ace;
  // Non-blocking calls plus a watched wait; the first millisecond of a watched wait polls without
  // sleeping, so a round trip within a node is timed as tightly as with the blocking calls.
  auto finish = [&](const char* operation, const char* kind, int peer, int code, MPI_Request& request) {
    check(code, operation);
    watched_wait(request, {.operation = operation, .kind = kind, .what = "clock offset ping-pong",
                           .peer = peer < 0 ? -1 : comm.world_rank_of(peer), .tag = peer < 0 ? -1 : tag,
                           .group = peer < 0 ? comm.size() : -1});
  };
  MPI_Request request = MPI_REQUEST_NULL;
  trace::ClockSample sample;
  if (comm.rank() == 0) {
    for (int peer = 1; peer < comm.size(); ++peer) {
      for (int k = 0; k < rounds; ++k) {
        char ping = 0;
        finish("MPI_Irecv (clock offset)", "receive", peer,
               MPI_Irecv(&ping, 1, MPI_CHAR, peer, tag, comm.get(), &request), request);
        const std::int64_t now = trace::now_ns();
        finish("MPI_Isend (clock offset)", "send", peer, MPI_Isend(&now, 1, MPI_INT64_T, peer, tag, comm.get(), &request),
               request);
      }
    }
    sample.local = trace::now_ns();
  } else {
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    for (int k = 0; k < rounds; ++k) {
      const char ping = 0;
      std::int64_t root = 0;
      const std::int64_t sent = trace::now_ns();
      finish("MPI_Isend (clock offset)", "send", 0, MPI_Isend(&ping, 1, MPI_CHAR, 0, tag, comm.get(), &request), request);
      finish("MPI_Irecv (clock offset)", "receive", 0, MPI_Irecv(&root, 1, MPI_INT64_T, 0, tag, comm.get(), &request),
             request);
      const std::int64_t received = trace::now_ns();
      if (received - sent < best) {
        best = received - sent;
        sample.local = sent + best / 2;
        sample.offset = root - sample.local;
      }
    }
    sample.round_trip = best;
  }
  std::int64_t root_time = trace::now_ns();
  finish("MPI_Ibcast (clock offset)", "broadcast", -1, MPI_Ibcast(&root_time, 1, MPI_INT64_T, 0, comm.get(), &request),
         request);
  sample.root_time = root_time;
  return sample;
}

}  // namespace hpf::comm

#endif  // HPF_COMM_CLOCK_OFFSET_HPP
