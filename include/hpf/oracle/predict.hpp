// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_PREDICT_HPP
#define HPF_ORACLE_PREDICT_HPP

#include <hpf/layers/layer_split.hpp>
#include <hpf/oracle/memory.hpp>
#include <hpf/oracle/model_facts.hpp>
#include <hpf/oracle/play.hpp>
#include <hpf/oracle/profile.hpp>
#include <hpf/parallel/bucket_size.hpp>
#include <hpf/parallel/gradient_reduction.hpp>
#include <hpf/parallel/schedule.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hpf::oracle {

/// \brief A model as the oracle's run-time search reads it: the constexpr unit table, each
/// top-level layer's calibration key, and what its optimizer keeps per parameter.
struct ModelView {
  std::string name;
  std::span<const UnitFacts> units;
  std::vector<std::string> layer_keys;  ///< per top-level layer: what calibration timed it as
  std::size_t leaves = 0;
  std::size_t cut_places = 0;  ///< most stages a partition can make
  bool classifier = true;
  std::size_t label_size = 1;  ///< class labels per sample (one per position of a sequence)
  std::size_t scalar_bytes = sizeof(float);
  std::size_t optimizer_values = 1;  ///< SGD with momentum (the default)
  std::vector<std::size_t> (*balanced_bounds)(std::size_t stages) = nullptr;
  /// G where this is one rank's view of a model whose samples split into G slabs
  /// (view_of<SpatialSplit<Model, G, 1>>): its units are the slab's, calibrated as such, and
  /// only plans with LayerSplit::spatial(G) may predict it. 1: the whole model.
  std::size_t spatial_group = 1;
};

/// \brief One strategy: S stages at `bounds` (leaf positions {0, cuts..., leaves}), R replicas of
/// them, a global batch split into M micro-batches per replica, a schedule; as hpf::fit runs it.
struct Plan {
  std::size_t stages = 1, replicas = 1, batch = 1, micro_batches = 1;
  Schedule schedule = Schedule::one_f_one_b;
  std::vector<std::size_t> bounds;
  std::size_t bucket_bytes = automatic_bucket_bytes;  ///< hpf::StepOptions::bucket_bytes
  GradientReduction reduction = GradientReduction::automatic;
  HostHierarchy hierarchy = HostHierarchy::automatic;  ///< hpf::StepOptions::hierarchy
  ExchangePrecision exchange_precision = ExchangePrecision::full;  ///< hpf::StepOptions::exchange_precision
  ExchangePrecision stage_precision = ExchangePrecision::full;     ///< hpf::StepOptions::stage_precision
  bool recompute = false;  ///< re-materialization of Repeat blocks (NetworkOptions::recompute)
  LayerSplit split{};      ///< layers split over groups (Pipeline<..., Filter<G>>): R x S x G ranks
  /// What a rank's process holds beside its data and the engine's memory once it has trained: the
  /// code that ran, the libraries' buffers and objects, MPI and Kokkos (docs/oracle.md, "The
  /// resident set"). With data_bytes, the base of the predicted resident set
  /// (Prediction::stage_resident_bytes).
  std::size_t process_bytes = 0;
  /// The whole data set in memory (hpf::data::Dataset::memory_bytes(), training and test sets):
  /// a first stage's ranks keep their replica's share, 1/R of it.
  std::size_t data_bytes = 0;

  /// Ranks of one replica: its stages x its group.
  std::size_t ranks_per_replica() const { return stages * split.ranks(); }
  std::size_t ranks() const { return replicas * ranks_per_replica(); }
  std::string describe() const {
    std::string s = stages == 1 ? (split.splits() && replicas == 1 ? "layer split" : "data parallel")
                    : replicas == 1 ? "pipeline" : "hybrid";
    s += " " + std::to_string(stages) + "x" + std::to_string(replicas) + ", M=" + std::to_string(micro_batches);
    if (stages > 1) s += std::string(", ") + to_string(schedule);
    if (split.splits()) s += ", " + split.describe();
    return s;
  }
};

/// \brief Predicted time of one training step, split as the issue of the oracle asks, and the
/// peak memory of each stage's ranks.
struct Prediction {
  Plan plan;
  double time_s = 0;
  double compute_s = 0;    ///< the busiest stage's forward and backward (with batch loading)
  double bubble_s = 0;     ///< idle time the schedule leaves on that stage, transfers taken as free
  double transfer_s = 0;   ///< what stage-to-stage transfers add to the pipeline
  double reduction_s = 0;  ///< gradient reduction among replicas not hidden behind backward
  double other_s = 0;      ///< optimizer, loss allgather, buffer broadcast, fixed step cost
  double imbalance = 1;    ///< the busiest stage's compute over the stages' mean (1: balanced)
  std::vector<MemoryBreakdown> stage_memory;
  std::size_t peak_memory_bytes = 0;
  /// Per stage, a rank's peak resident set: Plan::process_bytes, its share of Plan::data_bytes
  /// on the first stage, and the engine's memory (stage_memory) less the pages it never writes
  /// (MemoryBreakdown::resident); the largest in peak_resident_bytes. Filter and channel splits'
  /// own buffers are in stage_memory where the profile has the member's calibration
  /// (MemoryBreakdown::split_buffers).
  std::vector<std::size_t> stage_resident_bytes;
  std::size_t peak_resident_bytes = 0;
  bool fits = true;  ///< peak memory within the budget asked for
  std::string reason;
};

/// What a layer's calibration key adds for one member's part of a filter or channel split
/// (CalibrationOptions::split): " [filter:2 member]"; nothing otherwise.
inline std::string split_key_suffix(const LayerSplit& split) {
  return split.divides_layers() ? std::string(" [") + split.kind_name() + ":" + std::to_string(split.group) + " member]" : "";
}

