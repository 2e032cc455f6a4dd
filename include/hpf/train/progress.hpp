// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_PROGRESS_HPP
#define HPF_TRAIN_PROGRESS_HPP

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>

#include <unistd.h>

namespace hpf {

/// How training reports progress.
enum class ProgressMode {
  /// Redraw one line on a terminal; print plain lines when stdout is a file or pipe.
  automatic,
  /// Redraw one line in place ("\r"), at most ten times a second.
  redraw,
  /// Plain lines, about ten per epoch (logs, CI).
  lines,
  /// Only nothing.
  none,
};

/// What one epoch of training did.
struct EpochReport {
  std::size_t epoch = 0;
  std::size_t steps = 0;
  std::size_t samples = 0;
  double loss = 0;            ///< mean training loss per sample
  double seconds = 0;         ///< training time (evaluation excluded)
  double images_per_second = 0;
  double test_loss = NAN;      ///< mean loss per test sample; NaN if not evaluated
  double test_accuracy = NAN;  ///< fraction in [0, 1]; NaN if not evaluated or not a classifier
  std::size_t skipped_steps = 0;  ///< steps skipped for a non-finite loss (NonFinitePolicy::skip)
};

/// \brief Prints per-epoch progress: a redrawn line on a terminal, plain lines otherwise.
class ProgressReporter {
 public:
  explicit ProgressReporter(ProgressMode mode, std::ostream& out, bool is_terminal = stdout_is_terminal())
      : mode_(mode == ProgressMode::automatic ? (is_terminal ? ProgressMode::redraw : ProgressMode::lines) : mode), out_(out) {}

  void begin_epoch(std::size_t epoch, std::size_t epochs, std::size_t steps) {
    epoch_ = epoch;
    epochs_ = epochs;
    steps_ = steps;
    next_line_ = 0;
    last_draw_ = std::chrono::steady_clock::time_point{};
  }

  /// After step `done` (1-based) with the running mean loss and throughput so far.
  void step(std::size_t done, double mean_loss, double images_per_second) {
    if (mode_ == ProgressMode::none) return;
    const auto now = std::chrono::steady_clock::now();
    if (mode_ == ProgressMode::redraw) {
      if (done != steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
      last_draw_ = now;
      out_ << '\r' << line(done, mean_loss, images_per_second) << std::flush;
    } else if (done >= next_line_ || done == steps_) {
      next_line_ = done + (steps_ + 9) / 10;
      out_ << line(done, mean_loss, images_per_second) << '\n' << std::flush;
    }
  }

  void end_epoch(const EpochReport& r) {
    if (mode_ == ProgressMode::none) return;
    if (mode_ == ProgressMode::redraw) out_ << '\n';
    char text[256];
    if (!std::isnan(r.test_loss) && std::isnan(r.test_accuracy)) {
      std::snprintf(text, sizeof text, "epoch %zu/%zu: loss %.4f, %.0f images/s, %.1f s, test loss %.4f", r.epoch + 1,
                    epochs_, r.loss, r.images_per_second, r.seconds, r.test_loss);
    } else if (std::isnan(r.test_accuracy)) {
      std::snprintf(text, sizeof text, "epoch %zu/%zu: loss %.4f, %.0f images/s, %.1f s", r.epoch + 1, epochs_, r.loss,
                    r.images_per_second, r.seconds);
    } else {
      std::snprintf(text, sizeof text, "epoch %zu/%zu: loss %.4f, %.0f images/s, %.1f s, test accuracy %.2f%%",
                    r.epoch + 1, epochs_, r.loss, r.images_per_second, r.seconds, 100.0 * r.test_accuracy);
    }
    out_ << text;
    if (r.skipped_steps) out_ << " (" << r.skipped_steps << " steps skipped: loss or gradients not finite)";
    out_ << '\n' << std::flush;
  }

  ProgressMode mode() const { return mode_; }

  /// A terminal a person watches. MPI launchers hand ranks a pseudo-terminal even when their own
  /// output goes to a file or pipe, so a process started by one counts as not a terminal.
  static bool stdout_is_terminal() {
    for (const char* launched : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
      if (std::getenv(launched)) return false;
    return ::isatty(STDOUT_FILENO) != 0;
  }

 private:
  std::string line(std::size_t done, double loss, double ips) const {
    char text[160];
    std::snprintf(text, sizeof text, "epoch %zu/%zu  step %zu/%zu  loss %.4f  %.0f images/s", epoch_ + 1, epochs_, done,
                  steps_, loss, ips);
    return text;
  }

  ProgressMode mode_;
  std::ostream& out_;
  std::size_t epoch_ = 0, epochs_ = 0, steps_ = 0, next_line_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace hpf

#endif  // HPF_TRAIN_PROGRESS_HPP
