// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_STAGE_ENGINE_HPP
#define HPF_PARALLEL_STAGE_ENGINE_HPP

#include <hpf/comm/error.hpp>
#include <hpf/parallel/batch_loader.hpp>
#include <hpf/data/dataset.hpp>
#include <hpf/data/sampler.hpp>
#include <hpf/meta/type_name.hpp>
#include <hpf/model/any_network.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/spatial_split.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/parallel/receive_posting.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/parallel/thread_groups.hpp>
#include <hpf/tensor/finite.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf {

/// Loss summed over the samples of one global mini-batch, and how many there were.
struct StepResult {
  double loss_sum = 0;
  std::size_t samples = 0;
  /// The step changed nothing: its loss or gradients were not finite (NonFinitePolicy::skip).
  bool skipped = false;
};

/// A step's loss or gradients were not finite, under NonFinitePolicy::stop. Raised alike on
/// every rank (every rank sees the same loss), so all of them stop cleanly.
class NonFiniteError : public comm::UsageError {
 public:
  using comm::UsageError::UsageError;
};

/// An evaluation pass over a data set: mean loss per sample and, for a classifier, the fraction
/// classified correctly (NaN for other losses and for an empty set).
struct Evaluation {
  double loss = NAN;
  double accuracy = NAN;
};

/// Where a network sits in its run: whether it is the first and the last stage of its pipeline
/// (a whole model is both), and what the whole model is.
struct StagePosition {
  bool first = true;
  bool last = true;
  bool classifies = false;  ///< the whole model ends with a classification loss
  std::size_t labels_per_sample = 0;  ///< its labels per sample (1, or one per position)
  std::string model;        ///< type_name of the whole model (checkpoints name it)
};

/// The model a stage belongs to (and the model whose samples a SpatialSplit splits): what
/// checkpoints name, so that every layout of one model reads the others' checkpoints.
template <class StageModel>
struct whole_model {
  using type = StageModel;
  static constexpr bool staged = false;
};
template <class Model, std::size_t Group, std::size_t Held>
struct whole_model<SpatialSplit<Model, Group, Held>> {
  using type = Model;
  static constexpr bool staged = false;
};
template <class Model, class Partition, std::size_t Index>
struct whole_model<Stage<Model, Partition, Index>> {
  using type = typename whole_model<Model>::type;
  static constexpr bool staged = true;
};

/// The StagePosition of a model type: a whole model, or a Stage of one.
template <class StageModel>
StagePosition stage_position() {
  using Model = typename whole_model<StageModel>::type;
  StagePosition p{.classifies = model_classifies_v<Model>, .labels_per_sample = model_label_size_v<Model>,
                  .model = std::string(type_name<Model>())};
  if constexpr (whole_model<StageModel>::staged) {
    p.first = StageModel::is_first;
    p.last = StageModel::is_last;
  }
  return p;
}

/// Throws std::invalid_argument unless the data this stage reads fits it: images of the
/// model's input shape on the first stage (token ids below its vocabulary when it starts with an
/// Embedding), labels below its class count on the last.
inline void check_stage_dataset(const data::Dataset& d, const char* which, const NetworkFacts& net,
                                const StagePosition& position) {
  if (d.size() == 0) return;
  if (position.first && d.has_images() && (d.sample_size() != net.input_whole_size() || d.channels() != net.input_channels)) {
    throw std::invalid_argument(std::string("hpf: the ") + which + " set's samples are " + d.shape_text() +
                                " but the model's input is " + net.input_shape);
  }
  if (position.first && net.input_vocabulary > 0) {
    if (const auto problem = d.token_problem(net.input_vocabulary); !problem.empty()) {
      throw std::invalid_argument(std::string("hpf: the ") + which + " set's " + problem +
                                  ": the model starts with an Embedding of " + std::to_string(net.input_vocabulary) +
                                  " tokens");
    }
  }
  if (!position.last || !d.has_labels()) return;
  const std::string set = std::string("hpf: the ") + which + " set";
  if (net.classifier) {
    if (d.is_regression()) {
      throw std::invalid_argument(set + " has real-valued targets but the model ends with a classification loss");
    }
    if (d.classes() > net.output_channels) {
      throw std::invalid_argument(set + " has " + std::to_string(d.classes()) + " classes but the model outputs " +
                                  std::to_string(net.output_channels));
    }
    if (d.labels_per_sample() != net.label_size) {
      throw std::invalid_argument(set + " has " + std::to_string(d.labels_per_sample()) +
                                  " labels per sample but the model's loss reads " + std::to_string(net.label_size));
    }
  } else {
    if (!d.is_regression()) {
      throw std::invalid_argument(set + " has class labels but the model ends with a regression loss");
    }
    if (d.target_size() != net.target_size) {
      throw std::invalid_argument(set + " has " + std::to_string(d.target_size()) + " targets per sample but the model predicts " +
                                  std::to_string(net.target_size));
    }
  }
}

