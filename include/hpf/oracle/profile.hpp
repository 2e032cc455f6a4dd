// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_PROFILE_HPP
#define HPF_ORACLE_PROFILE_HPP

#include <hpf/io/detail/json.hpp>
#include <hpf/layers/detail/bf16_staging.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hpf::oracle {

/// A profile that cannot be read or lacks what a prediction needs; the message names the file
/// and the field.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// t = alpha + beta * bytes over a range of message sizes (one fitted regime).
struct Regime {
  double min_bytes = 0, max_bytes = 0;
  double alpha_s = 0, beta_s_per_byte = 0;
};

/// \brief Fitted times of one communication primitive by communicator size: the regimes
/// benchmarks/comm/run_comm_benchmark.py writes into a machine profile.
struct CommFit {
  std::map<std::size_t, std::vector<Regime>> by_ranks;

  bool empty() const { return by_ranks.empty(); }
  /// Seconds for `bytes` among `ranks` processes: the fit of that communicator size, or of the
  /// nearest measured one; the regime that holds `bytes`, or the nearest regime's line.
  double seconds(double bytes, std::size_t ranks) const {
    if (by_ranks.empty()) return 0;
    const std::vector<Regime>& measured = regimes(ranks);
    const Regime* pick = &measured.front();
    for (const Regime& r : measured) {
      if (bytes >= r.min_bytes) pick = &r;
    }
    return pick->alpha_s + pick->beta_s_per_byte * bytes;
  }
  /// The regimes measured with `ranks` processes (or the nearest count).
  const std::vector<Regime>& regimes(std::size_t ranks) const {
    auto it = by_ranks.lower_bound(ranks);
    if (it == by_ranks.end()) it = std::prev(it);
    return it->second;
  }
};

/// \brief What the profile's pair of ranks measured of their link beyond the fits (its "link"
/// object; every field 0 when not measured).
struct LinkFacts {
  /// Compute a rank loses per byte it sends or receives while it computes (network processing on
  /// its cores: hpf_bench_comm's steal).
  double compute_s_per_byte = 0;
};

/// How loaded the host was while a layer was timed: alone, or busy (every other core running the
/// same model).
enum class HostLoad { alone, busy };

/// \brief Measured forward and backward seconds of one distinct unit (a layer kind at one input
/// shape) at several micro-batch sizes, with the scratch its kernels asked for.
struct UnitTiming {
  std::vector<double> batch, forward_s, backward_s, workspace_elements, scratch_elements;
  /// The same on a busy host (HostLoad::busy): what a rank computes at when all ranks of a host do.
  /// Empty: not measured, the times above apply.
  std::vector<double> busy_forward_s, busy_backward_s;
  /// Under bf16 products (units calibrated with MatmulPrecision::bf16): the widest copies its
  /// products staged, in elements (hpf::detail::Bf16StagingNeed). Empty: none.
  std::vector<double> bf16_rounded_a, bf16_rounded_b, bf16_bits;
  /// One member's part of a filter or channel split (calibrated with CalibrationOptions::split):
  /// the elements its split layers keep for themselves, per copy (partial sums, packed weights,
  /// columns, a vendor's scratch; each layer its own), and the group's gathered parts under the
  /// layer that last grew them. Empty: none measured.
  std::vector<double> split_buffer_elements;
  /// Of those, the elements in pages the member's passes wrote (a vendor's scratch is sized for
  /// its largest need and written less): what the resident set holds of them. Empty: all of them.
  std::vector<double> split_buffer_resident_elements;
  /// Of workspace_elements, those in pages the passes wrote: the layer's need, at most what the
  /// whole model's layers wrote of the shared workspace (calibration sees the shared buffer, not
  /// which layer wrote it). Empty: all of them.
  std::vector<double> workspace_resident_elements;
  /// Micro-batches alive together (docs/oracle.md, "Tapes in flight"): the factor on forward_s and
  /// backward_s when the unit ran with the tapes of several micro-batches written in turn, as GPipe
  /// keeps them, against one tape reused, as calibration and 1F1B's last stage run (measured in the
  /// same rounds); the bytes of one micro-batch's tape of the calibrated model, and of the tapes it
  /// cycled through. Empty: not measured, factor 1.
  std::vector<double> in_flight_forward_ratio, in_flight_backward_ratio, tape_bytes, in_flight_bytes;

