// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_LOOP_HPP
#define HPF_TRAIN_LOOP_HPP

#include <hpf/parallel/stage_engine.hpp>
#include <hpf/parallel/timeline.hpp>
#include <hpf/train/options.hpp>
#include <hpf/train/progress.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>

namespace hpf {

/// \brief The epoch loop every training strategy shares. An Engine provides
///   std::size_t steps_per_epoch() const;
///   StepResult step(std::size_t epoch, std::size_t step);  // one optimizer step, global totals
///   Evaluation evaluate();                                  // on the test set (NaNs without one)
///   const links_type& links() const;                        // what hpf::Timeline talks through
/// and reports the same values on every process, so every rank prints and returns the same.
/// With options.trace on, the timeline of its window of steps is written at the end.
template <class Engine>
TrainReport run_epochs(Engine& engine, const TrainOptions& options, bool print = true) {
  Timeline<typename Engine::links_type> timeline(options.trace, options, engine.links());
  ProgressReporter progress(print ? options.progress : ProgressMode::none, *options.log);
  TrainReport report;
  std::size_t steps = engine.steps_per_epoch();
  if (options.steps_per_epoch) steps = std::min(steps, options.steps_per_epoch);
  for (std::size_t epoch = 0; epoch < options.epochs; ++epoch) {
    progress.begin_epoch(epoch, options.epochs, steps);
    EpochReport r;
    r.epoch = epoch;
    double loss_sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t s = 0; s < steps; ++s) {
      timeline.at_step(epoch * steps + s);
      const StepResult result = engine.step(epoch, s);
      loss_sum += result.loss_sum;
      r.samples += result.samples;
      report.step_losses.push_back(result.samples ? result.loss_sum / static_cast<double>(result.samples) : NAN);
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.step(s + 1, loss_sum / static_cast<double>(r.samples), static_cast<double>(r.samples) / r.seconds);
    }
    r.steps = steps;
    r.loss = r.samples ? loss_sum / static_cast<double>(r.samples) : NAN;
    r.images_per_second = r.seconds > 0 ? static_cast<double>(r.samples) / r.seconds : 0;
    if (options.evaluate) {
      const Evaluation e = engine.evaluate();
      r.test_loss = e.loss;
      r.test_accuracy = e.accuracy;
    }
    progress.end_epoch(r);
    report.epochs.push_back(r);
  }
  timeline.finish();
  return report;
}

}  // namespace hpf

#endif  // HPF_TRAIN_LOOP_HPP
