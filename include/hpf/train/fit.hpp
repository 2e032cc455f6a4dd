// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_FIT_HPP
#define HPF_TRAIN_FIT_HPP

#include <hpf/comm/agreement.hpp>
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/config.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/data/train_test.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/meta/type_name.hpp>
#include <hpf/oracle/canary.hpp>
#include <hpf/oracle/recommend.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/mpi_layer_group.hpp>
#include <hpf/parallel/mpi_links.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/parallel/stage_engine.hpp>
#include <hpf/parallel/strategy.hpp>
#include <hpf/trace/chrome_trace.hpp>
#include <hpf/train/loop.hpp>
#include <hpf/train/options.hpp>
#include <hpf/train/precision.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace hpf {

/// Loads the part of a training and a test set one process needs (see data::Shard).
using DataSource = std::function<data::TrainTest(const data::Shard&)>;

namespace detail {

/// Calls f(integral_constant<I>) for the I equal to `index` (< N): a run-time stage number to the
/// compile-time stage type.
template <std::size_t N, class F>
void with_index(std::size_t index, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((index == I ? f(std::integral_constant<std::size_t, I>{}) : void()), ...);
  }(std::make_index_sequence<N>{});
}

/// The program's types, by name (run_facts).
struct ProgramTypes {
  std::string_view model, strategy, scalar, space;
};

/// What every rank must agree on before training together, by name: the program's types, the
/// stage count and every option that shapes the computation or the communication.
inline comm::Facts run_facts(const ProgramTypes& types, const TrainOptions& o, std::size_t stages) {
  auto text = [](auto v) { return std::to_string(v); };
  auto exact = [](double v) {
    char digits[32];
    std::snprintf(digits, sizeof digits, "%.17g", v);
    return std::string(digits);
  };
  return {{"hpf version", HPF_VERSION_STRING},
          {"model", std::string(types.model)},
          {"strategy", std::string(types.strategy)},
          {"scalar type", std::string(types.scalar)},
          {"execution space", std::string(types.space)},
          {"stages", text(stages)},
          {"epochs", text(o.epochs)},
          {"batch", text(o.batch)},
          {"micro_batches", text(o.micro_batches)},
          {"shards_per_replica", text(o.shards_per_replica)},
          {"shards_side_by_side", text(o.shards_side_by_side)},
          {"schedule", to_string(o.schedule)},
          {"bucket_bytes", text(o.bucket_bytes)},
          {"exchange_cost", exact(o.exchange_cost.alpha_s) + " s + " + exact(o.exchange_cost.beta_s_per_byte) + " s/byte"},
          {"exchange_piece_bytes", text(o.exchange_piece_bytes)},
          {"pieces_on_one_host", text(o.pieces_on_one_host)},
          {"reduction", text(static_cast<int>(o.reduction))},
          {"hierarchy", to_string(o.hierarchy)},
          {"exchange precision", to_string(o.exchange_precision)},
          {"stage precision", to_string(o.stage_precision)},
          {"steps_per_epoch", text(o.steps_per_epoch)},
          {"data_seed", text(o.data_seed)},
          {"network seed", text(o.network.seed)},
          {"network init", text(static_cast<int>(o.network.init))},
          {"convolution", text(static_cast<int>(o.network.convolution))},
          {"matmul precision", text(static_cast<int>(o.network.matmul_precision))},
          {"layer split", o.network.split.describe()},
          {"optimizer", describe(o.optimizer)},
          {"evaluate", text(o.evaluate)},
          {"eval_batch", text(o.eval_batch)},
          {"non_finite", o.non_finite == NonFinitePolicy::stop ? "stop" : "skip"},
          {"wait limit (s)", text(o.wait_limit >= 0 ? o.wait_limit : comm::wait_limit())},
          {"checkpoint", o.checkpoint.directory.string() + " every " + text(o.checkpoint.every_steps) + " steps / " +
                             text(o.checkpoint.every_seconds) + " s, at end " + text(o.checkpoint.at_end) + ", keep " +
                             text(o.checkpoint.keep) + ", resume " + text(o.checkpoint.resume) + " " +
                             o.checkpoint.resume_from.string()},
          {"trace", o.trace.enabled() ? o.trace.path + " steps " + text(o.trace.first_step) + "-" + text(o.trace.last_step) +
                                            (o.trace.layers ? " with layers" : "") + " up to " + text(o.trace.max_events)
                                      : "off"}};
}