  /// Piecewise-linear in the micro-batch size, extended along the last segment at either end
  /// (time per call is nearly affine in the samples: a fixed cost plus a per-sample cost).
  static double interpolate(const std::vector<double>& x, const std::vector<double>& y, double at) {
    if (x.empty()) return 0;
    if (x.size() == 1) return y[0] * at / x[0];
    std::size_t k = 1;
    while (k + 1 < x.size() && x[k] < at) ++k;
    const double t = (at - x[k - 1]) / (x[k] - x[k - 1]);
    return std::max(0.0, y[k - 1] + t * (y[k] - y[k - 1]));
  }
  const std::vector<double>& forward_at(HostLoad load) const {
    return load == HostLoad::busy && !busy_forward_s.empty() ? busy_forward_s : forward_s;
  }
  const std::vector<double>& backward_at(HostLoad load) const {
    return load == HostLoad::busy && !busy_backward_s.empty() ? busy_backward_s : backward_s;
  }
  double forward(double m, HostLoad load = HostLoad::alone) const { return interpolate(batch, forward_at(load), m); }
  double backward(double m, HostLoad load = HostLoad::alone) const { return interpolate(batch, backward_at(load), m); }
  double workspace(double m) const { return std::ceil(interpolate(batch, workspace_elements, m)); }
  double scratch(double m) const { return std::ceil(interpolate(batch, scratch_elements, m)); }
  double split_buffers(double m) const {
    return split_buffer_elements.empty() ? 0 : std::ceil(interpolate(batch, split_buffer_elements, m));
  }
  double workspace_resident(double m) const { return resident_part(workspace(m), workspace_resident_elements, m); }
  double split_buffers_resident(double m) const {
    return resident_part(split_buffers(m), split_buffer_resident_elements, m);
  }
  /// Of `allocated` elements at m, those `resident` (measured per batch size; none measured: all).
  double resident_part(double allocated, const std::vector<double>& resident, double m) const {
    return resident.empty() ? allocated : std::min(allocated, std::ceil(interpolate(batch, resident, m)));
  }
  /// At m: a measured factor of tapes in flight (in_flight_forward_ratio or
  /// in_flight_backward_ratio) less 1, the bytes of one tape, of the tapes it was measured with.
  double in_flight_excess(const std::vector<double>& ratio, double m) const {
    return ratio.empty() ? 0 : interpolate(batch, ratio, m) - 1;
  }
  double one_tape_bytes(double m) const { return tape_bytes.empty() ? 0 : interpolate(batch, tape_bytes, m); }
  double tapes_in_flight_bytes(double m) const { return in_flight_bytes.empty() ? 0 : interpolate(batch, in_flight_bytes, m); }
  hpf::detail::Bf16StagingNeed bf16_staging(double m) const {
    const auto at = [&](const std::vector<double>& v) {
      return v.empty() ? std::size_t{0} : static_cast<std::size_t>(std::ceil(interpolate(batch, v, m)));
    };
    return {at(bf16_rounded_a), at(bf16_rounded_b), at(bf16_bits)};
  }
};

/// Of a factor's excess over 1 measured with tapes of `many` bytes in flight
/// (UnitTiming::in_flight_forward_ratio), the share a rank whose micro-batches' tapes alive together
/// take `bytes` pays: none up to one tape of `one` bytes (as calibrated), all of it from `many`,
/// linear in between.
inline double in_flight_share(double bytes, double one, double many) {
  if (!(many > one) || bytes <= one) return 0;
  return std::min(1.0, (bytes - one) / (many - one));
}

/// \brief A cluster the oracle extrapolates to: nodes of `ranks_per_node` processes (as many
/// nodes as a query's ranks need), alpha/beta within a node and between nodes (e.g. InfiniBand),
/// every rank computing at the speed the compute profile measured times `compute_speed`.
struct Cluster {
  std::string name;
  std::size_t ranks_per_node = 1;
  Regime intra, inter;
  double compute_speed = 1.0;
  double memory_bytes_per_rank = 0;  ///< 0: unknown
};

