// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_LOOP_HPP
#define HPF_TRAIN_LOOP_HPP

#include <hpf/parallel/stage_engine.hpp>
#include <hpf/parallel/timeline.hpp>
#include <hpf/tensor/bf16.hpp>
#include <hpf/train/checkpointer.hpp>
#include <hpf/train/options.hpp>
#include <hpf/train/progress.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <ostream>
#include <string>

namespace hpf {

/// Writes to `log` (rank 0's; null: nowhere) how each stage's replicas exchange gradients:
/// "hpf: gradient exchange, stage 0: 9 buckets of 120 KiB (automatic: ...)". Collective over the
/// links' ranks; nothing where there are no replicas to exchange with.
template <class Links>
void say_gradient_exchange(const Links& links, std::ostream* log) {
  if constexpr (requires { links.describe_gradient_exchange(); }) {
    const std::string mine =
        links.grid().replica() == 0 && links.grid().member() == 0 ? links.describe_gradient_exchange() : std::string();
    for (const std::string& line : links.gather_on_first(mine)) {
      if (log && !line.empty()) *log << "hpf: gradient exchange, " << line << '\n';
    }
  }
}

/// Writes to `log` (rank 0's) how messages in flight progress, where StepOptions::exchange_progress
/// asked for a thread: "hpf: progress, a thread per rank calls into MPI every 1000 us", or why not.
template <class Links>
void say_progress(const Links& links, std::ostream* log) {
  if constexpr (requires { links.describe_progress(); }) {
    if (log && links.first_process() && !links.describe_progress().empty()) {
      *log << "hpf: progress, " << links.describe_progress() << '\n';
    }
  }
}

/// Writes to `log` (rank 0's) what messages between pipeline stages travel as, where
/// StepOptions::stage_precision makes them bf16: "hpf: between stages, activations and their
/// gradients travel as bf16".
template <class Links>
void say_stage_messages(const Links& links, std::ostream* log) {
  if constexpr (requires { links.stage_element_bytes(); }) {
    if (log && links.first_process() && links.stages() > 1 && links.stage_element_bytes() == sizeof(bf16_bits)) {
      *log << "hpf: between stages, activations and their gradients travel as bf16\n";
    }
  }
}

/// \brief The epoch loop every training strategy shares. An Engine provides
///   std::size_t steps_per_epoch() const;
///   StepResult step(std::size_t epoch, std::size_t step);  // one optimizer step, global totals
///   Evaluation evaluate();                                  // on the test set (NaNs without one)
///   const links_type& links() const;                        // what hpf::Timeline talks through
/// and reports the same values on every process, so every rank prints and returns the same.
/// With options.trace on, the timeline of its window of steps is written at the end; with
/// options.checkpoint, checkpoints are saved as it says and a run resumes where one left off.
template <class Engine>
TrainReport run_epochs(Engine& engine, const TrainOptions& options, bool print = true) {
  say_gradient_exchange(engine.links(), print ? options.log : nullptr);
  say_progress(engine.links(), print ? options.log : nullptr);
  say_stage_messages(engine.links(), print ? options.log : nullptr);
  Timeline<typename Engine::links_type> timeline(options.trace, options, engine.links());
  Checkpointer<Engine> checkpoints(engine, options.checkpoint, print ? options.log : nullptr);
  const io::TrainingState start = checkpoints.resume();
  std::ostream no_log(nullptr);  // without a buffer: writes nothing (options.log may be null)
  ProgressReporter progress(print && options.log ? options.progress : ProgressMode::none,
                            options.log ? *options.log : no_log);
  TrainReport report;
  std::size_t steps = engine.steps_per_epoch();
  if (options.steps_per_epoch) steps = std::min(steps, options.steps_per_epoch);
  io::TrainingState now = start;
  now.optimizer = describe(options.optimizer);
  now.data_shards = engine.links().replicas();
  now.data_seed = options.data_seed;
  now.stages = engine.links().stages();
  for (std::size_t epoch = start.epoch; epoch < options.epochs; ++epoch) {
    const std::size_t first = epoch == start.epoch ? std::min(start.step, steps) : 0;
    progress.begin_epoch(epoch, options.epochs, steps);
    EpochReport r;
    r.epoch = epoch;
    double loss_sum = 0;
    const auto began = std::chrono::steady_clock::now();
    for (std::size_t s = first; s < steps; ++s) {
      timeline.at_step(epoch * steps + s);
      const StepResult result = engine.step(epoch, s);
      if (result.skipped) {
        ++r.skipped_steps;
      } else {
        loss_sum += result.loss_sum;
        r.samples += result.samples;
      }
      report.step_losses.push_back(result.samples ? result.loss_sum / static_cast<double>(result.samples) : NAN);
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (r.samples) progress.step(s + 1, loss_sum / static_cast<double>(r.samples), static_cast<double>(r.samples) / r.seconds);
      ++now.global_step;
      now.samples += result.samples;
      now.optimizer_steps = engine.optimizer().steps();
      now.epoch = s + 1 < steps ? epoch : epoch + 1;
      now.step = s + 1 < steps ? s + 1 : 0;
      checkpoints.after_step(now, now.epoch == options.epochs);
      if (options.after_step) options.after_step(now.global_step);
    }
    r.steps = steps - first;
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
