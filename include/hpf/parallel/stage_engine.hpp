// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STAGE_ENGINE_HPP
#define HPF_PARALLEL_STAGE_ENGINE_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/sampler.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/train/batch_loader.hpp>
#include <hpf/train/loop.hpp>
#include <hpf/train/options.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace hpf {

/// \brief One rank's part of parallel training: stage StageIndex of Model under Partition, for
/// one replica. Each step runs the stage's schedule program (forwards, backwards, sends and
/// receives of micro-batches), reduces parameter gradients among the stage's replicas in buckets
/// while backward runs, then updates this stage's parameters. The Engine of run_epochs.
template <class Model, class Partition, std::size_t StageIndex, class T, class Space>
class StageEngine {
 public:
  using stage_model = Stage<Model, Partition, StageIndex>;
  using network_type = Network<stage_model, T, Space>;
  static constexpr bool first = stage_model::is_first;
  static constexpr bool last = stage_model::is_last;

  StageEngine(const ProcessGrid& grid, const TrainOptions& options, const data::TrainTest& data)
      : grid_(grid), options_(options), data_(data),
        sampler_(data.train.size(), options.batch, grid.replicas(), options.data_seed),
        program_(stage_program(options.schedule, grid.stages(), grid.stage(), options.micro_batches)),
        net_(options.network),
        optimizer_(net_.parameters().extent(0), options.optimizer),
        buckets_(grid.stage_group(), net_.gradients(), options.bucket_bytes, options.reduction) {
    const std::size_t capacity = (sampler_.local_batch() + options.micro_batches - 1) / options.micro_batches;
    slots_.resize(slots_needed(options.schedule, grid.stages(), grid.stage(), options.micro_batches));
    for (Slot& slot : slots_) {
      slot.tape = net_.make_tape(capacity);
      if constexpr (!last) slot.output_grad = Buffer<T, Space>("hpf::StageEngine::output_grad", stage_model::output_shape::size * capacity);
      if constexpr (!first) slot.input_grad = Buffer<T, Space>("hpf::StageEngine::input_grad", stage_model::input_shape::size * capacity);
    }
  }

  std::size_t steps_per_epoch() const { return sampler_.steps_per_epoch(); }

  StepResult step(std::size_t epoch, std::size_t step) {
    trace::Region region("hpf::StageEngine::step");
    const std::vector<std::size_t> piece = sampler_.piece(epoch, step, grid_.replica());
    const std::size_t global = sampler_.batch_size(step);
    const T scale = T(1) / static_cast<T>(global);
    net_.zero_grad();
    buckets_.begin_step();
    const std::size_t final_backward = last_backward(piece.size());
    double loss_sum = 0;
    const auto& pipe = grid_.pipeline();
    const int previous = static_cast<int>(grid_.stage()) - 1, next = static_cast<int>(grid_.stage()) + 1;
    for (std::size_t k = 0; k < program_.size(); ++k) {
      const Instruction in = program_[k];
      const auto [begin, end] = data::split_range(piece.size(), options_.micro_batches, in.micro_batch);
      const std::size_t n = end - begin;
      if (n == 0) continue;  // a short last batch: every stage of this replica skips the same ones
      Slot& slot = slots_[in.micro_batch % slots_.size()];
      const std::span<const std::size_t> samples(piece.data() + begin, n);
      switch (in.op) {
        case Op::recv_activation:
          comm::recv(pipe, net_.input(slot.tape, n), previous, activation_tag(in.micro_batch));
          break;
        case Op::forward:
          slot.activation_sent.wait();  // the output buffer is about to be rewritten
          if constexpr (first) loader_.load_inputs(data_.train, samples, net_, slot.tape);
          if constexpr (last) loader_.load_labels(data_.train, samples, net_, slot.tape);
          net_.forward(slot.tape, n, Mode::train);
          if constexpr (last) loss_sum += static_cast<double>(net_.loss_sum(slot.tape));
          break;
        case Op::send_activation:
          slot.activation_sent = comm::isend(pipe, net_.output(slot.tape), next, activation_tag(in.micro_batch));
          break;
        case Op::recv_gradient:
          comm::recv(pipe, output_grad(slot, n), next, gradient_tag(in.micro_batch));
          break;
        case Op::backward: {
          slot.gradient_sent.wait();
          std::function<void(std::size_t)> ready;
          if (k == final_backward) ready = [this](std::size_t offset) { buckets_.ready(offset); };
          net_.backward(slot.tape, scale, output_grad(slot, n), input_grad(slot, n), std::move(ready));
          break;
        }
        case Op::send_gradient:
          slot.gradient_sent = comm::isend(pipe, input_grad(slot, n), previous, gradient_tag(in.micro_batch));
          break;
      }
    }
    buckets_.finish();
    for (Slot& slot : slots_) {
      slot.activation_sent.wait();
      slot.gradient_sent.wait();
    }
    optimizer_.step(net_.parameters(), net_.gradients());
    average_buffers();
    return {comm::allreduce_value(grid_.world(), last ? loss_sum : 0.0), global};
  }

