// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_ENVIRONMENT_HPP
#define HPF_COMM_ENVIRONMENT_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>
#include <hpf/system/runtime.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace hpf::comm {

/// \brief MPI and Kokkos for the lifetime of a scope: MPI first (threads funneled: only the
/// thread that called MPI_Init calls MPI; Kokkos threads never do; or multiple, where
/// RuntimeOptions::mpi_thread_multiple asks for a progress thread), then Kokkos; torn down in
/// reverse. Either may already be initialised by the application, which then keeps owning it.
/// The process-wide settings of `runtime` are applied around them, once: before MPI starts,
/// OpenBLAS gets the widest kernels the CPU supports; after Kokkos starts, OpenBLAS and OpenMP
/// (oneDNN) get their threads (see hpf/system/runtime.hpp).
class Environment {
 public:
  Environment(int& argc, char**& argv,
              const system::RuntimeOptions& runtime = system::RuntimeOptions::from_environment()) {
    system::configure_before_start(runtime, argv);  // may re-execute the program: before anything else
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      const int wanted = runtime.mpi_thread_multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
      check(MPI_Init_thread(&argc, &argv, wanted, &provided), "MPI_Init_thread");
      owns_mpi_ = true;
    }
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize(argc, argv);
      owns_kokkos_ = true;
    }
    system::configure_after_start(runtime, Kokkos::DefaultHostExecutionSpace().concurrency());
    world_.emplace(MPI_COMM_WORLD);
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment() {
    world_.reset();  // MPI_Comm_free before MPI_Finalize
    if (owns_kokkos_) Kokkos::finalize();
    if (owns_mpi_) MPI_Finalize();
  }

  /// hpf's duplicate of MPI_COMM_WORLD.
  const Communicator& world() const { return *world_; }

 private:
  std::optional<Communicator> world_;
  bool owns_mpi_ = false;
  bool owns_kokkos_ = false;
};

/// \brief A main() that cannot hang: runs `body(world)` in an Environment and turns an
/// exception into a message naming the rank and a non-zero exit. A UsageError is raised alike on
/// every rank, so all of them finish cleanly (exit code 2); any other error may be this rank's
/// alone, so it aborts the job (exit code 1) rather than leave peers waiting in a receive.
/// `adjust(options)` may change the process-wide settings read from the environment (a program
/// whose arguments ask for a progress thread sets RuntimeOptions::mpi_thread_multiple). Settings
/// from the environment that cannot be read (HPF_MPI_THREADS=...) end it before MPI starts, with
/// the message and exit code 2 on every rank.
template <class Adjust, class Body>
int run_main(int argc, char** argv, Adjust&& adjust, Body&& body) {
  std::optional<system::RuntimeOptions> runtime;
  try {
    runtime = system::RuntimeOptions::from_environment();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  adjust(*runtime);
  Environment environment(argc, argv, *runtime);
  const int rank = environment.world().rank();
  // One write per message: ranks share the terminal, and piecewise output would interleave.
  auto report = [rank](const std::string& what) {
    const std::string line = "hpf: error on rank " + std::to_string(rank) + ": " + what + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
  try {
    body(environment.world());
    return 0;
  } catch (const UsageError& e) {
    report(e.what());
    return 2;
  } catch (const std::exception& e) {
    report(std::string(e.what()) + " (aborting all ranks)");
  } catch (...) {
    report("unknown exception (aborting all ranks)");
  }
  // A moment for the launcher to forward the line: MPICH's Hydra was seen to lose it otherwise.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

/// run_main with the settings the environment gives.
template <class Body>
int run_main(int argc, char** argv, Body&& body) {
  return run_main(argc, argv, [](system::RuntimeOptions&) {}, std::forward<Body>(body));
}

}  // namespace hpf::comm

#endif  // HPF_COMM_ENVIRONMENT_HPP