/// Throws std::invalid_argument unless the training set holds at least one global batch and
/// both sets fit this stage (check_stage_dataset).
inline void check_stage_datasets(const data::Dataset& train, const data::Dataset* test, const StepOptions& options,
                                 const NetworkFacts& net, const StagePosition& position) {
  if (train.size() < options.batch) {
    throw std::invalid_argument("hpf: the training set has " + std::to_string(train.size()) +
                                " samples, fewer than one global batch of " + std::to_string(options.batch));
  }
  check_stage_dataset(train, "training", net, position);
  if (test) check_stage_dataset(*test, "test", net, position);
}

/// \brief The one implementation of a training step: a network of one stage of one replica (or
/// the whole model), talking to the rest of the run through Links.
///
/// Each step runs the stage's schedule program (forwards, backwards, sends and receives of
/// micro-batches) for each data shard this process trains on, reduces parameter gradients among
/// replicas (in buckets while backward runs, with MpiLinks), updates the parameters and leaves
/// every replica with replica 0's buffers. Links is MpiLinks for a rank of hpf::fit and
/// LocalLinks for hpf::Trainer, which is the 1-stage case standing in for any number of
/// replicas: the same code runs in both, so one process reproduces any layout bit for bit under
/// the ordered reduction.
///
/// The network comes as an AnyNetwork: the engine is compiled once per scalar type, execution
/// space and Links, whatever the model and its stages.
template <class T, class Space, class Links>
class StageEngine {
 public:
  using network_type = AnyNetwork<T, Space>;
  using links_type = Links;

  /// \param net this stage's network (make_stage_engine makes a NetworkHolder of the stage's model)
  /// \param position where it sits (stage_position<StageModel>())
  /// \param train the training set (its sampler spans the whole set; this process reads the
  ///        samples of its shards)
  /// \param test the evaluation set of evaluate(), or null
  StageEngine(std::unique_ptr<network_type> net, StagePosition position, const typename Links::Placement& placement,
              const StepOptions& options, const data::Dataset& train, const data::Dataset* test)
      : options_(checked(options, Links::replicas_of(placement))), train_(train), test_(test),
        position_(std::move(position)), net_(std::move(net)),
        optimizer_(net_->parameters().extent(0), options.optimizer),
        links_(placement, net_->gradients(), net_->buffers(), options),
        sampler_(train.size(), options.batch, links_.replicas(), options.data_seed),
        program_(stage_program(options.schedule, links_.stages(), links_.stage(), options.micro_batches)) {
    check_stage_datasets(train, test, options, net_->facts(), position_);
    const std::size_t groups = std::min(links_.shards().size(), thread_groups_available<Space>());
    if (links_.shards_side_by_side() && groups > 1) {
      // Made on the threads that will run them: oneDNN fits its primitives to the threads of
      // the caller that makes them.
      workers_.resize(groups);
      run_on_thread_groups<Space>(groups, [&](std::size_t w) {
        workers_[w].net = net_->sharing_parameters();
        workers_[w].slots = make_slots(*workers_[w].net);
      });
    }
    if (workers_.empty()) slots_ = make_slots(*net_);
  }

  std::size_t steps_per_epoch() const { return sampler_.steps_per_epoch(); }

