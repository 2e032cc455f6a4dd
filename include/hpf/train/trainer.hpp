// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_TRAINER_HPP
#define HPF_TRAIN_TRAINER_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/sampler.hpp>
#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/train/batch_loader.hpp>
#include <hpf/train/loop.hpp>
#include <hpf/train/options.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpf {

/// \brief Single-process training of a model: the reference every parallel strategy must
/// reproduce. Each step visits the global batch in the pieces a parallel run would use
/// (`data_shards` shards, each split into `micro_batches`), accumulates their gradients with the
/// loss scaled by 1/(global batch), then takes one optimizer step.
template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
class Trainer {
  static_assert(Model::trainable, "hpf::Trainer: the model must end with a loss layer (e.g. SoftmaxCrossEntropy)");

 public:
  using network_type = Network<Model, T, Space>;

  Trainer(const TrainOptions& options, const data::Dataset& train, const data::Dataset* test = nullptr)
      : options_(validated(options)),
        train_(train),
        test_(test),
        sampler_(train.size(), options.batch, options.data_shards, options.data_seed),
        net_(options.network),
        optimizer_(net_.parameters().extent(0), options.optimizer),
        tape_(net_.make_tape(micro_batch_capacity())) {
    check_dataset(train, "training");
    if (test) check_dataset(*test, "test");
  }

  std::size_t steps_per_epoch() const { return sampler_.steps_per_epoch(); }

  /// One optimizer step on global batch `step` of `epoch`.
  StepResult step(std::size_t epoch, std::size_t step) {
    const std::size_t samples = sampler_.batch_size(step);
    const T scale = T(1) / static_cast<T>(samples);
    // With an ordered reduction, each shard's gradient is summed on its own and the shards are
    // combined in hpf::ordered_sum's tree, exactly as that many replicas would combine theirs.
    const std::size_t shards = options_.data_shards;
    const bool ordered = shards > 1 && resolve(options_.reduction, shards) == GradientReduction::ordered;
    const std::size_t length = net_.gradients().extent(0);
    if (ordered) ensure_capacity(shard_gradients_, shards * length, "hpf::Trainer::shard_gradients");
    net_.zero_grad();
    StepResult result;
    result.samples = samples;
    for (std::size_t shard = 0; shard < shards; ++shard) {
      if (ordered && shard > 0) net_.zero_grad();
      const std::vector<std::size_t> piece = sampler_.piece(epoch, step, shard);
      for (std::size_t m = 0; m < options_.micro_batches; ++m) {
        const auto [begin, end] = data::split_range(piece.size(), options_.micro_batches, m);
        if (begin == end) continue;
        const std::span<const std::size_t> micro(piece.data() + begin, end - begin);
        loader_.load_inputs(train_, micro, net_, tape_);
        loader_.load_labels(train_, micro, net_, tape_);
        net_.forward(tape_, micro.size(), Mode::train);
        result.loss_sum += static_cast<double>(net_.loss_sum(tape_));
        net_.backward(tape_, scale);
      }
      if (ordered) {
        Kokkos::deep_copy(Kokkos::subview(shard_gradients_, Kokkos::make_pair(shard * length, (shard + 1) * length)),
                          net_.gradients());
      }
    }
    if (ordered) ordered_sum(net_.space(), shard_gradients_.data(), shards, length, net_.gradients().data(), length);
    optimizer_.step(net_.parameters(), net_.gradients());
    return result;
  }

  /// Fraction of the test set classified correctly (NaN without a test set).
  double evaluate() {
    if (!test_) return NAN;
    return accuracy(*test_);
  }
  double accuracy(const data::Dataset& dataset) {
    std::size_t correct = 0;
    std::vector<std::size_t> indices;
    const std::size_t chunk = eval_tape_capacity();
    if (eval_tape_.capacity < chunk) eval_tape_ = net_.make_tape(chunk);
    for (std::size_t first = 0; first < dataset.size(); first += chunk) {
      const std::size_t n = std::min(chunk, dataset.size() - first);
      indices.resize(n);
      for (std::size_t i = 0; i < n; ++i) indices[i] = first + i;
      loader_.load_inputs(dataset, indices, net_, eval_tape_);
      loader_.load_labels(dataset, indices, net_, eval_tape_);
      net_.forward(eval_tape_, n, Mode::eval);
      correct += net_.correct(eval_tape_);
    }
    return static_cast<double>(correct) / static_cast<double>(dataset.size());
  }

  /// Trains for options.epochs, printing progress, evaluating after each epoch.
  TrainReport fit() { return run_epochs(*this, options_); }

  network_type& network() { return net_; }
  const Optimizer<T, Space>& optimizer() const { return optimizer_; }
  const TrainOptions& options() const { return options_; }

 private:
  static TrainOptions validated(const TrainOptions& o) {
    if (o.batch == 0) throw std::invalid_argument("hpf::Trainer: batch must be at least 1");
    if (o.micro_batches == 0) throw std::invalid_argument("hpf::Trainer: micro_batches must be at least 1");
    if (o.data_shards == 0 || o.batch % o.data_shards != 0) {
      throw std::invalid_argument("hpf::Trainer: batch " + std::to_string(o.batch) + " must be divisible by data_shards " +
                                  std::to_string(o.data_shards));
    }
    if (o.micro_batches > o.batch / o.data_shards) {
      throw std::invalid_argument("hpf::Trainer: " + std::to_string(o.micro_batches) + " micro-batches of a " +
                                  std::to_string(o.batch / o.data_shards) + "-sample piece would leave some empty");
    }
    return o;
  }
  std::size_t micro_batch_capacity() const {
    const std::size_t piece = options_.batch / options_.data_shards;
    return (piece + options_.micro_batches - 1) / options_.micro_batches;
  }
  std::size_t eval_tape_capacity() const { return std::max<std::size_t>(1, options_.eval_batch); }
  static void check_dataset(const data::Dataset& d, const char* which) {
    using In = typename Model::input_shape;
    if (d.sample_size() != In::size || d.channels() != In::channels) {
      throw std::invalid_argument(std::string("hpf::Trainer: the ") + which + " set's samples are " + d.shape_text() +
                                  " but the model's input is " + shape_string<In>());
    }
    if (d.classes() > Model::output_shape::size) {
      throw std::invalid_argument(std::string("hpf::Trainer: the ") + which + " set has " + std::to_string(d.classes()) +
                                  " classes but the model outputs " + std::to_string(Model::output_shape::size));
    }
  }

  TrainOptions options_;
  const data::Dataset& train_;
  const data::Dataset* test_;
  data::Sampler sampler_;
  network_type net_;
  Optimizer<T, Space> optimizer_;
  typename network_type::Tape tape_, eval_tape_;
  BatchLoader<T, Space> loader_;
  Buffer<T, Space> shard_gradients_;  // per-shard gradients for an ordered reduction
};

}  // namespace hpf

#endif  // HPF_TRAIN_TRAINER_HPP