/// The partitions an oracle-chosen strategy picks among: Auto's Balanced<S> per stage count,
/// AutoAmong's as named.
template <class Strategy, class = void>
struct auto_partitions {
  static constexpr bool value = false;
};
template <class A, std::size_t... I>
type_list<Balanced<A::stages[I]>...> balanced_partitions(std::index_sequence<I...>);  // declared for decltype only
template <std::size_t... Stages>
struct auto_partitions<Auto<Stages...>> {
  static constexpr bool value = true;
  using type = decltype(balanced_partitions<Auto<Stages...>>(std::make_index_sequence<Auto<Stages...>::stages.size()>{}));
};
template <class... Partitions>
struct auto_partitions<AutoAmong<Partitions...>> {
  static_assert(sizeof(AutoAmong<Partitions...>) > 0);  // AutoAmong's own checks
  static constexpr bool value = true;
  using type = type_list<Partitions...>;
};
template <class Strategy>
inline constexpr bool is_auto_v = auto_partitions<Strategy>::value;

/// Each partition's bounds {0, cuts..., leaves} for Model, as the oracle's plans hold them.
template <class Model, class... Partitions>
std::vector<std::vector<std::size_t>> partition_bounds(type_list<Partitions...>) {
  static_assert((resolve_partition<Model, Partitions>::valid && ...), "hpf::AutoAmong: invalid partition; the error above says why");
  std::vector<std::vector<std::size_t>> out;
  (
      [&] {
        const auto& cuts = resolve_partition<Model, Partitions>::cuts;
        std::vector<std::size_t> bounds{0};
        bounds.insert(bounds.end(), cuts.begin(), cuts.end());
        bounds.push_back(Model::leaves);
        out.push_back(std::move(bounds));
      }(),
      ...);
  return out;
}

/// What hpf::Auto runs: the oracle's choice, decided on rank 0 and the same on every rank.
struct AutoChoice {
  std::size_t partition = 0;  ///< which of the compiled partitions
  std::size_t micro_batches = 1;
  Schedule schedule = Schedule::one_f_one_b;
  double predicted_seconds = NAN;
  std::string described;
};

/// Values the optimizer keeps per parameter (the oracle's memory model).
inline std::size_t optimizer_values(const OptimizerOptions& o) {
  if (const auto* sgd = std::get_if<SgdOptions>(&o)) return sgd->momentum != 0.0 ? 1 : 0;
  return 2;
}

/// The machine profile training names: TrainOptions::oracle_profile, else HPF_ORACLE_PROFILE
/// (empty: none).
inline std::string profile_path(const TrainOptions& o) {
  if (!o.oracle_profile.empty()) return o.oracle_profile;
  const char* env = std::getenv("HPF_ORACLE_PROFILE");
  return env ? env : "";
}

/// `o` with StepOptions::exchange_cost from the named machine profile (oracle::exchange_cost),
/// read on rank 0 and the same on every rank, for the automatic bucket size. Unchanged when the
/// bucket size is given, the cost is, or no profile is named.
inline TrainOptions with_profile_exchange_cost(const comm::Communicator& world, TrainOptions o, std::size_t stages) {
  if (o.bucket_bytes != automatic_bucket_bytes || o.exchange_cost.known() || profile_path(o).empty()) return o;
  const std::string text = comm::agree(world, [&]() -> std::string {
    if (world.rank() != 0) return {};
    const std::size_t replicas = std::max<std::size_t>(1, static_cast<std::size_t>(world.size()) / stages);
    const ExchangeCost cost = oracle::exchange_cost(oracle::load_profile(profile_path(o)), replicas, stages, o.reduction,
                                                      o.hierarchy, o.exchange_precision);
    char line[64];
    std::snprintf(line, sizeof line, "%.17g %.17g", cost.alpha_s, cost.beta_s_per_byte);
    return line;
  });
  std::istringstream in(comm::broadcast_text(world, text, 0));
  in >> o.exchange_cost.alpha_s >> o.exchange_cost.beta_s_per_byte;
  return o;
}