  /// One optimizer step on global batch `step` of `epoch`; the loss is the global one.
  StepResult step(std::size_t epoch, std::size_t step) {
    trace::Region region("hpf::StageEngine::step");
    const trace::Span span(trace::Track::compute, "step", stage_tags());
    const std::size_t global = sampler_.batch_size(step);
    if (options_.non_finite == NonFinitePolicy::skip) {
      ensure_capacity(buffers_before_, net_->buffers().extent(0), "hpf::StageEngine::buffers_before");
      Kokkos::deep_copy(buffers_before_, net_->buffers());
    }
    const T scale = T(1) / static_cast<T>(global);
    {
      const trace::Span zeroing(trace::Track::compute, "zero grad", stage_tags());
      net_->zero_grad();
    }
    // Dropout's masks follow the step and each sample's global index: every layout draws alike.
    const std::uint64_t key = (static_cast<std::uint64_t>(epoch) << 32) | static_cast<std::uint64_t>(step);
    net_->set_step(key);
    for (ShardWorker& worker : workers_) worker.net->set_step(key);
    links_.begin_step();
    const auto shards = links_.shards();
    shard_losses_.assign(shards.size(), 0.0);
    if (!workers_.empty() && thread_groups_available<Space>() >= workers_.size()) {
      run_shards_side_by_side(epoch, step, shards, scale);
    } else {
      if (slots_.empty()) slots_ = make_slots(*net_);  // shards side by side, but not now (a Kokkos tool)
      for (std::size_t k = 0; k < shards.size(); ++k) {
        const std::vector<std::size_t> piece = sampler_.piece(epoch, step, shards[k]);
        shard_losses_[k] = run_program(piece, scale, *net_, slots_, loader_);
        links_.shard_done(k);
      }
    }
    links_.finish_gradients();
    for (Slot& slot : slots_) {
      trace::wait(slot.activation_sent, "send activation", stage_tags());
      trace::wait(slot.gradient_sent, "send gradient", stage_tags());
    }
    // The loss is the same on every rank, and NaN on every rank when any rank's gradients are not
    // finite: all ranks decide alike whether to update.
    bool gradients_finite = true;
    {
      const trace::Span checking(trace::Track::compute, "check gradients", stage_tags());  // one pass over them
      gradients_finite = count_non_finite(net_->gradients()) == 0;
    }
    const double loss = links_.total_loss(shard_losses_, position_.last, gradients_finite);
    if (loss - loss != 0.0) {
      if (options_.non_finite == NonFinitePolicy::stop) stop_on_non_finite(epoch, step);
      Kokkos::deep_copy(net_->buffers(), buffers_before_);  // the step's BatchNorm statistics go too
      return {loss, global, true};
    }
    {
      const trace::Span updating(trace::Track::compute, "optimizer", stage_tags());
      optimizer_.step(net_->parameters(), net_->gradients());
    }
    links_.share_buffers();
    return {loss, global};
  }

  /// The test set's evaluation (NaNs without one).
  Evaluation evaluate() { return test_ ? evaluate(*test_) : Evaluation{}; }

  /// Streams `dataset` (this process's shard of it) through the model in evaluation mode: each
  /// replica its share, through its pipeline. Collective over the run.
  Evaluation evaluate(const data::Dataset& dataset) {
    trace::Region region("hpf::StageEngine::evaluate");
    const trace::Span span(trace::Track::compute, "evaluate", stage_tags());
    const std::size_t total = dataset.size();
    if (total == 0) return {};
    const std::size_t chunk = options_.eval_batch;
    for (auto& tape : eval_tapes_) {
      if (!tape || tape->capacity() < chunk) tape = net_->make_tape(chunk);
    }
    const data::Shard mine = links_.evaluation_shard();
    const std::size_t held = mine.size_of(total);
    std::vector<std::size_t> indices;
    std::size_t correct = 0;
    double loss = 0;
    typename Links::request sent[2];
    for (std::size_t c = 0, first_local = 0; first_local < held; ++c, first_local += chunk) {
      const std::size_t n = std::min(chunk, held - first_local);
      auto& tape = *eval_tapes_[c % 2];
      sent[c % 2].wait();
      indices.resize(n);
      for (std::size_t i = 0; i < n; ++i) indices[i] = (first_local + i) * mine.count + mine.index;
      if (position_.first) {
        loader_.load_inputs(dataset, indices, net_->input(tape, n), net_->input_positions());
      } else {
        const trace::Blocking receiving(trace::Track::receive, "receive activation", stage_tags());
        receive_from_previous(net_->input(tape, n), evaluation_tag).wait();
      }
      if (position_.last) loader_.load_targets(dataset, indices, *net_, tape);
      net_->forward(tape, n, Mode::eval, {});
      if (position_.last) {
        if (net_->facts().classifier) correct += net_->correct(tape);
        loss += static_cast<double>(net_->loss_sum(tape));
      } else {
        sent[c % 2] = send_to_next(net_->output(tape), evaluation_tag);
      }
    }
    for (auto& r : sent) r.wait();
    const auto [loss_sum, correct_sum] = links_.total_evaluation(loss, correct, position_.last);
    Evaluation e;
    e.loss = loss_sum / static_cast<double>(total);
    if (position_.classifies) {
      e.accuracy = static_cast<double>(correct_sum) / static_cast<double>(total * position_.labels_per_sample);
    }
    return e;
  }

