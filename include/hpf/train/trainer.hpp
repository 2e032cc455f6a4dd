// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_TRAINER_HPP
#define HPF_TRAIN_TRAINER_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/parallel/local_links.hpp>
#include <hpf/parallel/stage_engine.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/train/loop.hpp>
#include <hpf/train/options.hpp>
#include <hpf/train/precision.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf {

/// \brief Single-process training of a model: the reference every parallel strategy must
/// reproduce. It is hpf's one step engine with one stage, standing in for `data_shards`
/// replicas: each step visits the global batch in the pieces a parallel run would use (each
/// shard split into `micro_batches`), combines the shards' gradients as that many replicas
/// would, then takes one optimizer step.
template <class Model, class Precision = float, class Space = Kokkos::DefaultExecutionSpace>
class Trainer {
  static_assert(Model::trainable, "hpf::Trainer: the model must end with a loss layer (e.g. SoftmaxCrossEntropy)");
  using T = storage_t<Precision>;
  using engine_type = StageEngine<T, Space, LocalLinks<T, Space>>;

 public:
  using network_type = Network<Model, T, Space>;

  Trainer(const TrainOptions& options, const data::Dataset& train, const data::Dataset* test = nullptr)
      : options_(with_environment_trace(with_precision<Precision>(options))),
        engine_(make_stage_engine<Model, T, Space, LocalLinks<T, Space>>({options.data_shards, options.shards_side_by_side},
                                                                         options_, train, test)) {
    options_.trace.check();
    options_.checkpoint.check();
    if (options_.trace.enabled()) trace::check_writable(options_.trace.path);
  }

  std::size_t steps_per_epoch() const { return engine_.steps_per_epoch(); }
  /// One optimizer step on global batch `step` of `epoch`.
  StepResult step(std::size_t epoch, std::size_t step) { return engine_.step(epoch, step); }
  /// Loss and accuracy on the test set (NaNs without one).
  Evaluation evaluate() { return engine_.evaluate(); }
  Evaluation evaluate(const data::Dataset& dataset) { return engine_.evaluate(dataset); }
  /// Fraction of `dataset` classified correctly.
  double accuracy(const data::Dataset& dataset) { return engine_.evaluate(dataset).accuracy; }

  /// Trains for options.epochs, printing progress, evaluating after each epoch.
  TrainReport fit() { return run_epochs(engine_, options_); }

  /// Data shards training side by side, one per thread (TrainOptions::shards_side_by_side); 0
  /// when they train one after another.
  std::size_t shard_threads() const { return engine_.shard_threads(); }

  network_type& network() { return network_cast<Model>(engine_.network()); }
  const Optimizer<T, Space>& optimizer() const { return engine_.optimizer(); }
  const TrainOptions& options() const { return options_; }

 private:
  TrainOptions options_;
  engine_type engine_;
};

}  // namespace hpf

#endif  // HPF_TRAIN_TRAINER_HPP
