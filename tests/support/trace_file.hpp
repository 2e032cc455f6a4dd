// A Chrome trace written by hpf, read back for tests (hpf's own JSON parser).
#ifndef HPF_TESTS_SUPPORT_TRACE_FILE_HPP
#define HPF_TESTS_SUPPORT_TRACE_FILE_HPP

#include <hpf/io/detail/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hpf_test {

struct TraceSpan {
  std::string name, cat;
  int pid = -1, tid = -1;
  double ts = 0, dur = 0;  // microseconds
  long long step = -1, stage = -1, micro_batch = -1, bucket = -1, layer = -1, bytes = -1;
  double end() const { return ts + dur; }
};

struct TraceProcess {
  int rank = -1, stage = -1, replica = -1;
  long long buckets = 0, dropped = 0, round_trip_ns = 0;
  long long progress_calls = 0, progress_us = 0;  // the progress thread's calls into MPI, traced steps
};

struct TraceFile {
  std::size_t bytes = 0;
  std::map<std::string, std::string> facts;  // otherData members, as written
  std::map<int, TraceProcess> processes;
  std::vector<TraceSpan> spans;

  std::vector<TraceSpan> select(int pid, const std::string& cat, const std::string& name, long long step) const {
    std::vector<TraceSpan> out;
    for (const TraceSpan& s : spans) {
      if (s.pid == pid && s.cat == cat && s.name == name && s.step == step) out.push_back(s);
    }
    return out;
  }
};

namespace detail {
inline const hpf::io::detail::JsonValue* member(const hpf::io::detail::JsonValue& object, const std::string& key) {
  for (const auto& [k, v] : object.members) {
    if (k == key) return &v;
  }
  return nullptr;
}
inline double number(const hpf::io::detail::JsonValue& object, const std::string& key, double fallback) {
  const auto* v = member(object, key);
  return v && v->kind == hpf::io::detail::JsonValue::Kind::number ? std::stod(v->text) : fallback;
}
}  // namespace detail

inline TraceFile read_trace(const std::string& path) {
  using hpf::io::detail::JsonValue;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("no trace file at " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const JsonValue root = hpf::io::detail::JsonParser::parse(text);
  TraceFile trace;
  trace.bytes = text.size();
  if (const auto* facts = detail::member(root, "otherData")) {
    for (const auto& [k, v] : facts->members) trace.facts[k] = v.text;
  }
  const auto* events = detail::member(root, "traceEvents");
  if (!events || events->kind != JsonValue::Kind::array) throw std::runtime_error(path + " has no traceEvents array");
  for (const JsonValue& e : events->items) {
    const auto* ph = detail::member(e, "ph");
    const auto* name = detail::member(e, "name");
    const auto* args = detail::member(e, "args");
    if (!ph || !name || !args) throw std::runtime_error(path + ": an event without ph, name or args");
    const int pid = static_cast<int>(detail::number(e, "pid", -1));
    if (ph->text == "M" && name->text == "process_name") {
      TraceProcess& p = trace.processes[pid];
      p.rank = static_cast<int>(detail::number(*args, "rank", -1));
      p.stage = static_cast<int>(detail::number(*args, "stage", -1));
      p.replica = static_cast<int>(detail::number(*args, "replica", -1));
      p.buckets = static_cast<long long>(detail::number(*args, "buckets", 0));
      p.dropped = static_cast<long long>(detail::number(*args, "dropped_spans", 0));
      p.round_trip_ns = static_cast<long long>(detail::number(*args, "clock_round_trip_ns", 0));
      p.progress_calls = static_cast<long long>(detail::number(*args, "progress_calls", 0));
      p.progress_us = static_cast<long long>(detail::number(*args, "progress_us", 0));
    } else if (ph->text == "X") {
      TraceSpan s;
      s.name = name->text;
      if (const auto* cat = detail::member(e, "cat")) s.cat = cat->text;
      s.pid = pid;
      s.tid = static_cast<int>(detail::number(e, "tid", -1));
      s.ts = detail::number(e, "ts", 0);
      s.dur = detail::number(e, "dur", -1);
      s.step = static_cast<long long>(detail::number(*args, "step", -1));
      s.stage = static_cast<long long>(detail::number(*args, "stage", -1));
      s.micro_batch = static_cast<long long>(detail::number(*args, "micro_batch", -1));
      s.bucket = static_cast<long long>(detail::number(*args, "bucket", -1));
      s.layer = static_cast<long long>(detail::number(*args, "layer", -1));
      s.bytes = static_cast<long long>(detail::number(*args, "bytes", -1));
      trace.spans.push_back(std::move(s));
    }
  }
  return trace;
}

/// Total length of the union of intervals [ts, end) clipped to [from, to).
inline double covered(std::vector<std::pair<double, double>> intervals, double from, double to) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, reach = from;
  for (auto [b, e] : intervals) {
    b = std::max(b, reach);
    e = std::min(e, to);
    if (e > b) {
      total += e - b;
      reach = e;
    }
  }
  return total;
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_TRACE_FILE_HPP
