// SPDX-License-Identifier: MIT
// hpf::system::stop_blas_threads: OpenBLAS' pool of pthreads, spinning after a call, spends no more
// CPU time once stopped, and BLAS computes as before. With another BLAS (or OpenBLAS' OpenMP
// build) there is no pool to stop, and it says so.
#include <hpf/system/blas.hpp>

#include <doctest/doctest.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
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
