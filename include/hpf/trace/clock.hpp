// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_CLOCK_HPP
#define HPF_TRACE_CLOCK_HPP

#include <chrono>
#include <cstdint>

namespace hpf::trace {

/// Nanoseconds of the monotonic clock every span is timed with (ranks' clocks are aligned to
/// rank 0's when a trace is written, see hpf::comm::measure_clock_offset).
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// This process's clock against rank 0's, taken at local time `local`: rank 0's clock reads
/// `local + offset` then, to within half of `round_trip`. `root_time` is rank 0's clock at the
/// end of the measurement, the same on every rank.
struct ClockSample {
  std::int64_t local = 0;
  std::int64_t offset = 0;
  std::int64_t round_trip = 0;
  std::int64_t root_time = 0;
};

/// The sample of a process that is its own reference (one process, or rank 0).
inline ClockSample own_clock() noexcept {
  const std::int64_t now = now_ns();
  return {now, 0, 0, now};
}

}  // namespace hpf::trace

#endif  // HPF_TRACE_CLOCK_HPP
