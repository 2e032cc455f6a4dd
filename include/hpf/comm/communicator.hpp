// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_COMMUNICATOR_HPP
#define HPF_COMM_COMMUNICATOR_HPP

#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>

#include <memory>

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

  /// Processes with the same colour form a new communicator, ordered by key. Collective.
  Communicator split(int color, int key) const {
    MPI_Comm part = MPI_COMM_NULL;
    check(MPI_Comm_split(get(), color, key, &part), "MPI_Comm_split");
    Communicator result(adopt_tag{});
    result.adopt(part);
    return result;
  }

  void barrier() const { check(MPI_Barrier(get()), "MPI_Barrier"); }

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
  }

  std::shared_ptr<MPI_Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace hpf::comm

#endif  // HPF_COMM_COMMUNICATOR_HPP