/// \brief What the oracle knows about a machine: its cores, the fitted communication primitives
/// (from hpf_bench_comm) and the calibrated compute of units (from hpf-oracle calibrate).
struct MachineProfile {
  std::string label, path;
  std::size_t cores = 1;             ///< per host: more ranks than this share them
  std::size_t hosts = 1;             ///< hosts the profile's ranks were spread over
  /// The hosts are emulated on one machine (network namespaces, scripts/fabric/emulate.sh): they
  /// communicate as separate hosts but all share its `cores`.
  bool hosts_share_cores = false;
  std::size_t threads_per_rank = 1;  ///< threads a rank ran with when calibrated
  // Looked up by std::string_view (std::less<>): a query asks for fits by literal names and for
  // layers by their long keys thousands of times, without building a string for each.
  std::map<std::string, CommFit, std::less<>> comm;
  LinkFacts link;
  std::map<std::string, UnitTiming, std::less<>> units;
  double optimizer_s_per_parameter = 0;  ///< optimizer step and zeroing gradients
  double load_s_per_element = 0;         ///< batch loading, per input element
  /// The gradient exchange's sums, per element added (hpf::ordered_sum of two copies): what a
  /// replica computes on its own core to reduce its gradients (docs/oracle.md, "Exchange compute").
  double exchange_sum_s_per_element = 0;
  /// The oracle prices what a replica computes to exchange its gradients (its copies and sums) on
  /// its own core; false: it does not (`hpf-oracle --without exchange-compute`, the ablation).
  bool exchange_compute = true;
  /// Bytes the Kokkos backend allocates for itself in a fresh process once a step has run
  /// (Kokkos::Serial's team scratch), and what its allocation records count for an empty view.
  std::size_t runtime_bytes = 0;
  std::size_t empty_view_bytes = 0;
  std::optional<Cluster> cluster;

  /// Hosts whose cores compute separately: one when the hosts share a machine.
  std::size_t compute_hosts() const { return hosts_share_cores ? 1 : std::max<std::size_t>(1, hosts); }

  const CommFit& fit(std::string_view primitive) const {
    static const CommFit none;
    const auto it = comm.find(primitive);
    return it == comm.end() ? none : it->second;
  }
  const UnitTiming* unit(std::string_view key) const {
    const auto it = units.find(key);
    return it == units.end() ? nullptr : &it->second;
  }
};

/// The profile whose exchanges compute nothing on the ranks' cores (`hpf-oracle --without
/// exchange-compute`): the reduction hides behind backward whole wherever the links are fast enough.
inline void drop_exchange_compute(MachineProfile& profile) { profile.exchange_compute = false; }

/// The profile without its measurements of tapes in flight (`hpf-oracle --without
/// tapes-in-flight`): what the oracle predicts without that term, as its ablation weighs it.
inline void drop_tapes_in_flight(MachineProfile& profile) {
  for (auto& [key, t] : profile.units) {
    t.in_flight_forward_ratio.clear();
    t.in_flight_backward_ratio.clear();
    t.tape_bytes.clear();
    t.in_flight_bytes.clear();
  }
}