  network_type& network() { return *net_; }
  const network_type& network() const { return *net_; }
  const Optimizer<T, Space>& optimizer() const { return optimizer_; }
  Optimizer<T, Space>& optimizer() { return optimizer_; }
  const Links& links() const { return links_; }
  const StagePosition& position() const { return position_; }
  const StepOptions& options() const { return options_; }
  /// Micro-batches this stage keeps between forward and backward (its activation slots).
  std::size_t slots() const { return slot_count_; }
  /// Data shards trained side by side, one per thread (TrainOptions::shards_side_by_side); 0 when
  /// they train one after another.
  std::size_t shard_threads() const { return workers_.size(); }

 private:
  struct Slot {
    std::unique_ptr<typename network_type::Tape> tape;
    Buffer<T, Space> output_grad, input_grad;
    typename Links::request activation_sent, gradient_sent;
  };
  static constexpr int evaluation_tag = 1 << 14;
  static int activation_tag(std::uint32_t m) { return static_cast<int>(2 * (m % (1u << 13))); }
  static int gradient_tag(std::uint32_t m) { return activation_tag(m) + 1; }

  /// A data shard's own network (on net_'s parameters), activation slots and loader, when shards
  /// train side by side.
  struct ShardWorker {
    std::unique_ptr<network_type> net;
    std::vector<Slot> slots;
    BatchLoader<T, Space> loader;
  };

  /// Activation slots of `net` for this stage's micro-batches.
  std::vector<Slot> make_slots(network_type& net) const {
    std::vector<Slot> slots(slot_count_);
    for (Slot& slot : slots) {
      slot.tape = net.make_tape(slot_capacity_);
      if (!position_.last) {
        slot.output_grad = Buffer<T, Space>("hpf::StageEngine::output_grad", net.facts().output_size() * slot_capacity_);
      }
      if (!position_.first) {
        slot.input_grad = Buffer<T, Space>("hpf::StageEngine::input_grad", net.facts().input_size() * slot_capacity_);
      }
    }
    return slots;
  }

  /// The shards of a step side by side: worker w trains shards w, w + W, ... on thread w, each
  /// from zero gradients and replica 0's buffers (net_'s, as every replica starts a step), and
  /// parks it with the links, which add the shards in their fixed tree afterwards: the bits of
  /// the shards one after another.
  void run_shards_side_by_side(std::size_t epoch, std::size_t step, std::span<const std::size_t> shards, T scale) {
    std::vector<std::vector<std::size_t>> pieces;  // the sampler is not for several threads
    for (const std::size_t shard : shards) pieces.push_back(sampler_.piece(epoch, step, shard));
    run_on_thread_groups<Space>(workers_.size(), [&](std::size_t w) {
      ShardWorker& worker = workers_[w];
      for (std::size_t k = w; k < shards.size(); k += workers_.size()) {
        worker.net->zero_grad();
        Kokkos::deep_copy(worker.net->buffers(), net_->buffers());
        shard_losses_[k] = run_program(pieces[k], scale, *worker.net, worker.slots, worker.loader);
        links_.shard_done(k, worker.net->gradients(), worker.net->buffers());
      }
    });
  }