/// Model's canary (TrainOptions::oracle_canary_seconds) on every rank at once, each on its own
/// shard and core, at the micro-batch rank 0 plans from the named profile (at most each rank's
/// share of the batch, as data parallelism computes it): the slowest and the fastest rank's time
/// over the calibrated one. The slowest paces a step whose ranks wait for each other (a replica's
/// reduction, a pipeline's hand-offs, a split's gathers); one rank's canary, while the others rest,
/// times neither its neighbours' cores nor its own beside them (docs/oracle.md, "A profile that
/// ages"). {1, 1, 0} where no canary runs.
struct CanaryRatios {
  double slowest = 1, fastest = 1;
  double batch = 0;  ///< the micro-batch it ran (0: none ran)
};

template <class Model, class T, class Space>
CanaryRatios canary_on_every_rank(const comm::Communicator& world, const TrainOptions& o, const DataSource& source) {
  if (!(o.oracle_canary_seconds > 0)) return {};
  if constexpr (HPF_ENABLE_TRACE && std::is_floating_point_v<T>) {
    // The profile is read on rank 0 only, as for the choice (a missing one is reported there).
    const std::string planned = comm::agree(world, [&]() -> std::string {
      const std::string path = profile_path(o);
      if (world.rank() != 0 || path.empty()) return {};
      const oracle::CanaryPlan plan =
          oracle::canary_plan<Model>(oracle::load_profile(path), o.oracle_canary_seconds, o.network.matmul_precision,
                                     static_cast<double>(o.batch) / world.size());
      char line[80];
      std::snprintf(line, sizeof line, "%.17g %.17g %zu", plan.batch, plan.calibrated_s, plan.repeats);
      return line;
    });
    std::istringstream in(comm::broadcast_text(world, planned, 0));
    oracle::CanaryPlan plan;
    in >> plan.batch >> plan.calibrated_s >> plan.repeats;
    if (!(plan.batch > 0)) return {};
    const double now = comm::agree(world, [&] {
      const auto ranks = static_cast<std::size_t>(world.size());
      const data::TrainTest data = source(data::Shard{static_cast<std::size_t>(world.rank()), ranks, true, false});
      const bool usable = data.train.has_images() && data.train.local_size() > 0;
      return oracle::canary_seconds<Model, T, Space>(plan.batch, o.network.matmul_precision, usable ? &data.train : nullptr,
                                                     plan.repeats);
    });
    return {comm::allreduce_value(world, now, MPI_MAX) / plan.calibrated_s,
            comm::allreduce_value(world, now, MPI_MIN) / plan.calibrated_s, plan.batch};
  } else {
    return {};
  }
}

/// `profile` rescaled by the slowest rank's canary (canary_on_every_rank), reported in the log.
inline void apply_canary(oracle::MachineProfile& profile, const CanaryRatios& c, std::size_t ranks, const TrainOptions& o) {
  if (c.batch == 0) return;
  // Ranks beyond a host's cores took turns on them during the canary, as they will in training,
  // which the prediction prices already (ranks sharing a host's cores): that share is taken out.
  const double shared = oracle::detail::sharing(profile, ranks);
  oracle::rescale_compute(profile, c.slowest / shared);
  if (o.log) {
    *o.log << "hpf::Auto: canary on " << ranks << (ranks == 1 ? " rank" : " ranks") << ", the layers at " << c.batch
           << " samples took " << c.fastest << "-" << c.slowest << " x their calibrated time; compute rescaled by the slowest";
    if (shared > 1) *o.log << " over the ranks' sharing of the cores (" << shared << ")";
    *o.log << std::endl;
  }
}