namespace detail {
using io::detail::JsonValue;

inline const JsonValue* member(const JsonValue& object, const std::string& key) {
  if (object.kind != JsonValue::Kind::object) return nullptr;
  for (const auto& m : object.members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}
inline double number(const JsonValue& v, const std::string& where) {
  if (v.kind != JsonValue::Kind::number) throw ProfileError(where + " is not a number");
  return std::stod(v.text);
}
inline double number_at(const JsonValue& object, const std::string& key, const std::string& where, double fallback) {
  const JsonValue* v = member(object, key);
  return v ? number(*v, where + "." + key) : fallback;
}
/// The largest count a profile holds: below 2^53, every whole number a double can hold exactly.
inline constexpr double largest_count = 9.0e15;
/// A count (cores, threads, bytes): a whole number >= 0, or `fallback` when absent. A cast of
/// -1 or 0.5 would become an absurd size far from the file that caused it.
inline std::size_t count_at(const JsonValue& object, const std::string& key, const std::string& where, std::size_t fallback) {
  const double v = number_at(object, key, where, static_cast<double>(fallback));
  if (!(v >= 0) || v != std::floor(v) || v > largest_count) {
    std::ostringstream text;
    text << v;
    throw ProfileError(where + "." + key + " must be a whole number >= 0, not " + text.str());
  }
  return static_cast<std::size_t>(v);
}
inline std::vector<double> numbers(const JsonValue& object, const std::string& key, const std::string& where) {
  const JsonValue* v = member(object, key);
  if (!v || v->kind != JsonValue::Kind::array) throw ProfileError(where + "." + key + " is missing or not an array");
  std::vector<double> out;
  for (const auto& item : v->items) out.push_back(number(item, where + "." + key + "[]"));
  return out;
}
inline Regime regime(const JsonValue& v, const std::string& where) {
  return {number_at(v, "min_bytes", where, 0), number_at(v, "max_bytes", where, 1e30), number_at(v, "alpha_s", where, 0),
          number_at(v, "beta_s_per_byte", where, 0)};
}
inline std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError("hpf::oracle: cannot read the " + std::string(what) + " '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
inline JsonValue parse(const std::string& text, const std::string& path) {
  try {
    return io::detail::JsonParser::parse(text);
  } catch (const std::exception& e) {
    throw ProfileError("hpf::oracle: '" + path + "' is not JSON: " + e.what());
  }
}
/// The JSON document at `path`, which must say `"format": format`; `what` names it in errors.
inline JsonValue read_document(const std::string& path, const std::string& what, const std::string& format) {
  JsonValue root = parse(read_text(path, what.c_str()), path);
  const JsonValue* written = member(root, "format");
  if (!written || written->text != format) {
    throw ProfileError("hpf::oracle: '" + path + "' is not an hpf " + what + " (\"format\": \"" + format + "\")");
  }
  return root;
}
}  // namespace detail

/// Reads a machine profile (format "hpf-machine-profile"; its "compute" section is optional
/// until a prediction needs it). Throws ProfileError naming the file and what is wrong.
inline MachineProfile load_profile(const std::string& path) {
  using detail::member;
  const detail::JsonValue root = detail::read_document(path, "machine profile", "hpf-machine-profile");
  MachineProfile p;
  p.path = path;
  if (const auto* label = member(root, "label")) p.label = label->text;
  p.hosts = detail::count_at(root, "hosts", path, 1);
  if (const auto* shared = member(root, "hosts_share_cores")) {
    if (shared->kind != detail::JsonValue::Kind::boolean) throw ProfileError(path + ": hosts_share_cores must be true or false");
    p.hosts_share_cores = shared->boolean;
  }
  if (const auto* host = member(root, "host")) p.cores = detail::count_at(*host, "cores", path + ": host", 1);
  if (const auto* comm = member(root, "comm")) {
    for (const auto& [primitive, by_ranks] : comm->members) {
      CommFit fit;
      for (const auto& [ranks, regimes] : by_ranks.members) {
        auto& list = fit.by_ranks[std::stoul(ranks)];
        for (const auto& r : regimes.items) list.push_back(detail::regime(r, path + ": comm." + primitive + "." + ranks));
      }
      p.comm[primitive] = std::move(fit);
    }
  }
  if (const auto* link = member(root, "link")) {
    const double value = detail::number_at(*link, "compute_s_per_byte", path + ": link", 0);
    if (!(value >= 0) || !std::isfinite(value)) {
      throw ProfileError("hpf::oracle: " + path + ": link.compute_s_per_byte must be a finite number >= 0");
    }
    p.link.compute_s_per_byte = value;
  }
  if (const auto* compute = member(root, "compute")) {
    const std::string where = path + ": compute";
    p.threads_per_rank = detail::count_at(*compute, "threads", where, 1);
    p.optimizer_s_per_parameter = detail::number_at(*compute, "optimizer_s_per_parameter", where, 0);
    p.load_s_per_element = detail::number_at(*compute, "load_s_per_element", where, 0);
    p.exchange_sum_s_per_element = detail::number_at(*compute, "exchange_sum_s_per_element", where, 0);
    p.runtime_bytes = detail::count_at(*compute, "runtime_bytes", where, 0);
    p.empty_view_bytes = detail::count_at(*compute, "empty_view_bytes", where, 0);
    if (const auto* units = member(*compute, "units")) {
      for (const auto& [key, u] : units->members) {
        const std::string at = where + ".units[" + key + "]";
        UnitTiming t;
        t.batch = detail::numbers(u, "batch", at);
        t.forward_s = detail::numbers(u, "forward_s", at);
        t.backward_s = detail::numbers(u, "backward_s", at);
        t.workspace_elements = detail::numbers(u, "workspace_elements", at);
        t.scratch_elements = detail::numbers(u, "scratch_elements", at);
        if (member(u, "busy_forward_s")) {
          t.busy_forward_s = detail::numbers(u, "busy_forward_s", at);
          t.busy_backward_s = detail::numbers(u, "busy_backward_s", at);
        }
        if (member(u, "bf16_bits")) {
          t.bf16_rounded_a = detail::numbers(u, "bf16_rounded_a", at);
          t.bf16_rounded_b = detail::numbers(u, "bf16_rounded_b", at);
          t.bf16_bits = detail::numbers(u, "bf16_bits", at);
        }
        if (member(u, "split_buffer_elements")) t.split_buffer_elements = detail::numbers(u, "split_buffer_elements", at);
        if (member(u, "workspace_resident_elements")) {
          t.workspace_resident_elements = detail::numbers(u, "workspace_resident_elements", at);
        }
        if (member(u, "split_buffer_resident_elements")) {
          t.split_buffer_resident_elements = detail::numbers(u, "split_buffer_resident_elements", at);
        }
        if (member(u, "in_flight_bytes")) {
          t.in_flight_forward_ratio = detail::numbers(u, "in_flight_forward_ratio", at);
          t.in_flight_backward_ratio = detail::numbers(u, "in_flight_backward_ratio", at);
          t.tape_bytes = detail::numbers(u, "tape_bytes", at);
          t.in_flight_bytes = detail::numbers(u, "in_flight_bytes", at);
        }
        const std::size_t n = t.batch.size();
        auto sized = [n](const std::vector<double>& v) { return v.empty() || v.size() == n; };
        if (!sized(t.busy_forward_s) || !sized(t.busy_backward_s) || !sized(t.bf16_rounded_a) ||
            !sized(t.bf16_rounded_b) || !sized(t.bf16_bits) || !sized(t.split_buffer_elements) ||
            !sized(t.split_buffer_resident_elements) || !sized(t.workspace_resident_elements) ||
            !sized(t.in_flight_forward_ratio) || !sized(t.in_flight_backward_ratio) || !sized(t.tape_bytes) ||
            !sized(t.in_flight_bytes) ||
            n == 0 || t.forward_s.size() != n || t.backward_s.size() != n || t.workspace_elements.size() != n ||
            t.scratch_elements.size() != n || !std::is_sorted(t.batch.begin(), t.batch.end())) {
          throw ProfileError("hpf::oracle: " + at + " needs arrays of one length over increasing batch sizes");
        }
        p.units[key] = std::move(t);
      }
    }
  }
  return p;
}

/// Reads a cluster profile (format "hpf-cluster-profile") on top of a machine profile whose
/// compute calibration it scales: the machine's rates stand in for a node's cores.
inline MachineProfile load_cluster(const std::string& path, MachineProfile machine) {
  using detail::member;
  const detail::JsonValue root = detail::read_document(path, "cluster profile", "hpf-cluster-profile");
  Cluster c;
  if (const auto* name = member(root, "name")) c.name = name->text;
  c.ranks_per_node = detail::count_at(root, "ranks_per_node", path, 1);
  c.compute_speed = detail::number_at(root, "compute_speed", path, 1.0);
  c.memory_bytes_per_rank = detail::number_at(root, "memory_bytes_per_rank", path, 0);
  const auto* intra = member(root, "intra_node");
  const auto* inter = member(root, "inter_node");
  if (!intra || !inter) throw ProfileError("hpf::oracle: '" + path + "' needs \"intra_node\" and \"inter_node\" alpha/beta");
  c.intra = detail::regime(*intra, path + ": intra_node");
  c.inter = detail::regime(*inter, path + ": inter_node");
  if (c.ranks_per_node == 0 || c.compute_speed <= 0) {
    throw ProfileError("hpf::oracle: '" + path + "': ranks_per_node and compute_speed must be positive");
  }
  machine.cluster = c;
  machine.cores = c.ranks_per_node * std::max<std::size_t>(1, machine.threads_per_rank);
  machine.label = c.name.empty() ? path : c.name;
  return machine;
}

namespace detail {
inline void write_json(std::string& out, const JsonValue& v, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 1), ' '), end_pad(static_cast<std::size_t>(indent), ' ');
  switch (v.kind) {
    case JsonValue::Kind::null: out += "null"; break;
    case JsonValue::Kind::boolean: out += v.boolean ? "true" : "false"; break;
    case JsonValue::Kind::number: out += v.text; break;
    case JsonValue::Kind::string: out += io::detail::json_quote(v.text); break;
    case JsonValue::Kind::array:
      out += "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        out += i ? ", " : "";
        write_json(out, v.items[i], indent + 1);
      }
      out += "]";
      break;
    case JsonValue::Kind::object:
      out += "{";
      for (std::size_t i = 0; i < v.members.size(); ++i) {
        out += (i ? ",\n" : "\n") + pad + io::detail::json_quote(v.members[i].first) + ": ";
        write_json(out, v.members[i].second, indent + 1);
      }
      out += v.members.empty() ? "}" : "\n" + end_pad + "}";
      break;
  }
}
inline JsonValue json_number(double x) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", x);
  JsonValue v;
  v.kind = JsonValue::Kind::number;
  v.text = text;
  return v;
}
inline JsonValue json_numbers(const std::vector<double>& xs) {
  JsonValue v;
  v.kind = JsonValue::Kind::array;
  for (const double x : xs) v.items.push_back(json_number(x));
  return v;
}
inline void set_member(JsonValue& object, const std::string& key, JsonValue value) {
  for (auto& m : object.members) {
    if (m.first == key) {
      m.second = std::move(value);
      return;
    }
  }
  object.members.emplace_back(key, std::move(value));
}
}  // namespace detail

