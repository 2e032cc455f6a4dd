// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_EVENT_HPP
#define HPF_TRACE_EVENT_HPP

#include <array>
#include <cstdint>
#include <string_view>

namespace hpf::trace {

/// The row of a rank's timeline a span belongs to. `wait` holds the time the rank's thread was
/// blocked (in a receive, a collective or Request::wait), so idle time is recorded, not inferred;
/// the communication rows hold each operation from its post to its completion; `group` holds
/// the collectives and halo exchanges of layers split within a group (LayerSplit).
enum class Track : std::uint8_t { compute, wait, send, receive, collective, group };

inline constexpr std::array<std::string_view, 6> track_names{"compute", "wait", "send", "receive", "collective", "group"};

/// What a span is about; -1 where it does not apply. The step is filled in by the recorder.
struct Tags {
  std::int32_t stage = -1;
  std::int32_t micro_batch = -1;
  std::int32_t bucket = -1;
  std::int32_t layer = -1;
  std::int64_t bytes = -1;
};

/// One span of one rank: [begin, end) in this process's clock; end < 0 while it is open.
struct Event {
  std::string_view name;
  Track track = Track::compute;
  std::int64_t step = -1;
  std::int64_t begin = 0;
  std::int64_t end = -1;
  Tags tags;
};

}  // namespace hpf::trace

#endif  // HPF_TRACE_EVENT_HPP