  /// Test accuracy: each replica streams its shard of the test set through its pipeline.
  double evaluate() {
    trace::Region region("hpf::StageEngine::evaluate");
    const std::size_t total = data_.test.size();
    if (total == 0) return NAN;
    const std::size_t chunk = std::max<std::size_t>(1, options_.eval_batch);
    for (auto& tape : eval_tapes_) {
      if (tape.capacity < chunk) tape = net_.make_tape(chunk);
    }
    const data::Shard mine{grid_.replica(), grid_.replicas()};
    const std::size_t held = mine.size_of(total);
    std::vector<std::size_t> indices;
    std::size_t correct = 0;
    comm::Request sent[2];
    for (std::size_t c = 0, first_local = 0; first_local < held; ++c, first_local += chunk) {
      const std::size_t n = std::min(chunk, held - first_local);
      auto& tape = eval_tapes_[c % 2];
      sent[c % 2].wait();
      indices.resize(n);
      for (std::size_t i = 0; i < n; ++i) indices[i] = (first_local + i) * mine.count + mine.index;
      if constexpr (first) {
        loader_.load_inputs(data_.test, indices, net_, tape);
      } else {
        comm::recv(grid_.pipeline(), net_.input(tape, n), static_cast<int>(grid_.stage()) - 1, evaluation_tag);
      }
      if constexpr (last) loader_.load_labels(data_.test, indices, net_, tape);
      net_.forward(tape, n, Mode::eval);
      if constexpr (last) {
        correct += net_.correct(tape);
      } else {
        sent[c % 2] = comm::isend(grid_.pipeline(), net_.output(tape), static_cast<int>(grid_.stage()) + 1, evaluation_tag);
      }
    }
    for (auto& r : sent) r.wait();
    const auto all = comm::allreduce_value(grid_.world(), static_cast<unsigned long long>(last ? correct : 0));
    return static_cast<double>(all) / static_cast<double>(total);
  }

  network_type& network() { return net_; }
  const ProcessGrid& grid() const { return grid_; }
  /// Micro-batches this stage keeps between forward and backward (its activation slots).
  std::size_t slots() const { return slots_.size(); }

 private:
  struct Slot {
    typename network_type::Tape tape;
    Buffer<T, Space> output_grad, input_grad;
    comm::Request activation_sent, gradient_sent;
  };
  static constexpr int evaluation_tag = 1 << 14;
  static int activation_tag(std::uint32_t m) { return static_cast<int>(2 * (m % (1u << 13))); }
  static int gradient_tag(std::uint32_t m) { return activation_tag(m) + 1; }

  Activation<T, Space> output_grad(const Slot& slot, std::size_t n) const {
    if constexpr (last) {
      return {};
    } else {
      using Out = typename stage_model::output_shape;
      return activation_view(slot.output_grad, Out::channels, n, Out::spatial);
    }
  }
  Activation<T, Space> input_grad(const Slot& slot, std::size_t n) const {
    if constexpr (first) {
      return {};
    } else {
      using In = typename stage_model::input_shape;
      return activation_view(slot.input_grad, In::channels, n, In::spatial);
    }
  }
  /// Index in the program of the last backward with samples: its gradients are final.
  std::size_t last_backward(std::size_t piece) const {
    std::size_t found = program_.size();
    for (std::size_t k = 0; k < program_.size(); ++k) {
      const auto [b, e] = data::split_range(piece, options_.micro_batches, program_[k].micro_batch);
      if (program_[k].op == Op::backward && e > b) found = k;
    }
    return found;
  }
  /// BatchNorm running statistics: the mean over replicas, so every replica holds the same model.
  void average_buffers() {
    if (grid_.replicas() == 1 || net_.buffers().extent(0) == 0) return;
    comm::allreduce(grid_.stage_group(), net_.buffers());
    detail::scale(net_.space(), net_.buffers(), T(1) / static_cast<T>(grid_.replicas()), "hpf::StageEngine::average_buffers");
  }

  const ProcessGrid& grid_;
  TrainOptions options_;
  const data::TrainTest& data_;
  data::Sampler sampler_;
  std::vector<Instruction> program_;
  network_type net_;
  Optimizer<T, Space> optimizer_;
  GradientBuckets<T, Space> buckets_;
  std::vector<Slot> slots_;
  typename network_type::Tape eval_tapes_[2];
  BatchLoader<T, Space> loader_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_STAGE_ENGINE_HPP