  /// This stage's program for one shard's piece of the step, on `net` with its `slots`; returns
  /// the piece's loss sum (on the last stage), added micro-batch by micro-batch in order.
  double run_program(const std::vector<std::size_t>& piece, T scale, network_type& net, std::vector<Slot>& slots,
                     BatchLoader<T, Space>& loader) {
    const std::size_t final_backward = last_backward(piece.size());
    double loss_sum = 0;
    // This step's receives, by program index, posted ahead of their instructions (ReceivePosting).
    // Local: should the step fail, they are dropped while the exception unwinds, not waited for.
    std::vector<typename Links::request> received(program_.size());
    std::size_t ran = 0;                   // instructions [0, ran) have run
    ReceiveCursor receives(receive_posting_);
    // `between_passes`: not from inside a forward or backward pass, whose span holds the time. Only
    // inside one does it test the receive in flight: MPI's progress there may copy a message.
    const auto post_receives = [&](bool between_passes) {
      receives.advance(
          ran, [&](std::size_t k) { return between_passes ? received[k].done() : completed(received[k]); },
          [&](std::size_t k) {
            const Instruction in = program_[k];
            const auto [begin, end] = data::split_range(piece.size(), options_.micro_batches, in.micro_batch);
            if (end == begin) return;  // nothing to receive: received[k] stays done
            Slot& slot = slots[in.micro_batch % slots.size()];
            const bool activation = in.op == Op::recv_activation;
            // Posting copies a message that has arrived already (a single-copy transport): the time
            // goes on the wait row, as the receive's blocked time does.
            std::optional<trace::Span> posting;
            if (between_passes) {
              posting.emplace(trace::Track::wait, activation ? "receive activation" : "receive gradient",
                              micro_batch_tags(in.micro_batch));
            }
            received[k] = activation ? receive_from_previous(net.input(*slot.tape, end - begin), activation_tag(in.micro_batch))
                                     : receive_from_next(output_grad(net, slot, end - begin), gradient_tag(in.micro_batch));
          });
    };
    const std::function<void()> progress = progress_messages(post_receives);
    for (std::size_t k = 0; k < program_.size(); ran = ++k) {
      post_receives(true);
      const Instruction in = program_[k];
      const auto [begin, end] = data::split_range(piece.size(), options_.micro_batches, in.micro_batch);
      const std::size_t n = end - begin;
      if (n == 0) continue;  // a short last batch: every stage of this replica skips the same ones
      Slot& slot = slots[in.micro_batch % slots.size()];
      auto& tape = *slot.tape;
      const std::span<const std::size_t> samples(piece.data() + begin, n);
      const trace::Tags tags = micro_batch_tags(in.micro_batch);
      switch (in.op) {
        case Op::recv_activation: {
          const trace::Blocking receiving(trace::Track::receive, "receive activation", with_bytes(tags, net.input(tape, n)));
          received[k].wait();
          break;
        }
        case Op::forward:
          trace::wait(slot.activation_sent, "send activation", tags);  // its buffer is about to be rewritten
          {
            const trace::Span loading(trace::Track::compute, "load", tags);
            if (position_.first) loader.load_inputs(train_, samples, net.input(tape, n), net.input_positions());
            if (position_.last) loader.load_targets(train_, samples, net, tape);
            net.set_samples(tape, samples);
          }
          {
            const trace::Span computing(trace::Track::compute, "forward", tags);
            net.forward(tape, n, Mode::train, progress);
            if (position_.last) loss_sum += static_cast<double>(net.loss_sum(tape));
          }
          break;
        case Op::send_activation:
          if constexpr (pipelined) {
            const auto output = net.output(tape);
            auto sending = trace::Pending::open(trace::Track::send, "send activation", with_bytes(tags, output));
            slot.activation_sent = links_.send_to_next(output, activation_tag(in.micro_batch));
            slot.activation_sent.trace_until_complete(std::move(sending));
          } else {
            no_pipeline();
          }
          break;
        case Op::recv_gradient: {
          const trace::Blocking receiving(trace::Track::receive, "receive gradient", with_bytes(tags, output_grad(net, slot, n)));
          received[k].wait();
          break;
        }
        case Op::backward: {
          trace::wait(slot.gradient_sent, "send gradient", tags);
          const trace::Span computing(trace::Track::compute, "backward", tags);
          std::function<void(std::size_t)> ready = k == final_backward ? links_.gradients_ready() : nullptr;
          if (progress) {
            ready = [ready = std::move(ready), progress](std::size_t offset) {
              if (ready) ready(offset);
              progress();
            };
          }
          net.backward(tape, scale, output_grad(net, slot, n), input_grad(net, slot, n), std::move(ready));
          break;
        }
        case Op::send_gradient:
          if constexpr (pipelined) {
            const auto gradient = input_grad(net, slot, n);
            auto sending = trace::Pending::open(trace::Track::send, "send gradient", with_bytes(tags, gradient));
            slot.gradient_sent = links_.send_to_previous(gradient, gradient_tag(in.micro_batch));
            slot.gradient_sent.trace_until_complete(std::move(sending));
          } else {
            no_pipeline();
          }
          break;
      }
    }
    return loss_sum;
  }

