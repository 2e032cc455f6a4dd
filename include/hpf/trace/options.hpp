// SPDX-License-Identifier: MIT
#ifndef HPF_TRACE_OPTIONS_HPP
#define HPF_TRACE_OPTIONS_HPP

#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace hpf::trace {

/// \brief What to trace of a training run. Off unless `path` is set; then the steps
/// [first_step, last_step] (global step numbers, counted from 0 over all epochs) are recorded on
/// every rank and rank 0 writes one merged Chrome trace (Perfetto, chrome://tracing) to `path`.
/// A window rather than the whole run keeps a trace small enough for any viewer.
struct TraceOptions {
  std::string path;
  std::size_t first_step = 1;  ///< step 0 pays for first-touch allocations: skipped by default
  std::size_t last_step = 10;
  bool layers = false;               ///< one span per layer inside forward and backward
  std::size_t max_events = 1 << 18;  ///< per rank; spans beyond it are counted, not kept

  bool enabled() const noexcept { return !path.empty(); }

  /// HPF_TRACE=FILE switches tracing on, HPF_TRACE_STEPS=FIRST-LAST (or one step N) picks the
  /// window, HPF_TRACE_LAYERS=1 adds per-layer spans: for programs that expose no options.
  /// Throws std::invalid_argument naming a malformed value.
  static TraceOptions from_environment() {
    TraceOptions o;
    if (const char* path = std::getenv("HPF_TRACE")) o.path = path;
    if (const char* steps = std::getenv("HPF_TRACE_STEPS"); steps && *steps) parse_steps(steps, o);
    if (const char* layers = std::getenv("HPF_TRACE_LAYERS")) o.layers = std::string(layers) == "1";
    return o;
  }

  /// Throws std::invalid_argument unless the window is well formed.
  void check() const {
    if (!enabled()) return;
    if (last_step < first_step) {
      throw std::invalid_argument("hpf: trace window ends (step " + std::to_string(last_step) + ") before it starts (step " +
                                  std::to_string(first_step) + ")");
    }
    if (max_events == 0) throw std::invalid_argument("hpf: trace max_events must be at least 1");
  }

 private:
  static void parse_steps(const std::string& text, TraceOptions& o) {
    const auto bad = [&] {
      return std::invalid_argument("hpf: HPF_TRACE_STEPS='" + text + "' is not FIRST-LAST or a step number");
    };
    const std::size_t dash = text.find('-');
    try {
      std::size_t used = 0;
      o.first_step = std::stoul(text.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? text.size() : dash)) throw bad();
      o.last_step = o.first_step;
      if (dash != std::string::npos) {
        o.last_step = std::stoul(text.substr(dash + 1), &used);
        if (used != text.size() - dash - 1) throw bad();
      }
    } catch (const std::logic_error&) {
      throw bad();
    }
  }
};

}  // namespace hpf::trace

#endif  // HPF_TRACE_OPTIONS_HPP
