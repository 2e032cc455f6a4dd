// Parallel training must reproduce single-process training: test support (MPI tests only).
#ifndef HPF_TESTS_SUPPORT_EQUIVALENCE_HPP
#define HPF_TESTS_SUPPORT_EQUIVALENCE_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/train/trainer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpf_test {

/// How a parallel run is compared with the single-process one.
struct Expectation {
  std::size_t steps = 0;   ///< optimizer steps the run must take
  double tolerance = 0;    ///< 0: the same bits; otherwise the largest relative difference allowed
};

/// Differences between a parallel run and the single-process run over the same pieces.
struct Comparison {
  std::size_t steps = 0;
  std::size_t tensors = 0;            ///< tensors compared, over all ranks
  std::size_t expected_tensors = 0;   ///< replicas x tensors of the whole model
  std::size_t different_losses = 0;   ///< steps whose loss differs in any bit
  std::size_t different_values = 0;   ///< parameter and buffer elements that differ in any bit, over all ranks
  double worst_loss = 0;              ///< max over steps of |loss - reference| / |reference|
  double worst_parameter = 0;         ///< max over tensors of max|w - reference| / max|reference|
  double worst_buffer = 0;            ///< the same for buffers (BatchNorm running statistics)
  std::string first_difference;       ///< the first tensor that differs on rank 0 (if any)
};

/// Every value of `values` on rank 0, on every rank of `world` (the size travels first). Through
/// hpf::comm::broadcast, whose wait sleeps after a millisecond: on a machine with fewer cores than
/// ranks the others leave the cores to rank 0, which computes the reference meanwhile (MPI_Bcast
/// would poll for all of that time).
template <class V>
void broadcast_vector(const hpf::comm::Communicator& world, std::vector<V>& values) {
  using Host = Kokkos::View<V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Size = Kokkos::View<unsigned long long*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const hpf::comm::WaitFor what{.what = "the single-process reference"};
  unsigned long long size = values.size();
  hpf::comm::broadcast(world, Size(&size, 1), 0, what);
  values.resize(size);
  hpf::comm::broadcast(world, Host(values.data(), size), 0, what);
}

inline double relative(double difference, double scale) { return difference / std::max(scale, 1e-300); }

/// What a layout is compared with: the single-process run over the same pieces, on every rank,
/// in precision P (float, double or hpf::Mixed<hpf::bf16>).
template <class P>
struct Reference {
  std::vector<double> losses;                                 ///< every step's loss
  std::vector<hpf::storage_t<P>> parameters, buffers;  ///< the whole model's, at the end
};

/// The precisions a layout is checked in unless a test names others.
template <class... P>
struct Precisions {};
using FullPrecisions = Precisions<double, float>;

/// Leaves the single-process trainer as it was made.
struct AsMade {
  template <class Trainer>
  void operator()(Trainer&) const {}
};

/// The single-process run of Model over the pieces of `replicas` replicas (data_shards = replicas
/// x shards_per_replica, same micro-batches), trained on rank 0 and broadcast to every rank;
/// `prepare(trainer)` runs before training (to start from another model's weights).
template <class Model, class P, class Prepare = AsMade>
Reference<P> single_process_reference(const hpf::comm::Communicator& world, hpf::TrainOptions options,
                                      const hpf::DataSource& source, std::size_t replicas, const Prepare& prepare = {}) {
  options.progress = hpf::ProgressMode::none;
  options.evaluate = false;
  Reference<P> r;
  std::vector<char> error;  // rank 0's exception, so that every rank fails with it instead of waiting
  if (world.rank() == 0) {
    try {
      options.data_shards = replicas * options.shards_per_replica;
      const auto data = source(hpf::data::Shard{});
      hpf::Trainer<Model, P> trainer(options, data.train);
      prepare(trainer);
      r.losses = trainer.fit().step_losses;
      auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().parameters());
      auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().buffers());
      r.parameters.assign(p.data(), p.data() + p.size());
      r.buffers.assign(b.data(), b.data() + b.size());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      error.assign(what.begin(), what.end());
    }
  }
  broadcast_vector(world, error);
  if (!error.empty()) throw std::runtime_error("the single-process reference failed: " + std::string(error.begin(), error.end()));
  broadcast_vector(world, r.losses);
  broadcast_vector(world, r.parameters);
  broadcast_vector(world, r.buffers);
  return r;
}

/// Processes of one replica of Strategy: its stages x its layer split's group.
template <class Model, class Strategy>
constexpr std::size_t processes_per_replica = hpf::stage_count_v<Model, typename Strategy::partition> * Strategy::split.ranks();

/// Replicas of Strategy on `world`.
template <class Model, class Strategy>
std::size_t replicas_of(const hpf::comm::Communicator& world) {
  return static_cast<std::size_t>(world.size()) / processes_per_replica<Model, Strategy>;
}

