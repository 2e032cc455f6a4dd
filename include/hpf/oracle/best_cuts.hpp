// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_BEST_CUTS_HPP
#define HPF_ORACLE_BEST_CUTS_HPP

#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpf::oracle {

/// \brief Where a search for a pipeline's cuts ended: the best plan it predicted, the same plan at
/// Balanced<S>'s cuts, and how many plans it predicted.
struct CutSearch {
  Prediction best;
  Prediction balanced;
  std::size_t predictions = 0;
};

/// Leaves a stage may begin at, past leaf 0: the boundaries of the model's units (top-level
/// layers and a Repeat's copies), as hpf::Cuts accepts them.
inline std::vector<std::size_t> cut_candidates(const ModelView& model) {
  std::vector<std::size_t> places;
  for (const UnitFacts& u : model.units) {
    for (const std::size_t leaf : {u.first_leaf, u.end_leaf}) {
      if (leaf > 0 && leaf < model.leaves) places.push_back(leaf);
    }
  }
  std::sort(places.begin(), places.end());
  places.erase(std::unique(places.begin(), places.end()), places.end());
  return places;
}

/// "hpf::Cuts<4, 9>" for the stage bounds {0, 4, 9, leaves}: the type to name in hpf::Pipeline.
inline std::string cuts_type(const std::vector<std::size_t>& bounds) {
  std::string s = "hpf::Cuts<";
  for (std::size_t i = 1; i + 1 < bounds.size(); ++i) s += (i > 1 ? ", " : "") + std::to_string(bounds[i]);
  return s + ">";
}

namespace detail {

/// Bounds of S stages over `places` that minimise the slowest stage's calibrated compute of one
/// micro-batch (forward and backward, the units' times added): the classic linear-partition
/// dynamic programme, over `layers`, the plan's layer times (CalibratedLayers::times).
inline std::vector<std::size_t> time_balanced_bounds(const ModelView& model, const Plan& plan,
                                                     const MachineProfile& profile, const std::vector<LayerTimes>& layers,
                                                     const std::vector<std::size_t>& places) {
  const std::size_t S = plan.stages;
  // Segment k spans [edge[k], edge[k + 1]): its time is the units starting in it.
  std::vector<std::size_t> edge{0};
  edge.insert(edge.end(), places.begin(), places.end());
  edge.push_back(model.leaves);
  const std::size_t n = edge.size() - 1;
  if (S == 0 || S > n) {
    throw std::invalid_argument("hpf::oracle: " + std::to_string(S) + " stages over " + std::to_string(n) + " places");
  }
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const StageTimes t = stage_times(model, profile, layers, stage_units(model.units, edge[k], edge[k + 1], k + 1 == n), plan.recompute);
    prefix[k + 1] = prefix[k] + t.forward + t.backward;
  }
  // best[s][k]: the slowest of s stages over segments [0, k); from[s][k] where the last began.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> from(S + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t s = 1; s <= S; ++s) {
    for (std::size_t k = s; k <= n; ++k) {
      for (std::size_t j = s - 1; j < k; ++j) {
        const double slowest = std::max(best[s - 1][j], prefix[k] - prefix[j]);
        if (slowest < best[s][k]) {
          best[s][k] = slowest;
          from[s][k] = j;
        }
      }
    }
  }
  std::vector<std::size_t> bounds(S + 1);
  std::size_t k = n;
  for (std::size_t s = S; s > 0; --s) {
    bounds[s] = edge[k];
    k = from[s][k];
  }
  bounds[0] = 0;
  return bounds;
}

inline CutSearch search_cuts(const ModelView& model, Plan plan, const MachineProfile& profile, double memory_budget_bytes,
                             const CalibratedLayers& calibrated);

}  // namespace detail