/// Writes the compute calibration of `profile` into the machine profile file `path` (its
/// "compute" section; units of other models already there stay), keeping every other section.
inline void save_compute(const MachineProfile& profile, const std::string& path) {
  using detail::JsonValue;
  JsonValue root = detail::parse(detail::read_text(path, "machine profile"), path);
  JsonValue compute;
  compute.kind = JsonValue::Kind::object;
  if (const JsonValue* old = detail::member(root, "compute")) compute = *old;
  detail::set_member(compute, "threads", detail::json_number(static_cast<double>(profile.threads_per_rank)));
  detail::set_member(compute, "optimizer_s_per_parameter", detail::json_number(profile.optimizer_s_per_parameter));
  detail::set_member(compute, "load_s_per_element", detail::json_number(profile.load_s_per_element));
  detail::set_member(compute, "exchange_sum_s_per_element", detail::json_number(profile.exchange_sum_s_per_element));
  detail::set_member(compute, "runtime_bytes", detail::json_number(static_cast<double>(profile.runtime_bytes)));
  detail::set_member(compute, "empty_view_bytes", detail::json_number(static_cast<double>(profile.empty_view_bytes)));
  JsonValue units;
  units.kind = JsonValue::Kind::object;
  if (const JsonValue* old = detail::member(compute, "units")) units = *old;
  for (const auto& [key, t] : profile.units) {
    JsonValue u;
    u.kind = JsonValue::Kind::object;
    detail::set_member(u, "batch", detail::json_numbers(t.batch));
    detail::set_member(u, "forward_s", detail::json_numbers(t.forward_s));
    detail::set_member(u, "backward_s", detail::json_numbers(t.backward_s));
    detail::set_member(u, "workspace_elements", detail::json_numbers(t.workspace_elements));
    detail::set_member(u, "scratch_elements", detail::json_numbers(t.scratch_elements));
    if (!t.busy_forward_s.empty()) {
      detail::set_member(u, "busy_forward_s", detail::json_numbers(t.busy_forward_s));
      detail::set_member(u, "busy_backward_s", detail::json_numbers(t.busy_backward_s));
    }
    if (!t.bf16_bits.empty()) {
      detail::set_member(u, "bf16_rounded_a", detail::json_numbers(t.bf16_rounded_a));
      detail::set_member(u, "bf16_rounded_b", detail::json_numbers(t.bf16_rounded_b));
      detail::set_member(u, "bf16_bits", detail::json_numbers(t.bf16_bits));
    }
    if (!t.split_buffer_elements.empty()) {
      detail::set_member(u, "split_buffer_elements", detail::json_numbers(t.split_buffer_elements));
    }
    if (!t.workspace_resident_elements.empty()) {
      detail::set_member(u, "workspace_resident_elements", detail::json_numbers(t.workspace_resident_elements));
    }
    if (!t.split_buffer_resident_elements.empty()) {
      detail::set_member(u, "split_buffer_resident_elements", detail::json_numbers(t.split_buffer_resident_elements));
    }
    if (!t.in_flight_bytes.empty()) {
      detail::set_member(u, "in_flight_forward_ratio", detail::json_numbers(t.in_flight_forward_ratio));
      detail::set_member(u, "in_flight_backward_ratio", detail::json_numbers(t.in_flight_backward_ratio));
      detail::set_member(u, "tape_bytes", detail::json_numbers(t.tape_bytes));
      detail::set_member(u, "in_flight_bytes", detail::json_numbers(t.in_flight_bytes));
    }
    detail::set_member(units, key, std::move(u));
  }
  detail::set_member(compute, "units", std::move(units));
  detail::set_member(root, "compute", std::move(compute));
  std::string text;
  detail::write_json(text, root, 0);
  text += "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!(out << text)) throw ProfileError("hpf::oracle: cannot write the machine profile '" + path + "'");
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_PROFILE_HPP