  /// Between layers: tests this stage's sends in flight, and its receives through
  /// `post_receives`, which tests the one in flight per direction and posts the next. Some
  /// transports (TCP without a progress thread) move a large message only while its sender and its
  /// receiver are inside MPI; without this a stage's activations would wait for its next receive
  /// instead of travelling while it computes.
  template <class PostReceives>
  std::function<void()> progress_messages(const PostReceives& post_receives) {
    if constexpr (requires(typename Links::request r) { r.test(); }) {
      if (links_.stages() > 1) {
        return [this, &post_receives] {
          for (Slot& slot : slots_) {
            slot.activation_sent.test();
            slot.gradient_sent.test();
          }
          post_receives(false);
        };
      }
    }
    return {};
  }
  /// Whether `r` has completed, advancing it where the links' requests can (MpiLinks').
  static bool completed(typename Links::request& r) {
    if constexpr (requires { r.test(); }) {
      return r.test();
    } else {
      return r.done();
    }
  }

  /// Finds where the values first went bad on this rank, agrees on the first finding in rank
  /// order (replica 0's stages first) and throws NonFiniteError with it on every rank.
  [[noreturn]] void stop_on_non_finite(std::size_t epoch, std::size_t step) {
    std::string finding;
    for (const TensorInfo& info : net_->tensors()) {
      if (info.kind == TensorKind::parameter &&
          count_non_finite(net_->parameters().data() + info.offset, info.size, net_->space()) > 0) {
        finding = "parameter '" + info.name + "' holds non-finite values (an earlier update diverged: a smaller learning rate may help)";
        break;
      }
    }
    const auto diagnose = [&](network_type& net, std::vector<Slot>& slots) {
      for (Slot& slot : slots) {
        const std::size_t n = slot.tape->batch();
        if (!finding.empty() || n == 0) continue;
        if (count_non_finite(net.input(*slot.tape, n)) > 0) {
          finding = position_.first ? "the training data hold non-finite values" : "its input from the previous stage is not finite";
        } else if (const auto layer = net.first_non_finite_layer(*slot.tape, n)) {
          finding = "layer " + std::to_string(layer->layer) + " (" + layer->kind + ") produced non-finite values from finite inputs";
        }
      }
    };
    diagnose(*net_, slots_);
    for (ShardWorker& worker : workers_) diagnose(*worker.net, worker.slots);
    if (finding.empty() && count_non_finite(net_->gradients()) > 0) {
      const auto& tensors = net_->tensors();
      for (auto info = tensors.rbegin(); info != tensors.rend(); ++info) {  // backward's order
        if (info->kind == TensorKind::parameter &&
            count_non_finite(net_->gradients().data() + info->offset, info->size, net_->space()) > 0) {
          finding = "the gradient of '" + info->name + "' is the first to be non-finite in backward";
          break;
        }
      }
    }
    if (!finding.empty()) finding = "on stage " + std::to_string(links_.stage()) + ", " + finding;
    std::string first_finding;
    for (const std::string& part : links_.gather_on_first(finding)) {
      if (first_finding.empty()) first_finding = part;
    }
    first_finding = links_.share_from_first(first_finding);
    if (first_finding.empty()) first_finding = "every layer's output is finite: the loss of the targets is not (check the targets)";
    throw NonFiniteError("hpf: the loss or its gradients are not finite at epoch " + std::to_string(epoch) + ", step " +
                         std::to_string(step) + ": " + first_finding +
                         "; StepOptions::non_finite = NonFinitePolicy::skip skips such steps instead");
  }