template <class Model, class T, class Space>
AutoChoice choose_strategy(const comm::Communicator& world, const TrainOptions& o, const DataSource& source,
                           const std::vector<std::vector<std::size_t>>& partitions) {
  const CanaryRatios canary = canary_on_every_rank<Model, T, Space>(world, o, source);
  const std::string text = comm::agree(world, [&]() -> std::string {
    if (o.shards_per_replica != 1) {
      throw std::invalid_argument("hpf::Auto: the oracle plans one data shard per replica; leave shards_per_replica at 1 "
                                  "or name a strategy");
    }
    if (world.rank() != 0) return {};
    const std::string path = profile_path(o);
    if (path.empty()) {
      throw std::invalid_argument("hpf::Auto needs a machine profile: TrainOptions::oracle_profile or HPF_ORACLE_PROFILE "
                                  "(hpf-oracle calibrate writes its compute part)");
    }
    oracle::MachineProfile profile = oracle::load_profile(path);
    apply_canary(profile, canary, static_cast<std::size_t>(world.size()), o);
    oracle::SearchOptions search;
    search.bucket_bytes = o.bucket_bytes;
    search.reduction = o.reduction;
    search.recompute = o.network.recompute;
    search.exchange_precision = o.exchange_precision;
    search.stage_precision = o.stage_precision;
    search.partitions = partitions;
    const auto ranked = oracle::rank_strategies(oracle::view_of<Model>(std::string(type_name<Model>()), optimizer_values(o.optimizer),
                                                                       o.network.matmul_precision),
                                                static_cast<std::size_t>(world.size()), o.batch, profile, search);
    for (const oracle::Prediction& p : ranked) {
      const auto chosen = std::find(partitions.begin(), partitions.end(), p.plan.bounds);
      if (chosen != partitions.end() && p.fits) {
        const std::string cuts = p.plan.stages > 1 ? ", " + oracle::cuts_type(p.plan.bounds) : "";
        char line[320];
        std::snprintf(line, sizeof line, "%zu %zu %d %.17g %s%s", static_cast<std::size_t>(chosen - partitions.begin()),
                      p.plan.micro_batches, p.plan.schedule == Schedule::gpipe ? 0 : 1, p.time_s,
                      p.plan.describe().c_str(), cuts.c_str());
        return line;
      }
    }
    throw std::invalid_argument("hpf::Auto: no strategy with the compiled partitions splits a batch of " +
                                std::to_string(o.batch) + " over " + std::to_string(world.size()) + " ranks");
  });
  std::istringstream in(comm::broadcast_text(world, text, 0));
  AutoChoice c;
  int schedule = 1;
  in >> c.partition >> c.micro_batches >> schedule >> c.predicted_seconds;
  std::getline(in >> std::ws, c.described);
  c.schedule = schedule == 0 ? Schedule::gpipe : Schedule::one_f_one_b;
  return c;
}

/// The default `inspect` of fit: looks at nothing.
struct ignore_network {
  template <class... Args>
  void operator()(Args&&...) const {}
};

/// fit's options, with HPF_TRACE* (which may be malformed on some ranks only) and the strategy's
/// layer split, checked inside one agreement: a problem on any rank stops every rank.
inline TrainOptions agreed_options(const comm::Communicator& world, const TrainOptions& given, LayerSplit split = {}) {
  return comm::agree(world, [&] {
    TrainOptions o = with_environment_trace(given);
    if (o.network.split.splits() && o.network.split != split) {
      throw std::invalid_argument("hpf::fit: TrainOptions::network.split (" + o.network.split.describe() +
                                  ") is hpf::Trainer's; hpf::fit splits layers as its strategy says (" + split.describe() +
                                  "): name the split there, e.g. Pipeline<Cuts<>, Filter<2>>");
    }
    if (o.network.split_group) throw std::invalid_argument("hpf::fit makes the layer split's group; leave network.split_group empty");
    o.network.split = split;
    o.trace.check();
    o.checkpoint.check();
    if (!std::isfinite(o.wait_limit)) throw std::invalid_argument("hpf::fit: wait_limit must be a finite number of seconds");
    if (o.trace.enabled() && world.rank() == 0) trace::check_writable(o.trace.path);
    return o;
  });
}

/// Throws comm::UsageError unless the options fit the grid's replicas and stages (the same
/// options everywhere, checked before: every rank fails alike). T: the gradients' scalar.
template <class T>
void check_layout(const TrainOptions& options, const ProcessGrid& grid) {
  if (options.shards_per_replica == 0) throw comm::UsageError("hpf::fit: shards_per_replica must be at least 1");
  try {
    check_step_options(options, grid.replicas() * options.shards_per_replica, "hpf::fit");
    check_exchange_precision<T>(options, "hpf::fit");
  } catch (const std::invalid_argument& e) {
    throw comm::UsageError(e.what());
  }
  if (const auto check = check_schedule(options.schedule, grid.stages(), options.micro_batches); !check.ok) {
    throw comm::UsageError(std::string("hpf::fit: schedule check failed: ") + check.problem);
  }
}

