// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_WATCHDOG_HPP
#define HPF_COMM_WATCHDOG_HPP

#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace hpf::comm {

/// The wait limit when neither a WaitLimit scope nor HPF_WAIT_TIMEOUT sets one: 10 minutes,
/// longer than any single communication of a healthy run, short enough that a job whose peer
/// died or hangs does not sit on its nodes for days.
inline constexpr double default_wait_limit = 600;

/// The exit code of a job the watchdog ends (MPI_Abort's error code), distinct from run_main's
/// 1 (an exception on one rank) and 2 (a usage error on every rank).
inline constexpr int wait_timeout_exit_code = 3;

/// \brief What a rank waits for, in words once it waits too long: the operation, its peer or
/// group, and the pipeline stage, micro-batch or gradient bucket it serves (the trace's tags).
/// Plain data with static strings, so posting a message builds no string; describe() formats
/// it only when a wait times out. -1 (or null) marks what does not apply.
struct WaitFor {
  /// The MPI call ("MPI_Irecv"), also the operation of an MpiError.
  const char* operation = "";
  /// The kind of wait: "receive", "send", "allreduce", "allgather", "broadcast", "barrier"...
  const char* kind = nullptr;
  /// What travels: "activation", "gradient", "the step's loss", "buffers", "gradient"...
  const char* what = nullptr;
  /// The point-to-point peer's rank in MPI_COMM_WORLD.
  int peer = -1;
  int tag = -1;
  /// Ranks in the collective's communicator, and what they are to each other ("replicas").
  int group = -1;
  const char* members = nullptr;
  /// Pipeline stage of the waiting rank, micro-batch, gradient bucket.
  int stage = -1;
  int micro_batch = -1;
  int bucket = -1;
  /// Bytes this rank sends or receives.
  std::int64_t bytes = -1;
};

namespace detail {
inline std::string readable_bytes(std::int64_t bytes) {
  char text[32];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else if (bytes < 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  }
  return text;
}
}  // namespace detail

/// \brief `w` in words, e.g. "receive of activation for stage 1, micro-batch 3 from rank 0
/// (tag 6, 4.0 KiB)" or "allreduce of gradient bucket 4 (1.2 MiB) of stage 1 among 2 replicas".
inline std::string describe(const WaitFor& w) {
  const bool point_to_point = w.peer >= 0;
  const bool sending = w.kind && std::string(w.kind) == "send";
  std::string text = w.kind ? w.kind : (w.operation && *w.operation ? w.operation : "an MPI operation");
  if (w.what) text += std::string(" of ") + w.what;
  if (w.bucket >= 0) {
    text += " bucket " + std::to_string(w.bucket);
    if (w.bytes >= 0) text += " (" + detail::readable_bytes(w.bytes) + ")";
  }
  if (w.stage >= 0) {
    text += (!point_to_point ? " of stage " : sending ? " from stage " : " for stage ") + std::to_string(w.stage);
  }
  if (w.micro_batch >= 0) text += (w.stage >= 0 ? ", micro-batch " : " for micro-batch ") + std::to_string(w.micro_batch);
  if (point_to_point) {
    text += (sending ? " to rank " : " from rank ") + std::to_string(w.peer);
    std::string details;
    if (w.tag >= 0) details = "tag " + std::to_string(w.tag);
    if (w.bytes >= 0) details += (details.empty() ? "" : ", ") + detail::readable_bytes(w.bytes);
    if (!details.empty()) text += " (" + details + ")";
  } else {
    if (w.group >= 0) text += " among " + std::to_string(w.group) + " " + (w.members ? w.members : "ranks");
    if (w.bytes >= 0 && w.bucket < 0) text += " (" + detail::readable_bytes(w.bytes) + ")";
  }
  return text;
}

namespace detail {
inline constexpr double unset_wait_limit = -1;
/// The limit a WaitLimit scope set (unset_wait_limit outside any). Atomic only for tidiness:
/// under MPI_THREAD_FUNNELED one thread calls MPI.
inline std::atomic<double> scoped_wait_limit{unset_wait_limit};

/// HPF_WAIT_TIMEOUT in seconds, read once; default_wait_limit when absent or not a number >= 0
/// (then said once on stderr).
inline double environment_wait_limit() {
  static const double limit = [] {
    const char* text = std::getenv("HPF_WAIT_TIMEOUT");
    if (!text || !*text) return default_wait_limit;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds >= 0) || !std::isfinite(seconds)) {
      std::fprintf(stderr, "hpf: HPF_WAIT_TIMEOUT='%s' is not a number of seconds >= 0; waiting at most %g s\n", text,
                   default_wait_limit);
      return default_wait_limit;
    }
    return seconds;
  }();
  return limit;
}
}  // namespace detail

