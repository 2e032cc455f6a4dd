// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_CHROME_TRACE_HPP
#define HPF_TRACE_CHROME_TRACE_HPP

#include <hpf/trace/event.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hpf::trace {

/// \brief Maps a rank's clock to the trace's: rank 0's clock, offset measured at the start and
/// again at the end of the run and interpolated in between (bounding drift), minus the origin
/// (rank 0's time when tracing started).
struct ClockAlignment {
  std::int64_t origin = 0;
  std::int64_t local_start = 0, offset_start = 0;
  std::int64_t local_end = 0, offset_end = 0;

  std::int64_t to_trace(std::int64_t local) const noexcept {
    std::int64_t offset = offset_start;
    if (local_end > local_start) {
      const double f = static_cast<double>(local - local_start) / static_cast<double>(local_end - local_start);
      offset += static_cast<std::int64_t>(f * static_cast<double>(offset_end - offset_start));
    }
    return local + offset - origin;
  }
};

/// Who a rank is and how its part of the trace was taken (shown with its rows, read by tools).
struct ProcessFacts {
  int rank = 0;
  int stage = 0;
  int replica = 0;
  std::size_t buckets = 0;  ///< gradient buckets its stage reduces per step
  std::int64_t offset_start = 0, offset_end = 0, round_trip = 0;  ///< clock against rank 0, ns
  std::size_t dropped = 0;  ///< spans that did not fit in the recorder
  /// The progress thread's calls into MPI during the traced steps and the seconds they took
  /// (StepOptions::exchange_progress; zeros without a thread).
  std::uint64_t progress_calls = 0;
  double progress_seconds = 0;
};

namespace detail {
inline void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
}
inline void append_microseconds(std::string& out, std::int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(ns) / 1000.0);
  out += buffer;
}
inline void append_tag(std::string& out, const char* key, std::int64_t value) {
  if (value < 0) return;
  if (out.back() != '{') out += ',';
  out += '"';
  out += key;
  out += "\":";
  out += std::to_string(value);
}
}  // namespace detail

/// One rank's part of a Chrome trace (JSON trace event format): the rank as a process, one
/// thread per Track, and a complete ("X") event per span, comma-separated, without brackets so
/// that parts of all ranks concatenate into one traceEvents array. Spans still open are left out.
inline std::string chrome_trace_part(std::span<const Event> events, const ProcessFacts& who, const ClockAlignment& clock) {
  std::string out;
  out.reserve(160 * (events.size() + track_names.size() + 2));
  const std::string pid = std::to_string(who.rank);
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":\"rank " + pid + " (stage " +
         std::to_string(who.stage) + ", replica " + std::to_string(who.replica) + ")\",\"rank\":" + pid +
         ",\"stage\":" + std::to_string(who.stage) + ",\"replica\":" + std::to_string(who.replica) +
         ",\"buckets\":" + std::to_string(who.buckets) + ",\"clock_offset_start_ns\":" + std::to_string(who.offset_start) +
         ",\"clock_offset_end_ns\":" + std::to_string(who.offset_end) + ",\"clock_round_trip_ns\":" +
         std::to_string(who.round_trip) + ",\"dropped_spans\":" + std::to_string(who.dropped) +
         ",\"progress_calls\":" + std::to_string(who.progress_calls) + ",\"progress_us\":" +
         std::to_string(static_cast<std::int64_t>(who.progress_seconds * 1e6)) + "}}";
  out += ",{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + "}}";
  for (std::size_t t = 0; t < track_names.size(); ++t) {
    out += ",{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + std::to_string(t) +
           ",\"args\":{\"name\":\"" + std::string(track_names[t]) + "\"}}";
  }
  for (const Event& e : events) {
    if (e.end < e.begin) continue;
    out += ",{\"ph\":\"X\",\"name\":\"";
    detail::append_escaped(out, e.name);
    out += "\",\"cat\":\"";
    out += track_names[static_cast<std::size_t>(e.track)];
    out += "\",\"pid\":" + pid + ",\"tid\":" + std::to_string(static_cast<int>(e.track)) + ",\"ts\":";
    // Both ends through the alignment, so spans nest in the trace as they did on the rank.
    const std::int64_t begin = clock.to_trace(e.begin);
    detail::append_microseconds(out, begin);
    out += ",\"dur\":";
    detail::append_microseconds(out, clock.to_trace(e.end) - begin);
    out += ",\"args\":{";
    detail::append_tag(out, "step", e.step);
    detail::append_tag(out, "stage", e.tags.stage);
    detail::append_tag(out, "micro_batch", e.tags.micro_batch);
    detail::append_tag(out, "bucket", e.tags.bucket);
    detail::append_tag(out, "layer", e.tags.layer);
    detail::append_tag(out, "bytes", e.tags.bytes);
    out += "}}";
  }
  return out;
}

/// Throws std::runtime_error naming `path` unless a trace can be written there (checked before a
/// run, so that a bad path fails at once rather than after hours of training).
inline void check_writable(const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::app);
  if (!file) throw std::runtime_error("hpf: cannot write the trace file '" + path + "'");
}

/// Writes a Chrome trace file from every rank's part (in rank order) and a JSON object of
/// run facts (kept under "otherData", which viewers show as metadata). Throws std::runtime_error
/// naming the file when it cannot be written.
inline void write_chrome_trace(const std::string& path, std::span<const std::string> parts, const std::string& facts) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("hpf: cannot open the trace file '" + path + "' for writing");
  file << "{\"displayTimeUnit\":\"ns\",\"otherData\":" << facts << ",\"traceEvents\":[";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!first) file << ",\n";
    file << part;
    first = false;
  }
  file << "]}\n";
  if (!file.flush()) throw std::runtime_error("hpf: writing the trace file '" + path + "' failed");
}

}  // namespace hpf::trace

#endif  // HPF_TRACE_CHROME_TRACE_HPP
