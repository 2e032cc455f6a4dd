// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_GATHER_TEXT_HPP
#define HPF_COMM_GATHER_TEXT_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/comm/watchdog.hpp>

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

namespace hpf::comm {

/// Every rank's `text`, in rank order, on `root` (other ranks get an empty vector). Collective.
/// Throws UsageError on every rank when the texts together exceed what MPI can count (INT_MAX).
inline std::vector<std::string> gather_text(const Communicator& comm, const std::string& text, int root = 0) {
  // Each collective non-blocking plus a watched wait: at most wait_limit() (hpf/comm/watchdog.hpp).
  const WaitFor w{.kind = "gather", .what = "text", .group = comm.size()};
  auto run = [&](const char* operation, int code, MPI_Request& request) {
    check(code, operation);
    WaitFor named = w;
    named.operation = operation;
    watched_wait(request, named);
  };
  MPI_Request request = MPI_REQUEST_NULL;
  const unsigned long long mine = text.size();
  unsigned long long total_bytes = 0;
  run("MPI_Iallreduce (gather_text)",
      MPI_Iallreduce(&mine, &total_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm.get(), &request), request);
  if (total_bytes > static_cast<unsigned long long>(INT_MAX)) {
    throw UsageError("hpf::comm::gather_text: " + std::to_string(total_bytes) + " bytes of text exceed INT_MAX");
  }
  const int size = static_cast<int>(text.size());
  const bool at_root = comm.rank() == root;
  std::vector<int> sizes(at_root ? static_cast<std::size_t>(comm.size()) : 0);
  run("MPI_Igather (gather_text)", MPI_Igather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm.get(), &request),
      request);
  std::vector<int> displacements(sizes.size());
  int total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    displacements[r] = total;
    total += sizes[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  run("MPI_Igatherv (gather_text)",
      MPI_Igatherv(text.data(), size, MPI_CHAR, all.data(), sizes.data(), displacements.data(), MPI_CHAR, root,
                   comm.get(), &request),
      request);
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    parts.push_back(all.substr(static_cast<std::size_t>(displacements[r]), static_cast<std::size_t>(sizes[r])));
  }
  return parts;
}

/// `root`'s `text` on every rank. Collective; each wait lasts at most wait_limit().
inline std::string broadcast_text(const Communicator& comm, std::string text, int root) {
  const WaitFor w{.operation = "MPI_Ibcast (broadcast_text)", .kind = "broadcast", .what = "text", .group = comm.size()};
  MPI_Request request = MPI_REQUEST_NULL;
  int length = static_cast<int>(text.size());
  check(MPI_Ibcast(&length, 1, MPI_INT, root, comm.get(), &request), w.operation);
  watched_wait(request, w);
  text.resize(static_cast<std::size_t>(length));
  check(MPI_Ibcast(text.data(), length, MPI_CHAR, root, comm.get(), &request), w.operation);
  watched_wait(request, w);
  return text;
}

}  // namespace hpf::comm

#endif  // HPF_COMM_GATHER_TEXT_HPP
