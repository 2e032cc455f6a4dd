// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_RECOMMEND_HPP
#define HPF_ORACLE_RECOMMEND_HPP

#include <hpf/oracle/best_cuts.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>
#include <hpf/oracle/profile.hpp>
#include <hpf/system/for_each_index.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace hpf::oracle {

/// \brief Which strategies the search tries.
struct SearchOptions {
  std::vector<std::size_t> micro_batches{1, 2, 4, 8, 16, 32};
  double memory_budget_bytes = 0;  ///< per rank; 0: no limit (a cluster profile's memory if it names one)
  std::size_t bucket_bytes = automatic_bucket_bytes;  ///< hpf::StepOptions::bucket_bytes
  GradientReduction reduction = GradientReduction::automatic;
  std::size_t max_stages = 0;  ///< 0: as many as the model has places to cut
  bool recompute = false;      ///< re-materialization of Repeat blocks (NetworkOptions::recompute)
  ExchangePrecision exchange_precision = ExchangePrecision::full;  ///< hpf::StepOptions::exchange_precision
  ExchangePrecision stage_precision = ExchangePrecision::full;     ///< hpf::StepOptions::stage_precision
  std::size_t process_bytes = 0;  ///< Plan::process_bytes
  std::size_t data_bytes = 0;     ///< Plan::data_bytes
  /// Also layer splits (filter and channel, every group size G dividing the ranks of each stage
  /// count): the strategies of ParaDL's comparison. hpf::Auto trains partitions only and asks
  /// without them.
  bool layer_splits = false;
  /// With layer_splits, also samples split into slabs: one slab rank's view per group size G
  /// (view_of<SpatialSplit<Model, G, 1>>, its slabs calibrated), tried at the model's partitions.
  std::vector<ModelView> spatial_views;
  /// Pipelines at the cuts search_cuts finds for each of them, instead of Balanced<S>'s (hpf::Auto
  /// trains Balanced<S> and asks without).
  bool search_cuts = false;
  /// The partitions to try, as bounds {0, cuts..., leaves} (hpf::AutoAmong's compiled ones); empty:
  /// Balanced<S> for every stage count S.
  std::vector<std::vector<std::size_t>> partitions;
  /// Threads that predict the strategies, at most one per `passes_per_thread` (each prediction is
  /// independent; the ranking is the same for any count). hpf-oracle uses the host's cores; hpf::Auto
  /// asks on every rank at once, so 1.
  std::size_t threads = 1;
  /// The least work a thread is started for, in stage x micro-batch passes to play (a plan's events
  /// grow with them; a cut search plays each plan's once per place to cut). A query waits for its
  /// slowest thread, and a helper whose core another process takes waits a time slice of a few
  /// milliseconds: on a 2-vCPU VM with one core compiling, ResNet-56's query at 64 ranks (7,843
  /// passes, about 80 ns each) took 1.0-8.4 ms on 2 threads against 0.80-0.88 ms on one; on the
  /// idle VM 2 threads saved some 25 % of it. 50,000 passes are about 4 ms of play.
  std::size_t passes_per_thread = 50000;
};

