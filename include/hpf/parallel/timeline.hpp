// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_TIMELINE_HPP
#define HPF_PARALLEL_TIMELINE_HPP

#include <hpf/parallel/schedule.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/trace/clock.hpp>
#include <hpf/trace/options.hpp>
#include <hpf/trace/recorder.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hpf {

/// \brief The per-rank timeline of one training run (see hpf::trace::TraceOptions): records the
/// window of steps asked for on every process and writes one merged Chrome trace at the end.
///
/// Links (MpiLinks or LocalLinks) supply what is collective: the clock offset to rank 0
/// (`clock_sample()`), who this process is (`trace_facts()`) and the gathering of every part
/// on the first rank (`gather_on_first()`). Constructing and finish() are collective when
/// tracing is on; with tracing off the timeline does nothing and records nothing.
template <class Links>
class Timeline {
 public:
  Timeline(const trace::TraceOptions& options, const StepOptions& step, const Links& links)
      : options_(options), links_(links) {
    if (!options_.enabled()) return;
    options_.check();
    recorder_ = std::make_unique<trace::Recorder>(options_.max_events);
    facts_ = "{\"format\":\"hpf-trace\",\"version\":1,\"stages\":" + std::to_string(links.stages()) + ",\"replicas\":" + std::to_string(links.replicas()) +
             ",\"micro_batches\":" + std::to_string(step.micro_batches) + ",\"schedule\":\"" + to_string(step.schedule) +
             "\",\"batch\":" + std::to_string(step.batch) + ",\"first_step\":" + std::to_string(options_.first_step) +
             ",\"last_step\":" + std::to_string(options_.last_step) + ",\"layers\":" + (options_.layers ? "true" : "false");
    start_ = links_.clock_sample();
  }
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  ~Timeline() {
    if (recorder_) trace::activate(nullptr, false);
  }

  /// Global step `step` (counted over all epochs) is about to run: records it if it lies in the
  /// window, and whatever follows it (evaluation) until the next call.
  void at_step(std::size_t step) {
    if (!recorder_) return;
    const bool inside = step >= options_.first_step && step <= options_.last_step;
    if (inside && !progress_start_) progress_start_ = progress_work();
    if (!inside && progress_start_ && !progress_end_) progress_end_ = progress_work();  // the window has passed
    recorder_->set_step(static_cast<std::int64_t>(step));
    trace::activate(inside ? recorder_.get() : nullptr, options_.layers);
  }

  /// Stops recording and writes the trace (rank 0). Collective.
  void finish() {
    if (!recorder_) return;
    trace::activate(nullptr, false);
    const trace::ClockSample end = links_.clock_sample();
    trace::ProcessFacts who = links_.trace_facts();
    who.offset_start = start_.offset;
    who.offset_end = end.offset;
    who.round_trip = start_.round_trip > end.round_trip ? start_.round_trip : end.round_trip;
    who.dropped = recorder_->dropped();
    if (progress_start_) {
      const auto [calls, seconds] = progress_end_ ? *progress_end_ : progress_work();
      who.progress_calls = calls - progress_start_->first;
      who.progress_seconds = seconds - progress_start_->second;
    }
    const trace::ClockAlignment clock{start_.root_time, start_.local, start_.offset, end.local, end.offset};
    const std::vector<std::string> parts =
        links_.gather_on_first(trace::chrome_trace_part(recorder_->events(), who, clock));
    if (!parts.empty()) {
      trace::write_chrome_trace(options_.path, parts, facts_ + ",\"processes\":" + std::to_string(parts.size()) + "}");
    }
    recorder_.reset();
  }

  const trace::Recorder* recorder() const { return recorder_.get(); }

 private:
  /// The links' progress thread's calls into MPI and their seconds so far (zeros without one).
  std::pair<std::uint64_t, double> progress_work() const {
    if constexpr (requires { links_.progress_work(); }) {
      return links_.progress_work();
    } else {
      return {0, 0.0};
    }
  }

  trace::TraceOptions options_;
  const Links& links_;
  std::unique_ptr<trace::Recorder> recorder_;
  std::string facts_;  // the run's facts as JSON members, closed when the process count is known
  trace::ClockSample start_;
  // progress_work() when the traced steps began and when they were over.
  std::optional<std::pair<std::uint64_t, double>> progress_start_, progress_end_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_TIMELINE_HPP