/// \brief The longest a rank waits for one communication, in seconds (0: forever): the
/// innermost WaitLimit scope's, else HPF_WAIT_TIMEOUT's, else default_wait_limit (600 s).
inline double wait_limit() {
  const double scoped = detail::scoped_wait_limit.load(std::memory_order_relaxed);
  return scoped >= 0 ? scoped : detail::environment_wait_limit();
}

/// \brief Sets the process's wait limit (seconds, 0: forever) for the lifetime of the scope,
/// restoring the previous one after it; wins over HPF_WAIT_TIMEOUT. Every rank should set the
/// same limit. `WaitLimit scope(60);` around hpf::fit bounds each of its waits to a minute.
class WaitLimit {
 public:
  explicit WaitLimit(double seconds) : previous_(detail::scoped_wait_limit.exchange(checked(seconds))) {}
  WaitLimit(const WaitLimit&) = delete;
  WaitLimit& operator=(const WaitLimit&) = delete;
  ~WaitLimit() { detail::scoped_wait_limit.store(previous_); }

 private:
  static double checked(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds)) {
      throw UsageError("hpf::comm::WaitLimit: the wait limit must be a finite number of seconds >= 0 (0: forever)");
    }
    return seconds;
  }
  double previous_;
};

/// \brief Ends the job because this rank waited `seconds` for `w`: one line on stderr,
/// "hpf: rank R timed out after T s waiting for <describe(w)> (aborting the job)", then, a
/// quarter of a second later (for the launcher to forward it), MPI_Abort(MPI_COMM_WORLD,
/// wait_timeout_exit_code).
[[noreturn]] inline void abort_wait(const WaitFor& w, double seconds) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", seconds);
  // One write: ranks share the terminal, and piecewise output would interleave.
  const std::string line = "hpf: rank " + std::to_string(world_rank()) + " timed out after " + limit +
                           " s waiting for " + describe(w) + " (aborting the job)\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  // The launcher forwards the line from a pipe; MPICH's Hydra loses what it has not forwarded yet
  // when the abort reaches it first (seen in about 1 run of 3 without this pause).
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  MPI_Abort(MPI_COMM_WORLD, wait_timeout_exit_code);
  std::_Exit(wait_timeout_exit_code);  // MPI_Abort does not return; this is for the compiler
}

/// The loop of watched_wait: calls `complete()` (one MPI test, true when done) until it is true, as
/// watched_wait describes, or ends the job at wait_limit() saying what `w` waited for.
template <class Complete>
void watched_poll(const Complete& complete, const WaitFor& w) {
  using clock = std::chrono::steady_clock;
  constexpr auto spin = std::chrono::microseconds(1000);
  constexpr auto longest_sleep = std::chrono::microseconds(1000);
  if (complete()) return;
  const double limit = wait_limit();
  const auto start = clock::now();
  const auto deadline = limit > 0 && limit < 1e9  // beyond 30 years: forever (and no overflow)
                            ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(limit))
                            : clock::time_point::max();
  for (;;) {
    if (complete()) return;
    const auto now = clock::now();
    if (now >= deadline) abort_wait(w, limit);
    const auto waited = now - start;
    if (waited <= spin) {
      std::this_thread::yield();
    } else {
      const auto pause = std::min<clock::duration>(waited / 8, longest_sleep);
      std::this_thread::sleep_for(std::min<clock::duration>(pause, deadline - now));
    }
  }
}

/// \brief Waits for `request` like MPI_Wait, but at most wait_limit() seconds: then the job ends
/// (abort_wait). Polls MPI_Test (MPI progresses only inside MPI calls): for the first millisecond
/// continuously, yielding the core between tests to any other process that wants it (as Open
/// MPI's own wait does when ranks share cores), then sleeping between tests for an eighth of the
/// time waited so far, at most 1 ms. A long wait (a stage waiting for its neighbour's compute)
/// thus leaves its core to others and still sees completion within 12.5% of its wait or 1 ms;
/// operations that take less than 1 ms (messages, buckets up to a few hundred KiB within a node)
/// are waited for as tightly as by MPI_Wait. Throws MpiError if MPI_Test fails.
inline void watched_wait(MPI_Request& request, const WaitFor& w, MPI_Status* status = MPI_STATUS_IGNORE) {
  watched_poll([&] {
    int flag = 0;
    check(MPI_Test(&request, &flag, status), w.operation);
    return flag != 0;
  }, w);
}

/// watched_wait for every one of `requests` (MPI_Testall): the pieces of one message.
inline void watched_wait_all(std::vector<MPI_Request>& requests, const WaitFor& w) {
  watched_poll([&] {
    int flag = 0;
    check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE), w.operation);
    return flag != 0;
  }, w);
}

}  // namespace hpf::comm

#endif  // HPF_COMM_WATCHDOG_HPP
