// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_GATHER_TEXT_HPP
#define HPF_COMM_GATHER_TEXT_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

namespace hpf::comm {

/// Every rank's `text`, in rank order, on `root` (other ranks get an empty vector). Collective.
/// Throws UsageError on every rank when the texts together exceed what MPI can count (INT_MAX).
inline std::vector<std::string> gather_text(const Communicator& comm, const std::string& text, int root = 0) {
  const unsigned long long mine = text.size();
  unsigned long long total_bytes = 0;
  check(MPI_Allreduce(&mine, &total_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm.get()), "MPI_Allreduce (gather_text)");
  if (total_bytes > static_cast<unsigned long long>(INT_MAX)) {
    throw UsageError("hpf::comm::gather_text: " + std::to_string(total_bytes) + " bytes of text exceed INT_MAX");
  }
  const int size = static_cast<int>(text.size());
  const bool at_root = comm.rank() == root;
  std::vector<int> sizes(at_root ? static_cast<std::size_t>(comm.size()) : 0);
  check(MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm.get()), "MPI_Gather (gather_text)");
  std::vector<int> displacements(sizes.size());
  int total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    displacements[r] = total;
    total += sizes[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Gatherv(text.data(), size, MPI_CHAR, all.data(), sizes.data(), displacements.data(), MPI_CHAR, root,
                    comm.get()),
        "MPI_Gatherv (gather_text)");
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    parts.push_back(all.substr(static_cast<std::size_t>(displacements[r]), static_cast<std::size_t>(sizes[r])));
  }
  return parts;
}

/// `root`'s `text` on every rank. Collective.
inline std::string broadcast_text(const Communicator& comm, std::string text, int root) {
  int length = static_cast<int>(text.size());
  check(MPI_Bcast(&length, 1, MPI_INT, root, comm.get()), "MPI_Bcast (broadcast_text)");
  text.resize(static_cast<std::size_t>(length));
  check(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm.get()), "MPI_Bcast (broadcast_text)");
  return text;
}

}  // namespace hpf::comm

#endif  // HPF_COMM_GATHER_TEXT_HPP
