// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_RECORDER_HPP
#define HPF_TRACE_RECORDER_HPP

#include <hpf/config.hpp>
#include <hpf/trace/clock.hpp>
#include <hpf/trace/event.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace hpf::trace {

/// \brief One process's spans, in a buffer of fixed capacity reserved up front: recording never
/// allocates, and a full buffer counts what it drops instead of growing.
class Recorder {
 public:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

  explicit Recorder(std::size_t capacity) { events_.reserve(capacity); }

  /// Opens a span now; returns its handle (`none` when the buffer is full).
  std::uint32_t open(Track track, std::string_view name, const Tags& tags) noexcept {
    if (events_.size() == events_.capacity()) {
      ++dropped_;
      return none;
    }
    events_.push_back(Event{name, track, step_, now_ns(), -1, tags});
    return static_cast<std::uint32_t>(events_.size() - 1);
  }
  void close(std::uint32_t handle) noexcept {
    if (handle != none) events_[handle].end = now_ns();
  }
  /// The global step the spans opened from now on belong to.
  void set_step(std::int64_t step) noexcept { step_ = step; }

  const std::vector<Event>& events() const noexcept { return events_; }
  std::size_t dropped() const noexcept { return dropped_; }

 private:
  std::vector<Event> events_;
  std::size_t dropped_ = 0;
  std::int64_t step_ = -1;
};

namespace detail {
// Per thread: a recorder is not for several threads, so work that runs beside the thread that
// activated it (data shards side by side, hpf::run_on_thread_groups) records nothing.
inline thread_local Recorder* active_recorder = nullptr;
inline thread_local bool layer_spans = false;
}  // namespace detail

/// The recorder spans go to, or null when nothing is being traced (always null when tracing is
/// compiled out with HPF_ENABLE_TRACE=0: every span then folds away).
inline Recorder* active() noexcept {
#if HPF_ENABLE_TRACE
  return detail::active_recorder;
#else
  return nullptr;
#endif
}
/// Whether layers record a span each (TraceOptions::layers while a window is open).
inline bool layer_spans() noexcept { return active() != nullptr && detail::layer_spans; }

/// Starts (`recorder`) or stops (null) recording on the calling thread.
inline void activate(Recorder* recorder, bool layers) noexcept {
  detail::active_recorder = recorder;
  detail::layer_spans = recorder != nullptr && layers;
}

}  // namespace hpf::trace

#endif  // HPF_TRACE_RECORDER_HPP