/// \brief The cuts of `plan`'s S stages that minimise its predicted step (those within the memory
/// budget first), with everything else of the plan kept. Starting from Balanced<S>'s cuts (FLOPs)
/// and from the cuts that balance the calibrated stage times, it moves one cut at a time to the
/// neighbouring place while the prediction improves. Balanced<S> balances FLOPs, which layers do
/// not turn into time alike (pooling, normalization and the loss take time for few FLOPs).
/// Throws std::invalid_argument when the model has fewer than S places, ProfileError when the
/// profile lacks the model's calibration.
inline CutSearch search_cuts(const ModelView& model, Plan plan, const MachineProfile& profile,
                             double memory_budget_bytes = 0) {
  return detail::search_cuts(model, plan, profile, memory_budget_bytes, detail::calibrated_layers(model, profile, plan));
}

/// search_cuts with the calibration `plan` reads looked up already (`calibrated.serve(model, plan)`:
/// the cuts do not change it).
inline CutSearch detail::search_cuts(const ModelView& model, Plan plan, const MachineProfile& profile,
                                     double memory_budget_bytes, const CalibratedLayers& calibrated) {
  if (plan.stages == 0 || plan.stages > model.cut_places) {
    throw std::invalid_argument("hpf::oracle::search_cuts: " + model.name + " has " + std::to_string(model.cut_places) +
                                " places to cut; " + std::to_string(plan.stages) + " stages do not fit");
  }
  check_spatial_view(model, plan);
  CutSearch r;
  const auto score = [&](const std::vector<std::size_t>& bounds) {
    plan.bounds = bounds;
    ++r.predictions;
    return predict_calibrated(model, plan, profile, memory_budget_bytes, calibrated);
  };
  const auto better = [](const Prediction& a, const Prediction& b) {
    return a.fits != b.fits ? a.fits : a.time_s < b.time_s;
  };
  r.balanced = score(model.balanced_bounds(plan.stages));
  r.best = r.balanced;
  if (plan.stages == 1) return r;
  const std::vector<std::size_t> places = cut_candidates(model);
  const auto index_of = [&](std::size_t leaf) {
    return static_cast<std::size_t>(std::lower_bound(places.begin(), places.end(), leaf) - places.begin());
  };
  for (const auto& start : {r.balanced.plan.bounds, detail::time_balanced_bounds(model, plan, profile, calibrated.times, places)}) {
    Prediction current = start == r.balanced.plan.bounds ? r.balanced : score(start);
    for (bool moved = true; moved;) {  // steepest descent over single-cut moves
      moved = false;
      Prediction step = current;
      for (std::size_t c = 1; c < plan.stages; ++c) {
        const std::size_t at = index_of(current.plan.bounds[c]);
        for (const int delta : {-1, 1}) {
          if ((delta < 0 && at == 0) || (delta > 0 && at + 1 >= places.size())) continue;
          std::vector<std::size_t> bounds = current.plan.bounds;
          bounds[c] = places[at + delta];
          if (bounds[c] <= bounds[c - 1] || bounds[c] >= bounds[c + 1]) continue;
          Prediction p = score(bounds);
          if (better(p, step)) {
            step = std::move(p);
            moved = true;
          }
        }
      }
      current = std::move(step);
    }
    if (better(current, r.best)) r.best = std::move(current);
  }
  return r;
}

/// \brief The stage bounds {0, cuts..., leaves} of Model in `stages` stages that minimise the
/// predicted step of `micro_batches` micro-batches of a global `batch` over `replicas` replicas
/// (hpf::Cuts<cuts...>; cuts_type names it). `memory_budget_bytes` per rank, 0 for none.
template <class Model>
std::vector<std::size_t> best_cuts(const MachineProfile& profile, std::size_t stages, std::size_t micro_batches,
                                   std::size_t batch, std::size_t replicas = 1, double memory_budget_bytes = 0) {
  Plan plan;
  plan.stages = stages;
  plan.replicas = replicas;
  plan.batch = batch;
  plan.micro_batches = micro_batches;
  return search_cuts(view_of<Model>("model"), plan, profile, memory_budget_bytes).best.plan.bounds;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_BEST_CUTS_HPP