  trace::Tags stage_tags() const { return {.stage = static_cast<std::int32_t>(links_.stage())}; }
  trace::Tags micro_batch_tags(std::uint32_t m) const {
    return {.stage = static_cast<std::int32_t>(links_.stage()), .micro_batch = static_cast<std::int32_t>(m)};
  }
  template <class View>
  trace::Tags with_bytes(trace::Tags tags, const View& v) const {
    tags.bytes = static_cast<std::int64_t>(v.size() * message_element_bytes());
    return tags;
  }

  Activation<T, Space> output_grad(const network_type& net, const Slot& slot, std::size_t n) const {
    if (position_.last) return {};
    return activation_view(slot.output_grad, net.facts().output_channels, n, net.facts().output_spatial);
  }
  Activation<T, Space> input_grad(const network_type& net, const Slot& slot, std::size_t n) const {
    if (position_.first) return {};
    return activation_view(slot.input_grad, net.facts().input_channels, n, net.facts().input_spatial);
  }

  // Messages between stages. Links for one process (LocalLinks) have none: their single stage's
  // program holds no sends or receives.
  static constexpr bool pipelined = requires(const Links& links, Activation<T, Space> a) { links.send_to_next(a, 0); };
  template <class View>
  typename Links::request receive_from_previous(const View& v, int tag) const {
    if constexpr (pipelined) return links_.receive_from_previous(v, tag); else no_pipeline();
  }
  template <class View>
  typename Links::request receive_from_next(const View& v, int tag) const {
    if constexpr (pipelined) return links_.receive_from_next(v, tag); else no_pipeline();
  }
  template <class View>
  typename Links::request send_to_next(const View& v, int tag) const {
    if constexpr (pipelined) return links_.send_to_next(v, tag); else no_pipeline();
  }
  /// Bytes per element of a message between stages (StepOptions::stage_precision).
  std::size_t message_element_bytes() const {
    if constexpr (pipelined) return links_.stage_element_bytes(); else return sizeof(T);
  }
  [[noreturn]] static void no_pipeline() {
    throw std::logic_error("hpf::StageEngine: a pipeline message on links of a single stage");
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
  static const StepOptions& checked(const StepOptions& options, std::size_t replicas) {
    check_step_options(options, replicas, "hpf");
    check_exchange_precision<T>(options, "hpf");
    return options;
  }

 private:
  StepOptions options_;
  const data::Dataset& train_;
  const data::Dataset* test_;
  StagePosition position_;
  std::unique_ptr<network_type> net_;
  Optimizer<T, Space> optimizer_;
  Links links_;
  data::Sampler sampler_;
  std::vector<Instruction> program_;
  std::size_t slot_count_ = slots_needed(options_.schedule, links_.stages(), links_.stage(), options_.micro_batches);
  std::size_t slot_capacity_ = (sampler_.local_batch() + options_.micro_batches - 1) / options_.micro_batches;
  ReceivePosting receive_posting_ = receive_posting(program_, slot_count_);
  std::vector<Slot> slots_;  ///< net_'s (none while shards train side by side)
  std::vector<ShardWorker> workers_;
  std::vector<double> shard_losses_;
  std::unique_ptr<typename network_type::Tape> eval_tapes_[2];
  Buffer<T, Space> buffers_before_;  ///< the buffers at the start of a step (NonFinitePolicy::skip)
  BatchLoader<T, Space> loader_;
};

/// A StageEngine running StageModel (a whole model, or a Stage of one) on a network of its own.
template <class StageModel, class T, class Space, class Links>
StageEngine<T, Space, Links> make_stage_engine(const typename Links::Placement& placement, const StepOptions& options,
                                               const data::Dataset& train, const data::Dataset* test) {
  return StageEngine<T, Space, Links>(std::make_unique<NetworkHolder<StageModel, T, Space>>(options.network),
                                      stage_position<StageModel>(), placement, options, train, test);
}

}  // namespace hpf

#endif  // HPF_PARALLEL_STAGE_ENGINE_HPP