namespace detail {

/// Each top-level layer's calibration in the profile and, under a filter or channel `split`, its
/// member's (split_key_suffix); null where the profile has none. Looked up once per prediction:
/// its times and its memory read them.
struct LayerTiming {
  const UnitTiming* whole = nullptr;
  const UnitTiming* member = nullptr;
  /// The member's calibration where the profile has it, else the whole layer's.
  const UnitTiming* as_run() const { return member ? member : whole; }
};
inline std::vector<LayerTiming> layer_timings(const ModelView& model, const MachineProfile& profile,
                                              const LayerSplit& split = {}) {
  const std::string member_suffix = split_key_suffix(split);
  std::vector<LayerTiming> timings;
  timings.reserve(model.layer_keys.size());
  for (const std::string& key : model.layer_keys) {
    timings.push_back({profile.unit(key), member_suffix.empty() ? nullptr : profile.unit(key + member_suffix)});
  }
  return timings;
}

/// A unit's layers split over a group (LayerSplit) on micro-batches of m samples: the share of its
/// calibrated forward and backward that stays, and what its group's exchanges add.
///
/// Filter and channel splits: with a member's own calibration (`member_calibrated`: timed as it
/// runs, all of it stays), else from the whole model's, the split products' FLOPs over the unit's,
/// 1/G of them left (a member of ResNet-20's filter split over 2 computed its convolutions in 97 %
/// of the whole model's time, not half: the FLOP share is a floor); and each layer's collectives,
/// a ring among the group's neighbouring ranks: filter splits gather the outputs in forward and,
/// in backward, the weight gradients and all G members' input-gradient parts; channel splits
/// gather all members' partial outputs in forward and the input and weight gradients in backward.
///
/// Spatial splits (a slab rank's view, calibrated as one: all of it stays): its halo swaps in
/// forward and backward, each one message each way at the larger direction's bytes, and its
/// group's allgathers (GroupTraffic), each a ring of G - 1 steps.
inline double transfer_seconds(const MachineProfile& profile, double bytes, std::size_t ranks, std::size_t a, std::size_t b);

struct SplitUnit {
  double forward_kept = 1, backward_kept = 1;
  double forward_s = 0, backward_s = 0;
};
inline SplitUnit spatial_unit(const MachineProfile& profile, const GroupTraffic& t, double g, double m,
                              std::size_t scalar_bytes, std::size_t ranks) {
  SplitUnit out;
  const double bytes = static_cast<double>(scalar_bytes);
  // `calls` messages (or ring steps) of `elements` in all, each at the p2p line.
  const auto messages = [&](double calls, double elements) {
    return calls > 0 ? calls * transfer_seconds(profile, elements * bytes / calls, ranks, 0, 1) : 0.0;
  };
  const double swaps = static_cast<double>(t.halo_swaps), halos = m * static_cast<double>(t.halo_elements);
  const auto gathers = [&](std::size_t calls, std::size_t fixed, std::size_t per_sample) {
    return messages(static_cast<double>(calls) * (g - 1),
                    (g - 1) * (static_cast<double>(fixed) + m * static_cast<double>(per_sample)));
  };
  const double halo_s = messages(swaps, halos);  // as much each way: forward's rows, backward's gradients
  out.forward_s = halo_s + gathers(t.forward_gathers, t.forward_fixed, t.forward_per_sample);
  out.backward_s = halo_s + gathers(t.backward_gathers, t.backward_fixed, t.backward_per_sample);
  return out;
}
inline SplitUnit split_unit(const MachineProfile& profile, const LayerCost& c, const LayerSplit& split, double m,
                            std::size_t scalar_bytes, std::size_t ranks, bool member_calibrated = false) {
  SplitUnit out;
  if (!split.splits()) return out;
  const double g = static_cast<double>(split.group);
  if (split.kind == SplitKind::spatial) return spatial_unit(profile, c.group, g, m, scalar_bytes, ranks);
  if (c.split_layers == 0) return out;
  const double layers = static_cast<double>(c.split_layers);
  const double split_forward = 2.0 * static_cast<double>(c.split_macs), split_backward = 4.0 * static_cast<double>(c.split_macs);
  if (c.forward_flops > 0 && !member_calibrated) {
    out.forward_kept = 1 - split_forward / static_cast<double>(c.forward_flops) * (1 - 1 / g);
  }
  if (c.backward_flops > 0 && !member_calibrated) {
    out.backward_kept = 1 - split_backward / static_cast<double>(c.backward_flops) * (1 - 1 / g);
  }
  // One ring of G - 1 steps per layer of `count`, receiving `elements` in all.
  const auto rings = [&](double count, double elements) {
    if (count <= 0) return 0.0;
    const double step_bytes = elements * static_cast<double>(scalar_bytes) / count / (g - 1);
    return count * (g - 1) * transfer_seconds(profile, step_bytes, ranks, 0, 1);
  };
  const double in = m * static_cast<double>(c.split_inputs), out_elements = m * static_cast<double>(c.split_outputs);
  const double weights = static_cast<double>(c.split_weights), gathered = (g - 1) / g, summed = g - 1;
  // DensePairs' layers move their activations as a pair (below), not layer by layer.
  const double pairs = static_cast<double>(c.split_pairs), lone = layers - 2 * pairs;
  if (split.kind == SplitKind::filter) {
    out.forward_s = rings(lone, gathered * out_elements);
    out.backward_s = rings(layers, gathered * weights) + rings(lone, summed * in);
  } else {
    out.forward_s = rings(lone, summed * out_elements);
    out.backward_s = rings(layers, gathered * weights) + rings(lone, gathered * in);
  }
  // A pair adds over the group once each way, either kind: its second layer's outputs forward,
  // its first layer's input gradient backward.
  out.forward_s += rings(pairs, summed * m * static_cast<double>(c.split_pair_forward));
  out.backward_s += rings(pairs, summed * m * static_cast<double>(c.split_pair_backward));
  return out;
}

/// The units of the stage [begin, end) of a model's `units` (in forward order): one run of them,
/// found by bisection (a query predicts hundreds of stages of models of hundreds of units).
inline std::span<const UnitFacts> stage_units(std::span<const UnitFacts> units, std::size_t begin, std::size_t end,
                                              bool last) {
  const auto first = std::partition_point(units.begin(), units.end(), [&](const UnitFacts& u) { return u.first_leaf < begin; });
  const auto after = std::partition_point(first, units.end(), [&](const UnitFacts& u) { return in_stage(u, begin, end, last); });
  return {first, after};
}

/// One top-level layer's forward and backward on micro-batches of m samples: its calibration at
/// m, its split's share kept and its group's exchanges added (split_unit). Every copy of a Repeat
/// and every stage read the same, so a prediction looks them up once per layer.
struct LayerTimes {
  double forward = 0, backward = 0;
  bool calibrated = false;
  /// Seconds forward and backward add with the tapes of many micro-batches in flight
  /// (UnitTiming::in_flight_forward_ratio), and the bytes of one tape and of the tapes measured.
  double forward_in_flight = 0, backward_in_flight = 0, one_tape_bytes = 0, in_flight_bytes = 0;
};
/// With `split`, their Dense and convolution layers are split (split_unit) in a job of `ranks` ranks:
/// timed as a member's part where the profile has that calibration (`timings`: layer_timings of
/// the same split).
inline std::vector<LayerTimes> layer_times(const ModelView& model, const MachineProfile& profile,
                                           const std::vector<LayerTiming>& timings, double m, HostLoad load,
                                           const LayerSplit& split = {}, std::size_t ranks = 1) {
  std::vector<LayerTimes> out(timings.size());
  for (const UnitFacts& u : model.units) {
    LayerTimes& l = out[u.layer];
    if (l.calibrated || !timings[u.layer].whole) continue;
    const UnitTiming* timing = timings[u.layer].as_run();
    const SplitUnit parts =
        split_unit(profile, u.cost, split, m, model.scalar_bytes, ranks, timings[u.layer].member != nullptr);
    const double forward = timing->forward(m, load) * parts.forward_kept, backward = timing->backward(m, load) * parts.backward_kept;
    l.forward = forward + parts.forward_s;
    l.backward = backward + parts.backward_s;
    l.forward_in_flight = forward * timing->in_flight_excess(timing->in_flight_forward_ratio, m);
    l.backward_in_flight = backward * timing->in_flight_excess(timing->in_flight_backward_ratio, m);
    l.one_tape_bytes = timing->one_tape_bytes(m);
    l.in_flight_bytes = timing->tapes_in_flight_bytes(m);
    l.calibrated = true;
  }
  return out;
}

/// One unit's backward on a micro-batch: its layer's, and with `recompute` a Repeat's block runs its
/// forward again inside it.
inline double unit_backward(const std::vector<LayerTimes>& layers, const UnitFacts& u, bool recompute) {
  const LayerTimes& l = layers[u.layer];
  return l.backward + (recompute && u.repeated ? l.forward : 0.0);
}

/// Per top-level layer, what its calibration says it needs at a micro-batch capacity: under a
/// filter or channel split, its member's calibration where the profile has it (a split layer's
/// workspace differs from the whole layer's, and it keeps buffers of its own).
struct LayerNeeds {
  std::size_t workspace = 0, workspace_written = 0, scratch = 0, split_buffers = 0, split_buffers_unwritten = 0;
  hpf::detail::Bf16StagingNeed staging;
};

/// A model's calibration as a prediction reads it for one split, micro-batch and job size: each
/// top-level layer's entries (layer_timings), times (layer_times) and needs (LayerNeeds). Every
/// plan with the same micro-batch reads the same, so a search looks them up once for all of them
/// (ResNet-56's rank at 64 ranks then took some 5 % less time, its search of cuts 7-9 %).
struct CalibratedLayers {
  const ModelView* model = nullptr;
  LayerSplit split;
  double samples = 0;        ///< a micro-batch's samples (fractional where M does not divide the batch)
  std::size_t capacity = 0;  ///< the largest micro-batch's, which memory is sized for
  std::size_t ranks = 0;
  std::vector<LayerTiming> timings;
  std::vector<LayerTimes> times;
  std::vector<LayerNeeds> needs;
  /// Whether `plan` of `view` reads these.
  bool serve(const ModelView& view, const Plan& plan) const {
    return model == &view && split.kind == plan.split.kind && split.ranks() == plan.split.ranks() && ranks == plan.ranks() &&
           samples == micro_batch_samples(plan) && capacity == micro_batch_capacity(plan);
  }
  static double micro_batch_samples(const Plan& plan) {
    return static_cast<double>(plan.batch) / static_cast<double>(plan.replicas) / static_cast<double>(plan.micro_batches);
  }
  static std::size_t micro_batch_capacity(const Plan& plan) {
    return (plan.batch / plan.replicas + plan.micro_batches - 1) / plan.micro_batches;
  }
};

/// The times of a stage whose units are `units` (stage_units) from its layers' (layer_times).
/// With `recompute`, a Repeat's block runs its forward again inside its backward.
/// With `tapes_in_flight` bytes of micro-batches' tapes alive together on the rank, each unit's
/// passes take their share of what many tapes in flight add (LayerTimes::forward_in_flight;
/// in_flight_share).
inline StageTimes stage_times(const ModelView& model, const MachineProfile& profile, const std::vector<LayerTimes>& layers,
                              std::span<const UnitFacts> units, bool recompute = false, double tapes_in_flight = 0) {
  StageTimes t;
  for (const UnitFacts& u : units) {
    const LayerTimes& l = layers[u.layer];
    if (!l.calibrated) {
      const std::string g = std::to_string(model.spatial_group);
      throw ProfileError("hpf::oracle: the profile '" + profile.path + "' has no calibration of '" +
                         model.layer_keys[u.layer] + "' (model " + model.name + "): run " +
                         (model.spatial_group > 1 ? "hpf-oracle calibrate --split spatial:" + g +
                                                        " for this model (or hpf::oracle::calibrate<SpatialSplit<Model, " + g + ", 1>>)"
                                                  : std::string("hpf-oracle calibrate for this model (or hpf::oracle::calibrate<Model>)")));
    }
    const double share = in_flight_share(tapes_in_flight, l.one_tape_bytes, l.in_flight_bytes);
    t.forward += l.forward + share * l.forward_in_flight;
    t.backward += unit_backward(layers, u, recompute) + share * l.backward_in_flight;
  }
  return t;
}

/// Activation elements per sample re-materialization saves a stage: a Repeat piece of k copies of a
/// block that keeps A (its output `out` among them) keeps k block outputs, one block's tape and a
/// rebuilt output instead of k tapes: k*A - (k*out + A).
inline std::size_t recompute_saved_elements(const ModelView& model, std::size_t begin, std::size_t end, bool last) {
  std::map<std::size_t, std::size_t> copies;  // per repeated top-level layer: its copies in this stage
  std::map<std::size_t, const UnitFacts*> block;
  for (const UnitFacts& u : model.units) {
    if (!u.repeated || !in_stage(u, begin, end, last)) continue;
    ++copies[u.layer];
    block[u.layer] = &u;
  }
  std::size_t saved = 0;
  for (const auto& [layer, k] : copies) {
    const std::size_t kept = k * block[layer]->cost.activations, rebuilt = k * block[layer]->output_elements + block[layer]->cost.activations;
    saved += kept > rebuilt ? kept - rebuilt : 0;
  }
  return saved;
}

/// Ranks of a `ranks`-process job that compute on one host's cores.
inline std::size_t ranks_per_host(const MachineProfile& profile, std::size_t ranks) {
  if (profile.cluster) return profile.cluster->ranks_per_node;
  const std::size_t hosts = profile.compute_hosts();
  return (ranks + hosts - 1) / hosts;
}

/// Ranks sharing a host's cores: how much slower each computes than alone (1 when they fit).
inline double sharing(const MachineProfile& profile, std::size_t ranks) {
  const double demand = static_cast<double>(ranks_per_host(profile, ranks) * std::max<std::size_t>(1, profile.threads_per_rank));
  return std::max(1.0, demand / static_cast<double>(std::max<std::size_t>(1, profile.cores)));
}

inline bool same_node(const MachineProfile& profile, std::size_t a, std::size_t b) {
  return !profile.cluster || a / profile.cluster->ranks_per_node == b / profile.cluster->ranks_per_node;
}

/// One message of `bytes` from rank a to rank b of a `ranks`-process job.
inline double transfer_seconds(const MachineProfile& profile, double bytes, std::size_t ranks, std::size_t a, std::size_t b) {
  if (profile.cluster) {
    const Regime& link = same_node(profile, a, b) ? profile.cluster->intra : profile.cluster->inter;
    return link.alpha_s + link.beta_s_per_byte * bytes;
  }
  return profile.fit("p2p_latency").seconds(bytes, ranks);  // measured with as many ranks running
}

/// How long one message of `bytes` keeps the link from rank a to rank b busy when messages follow
/// each other: the time per message of a stream (the `p2p_bandwidth` fit, a window of back-to-back
/// messages).
inline double link_busy_seconds(const MachineProfile& profile, double bytes, std::size_t ranks, std::size_t a, std::size_t b) {
  const CommFit& stream = profile.fit("p2p_bandwidth");
  if (profile.cluster || stream.empty()) return transfer_seconds(profile, bytes, ranks, a, b);
  return stream.seconds(bytes, ranks);
}

/// One micro-batch's message between neighbouring stages (MessageCost): its lone latency
/// (transfer_seconds) and how long it keeps the link busy in a stream (link_busy_seconds).
inline MessageCost message_cost(const MachineProfile& profile, double bytes, std::size_t ranks, std::size_t a, std::size_t b) {
  return {transfer_seconds(profile, bytes, ranks, a, b), link_busy_seconds(profile, bytes, ranks, a, b)};
}

/// Over links (a cluster's, or the hosts' of a multi-host profile): every rank receives the other
/// bucket (the ordered reduction of 2) or 2 (R - 1) / R of one (the ordered reduction of 3 or
/// more, scattered and collected, and a ring allreduce), each message at the link's rate while
/// the other direction carries as much. `collected`: the bytes of the sums collected back, where
/// they travel in fewer bytes than the copies scattered (a bf16 exchange among hosts' leaders).
template <class MessageSeconds>
double exchange_seconds(const MessageSeconds& message_seconds, double bytes, std::size_t replicas,
                        GradientReduction reduction, double collected = -1) {
  const double r = static_cast<double>(replicas);
  if (reduction == GradientReduction::ordered && replicas <= 2) return (r - 1) * message_seconds(bytes);
  return (r - 1) * (message_seconds(bytes / r) + message_seconds((collected < 0 ? bytes : collected) / r));
}

/// What a value of a float gradient takes on the wire, as a share of its 4 bytes, in the messages
/// that carry a replica's own copy or a final sum (a host's partial sum keeps all 4).
inline double wire_share(ExchangePrecision precision) { return precision == ExchangePrecision::bf16 ? 0.5 : 1.0; }

/// Bytes of one micro-batch's message of `elements` values per sample between stages: bf16
/// (StepOptions::stage_precision) halves a float network's.
inline double stage_message_bytes(std::size_t elements, std::size_t scalar_bytes, ExchangePrecision stage_precision,
                                  double samples) {
  const double share = scalar_bytes == sizeof(float) ? wire_share(stage_precision) : 1.0;
  return static_cast<double>(elements * scalar_bytes) * share * samples;
}

/// Whether the replicas of one stage of a `stages`-stage pipeline exchange their buckets over links
/// between hosts of a multi-host profile (not a cluster's), priced from one direction's stream
/// (`p2p_bandwidth`) rather than from a benchmark of the whole reduction.
inline bool exchange_over_links(const MachineProfile& profile, std::size_t replicas, std::size_t stages) {
  const std::size_t hosts = std::max<std::size_t>(1, profile.hosts), ranks = replicas * stages;
  return !profile.cluster && replicas > 1 && hosts > 1 && !profile.fit("p2p_bandwidth").empty() &&
         (replicas - 1) * stages >= (ranks + hosts - 1) / hosts;
}

/// How the replicas of one stage of a `stages`-stage plan fill the hosts, ranks in order (rank =
/// replica x stages + stage, as hpf::ProcessGrid numbers them and `mpiexec --map-by slot` places
/// them): replicas per host and the hosts they span.
struct HostSpread {
  std::size_t per_host = 1, hosts = 1;
};
inline HostSpread host_spread(const MachineProfile& profile, std::size_t replicas, std::size_t stages) {
  const std::size_t ranks = replicas * stages, network_hosts = std::max<std::size_t>(1, profile.hosts);
  const std::size_t per_node = profile.cluster ? profile.cluster->ranks_per_node : (ranks + network_hosts - 1) / network_hosts;
  const std::size_t per_host = per_node % stages == 0 ? std::clamp<std::size_t>(per_node / stages, 1, replicas) : 1;
  return {per_host, (replicas + per_host - 1) / per_host};
}

/// Whether the engine sums a stage's buckets per host first (GradientBuckets' rule: the ordered
/// reduction only with a power of two replicas per host).
inline bool summed_per_host(HostHierarchy asked, const HostSpread& spread, GradientReduction reduction) {
  if (asked == HostHierarchy::off || spread.per_host <= 1 || (asked == HostHierarchy::automatic && spread.hosts <= 1)) {
    return false;
  }
  return reduction != GradientReduction::ordered || spread.hosts <= 1 || (spread.per_host & (spread.per_host - 1)) == 0;
}

/// One bucket summed per host first: in the host to its leader (the ordered reduction's gather
/// receives L - 1 copies, a reduction climbs a tree), among the H leaders over links as a flat
/// exchange of H, back down a broadcast's tree. Inside a host a copy is priced by the cluster's
/// intra-node line, elsewhere by what moving a byte costs a core (LinkFacts::compute_s_per_byte).
/// `share` (wire_share): the copies gathered, the sums collected and broadcast in fewer bytes;
/// the hosts' partial sums cross whole.
template <class Across>
double per_host_bucket_seconds(const MachineProfile& profile, double bytes, const HostSpread& spread,
                               GradientReduction reduction, const Across& across, double share = 1) {
  const auto inside = [&](double n) {
    return profile.cluster ? profile.cluster->intra.alpha_s + n * profile.cluster->intra.beta_s_per_byte
                           : n * profile.link.compute_s_per_byte;
  };
  const double per_host = static_cast<double>(spread.per_host), depth = std::ceil(std::log2(per_host));
  const double gather =
      reduction == GradientReduction::ordered ? (per_host - 1) * inside(share * bytes) : depth * inside(bytes);
  const double among = spread.hosts > 1 ? exchange_seconds(across, bytes, spread.hosts, reduction, share * bytes) : 0;
  return gather + among + depth * inside(share * bytes);
}

/// Copies of a stage's gradient the busiest rank holds to add them in the ordered reduction
/// (GradientBuckets, PhasedExchange), counted in float gradients: every replica's with 2
/// replicas; its own share of every replica's part (scattered) with 3 or more; summed per host
/// first, the leader's host's copies. Exchanged as bf16 they take half, beside a bf16 copy of the
/// gradient (what a rank sends and receives) and, summed per host first, float room for the
/// hosts' partial sums.
inline double gathered_copies(const MachineProfile& profile, std::size_t replicas, std::size_t stages,
                              GradientReduction reduction, HostHierarchy hierarchy,
                              ExchangePrecision precision = ExchangePrecision::full) {
  if (reduction != GradientReduction::ordered || replicas <= 1) return 0;
  const HostSpread spread = host_spread(profile, replicas, stages);
  const bool per_host = summed_per_host(hierarchy, spread, reduction);
  const double copies = per_host ? static_cast<double>(std::max<std::size_t>(spread.per_host, spread.hosts == 2 ? 2 : 1))
                                 : replicas == 2 ? 2.0 : 1.0;
  if (precision == ExchangePrecision::full) return copies;
  return 0.5 * copies + 0.5 + (per_host ? copies : 0.0);
}

/// The copies of a bucket a rank takes in when `replicas` exchange it, in buckets: 1 among 2 (the
/// ordered reduction's gather, a ring's halves), 2 (r - 1) / r among more (scattered and
/// collected, or a ring).
inline double copies_taken_in(double replicas) { return 2 * (replicas - 1) / replicas; }

/// One gradient bucket of `bytes` reduced among the `replicas` of one stage of a `stages`-stage
/// pipeline; `bytes` as float gradients take (a bf16 exchange moves fewer: wire_share).
inline double bucket_seconds(const MachineProfile& profile, double bytes, std::size_t replicas, std::size_t stages,
                             GradientReduction reduction, HostHierarchy hierarchy = HostHierarchy::automatic,
                             ExchangePrecision precision = ExchangePrecision::full) {
  if (replicas <= 1) return 0;
  const std::size_t ranks = replicas * stages;
  const HostSpread spread = host_spread(profile, replicas, stages);
  const double share = wire_share(precision);
  if (summed_per_host(hierarchy, spread, reduction)) {
    if (profile.cluster) {
      const Regime& inter = profile.cluster->inter;
      return per_host_bucket_seconds(profile, bytes, spread, reduction,
                                     [&](double n) { return inter.alpha_s + n * inter.beta_s_per_byte; }, share);
    }
    if (spread.hosts == 1 || !profile.fit("p2p_bandwidth").empty()) {
      const CommFit& stream = profile.fit("p2p_bandwidth");
      return per_host_bucket_seconds(profile, bytes, spread, reduction, [&](double n) { return stream.seconds(n, ranks); },
                                     share);
    }
  }
  bytes *= share;  // flat: every message is a replica's copy or a collected sum
  if (profile.cluster) {
    const auto& c = *profile.cluster;
    const bool spans_nodes = (replicas - 1) * stages >= c.ranks_per_node;
    const Regime& link = spans_nodes ? c.inter : c.intra;
    return exchange_seconds([&](double n) { return link.alpha_s + n * link.beta_s_per_byte; }, bytes, replicas, reduction);
  }
  // Replicas on separate hosts exchange over the link at its streaming rate, as on a cluster:
  // the engine sends their buckets in pieces under the eager limit (StepOptions::
  // exchange_piece_bytes), so no rendezvous acknowledgement queues behind the other direction's
  // data and both directions flow at once (docs/oracle.md).
  if (exchange_over_links(profile, replicas, stages)) {
    const CommFit& stream = profile.fit("p2p_bandwidth");
    return exchange_seconds([&](double n) { return stream.seconds(n, ranks); }, bytes, replicas, reduction);
  }
  const CommFit& fit = profile.fit(reduction == GradientReduction::ordered ? "buckets_ordered" : "buckets_allreduce");
  const CommFit& used = fit.empty() ? profile.fit("allreduce") : fit;
  // The fit of `replicas` processes, unless they outnumber the host's cores: the benchmark started
  // them together after a barrier, all polling against the ranks that copy, which training's
  // staggered arrivals do not do (a 4-rank gather of 2.7 MB: 6.6 ms there, 3.1-4.3 ms in training;
  // docs/oracle.md). Then the largest communicator that had a core per rank, as the cluster model
  // does: the volume a rank receives grows with its peers.
  std::size_t measured = replicas;
  if (sharing(profile, replicas) > 1) {
    for (const auto& entry : used.by_ranks) {
      if (entry.first >= 2 && sharing(profile, entry.first) <= 1) measured = entry.first;
    }
  }
  const double r = static_cast<double>(replicas), q = static_cast<double>(measured);
  const double volume = copies_taken_in(r) / copies_taken_in(q);
  // More ranks on the host share its cores, which slows what the exchange computes: the profile's
  // compute per byte a rank sends or receives (hpf_bench_comm's steal), on a share of a core. The
  // rest of the fit is time the rank's core is not used, which sharing does not stretch: on an AMD
  // EPYC the 2-rank fit moves 2.7 MB each way in 1.7 ms, of which 0.5 ms computes (docs/oracle.md).
  const double moved = 2 * copies_taken_in(r) * bytes;  // in and out, per rank
  const double shared = sharing(profile, ranks) / sharing(profile, measured);
  return used.seconds(bytes, measured) * volume + (shared - 1) * profile.link.compute_s_per_byte * moved;
}

/// What a rank computes on its own core to exchange one bucket of `elements` gradients among
/// `replicas` (docs/oracle.md, "Exchange compute"): the copies it moves, in and out, at the
/// profile's compute per byte moved (hpf_bench_comm's steal), and the copies it adds, at the
/// calibrated sum per element: every element twice among 2 replicas (each sums both copies),
/// its share of every replica's copy among more (scattered, or a ring's pieces). It computes them
/// between its backward passes and after the last, so they lengthen its backward: the reduction
/// hides behind backward only what the links do.
inline double exchange_compute_seconds(const MachineProfile& profile, double elements, std::size_t scalar_bytes,
                                       std::size_t replicas, ExchangePrecision precision) {
  if (replicas <= 1 || !profile.exchange_compute) return 0;
  const double moved = 2 * copies_taken_in(static_cast<double>(replicas)) * elements *
                       static_cast<double>(scalar_bytes) * wire_share(precision);
  const double added = (replicas == 2 ? 2 : 1) * elements;
  return moved * profile.link.compute_s_per_byte + added * profile.exchange_sum_s_per_element;
}

}  // namespace detail