/// This rank's part of the data, checked against its stage: what can fail on some ranks only
/// fails inside one agreement.
inline data::TrainTest load_stage_data(const comm::Communicator& world, const DataSource& source, const ProcessGrid& grid,
                                       const TrainOptions& options, const NetworkFacts& facts, const StagePosition& position) {
  return comm::agree(world, [&] {
    data::TrainTest d = source(data::pipeline_shard(grid.replica(), grid.replicas(), grid.stage(), grid.stages()));
    check_stage_datasets(d.train, &d.test, options, facts, position);
    return d;
  });
}

/// The model type of stage S of Model under Partition; with a single stage, the whole model (the
/// type hpf::Trainer runs, so the two share their network's instantiation).
template <class Model, class Partition, std::size_t S>
using fit_stage_t = std::conditional_t<stage_count_v<Model, Partition> == 1, Model, Stage<Model, Partition, S>>;

}  // namespace detail

/// \brief Trains Model with Strategy on every process of `world`: the single entry point for
/// data, model and hybrid parallelism.
///
/// With S stages (from the strategy's partition) and P processes, P / S replicas each run a
/// pipeline of S stages; rank r is stage r % S of replica r / S. A layer split (Filter<G> or
/// Channel<G> in the strategy) runs each stage on G neighbouring ranks (P / (S G) replicas;
/// ProcessGrid). Each rank builds only its own
/// stage's layers and loads only its replica's shard of the data (only the images on the first
/// stage, only the labels on the last). All ranks first check that they run the same program
/// with the same options. Every rank returns the same report; rank 0 prints progress.
/// \tparam Model an hpf::Sequential ending in a loss
/// \tparam Strategy DataParallel or Pipeline<Cuts<...>> / Pipeline<Balanced<S>> (optionally with one
///         execution space per stage and a layer split, Filter<G> or Channel<G>)
/// \tparam Precision float, double, or hpf::Mixed<hpf::bf16> (docs/precision.md)
/// \tparam Space the execution space of stages whose strategy names none
/// \param inspect called at the end with this rank's Network (its stage) and the ProcessGrid
template <class Model, class Strategy = DataParallel, class Precision = float, class Space = Kokkos::DefaultExecutionSpace,
          class Inspect = detail::ignore_network>
  requires(!detail::is_auto_v<Strategy>)
