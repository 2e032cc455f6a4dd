// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_CLOSED_FORM_HPP
#define HPF_ORACLE_CLOSED_FORM_HPP

#include <hpf/oracle/predict.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hpf::oracle {

/// \brief The baseline the ablation weighs `predict` against: ParaDL's closed form (Kahira et al.,
/// HPDC 2021) on the same calibration. A step takes (M + S - 1) micro-batch slots of the busiest
/// stage's calibrated forward and backward (the pipeline's bubble), 2 (S - 1) boundary messages
/// (the fill and the drain), the last gradient bucket's exchange (alpha + beta x bytes: the tail
/// backward cannot hide) and the optimizer. No schedule is played, no sharing of cores or
/// overlap of transfers is modelled; memory is predict's.
inline Prediction closed_form(const ModelView& model, const Plan& plan, const MachineProfile& profile,
                              double memory_budget_bytes = 0) {
  Prediction out = predict(model, plan, profile, memory_budget_bytes);  // its memory, and the same plan checks
  const std::size_t S = plan.stages, R = plan.replicas, M = plan.micro_batches, P = plan.ranks();
  const double m = static_cast<double>(plan.batch) / static_cast<double>(R * M);
  const std::vector<detail::LayerTimes> layers =
      detail::layer_times(model, profile, detail::layer_timings(model, profile, plan.split), m, HostLoad::alone, plan.split, P);
  const double speed = profile.cluster ? profile.cluster->compute_speed : 1.0;
  const ExchangeCost exchange =
      exchange_cost(profile, R, plan.ranks_per_replica(), plan.reduction, plan.hierarchy, plan.exchange_precision);
  double slot = 0, message = 0, tail = 0, optimizer = 0;
  for (std::size_t s = 0; s < S; ++s) {
    const bool last = s + 1 == S;
    const std::span<const UnitFacts> units = detail::stage_units(model.units, plan.bounds[s], plan.bounds[s + 1], last);
    const StageFacts facts = stage_facts(units, plan.bounds[s], plan.bounds[s + 1], last);
    const detail::StageTimes t = detail::stage_times(model, profile, layers, units, plan.recompute);
    const double load = s == 0 ? profile.load_s_per_element * static_cast<double>(facts.input_elements) * m : 0;
    slot = std::max(slot, (t.forward + t.backward + load) / speed);
    if (!last) {
      const double bytes = detail::stage_message_bytes(facts.output_elements, model.scalar_bytes, plan.stage_precision, m);
      message = std::max(message, detail::transfer_seconds(profile, bytes, P, s, s + 1));
    }
    const double gradient_bytes = static_cast<double>(facts.cost.parameters * model.scalar_bytes);
    if (R > 1 && gradient_bytes > 0) {
      const double bucket = static_cast<double>(choose_bucket_bytes(plan.bucket_bytes, facts.cost.parameters * model.scalar_bytes, exchange));
      tail = std::max(tail, exchange.alpha_s + exchange.beta_s_per_byte * std::min(bucket, gradient_bytes));
    }
    optimizer = std::max(optimizer, profile.optimizer_s_per_parameter * static_cast<double>(facts.cost.parameters) / speed);
  }
  out.compute_s = slot * static_cast<double>(M);
  out.bubble_s = slot * static_cast<double>(S - 1);
  out.transfer_s = 2.0 * static_cast<double>(S - 1) * message;
  out.reduction_s = tail;
  out.other_s = optimizer;
  out.time_s = out.compute_s + out.bubble_s + out.transfer_s + out.reduction_s + out.other_s;
  return out;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_CLOSED_FORM_HPP