/// The model of Strategy's single-process reference: Model, or under Spatial<G> the model on
/// every member's slabs (one process computes each member's part, as for the other splits).
template <class Model, class Strategy>
using reference_model_t = std::conditional_t<Strategy::split.kind == hpf::SplitKind::spatial && Strategy::split.splits(),
                                             hpf::SpatialSplit<Model, Strategy::split.group>, Model>;

/// The options of Strategy's single-process reference: its layer split (one process computes
/// every member's part), and its shards side by side only where the layout trains them so (one
/// stage, no split). A pipeline's ranks train their shards in turn with the BLAS on all their
/// threads, which may round differently from one thread per shard (README, "One engine":
/// OpenBLAS 0.3.21's DGEMM does on an AMD Zen 4), so its reference does too.
template <class Model, class Strategy>
hpf::TrainOptions reference_options(hpf::TrainOptions options) {
  if (processes_per_replica<Model, Strategy> > 1) options.shards_side_by_side = false;
  options.network.split = Strategy::split;
  return options;
}

/// Trains Model with Strategy on `world` and compares every step's loss and, on every rank, every
/// tensor of its stage with the reference tensor of the same name, bit for bit. The reference is
/// single_process_reference's unless `given` (one run serves several schedules: one process has
/// one stage, where both schedules run the same additions in the same order).
template <class Model, class Strategy, class P>
Comparison compare_with_single_process(const hpf::comm::Communicator& world, hpf::TrainOptions options,
                                       const hpf::DataSource& source, const Reference<P>* given = nullptr) {
  using T = hpf::storage_t<P>;
  const std::size_t replicas = replicas_of<Model, Strategy>(world);
  options.progress = hpf::ProgressMode::none;
  options.evaluate = false;
  std::optional<Reference<P>> computed;
  if (!given) {
    computed = single_process_reference<reference_model_t<Model, Strategy>, P>(world, reference_options<Model, Strategy>(options), source, replicas);
  }
  const Reference<P>& single = given ? *given : *computed;
  hpf::Network<Model, T> layout(options.network);  // names -> offsets of the whole model

  Comparison c;
  unsigned long long tensors = 0, different = 0;
  const auto report = hpf::fit<Model, Strategy, P>(world, options, source, [&](auto& net, const hpf::ProcessGrid&) {
    for (const auto& t : net.tensors()) {
      const auto& ref = layout.tensor(t.name);
      REQUIRE(ref.size == t.size);
      const auto& reference = t.kind == hpf::TensorKind::parameter ? single.parameters : single.buffers;
      const auto got = net.read(t);
      double difference = 0, scale = 0;
      std::size_t differing = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const T expected = reference[ref.offset + i];
        if (std::memcmp(&got[i], &expected, sizeof(T)) != 0) ++differing;
        difference = std::max(difference, std::abs(double(got[i]) - double(expected)));
        scale = std::max(scale, std::abs(double(expected)));
      }
      double& worst = t.kind == hpf::TensorKind::parameter ? c.worst_parameter : c.worst_buffer;
      worst = std::max(worst, relative(difference, scale));
      if (differing && c.first_difference.empty()) {
        c.first_difference = t.name + " (" + std::to_string(differing) + " of " + std::to_string(got.size()) + " elements)";
      }
      different += differing;
      ++tensors;
    }
  });
  c.steps = report.step_losses.size();
  const auto& losses = single.losses;
  for (std::size_t s = 0; s < std::min(losses.size(), c.steps); ++s) {
    if (std::memcmp(&report.step_losses[s], &losses[s], sizeof(double)) != 0) ++c.different_losses;
    c.worst_loss = std::max(c.worst_loss, relative(std::abs(report.step_losses[s] - losses[s]), std::abs(losses[s])));
  }
  if (losses.size() != c.steps) c.different_losses += std::max(losses.size(), c.steps) - std::min(losses.size(), c.steps);
  c.tensors = hpf::comm::allreduce_value(world, tensors);
  c.expected_tensors = replicas * Strategy::split.ranks() * layout.tensors().size();
  c.different_values = hpf::comm::allreduce_value(world, different);
  c.worst_parameter = hpf::comm::allreduce_value(world, c.worst_parameter, MPI_MAX);
  c.worst_buffer = hpf::comm::allreduce_value(world, c.worst_buffer, MPI_MAX);
  return c;
}