TrainReport fit(const comm::Communicator& world, const TrainOptions& given, const DataSource& source,
                Inspect&& inspect = {}) {
  using T = storage_t<Precision>;
  static_assert(Model::trainable, "hpf::fit: the model must end with a loss layer (e.g. SoftmaxCrossEntropy)");
  using Partition = typename Strategy::partition;
  static_assert(valid_partition_v<Model, Partition>, "hpf::fit: invalid partition; the error above says why");
  constexpr std::size_t stages = stage_count_v<Model, Partition>;
  static_assert(schedules_verified<stages>(), "hpf::fit: a pipeline schedule failed its compile-time check");
  static_assert(Strategy::stage_spaces::size == 0 || Strategy::stage_spaces::size == stages,
                "hpf::Pipeline: name one execution space per stage, or none");
  static_assert(!Strategy::split.divides_layers() || Model::cost.split_layers > 0,
                "hpf::fit: the strategy's layer split (Filter<G> or Channel<G>) divides Dense, Conv2D and Conv3D layers, "
                "and the model has none");

  constexpr LayerSplit split = Strategy::split;
  // What each rank of a group runs: the model, or its slab of every sample under Spatial<G>.
  using GroupModel = split_model_t<Model, Strategy>;
  static_assert(GroupModel::valid, "hpf::fit: the model does not split as the strategy says; the error above says why");
  const TrainOptions options = detail::with_profile_exchange_cost(
      world, detail::agreed_options(world, with_precision<Precision>(given), split), stages);
  std::optional<comm::WaitLimit> wait_limit;
  if (options.wait_limit >= 0) wait_limit.emplace(options.wait_limit);
  // Before anything that depends on them (the grid's check of the world size): ranks started
  // with different stage counts or options fail alike instead of some waiting in a split.
  comm::require_same_facts(
      world, detail::run_facts({type_name<Model>(), type_name<Strategy>(), type_name<T>(), type_name<Space>()}, options, stages),
      "hpf::fit");
  const ProcessGrid grid(world, stages, split.ranks());
  detail::check_layout<T>(options, grid);
  if (split.splits() && options.log && world.rank() == 0) {
    *options.log << "hpf: layer split, "
                 << (split.divides_layers() ? "Dense and convolution layers" : "samples in slabs of rows, layers up to the gather")
                 << " in " << split.describe() << " ranks: " << grid.replicas() << " replica(s) x " << stages << " stage(s) x "
                 << split.ranks() << " ranks" << std::endl;
  }
  NetworkFacts facts;
  StagePosition position;
  detail::with_index<stages>(grid.stage(), [&](auto stage) {
    using StageModel = detail::fit_stage_t<GroupModel, Partition, stage>;
    facts = network_facts<StageModel>();
    position = stage_position<StageModel>();
  });
  const data::TrainTest data = detail::load_stage_data(world, source, grid, options, facts, position);
  TrainReport report;
  detail::with_index<stages>(grid.stage(), [&](auto stage) {
    using StageModel = detail::fit_stage_t<GroupModel, Partition, stage>;
    using StageSpace = stage_space_t<Strategy, stage, Space>;
    TrainOptions stage_options = options;
    if (split.splits()) stage_options.network.split_group = std::make_shared<MpiLayerGroup<T, StageSpace>>(grid.group());
    auto engine = make_stage_engine<StageModel, T, StageSpace, MpiLinks<T, StageSpace>>(
        {grid, options.shards_per_replica, options.shards_side_by_side}, stage_options, data.train,
        options.evaluate ? &data.test : nullptr);
    report = run_epochs(engine, stage_options, world.rank() == 0);
    report.shard_threads = engine.shard_threads();
    inspect(network_cast<StageModel>(engine.network()), grid);
  });
  return report;
}

/// \brief hpf::fit with the strategy the performance oracle predicts fastest for this world
/// size and batch (hpf::Auto, hpf::AutoAmong): chosen on rank 0 from the machine profile, logged
/// with its predicted step time, then trained like hpf::fit<Model, Pipeline<Partition>> with the
/// chosen partition (Balanced<S> of Auto's stage counts, or one of AutoAmong's); at the end the
/// log compares the predicted and the measured seconds per step.
template <class Model, class Strategy, class Precision = float, class Space = Kokkos::DefaultExecutionSpace,
          class Inspect = detail::ignore_network>
  requires(detail::is_auto_v<Strategy>)
TrainReport fit(const comm::Communicator& world, const TrainOptions& given, const DataSource& source,
                Inspect&& inspect = {}) {
  using Partitions = typename detail::auto_partitions<Strategy>::type;
  const detail::AutoChoice choice = detail::choose_strategy<Model, storage_t<Precision>, Space>(
      world, with_precision<Precision>(given), source, detail::partition_bounds<Model>(Partitions{}));
  TrainOptions options = given;
  options.micro_batches = choice.micro_batches;
  options.schedule = choice.schedule;
  if (options.log && world.rank() == 0) {
    *options.log << "hpf::Auto: " << choice.described << ", predicted " << choice.predicted_seconds * 1e3 << " ms per step"
                 << std::endl;
  }
  TrainReport report;
  detail::with_index<Partitions::size>(choice.partition, [&](auto i) {
    using Partition = at_t<Partitions, decltype(i)::value>;
    // One stage is DataParallel (Balanced<1> cuts nowhere): the instantiation users already have.
    using Chosen = std::conditional_t<detail::resolve_partition<Model, Partition>::stages == 1, DataParallel, Pipeline<Partition>>;
    report = fit<Model, Chosen, Precision, Space>(world, options, source, inspect);
  });
  report.chosen_strategy = choice.described;
  report.predicted_step_seconds = choice.predicted_seconds;
  if (options.log && world.rank() == 0) {
    *options.log << "hpf::Auto: " << report.step_seconds() * 1e3 << " ms per step measured, "
                 << choice.predicted_seconds * 1e3 << " ms predicted" << std::endl;
  }
  return report;
}

}  // namespace hpf

#endif  // HPF_TRAIN_FIT_HPP