/// \brief One gradient bucket's exchange among `replicas` replicas of a `stages`-stage plan as the
/// profile predicts it, as a line alpha + beta x bytes through its predictions for 64 KiB and
/// 4 MiB buckets: what the automatic bucket size weighs (hpf::choose_bucket_bytes).
inline ExchangeCost exchange_cost(const MachineProfile& profile, std::size_t replicas, std::size_t stages,
                                  GradientReduction reduction, HostHierarchy hierarchy = HostHierarchy::automatic,
                                  ExchangePrecision precision = ExchangePrecision::full) {
  constexpr double small = 64 << 10, large = 4 << 20;
  const GradientReduction used = resolve(reduction, replicas);
  const double t_small = detail::bucket_seconds(profile, small, replicas, stages, used, hierarchy, precision);
  const double t_large = detail::bucket_seconds(profile, large, replicas, stages, used, hierarchy, precision);
  if (!(t_large > t_small) || !(t_small > 0)) return {};
  const double beta = (t_large - t_small) / (large - small);
  return {.alpha_s = std::max(0.0, t_small - beta * small), .beta_s_per_byte = beta};
}

namespace detail {

/// A plan that splits samples into G slabs predicts the view of one slab rank of G (its units are
/// other layers, calibrated apart), and that view no other plan.
inline void check_spatial_view(const ModelView& model, const Plan& plan) {
  const bool spatial = plan.split.kind == SplitKind::spatial && plan.split.splits();
  const std::size_t g = spatial ? plan.split.ranks() : 1;
  if (model.spatial_group == g) return;
  const std::string want = "view_of<SpatialSplit<Model, " + std::to_string(g) + ", 1>>";
  throw std::invalid_argument(
      "hpf::oracle: model '" + model.name + "' is " +
      (model.spatial_group > 1 ? "one slab rank's view of samples split into " + std::to_string(model.spatial_group) + " slabs"
                               : std::string("the whole model")) +
      ", and the plan (" + plan.describe() + ") needs " + (spatial ? want : std::string("the whole model's view")));
}

/// A small collective over all ranks (the loss allgather, the buffers' broadcast).
inline double collective_seconds(const MachineProfile& profile, double bytes, std::size_t ranks) {
  if (ranks <= 1) return 0;
  if (profile.cluster) {
    const auto& link = ranks > profile.cluster->ranks_per_node ? profile.cluster->inter : profile.cluster->intra;
    return std::ceil(std::log2(static_cast<double>(ranks))) * (link.alpha_s + bytes * link.beta_s_per_byte);
  }
  return profile.fit("allreduce").seconds(bytes, ranks);
}

/// The calibration `plan` reads (CalibratedLayers), looked up in the profile.
inline CalibratedLayers calibrated_layers(const ModelView& model, const MachineProfile& profile, const Plan& plan) {
  CalibratedLayers c;
  c.model = &model;
  c.split = plan.split;
  c.samples = CalibratedLayers::micro_batch_samples(plan);
  c.capacity = CalibratedLayers::micro_batch_capacity(plan);
  c.ranks = plan.ranks();
  // Ranks that share a host compute at its busy rate (measured with every core working).
  const HostLoad load = ranks_per_host(profile, c.ranks) > 1 ? HostLoad::busy : HostLoad::alone;
  c.timings = layer_timings(model, profile, plan.split);
  c.times = layer_times(model, profile, c.timings, c.samples, load, plan.split, c.ranks);
  c.needs.resize(c.timings.size());
  const auto at = static_cast<double>(c.capacity);
  for (std::size_t l = 0; l < c.timings.size(); ++l) {
    if (const UnitTiming* t = c.timings[l].whole ? c.timings[l].as_run() : nullptr) {
      c.needs[l] = {static_cast<std::size_t>(t->workspace(at)), static_cast<std::size_t>(t->workspace_resident(at)),
                    static_cast<std::size_t>(t->scratch(at)), static_cast<std::size_t>(t->split_buffers(at)),
                    static_cast<std::size_t>(t->split_buffers(at) - t->split_buffers_resident(at)), t->bf16_staging(at)};
    }
  }
  return c;
}

inline Prediction predict_calibrated(const ModelView& model, const Plan& plan, const MachineProfile& profile,
                                     double memory_budget_bytes, const CalibratedLayers& calibrated);

}  // namespace detail