/// Every feasible strategy of `ranks` processes for a global `batch`: S stages dividing the
/// ranks (Balanced<S> cuts, or SearchOptions::partitions), with SearchOptions::layer_splits groups
/// of G splitting each stage's Dense and convolution layers or (SearchOptions::spatial_views) its
/// samples, R = ranks / (S G) replicas dividing the batch, M micro-batches per replica, both
/// schedules when S > 1; predicted and ranked fastest first, those that fit the memory budget
/// before those that do not, each with the reason it loses to the first.
inline std::vector<Prediction> rank_strategies(const ModelView& model, std::size_t ranks, std::size_t batch,
                                               const MachineProfile& profile, const SearchOptions& o = {}) {
  const double budget = o.memory_budget_bytes > 0 ? o.memory_budget_bytes
                        : profile.cluster        ? profile.cluster->memory_bytes_per_rank
                                                 : 0;
  // Each candidate with the view that predicts it.
  std::vector<std::pair<Plan, const ModelView*>> candidates;
  const std::size_t most_stages = o.max_stages ? std::min(o.max_stages, model.cut_places) : model.cut_places;
  // Each split with the view that predicts it: the model's, or one slab rank's.
  std::vector<std::pair<LayerSplit, const ModelView*>> splits{{LayerSplit{}, &model}};
  for (std::size_t g = 2; o.layer_splits && g <= std::min(ranks, ordered_sum_max_parts); ++g) {
    splits.emplace_back(LayerSplit::filter(g), &model);
    splits.emplace_back(LayerSplit::channel(g), &model);
  }
  for (const ModelView& slabs : o.spatial_views) {
    if (o.layer_splits && slabs.spatial_group > 1 && slabs.spatial_group <= ranks) {
      splits.emplace_back(LayerSplit::spatial(slabs.spatial_group), &slabs);
    }
  }
  std::vector<std::vector<std::size_t>> partitions = o.partitions;
  for (std::size_t S = 1; o.partitions.empty() && S <= std::min(ranks, most_stages); ++S) {
    if (ranks % S == 0) partitions.push_back(model.balanced_bounds(S));
  }
  for (const std::vector<std::size_t>& bounds : partitions) {
    const std::size_t S = bounds.size() - 1;
    if (S == 0 || ranks % S) continue;
    for (const auto& [split, view] : splits) {
      const std::size_t per_replica = S * split.ranks();
      if (ranks % per_replica) continue;
      const std::size_t R = ranks / per_replica;
      if (batch % R) continue;
      for (const std::size_t M : o.micro_batches) {
        if (M > batch / R) continue;
        for (const Schedule schedule : {Schedule::one_f_one_b, Schedule::gpipe}) {
          if (S == 1 && schedule == Schedule::gpipe) continue;  // one stage: the schedules are the same
          Plan plan{.stages = S, .replicas = R, .batch = batch, .micro_batches = M, .schedule = schedule, .bounds = bounds,
                    .bucket_bytes = o.bucket_bytes, .reduction = o.reduction,
                    .exchange_precision = o.exchange_precision, .stage_precision = o.stage_precision,
                    .recompute = o.recompute, .split = split, .process_bytes = o.process_bytes,
                    .data_bytes = o.data_bytes};
          candidates.emplace_back(std::move(plan), view);
        }
      }
    }
  }
  // The longest to play first (its events grow with stages x micro-batches), so that no thread is
  // left with one of them at the end.
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto passes = [&](std::size_t i) {
    const auto& [plan, view] = candidates[i];
    return plan.stages * plan.micro_batches * (o.search_cuts && plan.stages > 1 ? std::max<std::size_t>(1, view->cut_places) : 1);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return passes(a) > passes(b); });
  std::size_t all_passes = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) all_passes += passes(i);
  // The calibration each plan reads, looked up once per view, split and micro-batch.
  std::vector<detail::CalibratedLayers> calibrations;
  std::vector<std::size_t> calibration_of(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& [plan, view] = candidates[i];
    detail::check_spatial_view(*view, plan);
    std::size_t c = 0;
    while (c < calibrations.size() && !calibrations[c].serve(*view, plan)) ++c;
    if (c == calibrations.size()) calibrations.push_back(detail::calibrated_layers(*view, profile, plan));
    calibration_of[i] = c;
  }
  std::vector<Prediction> all(candidates.size());
  const std::size_t threads = std::min(o.threads, std::max<std::size_t>(1, all_passes / std::max<std::size_t>(1, o.passes_per_thread)));
  hpf::detail::for_each_index(order.size(), threads, [&](std::size_t k) {
    const auto& [plan, view] = candidates[order[k]];
    all[order[k]] = o.search_cuts && plan.stages > 1
                        ? detail::search_cuts(*view, plan, profile, budget, calibrations[calibration_of[order[k]]]).best
                        : detail::predict_calibrated(*view, plan, profile, budget, calibrations[calibration_of[order[k]]]);
  });
  std::stable_sort(all.begin(), all.end(), [](const Prediction& a, const Prediction& b) {
    if (a.fits != b.fits) return a.fits;
    return a.time_s < b.time_s;
  });
  if (all.empty()) return all;
  const Prediction& best = all.front();
  char text[256];
  for (std::size_t i = 0; i < all.size(); ++i) {
    Prediction& p = all[i];
    if (!p.fits) {
      std::snprintf(text, sizeof text, "out of memory: %.1f MiB per rank over the budget of %.1f MiB",
                    static_cast<double>(p.peak_memory_bytes) / (1 << 20), budget / (1 << 20));
    } else if (i == 0) {
      std::snprintf(text, sizeof text, "fastest that fits");
    } else if (p.time_s <= best.time_s * 1.01) {
      std::snprintf(text, sizeof text, "as fast as the first (within 1%%)");
    } else {
      // The term that grew most against the fastest one says why this one loses.
      const double bubble = p.bubble_s - best.bubble_s, transfer = p.transfer_s - best.transfer_s;
      const double reduce = p.reduction_s - best.reduction_s, compute = p.compute_s - best.compute_s;
      const double most = std::max({bubble, transfer, reduce, compute});
      const double slower = (p.time_s / best.time_s - 1) * 100;
      if (most == bubble) {
        std::snprintf(text, sizeof text, "bubble-bound: +%.0f%%, the pipeline idles %.1f ms", slower, p.bubble_s * 1e3);
      } else if (most == transfer) {
        std::snprintf(text, sizeof text, "transfer-bound: +%.0f%%, stage-to-stage transfers add %.1f ms", slower, p.transfer_s * 1e3);
      } else if (most == reduce) {
        std::snprintf(text, sizeof text, "communication-bound: +%.0f%%, gradient reduction exposes %.1f ms", slower, p.reduction_s * 1e3);
      } else if (p.imbalance > 1.1) {
        std::snprintf(text, sizeof text, "unbalanced stages: +%.0f%%, the busiest computes %.2fx the mean", slower, p.imbalance);
      } else {
        std::snprintf(text, sizeof text, "compute-bound: +%.0f%%, micro-batches of %zu run slower kernels", slower,
                      p.plan.batch / (p.plan.replicas * p.plan.micro_batches));
      }
    }
    p.reason = text;
  }
  return all;
}

/// \brief The oracle's choice for Model on `ranks` processes and a global `batch`: the fastest
/// predicted strategy that fits the memory budget (the first of rank_strategies).
/// Throws ProfileError when the profile lacks the model's calibration, std::invalid_argument
/// when no strategy is feasible.
template <class Model>
Prediction recommend(const MachineProfile& profile, std::size_t ranks, std::size_t batch, const SearchOptions& o = {}) {
  const std::vector<Prediction> ranked = rank_strategies(view_of<Model>("model"), ranks, batch, profile, o);
  if (ranked.empty()) {
    throw std::invalid_argument("hpf::oracle::recommend: no strategy splits a batch of " + std::to_string(batch) +
                                " over " + std::to_string(ranks) + " ranks");
  }
  return ranked.front();
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_RECOMMEND_HPP
