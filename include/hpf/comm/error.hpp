// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_ERROR_HPP
#define HPF_COMM_ERROR_HPP

#include <hpf/comm/mpi.hpp>

#include <stdexcept>
#include <string>

namespace hpf::comm {

/// \brief A failed MPI call: which operation, on which rank, and MPI's own explanation.
class MpiError : public std::runtime_error {
 public:
  MpiError(const std::string& operation, int rank, int code)
      : std::runtime_error("hpf::comm: " + operation + " failed on rank " + std::to_string(rank) + ": " + describe(code)),
        operation_(operation), rank_(rank), code_(code) {}
  const std::string& operation() const noexcept { return operation_; }
  int rank() const noexcept { return rank_; }
  int code() const noexcept { return code_; }

 private:
  static std::string describe(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
  }
  std::string operation_;
  int rank_;
  int code_;
};

/// \brief An error every rank detects the same way (bad options, mismatched binaries, a world
/// size that does not fit the strategy). Ranks that throw it can all stop cleanly; any other
/// exception on one rank must abort the job so that its peers do not wait forever.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The calling process's rank in MPI_COMM_WORLD (-1 before MPI_Init or after MPI_Finalize).
inline int world_rank() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// Throws MpiError unless `code` is MPI_SUCCESS.
inline void check(int code, const char* operation) {
  if (code != MPI_SUCCESS) throw MpiError(operation, world_rank(), code);
}

}  // namespace hpf::comm

#endif  // HPF_COMM_ERROR_HPP