/// \brief Predicts one training step of `plan` for `model` on `profile`: every stage's program
/// (the engine's own, stage_program) is played with calibrated compute and fitted transfers,
/// then the bucketed gradient reduction behind the last backward, the loss allgather and the
/// optimizer. Equations and what is not modelled: docs/oracle.md.
inline Prediction predict(const ModelView& model, const Plan& plan, const MachineProfile& profile,
                          double memory_budget_bytes = 0) {
  detail::check_spatial_view(model, plan);
  return detail::predict_calibrated(model, plan, profile, memory_budget_bytes, detail::calibrated_layers(model, profile, plan));
}

/// predict with the calibration `plan` reads looked up already (`calibrated.serve(model, plan)`).
inline Prediction detail::predict_calibrated(const ModelView& model, const Plan& plan, const MachineProfile& profile,
                                             double memory_budget_bytes, const CalibratedLayers& calibrated) {
  Prediction out;
  out.plan = plan;
  // The replicas of a stage are stride = S x G ranks apart (ProcessGrid): the exchange's host layout.
  const std::size_t S = plan.stages, R = plan.replicas, M = plan.micro_batches, P = plan.ranks(), G = plan.split.ranks();
  const std::size_t stride = plan.ranks_per_replica();
  const double m = calibrated.samples;
  const std::size_t capacity = calibrated.capacity;
  const double share = detail::sharing(profile, P);
  const double speed = profile.cluster ? profile.cluster->compute_speed : 1.0;
  const GradientReduction reduction = resolve(plan.reduction, R);

  const std::vector<detail::LayerTiming>& timings = calibrated.timings;
  const std::vector<detail::LayerTimes>& layers = calibrated.times;
  std::vector<std::span<const UnitFacts>> stage_runs(S);  // each stage's units
  std::vector<StageFacts> facts(S);
  std::vector<detail::StageTimes> times(S);
  const double hosts_used =
      profile.cluster ? std::ceil(static_cast<double>(P) / static_cast<double>(profile.cluster->ranks_per_node))
                      : static_cast<double>(profile.compute_hosts());
  std::vector<std::size_t> saved(S, 0);  // activation elements per sample re-materialization saves each stage
  double tapes = 0;                      // bytes of the tapes every stage keeps alive together
  for (std::size_t s = 0; s < S; ++s) {
    const bool last = s + 1 == S;
    stage_runs[s] = detail::stage_units(model.units, plan.bounds[s], plan.bounds[s + 1], last);
    facts[s] = stage_facts(stage_runs[s], plan.bounds[s], plan.bounds[s + 1], last);
    if (plan.recompute) saved[s] = detail::recompute_saved_elements(model, plan.bounds[s], plan.bounds[s + 1], last);
    tapes += static_cast<double>(slots_needed(plan.schedule, S, s, M) *
                                 tape_bytes_per_sample(facts[s].input_elements, facts[s].cost, model.scalar_bytes, saved[s])) * m;
  }
  // Tapes in flight (docs/oracle.md): a host's ranks share its cache, so the tapes that count are
  // those of all the ranks on it (at most a node's ranks), each holding a stage's (their mean), at
  // most as many as the calibrated host has slots: a cluster's node is taken to have as much cache
  // per core.
  const double calibrated_slots = static_cast<double>(std::max<std::size_t>(1, profile.cores)) /
                                  static_cast<double>(std::max<std::size_t>(1, profile.threads_per_rank));
  const double host_ranks = std::min(calibrated_slots, std::ceil(static_cast<double>(P) / hosts_used));
  const double host_tapes = tapes / static_cast<double>(S) * host_ranks;
  for (std::size_t s = 0; s < S; ++s) {
    times[s] = detail::stage_times(model, profile, layers, stage_runs[s], plan.recompute, host_tapes);
    const double load = s == 0 ? profile.load_s_per_element * static_cast<double>(facts[s].input_elements) * m : 0;
    times[s].forward = (times[s].forward + load) / speed;  // sharing the cores: in the playing below
    times[s].backward /= speed;
  }

  // Play the programs (play.hpp): each stage runs its passes in order, a receive waits for its message,
  // and the ranks computing at one moment share the host's cores (processor sharing: a waiting
  // rank gives its core up, as MPI does when a host is oversubscribed). Replicas run alike.
  const double slots = profile.cluster ? static_cast<double>(profile.cluster->ranks_per_node) : calibrated_slots;
  const detail::StagePasses programs(plan.schedule, S, M);
  // One micro-batch's message, priced once per size and kind of link: the stages' boundaries carry
  // a few sizes (looking the fits up by name for each took a tenth of a query).
  struct PricedMessage {
    double bytes;
    bool same_node;
    detail::MessageCost cost;
  };
  std::vector<PricedMessage> priced_messages;
  auto link = [&](std::size_t elements, std::size_t from, std::size_t to) {
    const double bytes = detail::stage_message_bytes(elements, model.scalar_bytes, plan.stage_precision, m);
    const bool same_node = detail::same_node(profile, from, to);
    for (const PricedMessage& priced : priced_messages) {
      if (priced.bytes == bytes && priced.same_node == same_node) return priced.cost;
    }
    priced_messages.push_back({bytes, same_node, detail::message_cost(profile, bytes, P, from, to)});
    return priced_messages.back().cost;
  };
  std::vector<detail::MessageCost> to_next(S), to_previous(S);  // s -> s + 1, s -> s - 1
  for (std::size_t s = 0; s < S; ++s) {
    if (s + 1 < S) to_next[s] = link(facts[s].output_elements, s, s + 1);
    if (s > 0) to_previous[s] = link(facts[s].input_elements, s, s - 1);
  }
  // The rate at which each computing stage progresses while `active` stages of every replica and
  // group member compute: the host's slots over the ranks computing on it, at most 1.
  std::vector<double> rate_of(S + 1, 1.0);
  for (std::size_t active = 1; active <= S; ++active) {
    rate_of[active] = std::min(1.0, slots / std::ceil(static_cast<double>(active * R * G) / hosts_used));
  }
  const bool alone = rate_of[S] == 1.0;  // the rate falls as more compute: the play, else the sweep
  detail::PlayInput playing{.programs = &programs, .times = times.data(), .to_next = to_next.data(),
                            .to_previous = to_previous.data(), .rate_of = rate_of.data(), .stages = S, .micro_batches = M};
  const auto played_with = [&](bool with_transfers) {
    playing.with_transfers = with_transfers;
    return alone ? detail::sweep(playing) : detail::play(playing);
  };
  const detail::Played played = played_with(true);
  const std::vector<double>& ends = played.end;
  const std::vector<double>& backward_start = played.last_backward_start;
  const std::vector<double>& backward_end = played.last_backward_end;
  // Transfers taken as free, no stage waits while another could compute (a message arrives as it is
  // sent). Where the host's cores are shared evenly by however many compute (`active` of them at
  // `rate_of[active]` each do the work of one at rate_of[1]), the programs then end when all the
  // work is done at that pace.
  const auto free_end = [&] {
    if (S == 1) return *std::max_element(ends.begin(), ends.end());  // one stage sends nothing
    bool even = true;
    for (std::size_t active = 2; active <= S; ++active) {
      even = even && std::abs(rate_of[active] * static_cast<double>(active) - rate_of[1]) <= 1e-12 * rate_of[1];
    }
    if (even && !alone) {
      double work = 0;
      for (const detail::StageTimes& t : times) work += static_cast<double>(M) * (t.forward + t.backward);
      return work / rate_of[1];
    }
    const std::vector<double> end = played_with(false).end;
    return *std::max_element(end.begin(), end.end());
  };
  const double program_free_end = free_end();

  // Per stage: buckets become ready as the last backward passes them (from the end of the
  // gradient), each reduction starts when it is ready and the previous one is done. The units'
  // times are a rank's alone; the played backward may have taken longer (ranks sharing cores), so
  // a unit ends at its share of the played backward.
  double step_end = 0, busiest = 0, all_stages = 0, optimizer = 0;
  // Every stage's replicas exchange alike: the line the automatic bucket size weighs, priced once.
  const ExchangeCost exchange = R > 1 ? exchange_cost(profile, R, stride, reduction, plan.hierarchy, plan.exchange_precision)
                                      : ExchangeCost{};
  // A bucket's reduction by its bytes, priced once per size: the stages' buckets come in a few sizes.
  std::vector<std::pair<double, double>> bucket_prices;  // bytes, seconds
  std::size_t last_price = 0;                              // the one asked last: most buckets are one size
  const auto bucket_price = [&](double bytes) {
    if (last_price < bucket_prices.size() && bucket_prices[last_price].first == bytes) return bucket_prices[last_price].second;
    for (last_price = 0; last_price < bucket_prices.size(); ++last_price) {
      if (bucket_prices[last_price].first == bytes) return bucket_prices[last_price].second;
    }
    bucket_prices.emplace_back(bytes, detail::bucket_seconds(profile, bytes, R, stride, reduction, plan.hierarchy, plan.exchange_precision));
    return bucket_prices.back().second;
  };
  for (std::size_t s = 0; s < S; ++s) {
    double end = ends[s];
    if (R > 1 && facts[s].cost.parameters > 0) {
      const std::size_t params = facts[s].cost.parameters;
      const std::size_t bucket_bytes = choose_bucket_bytes(plan.bucket_bytes, params * model.scalar_bytes, exchange);
      const std::size_t per_bucket = std::max<std::size_t>(1, bucket_bytes / model.scalar_bytes);
      const double stretch = times[s].backward > 0 ? (backward_end[s] - backward_start[s]) / times[s].backward : 1;
      double ready_clock = backward_start[s], reduced = 0, exchanging = 0;
      std::size_t covered = params;  // gradients at offsets >= covered are final
      const std::span<const UnitFacts> units = stage_runs[s];
      std::size_t u = units.size();
      std::size_t bucket_begin = params > per_bucket ? (params - 1) / per_bucket * per_bucket : 0;
      while (true) {
        while (covered > bucket_begin && u > 0) {
          --u;
          ready_clock += detail::unit_backward(layers, units[u], plan.recompute) / speed * stretch;
          covered -= units[u].cost.parameters;
        }
        const std::size_t bucket_end = std::min(params, bucket_begin + per_bucket);
        reduced = std::max(reduced, ready_clock) + bucket_price(static_cast<double>((bucket_end - bucket_begin) * model.scalar_bytes));
        // The rank computes its part of this bucket's exchange before its backward goes on.
        const double computes = detail::exchange_compute_seconds(profile, static_cast<double>(bucket_end - bucket_begin),
                                                                 model.scalar_bytes, R, plan.exchange_precision) /
                                speed * stretch;
        ready_clock += computes;
        exchanging += computes;
        if (bucket_begin == 0) break;
        bucket_begin -= per_bucket;
      }
      end = std::max(end + exchanging, reduced);
    }
    step_end = std::max(step_end, end);
    busiest = std::max(busiest, played.computing[s]);
    all_stages += played.computing[s];
    const double optimizer_alone = profile.optimizer_s_per_parameter * static_cast<double>(facts[s].cost.parameters);
    optimizer = std::max(optimizer, optimizer_alone * share / speed);
  }
  const double program_end = *std::max_element(ends.begin(), ends.end());
  std::size_t buffers = 0;
  for (const StageFacts& f : facts) buffers = std::max(buffers, f.cost.buffers);
  const double collectives = detail::collective_seconds(profile, 8, P) +
                             (R > 1 && buffers ? detail::collective_seconds(profile, static_cast<double>(buffers * model.scalar_bytes), R) : 0);
  out.compute_s = busiest;
  out.imbalance = all_stages > 0 ? busiest * static_cast<double>(S) / all_stages : 1;
  out.bubble_s = std::max(0.0, program_free_end - busiest);
  out.transfer_s = std::max(0.0, program_end - program_free_end);
  out.reduction_s = std::max(0.0, step_end - program_end);
  out.other_s = optimizer + collectives;
  out.time_s = step_end + out.other_s;

  const std::vector<detail::LayerNeeds>& needs = calibrated.needs;
  std::vector<std::size_t> copies(timings.size(), 0);  // per top-level layer: its units in the stage
  const double gathered = detail::gathered_copies(profile, R, stride, reduction, plan.hierarchy, plan.exchange_precision);
  for (std::size_t s = 0; s < S; ++s) {
    MemoryInputs in;
    in.scalar_bytes = model.scalar_bytes;
    in.slots = slots_needed(plan.schedule, S, s, M);
    in.capacity = capacity;
    in.first = s == 0;
    in.last = s + 1 == S;
    in.classifier = model.classifier;
    in.label_size = model.label_size;
    in.optimizer_values = model.optimizer_values;
    in.replicas = R;
    in.gathered_copies = gathered;
    in.runtime_bytes = profile.runtime_bytes;
    in.empty_view_bytes = profile.empty_view_bytes;
    for (const UnitFacts& u : stage_runs[s]) ++copies[u.layer];
    hpf::detail::Bf16StagingNeed staging;  // one Bf16Gemm per stage's network: its widest copies
    std::size_t workspace_written = 0;      // the most any of the stage's layers writes of it
    for (const UnitFacts& u : stage_runs[s]) {
      if (!timings[u.layer].whole) continue;
      const detail::LayerNeeds& need = needs[u.layer];
      staging = staging.widest(need.staging);
      // A Repeat piece of two or more copies keeps two gradient buffers between its copies.
      const std::size_t between = copies[u.layer] > 1 ? 2 * u.output_elements * capacity : 0;
      in.workspace_elements = std::max(in.workspace_elements, need.workspace);
      workspace_written = std::max(workspace_written, need.workspace_written);
      in.child_scratch_elements = std::max(in.child_scratch_elements, need.scratch + between);
      in.split_buffer_elements += need.split_buffers;  // each layer's own, every copy of a Repeat too
      in.split_buffer_unwritten_elements += need.split_buffers_unwritten;
    }
    for (const UnitFacts& u : stage_runs[s]) copies[u.layer] = 0;
    in.workspace_unwritten_elements = in.workspace_elements - std::min(in.workspace_elements, workspace_written);
    const std::size_t buffers_written =
        stage_gradient_buffers_written(stage_runs[s], plan.bounds[s], plan.bounds[s + 1], in.first, in.last);
    in.gradient_buffer_unwritten_elements = (2 * facts[s].largest_inner_output - buffers_written) * capacity;
    in.bf16_staging_bytes = staging.bytes();
    in.recompute_saved_elements = saved[s];
    out.stage_memory.push_back(stage_memory(facts[s], in));
    out.peak_memory_bytes = std::max(out.peak_memory_bytes, out.stage_memory.back().total());
    const std::size_t data_share = s == 0 ? plan.data_bytes / R : 0;
    out.stage_resident_bytes.push_back(plan.process_bytes + data_share + out.stage_memory.back().resident());
    out.peak_resident_bytes = std::max(out.peak_resident_bytes, out.stage_resident_bytes.back());
  }
  out.fits = memory_budget_bytes <= 0 || static_cast<double>(out.peak_memory_bytes) <= memory_budget_bytes;
  return out;
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_PREDICT_HPP
