// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_REEXECUTE_HPP
#define HPF_SYSTEM_REEXECUTE_HPP

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <cstddef>
#include <vector>

namespace hpf::system {

/// \brief Sets this thread's CPU affinity to every CPU of the OpenMP runtime's places; false (and
/// nothing changed) without an OpenMP runtime in the process or without places.
///
/// With OMP_PROC_BIND set, the OpenMP runtime binds the initial thread to the first place as it
/// loads, so by main() that thread runs on one core of the several the process was given. The
/// places are what the runtime made of the affinity the process started with: their union gives
/// it back. (dlsym: no link-time dependency on an OpenMP runtime.)
inline bool widen_affinity_to_openmp_places() {
  using count_fn = int (*)();
  using procs_fn = int (*)(int);
  using ids_fn = void (*)(int, int*);
  auto num_places = reinterpret_cast<count_fn>(dlsym(RTLD_DEFAULT, "omp_get_num_places"));
  auto place_num_procs = reinterpret_cast<procs_fn>(dlsym(RTLD_DEFAULT, "omp_get_place_num_procs"));
  auto place_proc_ids = reinterpret_cast<ids_fn>(dlsym(RTLD_DEFAULT, "omp_get_place_proc_ids"));
  if (!num_places || !place_num_procs || !place_proc_ids) return false;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  bool any = false;
  for (int place = 0; place < num_places(); ++place) {
    std::vector<int> ids(static_cast<std::size_t>(place_num_procs(place)));
    if (ids.empty()) continue;
    place_proc_ids(place, ids.data());
    for (const int id : ids) {
      if (id < 0 || id >= CPU_SETSIZE) continue;
      CPU_SET(id, &cpus);
      any = true;
    }
  }
  return any && sched_setaffinity(0, sizeof cpus, &cpus) == 0;
}

/// \brief Runs this program again from the start, with the same arguments and the environment as
/// it is now; returns only if that failed (no /proc?), with this thread's affinity as it was.
///
/// exec keeps the calling thread's CPU affinity. Under OMP_PROC_BIND that is the one place the
/// OpenMP runtime bound it to, and the new program's runtime would find a single place and put
/// every thread on it (1 rank x 2 threads bound close to cores: both threads on one core, as slow
/// as one thread). So the affinity is widened to all places first.
inline void reexecute(char** argv) {
  cpu_set_t before;
  const bool saved = sched_getaffinity(0, sizeof before, &before) == 0;
  widen_affinity_to_openmp_places();
  execv("/proc/self/exe", argv);
  if (saved) sched_setaffinity(0, sizeof before, &before);
}

}  // namespace hpf::system

#endif  // HPF_SYSTEM_REEXECUTE_HPP