/// Runs Strategy on the world and checks it against one process (its run here, or `given`):
/// every step's loss, every parameter and every buffer the same bits (or within
/// `expected.tolerance`). The world size must fit the strategy: a test picks the layouts for its
/// rank count (see layouts_run).
template <class Model, class Strategy, class P>
void check_strategy(const hpf::TrainOptions& options, const hpf::DataSource& source, const Expectation& expected,
                    const Reference<P>* given = nullptr) {
  hpf::comm::Communicator world;
  constexpr std::size_t stages = hpf::stage_count_v<Model, typename Strategy::partition>;
  constexpr std::size_t per_replica = processes_per_replica<Model, Strategy>;
  REQUIRE_MESSAGE(world.size() % per_replica == 0, world.size(), " ranks do not fit ", stages, " stages x groups of ",
                  Strategy::split.ranks());
  const std::size_t replicas = replicas_of<Model, Strategy>(world);
  const auto c = compare_with_single_process<Model, Strategy, P>(world, options, source, given);
  INFO(stages, " stage(s) x ", replicas, " replica(s) x ", options.shards_per_replica, " shard(s), layer split: ",
       Strategy::split.describe(),
       std::string(options.shards_side_by_side ? " side by side, " : ", "),
       std::string(hpf::to_string(options.schedule)), ", ",
       std::string(hpf::to_string(options.reduction)), ", ", std::string(hpf::type_name<P>()), ": ", c.different_losses,
       " step losses and ", c.different_values, " values differ (first: ", c.first_difference,
       "); worst relative difference: loss ", c.worst_loss, ", parameters ", c.worst_parameter, ", buffers ",
       c.worst_buffer);
  CHECK(c.steps == expected.steps);
  CHECK(c.tensors == c.expected_tensors);
  CHECK(c.expected_tensors > 0);
  if (expected.tolerance == 0) {
    CHECK(c.different_losses == 0);
    CHECK(c.different_values == 0);
  } else {
    CHECK(c.worst_loss <= expected.tolerance);
    CHECK(c.worst_parameter <= expected.tolerance);
    CHECK(c.worst_buffer <= expected.tolerance);
  }
}

/// Both schedules, each precision (double and float unless named), the same bits as one process
/// (ordered reduction); one single-process run per precision serves both schedules.
template <class Model, class Strategy, class Checked = FullPrecisions>
void check_strategy_all(hpf::TrainOptions options, const hpf::DataSource& source, std::size_t steps, Checked = {}) {
  options.reduction = hpf::GradientReduction::ordered;
  const hpf::comm::Communicator world;
  const auto both_schedules = [&]<class Q>(const Reference<Q>& reference) {
    for (auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
      options.schedule = schedule;
      check_strategy<Model, Strategy, Q>(options, source, {steps, 0}, &reference);
    }
  };
  const std::size_t replicas = replicas_of<Model, Strategy>(world);
  const hpf::TrainOptions reference = reference_options<Model, Strategy>(options);
  [&]<class... P>(Precisions<P...>) {
    (both_schedules(single_process_reference<reference_model_t<Model, Strategy>, P>(world, reference, source, replicas)), ...);
  }(Checked{});
}

/// The number of ranks of the test's world.
inline std::size_t world_size() { return static_cast<std::size_t>(hpf::comm::Communicator{}.size()); }

/// Every layout the world size is registered for, bit for bit against one process: data
/// parallel on any size; with 2 ranks also 2 stages; with 4 also the 2x2 hybrid and 4 stages;
/// with 6 the 2x3 and 3x2 hybrids. A world size with no list fails.
template <class Model, class TwoStages, class ThreeStages, class FourStages, class Checked = FullPrecisions>
void check_every_layout(const hpf::TrainOptions& options, const hpf::DataSource& source, std::size_t steps,
                        Checked precisions = {}) {
  const std::size_t size = world_size();
  if (size != 1 && size != 2 && size != 4 && size != 6) FAIL("no layouts listed for ", size, " ranks");
  check_strategy_all<Model, hpf::DataParallel>(options, source, steps, precisions);
  if (size % 2 == 0) check_strategy_all<Model, TwoStages>(options, source, steps, precisions);
  if (size == 6) check_strategy_all<Model, ThreeStages>(options, source, steps, precisions);
  if (size == 4) check_strategy_all<Model, FourStages>(options, source, steps, precisions);
}

/// The CNN's settings in the equivalence tests: batch 24 in 2 micro-batches, SGD with momentum.
inline hpf::TrainOptions cnn_options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 8;
  o.data_seed = 9;
  return o;
}

/// The sample dims of Model's input shape (images and volumes).
template <class Model>
constexpr hpf::data::SampleDims input_dims() {
  using In = typename Model::input_shape;
  return {.channels = In::channels, .height = In::height, .width = In::width, .depth = In::depth};
}

/// A synthetic training set of `count` samples of Model's input shape (10 classes) as a DataSource.
template <class Model>
hpf::DataSource synthetic_source(std::size_t count) {
  return [count](const hpf::data::Shard& shard) {
    return hpf::data::TrainTest{hpf::data::synthetic_dataset(count, input_dims<Model>(), 10, 5, shard),
                                hpf::data::synthetic_dataset(0, input_dims<Model>(), 10, 6, shard)};
  };
}

/// A synthetic regression set of `count` samples of Model's input shape (targets as many as its
/// output) as a DataSource.
template <class Model>
hpf::DataSource synthetic_regression_source(std::size_t count) {
  constexpr std::size_t outputs = Model::output_shape::size;
  return [count](const hpf::data::Shard& shard) {
    return hpf::data::TrainTest{hpf::data::synthetic_regression(count, input_dims<Model>(), outputs, 5, shard),
                                hpf::data::synthetic_regression(0, input_dims<Model>(), outputs, 6, shard)};
  };
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_EQUIVALENCE_HPP
