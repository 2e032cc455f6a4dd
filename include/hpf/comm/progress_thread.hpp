// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_PROGRESS_THREAD_HPP
#define HPF_COMM_PROGRESS_THREAD_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/mpi.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace hpf::comm {

/// The thread level the MPI library granted (MPI_Query_thread), in words.
inline std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

/// \brief A thread that drives MPI's progress engine while the thread that trains computes.
///
/// MPI moves a non-blocking operation only inside MPI calls. Between layers the training thread
/// tests its operations in flight, but inside a long layer nothing moves, and over TCP a large
/// message waits for the next test. While active() this thread calls MPI_Iprobe every
/// `interval` (and at least once per activate(), however late the scheduler wakes it) on a
/// private duplicate of the ranks' communicator that nothing is ever sent on:
/// the probe finds nothing, and the call advances every operation in flight (the library's
/// progress engine is process-wide). Not a duplicate of MPI_COMM_SELF: MPICH answers a probe
/// there without entering its progress engine, and the message never moved (tested).
/// It touches no hpf state: completions are still seen, summed and followed up by the training
/// thread. Needs MPI_THREAD_MULTIPLE, because the training thread calls MPI at the same time;
/// where the library granted less, make() says why and returns nothing.
class ProgressThread {
 public:
  /// A progress thread probing every `interval`, or nothing (with the reason in `why_not`) when
  /// the MPI library did not grant MPI_THREAD_MULTIPLE. Collective over `ranks` (it duplicates it).
  static std::optional<ProgressThread> make(const Communicator& ranks, std::chrono::microseconds interval,
                                            std::string& why_not) {
    int level = MPI_THREAD_SINGLE;
    check(MPI_Query_thread(&level), "MPI_Query_thread");
    if (level != MPI_THREAD_MULTIPLE) {
      why_not = "a progress thread needs MPI_THREAD_MULTIPLE and the MPI library granted " + thread_level_name(level) +
                " (HPF_MPI_THREADS=multiple asks for it)";
      return std::nullopt;
    }
    return std::optional<ProgressThread>(std::in_place, ranks, interval);
  }

  /// Needs MPI_THREAD_MULTIPLE (make() checks). Collective over `ranks`.
  ProgressThread(const Communicator& ranks, std::chrono::microseconds interval) : state_(std::make_unique<State>()) {
    state_->interval = interval;
    state_->probes_on = Communicator(ranks.get());
    state_->thread = std::thread([s = state_.get()] { s->run(); });
  }
  ProgressThread(ProgressThread&&) noexcept = default;
  ProgressThread& operator=(ProgressThread&&) = delete;  // would drop a running thread unjoined
  ~ProgressThread() {
    if (!state_) return;
    {
      const std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_one();
    state_->thread.join();
  }

  /// Probe from now on (operations are about to be in flight).
  void activate() {
    {
      const std::lock_guard lock(state_->mutex);
      state_->active = true;
      ++state_->activations;
    }
    state_->wake.notify_one();
  }
  /// Sleep until activate(), once the probe owed to the last activate() is made: nothing left in
  /// flight for it to move. On an oversubscribed core the thread may first run after this, and
  /// that one late probe is cheap; without it a short window could pass with no probe at all.
  void deactivate() {
    const std::lock_guard lock(state_->mutex);
    state_->active = false;
  }

  /// Waits (at most `bound`) until the probe owed to every activate() so far has been made, so a
  /// count read next includes them: on an oversubscribed core the thread may first run well after
  /// a short window closed. Returns whether they were all made.
  bool settle(std::chrono::milliseconds bound) const {
    std::unique_lock lock(state_->mutex);
    return state_->settled.wait_for(lock, bound, [s = state_.get()] { return s->probed == s->activations || s->stopping; });
  }

  /// Probes made so far, and the time spent inside them.
  std::uint64_t probes() const { return state_->probes.load(std::memory_order_relaxed); }
  double probe_seconds() const { return static_cast<double>(state_->probe_ns.load(std::memory_order_relaxed)) * 1e-9; }
  std::chrono::microseconds interval() const { return state_->interval; }

 private:
  struct State {
    std::chrono::microseconds interval{};
    std::optional<Communicator> probes_on;
    std::mutex mutex;
    std::condition_variable wake;
    std::condition_variable settled;  // a probe owed to activations was made
    bool active = false;
    bool stopping = false;
    std::uint64_t activations = 0;  // activate() calls; each owes at least one probe
    std::uint64_t probed = 0;       // activations whose probe has been made
    std::atomic<std::uint64_t> probes{0};
    std::atomic<std::uint64_t> probe_ns{0};
    std::thread thread;

    void run() {
      std::unique_lock lock(mutex);
      std::uint64_t served = 0;
      while (true) {
        wake.wait(lock, [&] { return active || activations != served || stopping; });
        if (stopping) return;
        served = activations;
        lock.unlock();
        const auto begin = std::chrono::steady_clock::now();
        int found = 0;  // its error code too is ignored: a thread cannot throw, and the next MPI call
                        // of the training thread reports what went wrong
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, probes_on->get(), &found, MPI_STATUS_IGNORE);
        const auto took = std::chrono::steady_clock::now() - begin;
        probes.fetch_add(1, std::memory_order_relaxed);
        probe_ns.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()),
                           std::memory_order_relaxed);
        lock.lock();
        probed = served;
        settled.notify_all();
        wake.wait_for(lock, interval, [this] { return stopping; });
        if (stopping) return;
      }
    }
  };
  std::unique_ptr<State> state_;  // stable for the thread while the owner moves
};

}  // namespace hpf::comm

#endif  // HPF_COMM_PROGRESS_THREAD_HPP
