// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_THREAD_GROUPS_HPP
#define HPF_PARALLEL_THREAD_GROUPS_HPP

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <type_traits>
#include <vector>

// Kokkos OpenMP splits its threads into groups with partition_master up to 4.2 (deprecated from
// 3.6 on, where only KOKKOS_ENABLE_DEPRECATED_CODE_3 keeps it); 4.x's partition_space is not used
// yet, so there the groups' work runs one group after another.
#if defined(KOKKOS_ENABLE_OPENMP) && \
    (KOKKOS_VERSION < 30600 || (KOKKOS_VERSION < 40300 && defined(KOKKOS_ENABLE_DEPRECATED_CODE_3)))
#define HPF_THREAD_GROUPS 1
#include <omp.h>
#else
#define HPF_THREAD_GROUPS 0
#endif

namespace hpf {

/// \brief How many groups' work run_on_thread_groups can run side by side on Space now: one per
/// thread of Kokkos OpenMP (3.x), else 1 (the work runs on the calling thread's whole space).
/// Also 1 while a Kokkos tool is loaded: its callbacks expect kernels from one thread.
template <class Space>
std::size_t thread_groups_available() {
#if HPF_THREAD_GROUPS
  if constexpr (std::is_same_v<Space, Kokkos::OpenMP>) {
    if (Kokkos::Profiling::profileLibraryLoaded()) return 1;
    return static_cast<std::size_t>(std::max(Kokkos::OpenMP::concurrency(), 1));
  }
#endif
  return 1;
}

/// \brief Runs work(g) for every g in [0, groups): side by side, each on one of Space's threads,
/// when thread_groups_available<Space>() allows that many; one after another on the calling
/// thread otherwise. Side by side, everything a group's work runs stays on its thread: Kokkos
/// kernels (each group gets a one-thread instance of its own), oneDNN primitives made and run
/// there, and BLAS calls (both see a nested parallel region). Group 0 runs on the calling thread.
/// An exception thrown by a group's work is rethrown here after every group finished (the first
/// by group).
///
/// What it costs: every parallel region a group's work opens is nested, and a nested one-thread
/// team costs libgomp two futex wake-ups where a process of its own pays one at top level (2.5
/// against 1.2 us a region on the 2-vCPU VMs of benchmarks/RESULTS.md). oneDNN 2.6's Winograd
/// kernels open three regions per call, about 2,000 per step for a ResNet-56 shard of 32 images,
/// and Kokkos about 215: some 3 ms of a 166 ms step, about what 2 shards side by side lose there
/// against 2 single-thread ranks.
template <class Space, class Work>
void run_on_thread_groups(std::size_t groups, const Work& work) {
  std::vector<std::exception_ptr> failed(groups);
  const auto guarded = [&](std::size_t g) {
    try {
      work(g);
    } catch (...) {
      failed[g] = std::current_exception();
    }
  };
  bool side_by_side = false;
#if HPF_THREAD_GROUPS
  if constexpr (std::is_same_v<Space, Kokkos::OpenMP>) {
    if (groups > 1 && groups <= thread_groups_available<Space>()) {
      side_by_side = true;
      const int levels = omp_get_max_active_levels();
      omp_set_max_active_levels(std::max(levels, 2));  // each group's kernels open a nested region
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      Kokkos::OpenMP::partition_master(
          [&](int id, int count) {
            for (std::size_t g = static_cast<std::size_t>(id); g < groups; g += static_cast<std::size_t>(count)) guarded(g);
          },
          static_cast<int>(groups), /*partition_size=*/1);
#pragma GCC diagnostic pop
      omp_set_max_active_levels(levels);
    }
  }
#endif
  if (!side_by_side) {
    for (std::size_t g = 0; g < groups; ++g) guarded(g);
  }
  for (const auto& error : failed)
    if (error) std::rethrow_exception(error);
}

}  // namespace hpf

#endif  // HPF_PARALLEL_THREAD_GROUPS_HPP
