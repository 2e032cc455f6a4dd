// SPDX-License-Identifier: MIT
// hpf::system::stop_blas_threads: OpenBLAS' pool of pthreads, spinning after a call, spends no more
// CPU time once stopped, and BLAS computes as before. With another BLAS (or OpenBLAS' OpenMP
// build) there is no pool to stop, and it says so. yield_blas_pool stops it before OpenMP's threads
// run, and BlasOnOneThread keeps small products off it.
#include <hpf/system/blas.hpp>

#include <doctest/doctest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern "C" void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
                       const double*, const int*, const double*, double*, const int*);

namespace {
/// CPU seconds (user and system) spent so far by every thread of this process but the caller.
double other_threads_cpu_seconds() {
  double seconds = 0;
  DIR* tasks = opendir("/proc/self/task");
  REQUIRE(tasks != nullptr);
  const std::string self = std::to_string(gettid());
  while (const dirent* task = readdir(tasks)) {
    const std::string id = task->d_name;
    if (id == "." || id == ".." || id == self) continue;
    std::FILE* stat = std::fopen(("/proc/self/task/" + id + "/stat").c_str(), "r");
    if (!stat) continue;  // the thread has just ended
    char text[1024] = {};
    const std::size_t n = std::fread(text, 1, sizeof text - 1, stat);
    std::fclose(stat);
    const std::string line(text, n);
    long user = 0, system = 0;  // fields 14 and 15, after the command name in parentheses
    REQUIRE(std::sscanf(line.c_str() + line.rfind(')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &user,
                        &system) == 2);
    seconds += static_cast<double>(user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  closedir(tasks);
  return seconds;
}

/// C = A B for A and B of ones, n x n: every element of C is n. Large enough for OpenBLAS' pool.
bool gemm_of_ones_is_right(int n) {
  const std::vector<double> ones(static_cast<std::size_t>(n) * n, 1.0);
  std::vector<double> c(ones.size(), -1.0);
  const double one = 1, zero = 0;
  dgemm_("N", "N", &n, &n, &n, &one, ones.data(), &n, ones.data(), &n, &zero, c.data(), &n);
  for (const double v : c) {
    if (v != n) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("stop_blas_threads: OpenBLAS' pool stops spinning, and BLAS computes as before") {
  const bool pool = hpf::system::blas_threading() == "pthreads";
  INFO(hpf::system::blas_description());
  CHECK(gemm_of_ones_is_right(512));  // its pool (if any) has just worked and now spins, idle
  CHECK(hpf::system::stop_blas_threads() == pool);
  // A tenth of a second, which an idle thread of the pool would spend spinning (a few clock ticks).
  const double before = other_threads_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) {
  }
  CHECK(other_threads_cpu_seconds() - before <= 0.011);  // at most the tick under way when it stopped
  CHECK(gemm_of_ones_is_right(512));                       // the pool starts again where it is wanted
  CHECK(hpf::system::stop_blas_threads() == pool);        // and stops again
}

namespace {
/// Threads of this process now.
int process_threads() {
  int count = 0;
  DIR* tasks = opendir("/proc/self/task");
  REQUIRE(tasks != nullptr);
  while (const dirent* task = readdir(tasks)) count += task->d_name[0] != '.';
  closedir(tasks);
  return count;
}
/// The OpenMP runtime's thread count for the next parallel region, set. In a training process
/// oneDNN loads the runtime; here it is loaded for the test (hpf finds it with dlsym). False
/// where there is none.
bool set_openmp_threads(int threads) {
  using set_fn = void (*)(int);
  if (!dlsym(RTLD_DEFAULT, "omp_set_num_threads")) dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
  auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set) set(threads);
  return set != nullptr;
}
using openblas_threads_fn = int (*)();
const auto openblas_threads = reinterpret_cast<openblas_threads_fn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));

/// yield_blas_pool's rules where OpenBLAS runs a pool of pthreads (counted by the process's threads).
void yield_with_a_pool() {
  const int pool_threads = openblas_threads() - 1;
  hpf::system::note_blas_call();
  REQUIRE(gemm_of_ones_is_right(512));  // the pool runs
  const int with_pool = process_threads();
  hpf::system::yield_blas_pool();  // OpenMP on one thread: OpenBLAS keeps its pool
  CHECK(process_threads() == with_pool);
  set_openmp_threads(2);
  hpf::system::yield_blas_pool();  // its threads are joined
  CHECK(process_threads() == with_pool - pool_threads);
  CHECK(gemm_of_ones_is_right(512));  // and start again at the next threaded call
  CHECK(process_threads() == with_pool);
  hpf::system::yield_blas_pool();  // that call was not noted (hpf's GEMMs note theirs): the pool stays
  CHECK(process_threads() == with_pool);
  hpf::system::note_blas_call();
  hpf::system::yield_blas_pool();
  CHECK(process_threads() == with_pool - pool_threads);
  set_openmp_threads(1);
}

/// BlasOnOneThread where OpenBLAS' pthreads build runs several threads.
void guards_with_a_pool() {
  const int threads = openblas_threads();
  {
    const hpf::system::BlasOnOneThread outer;
    CHECK(openblas_threads() == 1);
    {
      const hpf::system::BlasOnOneThread inner;
      CHECK(openblas_threads() == 1);
      CHECK(gemm_of_ones_is_right(512));
    }
    CHECK(openblas_threads() == 1);  // the outer guard still lives
  }
  CHECK(openblas_threads() == threads);
  // Guards on two threads, alive at overlapping times: each sees one thread, the count comes back.
  std::atomic<int> wrong{0};
  const auto guarded = [&] {
    for (int i = 0; i < 2000; ++i) {
      const hpf::system::BlasOnOneThread guard;
      wrong += openblas_threads() != 1;
    }
  };
  std::thread other(guarded);
  guarded();
  other.join();
  CHECK(wrong == 0);
  CHECK(openblas_threads() == threads);
}
}  // namespace

TEST_CASE("yield_blas_pool: OpenBLAS' pool stops after a BLAS call where OpenMP would run several threads") {
  INFO(hpf::system::blas_description());
  if (hpf::system::blas_threading() != "pthreads" || !openblas_threads || openblas_threads() < 2 ||
      !set_openmp_threads(1)) {
    MESSAGE("no OpenBLAS pool of pthreads next to an OpenMP runtime here: yielding stops nothing");
    REQUIRE(gemm_of_ones_is_right(512));
    const int threads = process_threads();
    hpf::system::note_blas_call();
    hpf::system::yield_blas_pool();
    CHECK(process_threads() == threads);
    CHECK(gemm_of_ones_is_right(512));
  } else {
    yield_with_a_pool();
  }
}

TEST_CASE("BlasOnOneThread: OpenBLAS on one thread inside, the count restored once the last guard ends") {
  if (hpf::system::blas_threading() != "pthreads" || !openblas_threads || openblas_threads() < 2) {
    MESSAGE("not OpenBLAS' pthreads build with several threads: the guard leaves the BLAS alone");
    const int threads = hpf::system::blas_threads();
    {
      const hpf::system::BlasOnOneThread guard;
      CHECK(hpf::system::blas_threads() == threads);
      CHECK(gemm_of_ones_is_right(64));
    }
    CHECK(hpf::system::blas_threads() == threads);
  } else {
    guards_with_a_pool();
  }
}
