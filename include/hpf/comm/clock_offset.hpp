// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_CLOCK_OFFSET_HPP
#define HPF_COMM_CLOCK_OFFSET_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/trace/clock.hpp>

#include <cstdint>
#include <limits>

namespace hpf::comm {

/// \brief Measures every rank's offset to rank 0 of `comm` (hpf::trace::now_ns clocks) by
/// Cristian's method: `rounds` ping-pongs, keeping the one with the shortest round trip, whose
/// midpoint is the best estimate. Rank 0 serves the ranks one after another. Collective.
inline trace::ClockSample measure_clock_offset(const Communicator& comm, int rounds = 16) {
  constexpr int tag = 0x7ace;
  trace::ClockSample sample;
  if (comm.rank() == 0) {
    for (int peer = 1; peer < comm.size(); ++peer) {
      for (int k = 0; k < rounds; ++k) {
        char ping = 0;
        check(MPI_Recv(&ping, 1, MPI_CHAR, peer, tag, comm.get(), MPI_STATUS_IGNORE), "MPI_Recv (clock offset)");
        const std::int64_t now = trace::now_ns();
        check(MPI_Send(&now, 1, MPI_INT64_T, peer, tag, comm.get()), "MPI_Send (clock offset)");
      }
    }
    sample.local = trace::now_ns();
  } else {
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    for (int k = 0; k < rounds; ++k) {
      const char ping = 0;
      std::int64_t root = 0;
      const std::int64_t sent = trace::now_ns();
      check(MPI_Send(&ping, 1, MPI_CHAR, 0, tag, comm.get()), "MPI_Send (clock offset)");
      check(MPI_Recv(&root, 1, MPI_INT64_T, 0, tag, comm.get(), MPI_STATUS_IGNORE), "MPI_Recv (clock offset)");
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
  check(MPI_Bcast(&root_time, 1, MPI_INT64_T, 0, comm.get()), "MPI_Bcast (clock offset)");
  sample.root_time = root_time;
  return sample;
}

}  // namespace hpf::comm

#endif  // HPF_COMM_CLOCK_OFFSET_HPP
