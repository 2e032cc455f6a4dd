// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_CALIBRATE_HPP
#define HPF_ORACLE_CALIBRATE_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/layers/detail/bf16_staging.hpp>
#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/oracle/memory.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/profile.hpp>
#include <hpf/parallel/batch_loader.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/system/resident_memory.hpp>
#include <hpf/tensor/finite.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/trace/recorder.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace hpf::oracle {

/// \brief At which micro-batch sizes, and how long, calibration times a model's layers.
struct CalibrationOptions {
  std::vector<std::size_t> batches{1, 2, 4, 8, 16, 32, 64, 128};
  std::size_t repeats = 5;  ///< timed passes per size (one per round over the sizes): the median is kept
  double max_seconds = 60;  ///< larger sizes are skipped once the smaller ones' passes take this long
  /// Samples like those the model trains on (images of its input shape; this shard's own, taken
  /// in order and cycled): the layers run on them. Pooling and ReLU take time that depends on
  /// the values: the CNN's max pooling ran 1.3-1.7x slower on uniform random values than on
  /// Fashion-MNIST's images, whose backgrounds are zero. Null: values uniform in [-1, 1).
  const data::Dataset* samples = nullptr;
  /// Puts the host's other cores to work (HostLoad::busy: running the same model) or to rest
  /// (HostLoad::alone); hpf-oracle calibrate resumes and pauses load processes of its own. Given,
  /// every round times each size alone and then busy, one pass right after the other, and both
  /// rates are stored: their ratio is taken at one moment. Measured minutes apart, alone first and
  /// then busy, it moved with the host's speed (a virtual machine's drifts 5-8 % in minutes): the
  /// CNN's busy/alone ratio came out 0.97-1.03 in four calibrations in a row, and one calibration
  /// put the MLP's at 1.32 where the 2-rank steps measured right after ran at about 1.0.
  std::function<void(HostLoad)> set_host_load = {};
  /// The inputs of the layers' products (NetworkOptions::matmul_precision): bf16 times are stored
  /// under keys of their own (precision_key_suffix), beside the float ones.
  MatmulPrecision matmul_precision = MatmulPrecision::full;
  /// A filter or channel split: times one member's part of each layer as a rank of the split runs
  /// it (the last member, whose share is the largest where G does not divide a layer's filters or
  /// channels: it sets the group's pace and peak; its peers absent: AbsentPeersLayerGroup), with
  /// the buffers its split layers and its group keep (UnitTiming::split_buffer_elements), stored
  /// under keys of their own (split_key_suffix) that predictions of that split read. A member's
  /// convolutions do not get faster in proportion to its share of the filters or channels (on
  /// ResNet-20, half the filters took 97 % of the time), so its share of the FLOPs mispredicted
  /// it by a factor of 2.
  LayerSplit split{};
  /// Also time each size with the tapes of up to 8 micro-batches in flight
  /// (UnitTiming::in_flight_forward_ratio); a canary, which reads only the times, does not.
  bool tapes_in_flight = true;
};

namespace detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Calls f(layer index, span) for each top-level layer's span in `events` (spans in the order they
/// opened: one inside the span before it is a nested layer's) whose index is below `layers`.
template <class F>
void for_each_outermost_layer_span(const std::vector<trace::Event>& events, std::size_t layers, F&& f) {
  std::int64_t open_until = -1;  // end of the outermost span seen last: spans inside it are nested
  for (const trace::Event& e : events) {
    if (e.tags.layer < 0 || e.begin < open_until) continue;
    open_until = e.end;
    if (static_cast<std::size_t>(e.tags.layer) < layers) f(static_cast<std::size_t>(e.tags.layer), e);
  }
}

/// Seconds each top-level layer's span lasted in `events`, summed per layer index.
inline std::vector<double> outermost_layer_seconds(const std::vector<trace::Event>& events, std::size_t layers) {
  std::vector<double> seconds(layers, 0.0);
  for_each_outermost_layer_span(events, layers, [&](std::size_t layer, const trace::Event& e) {
    seconds[layer] += 1e-9 * static_cast<double>(e.end - e.begin);
  });
  return seconds;
}

/// Per top-level layer: the widest bf16 staging of its products (`needs`, each with the time it
/// was told), by the layer span it fell in.
inline std::vector<hpf::detail::Bf16StagingNeed> outermost_layer_staging(
    const std::vector<trace::Event>& events, const std::vector<std::pair<std::int64_t, hpf::detail::Bf16StagingNeed>>& needs,
    std::size_t layers) {
  std::vector<hpf::detail::Bf16StagingNeed> widest(layers);
  for_each_outermost_layer_span(events, layers, [&](std::size_t layer, const trace::Event& e) {
    for (const auto& [at, need] : needs) {
      if (e.begin <= at && at < e.end) widest[layer] = widest[layer].widest(need);
    }
  });
  return widest;
}

/// Fills `view` with values in [-1, 1) from a fixed sequence (a layer's speed may depend on its
/// data: branches in pooling and ReLU).
template <class View>
void fill_like_data(const View& view) {
  auto host = Kokkos::create_mirror_view(view);
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (std::size_t i = 0; i < host.extent(0); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    host(i) = static_cast<typename View::non_const_value_type>(static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0);
  }
  Kokkos::deep_copy(view, host);
}

/// Throws std::invalid_argument unless `samples` can feed Model's input: images of its shape.
template <class Model>
void check_samples(const data::Dataset& samples) {
  using In = whole_shape_t<typename Model::input_shape>;  // a slab model reads whole samples
  const std::string what = "hpf::oracle::calibrate: the samples ";
  if (!samples.has_images() || samples.local_size() == 0) throw std::invalid_argument(what + "hold no images");
  if (samples.sample_size() != In::size || samples.channels() != In::channels) {
    throw std::invalid_argument(what + "are " + samples.shape_text() + " but the model's input is " +
                                shape_string<In>());
  }
}

/// Puts the input of `n` samples into `tape`: the first `n` of `samples` (its shard's own, cycled)
/// in the layout a step loads, or values uniform in [-1, 1) without samples.
template <class Net>
void load_calibration_input(Net& net, typename Net::Tape& tape, const data::Dataset* samples, std::size_t n) {
  if (!samples) {
    fill_like_data(tape.input);
    return;
  }
  const data::Shard& shard = samples->shard();
  std::vector<std::size_t> indices(n);
  for (std::size_t k = 0; k < n; ++k) indices[k] = shard.index + (k % samples->local_size()) * shard.count;
  BatchLoader<typename Net::scalar_type, typename Net::execution_space>().load_inputs(*samples, indices, net.input(tape, n), net.input_positions());
}

/// \brief While alive, counts the Kokkos allocations not labelled "hpf::" (the backend's own, as
/// Kokkos::Serial's team scratch, made once per process when a kernel first needs it) through
/// Kokkos' allocation callbacks; inactive while any callbacks are set (a Kokkos tool's, or the
/// program's own), which it would replace. One at a time: the callbacks are global.
class BackendAllocations {
 public:
  BackendAllocations() : active_(!Kokkos::Profiling::profileLibraryLoaded()) {
    if (!active_) return;
    state() = {};
    Kokkos::Tools::Experimental::set_allocate_data_callback(allocated);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(deallocated);
  }
  ~BackendAllocations() {
    if (!active_) return;
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  }
  BackendAllocations(const BackendAllocations&) = delete;
  BackendAllocations& operator=(const BackendAllocations&) = delete;

  bool active() const { return active_; }
  /// Peak bytes of the backend's allocations so far.
  std::size_t peak() const { return state().peak; }
  /// A buffer a filter or channel split's layer keeps for itself (its label has "::split_": partial
  /// sums, packed weights, columns, a vendor's scratch): its bytes and when it was allocated.
  struct SplitBuffer {
    std::size_t bytes = 0;
    std::int64_t allocated_ns = 0;  ///< trace::now_ns()
  };
  /// The split buffers alive now, by address.
  const std::map<const void*, SplitBuffer>& split_buffers() const { return state().split; }
  /// The bytes of the network's shared workspace (hpf::Network::workspace, the latest allocated)
  /// in pages written so far: its layers' kernels may write less than their largest need.
  std::size_t workspace_resident_bytes() const {
    return state().workspace ? hpf::system::resident_bytes(state().workspace, state().workspace_bytes) : 0;
  }
  /// Bytes the callbacks report for an empty view in Space's memory.
  template <class T, class Space>
  std::size_t empty_view_bytes() const {
    state().empty = 0;
    { const Buffer<T, Space> empty(std::string(empty_label), 0); }
    return state().empty;
  }

 private:
  static constexpr const char* empty_label = "hpf::oracle::empty";
  static constexpr const char* workspace_label = "hpf::Network::workspace";
  struct State {
    std::map<const void*, std::size_t> live;
    std::size_t now = 0, peak = 0, empty = 0;
    std::map<const void*, SplitBuffer> split;  // live split buffers
    const void* workspace = nullptr;           // the live hpf::Network::workspace
    std::size_t workspace_bytes = 0;
  };
  static State& state() {
    static State s;
    return s;
  }
  static void allocated(Kokkos::Tools::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
    State& s = state();
    if (std::strcmp(label, empty_label) == 0) s.empty = static_cast<std::size_t>(size);
    if (std::strstr(label, "::split_") != nullptr) s.split[ptr] = {static_cast<std::size_t>(size), trace::now_ns()};
    if (std::strcmp(label, workspace_label) == 0) {
      s.workspace = ptr;
      s.workspace_bytes = static_cast<std::size_t>(size);
    }
    if (std::strncmp(label, "hpf::", 5) == 0) return;
    s.live[ptr] = static_cast<std::size_t>(size);
    s.now += static_cast<std::size_t>(size);
    s.peak = std::max(s.peak, s.now);
  }
  static void deallocated(Kokkos::Tools::SpaceHandle, const char*, const void* ptr, std::uint64_t) {
    State& s = state();
    s.split.erase(ptr);
    if (ptr == s.workspace) s.workspace = nullptr;
    if (const auto it = s.live.find(ptr); it != s.live.end()) {
      s.now -= it->second;
      s.live.erase(it);
    }
  }
  bool active_;
};

/// One top-level layer's span in a pass (for_each_outermost_layer_span).
struct LayerSpan {
  std::size_t layer = 0;
  std::int64_t begin = 0, end = 0;
};

/// Per top-level layer: the elements of the split buffers alive now, each under the layer whose
/// span (of any pass so far, `spans`) allocated it, and of those the elements in resident pages
/// (the pages the passes so far wrote: hpf::system::resident_bytes).
struct SplitBufferElements {
  std::vector<double> allocated, resident;
};
inline SplitBufferElements split_buffer_elements(const std::map<const void*, BackendAllocations::SplitBuffer>& buffers,
                                                 const std::vector<LayerSpan>& spans, std::size_t layers,
                                                 std::size_t scalar_bytes) {
  SplitBufferElements elements{std::vector<double>(layers, 0.0), std::vector<double>(layers, 0.0)};
  const auto scalar = static_cast<double>(scalar_bytes);
  for (const auto& [ptr, buffer] : buffers) {
    for (const LayerSpan& span : spans) {
      if (span.begin <= buffer.allocated_ns && buffer.allocated_ns < span.end) {
        elements.allocated[span.layer] += static_cast<double>(buffer.bytes) / scalar;
        elements.resident[span.layer] += static_cast<double>(hpf::system::resident_bytes(ptr, buffer.bytes)) / scalar;
        break;
      }
    }
  }
  return elements;
}

/// Micro-batches alive together at one size (UnitTiming::in_flight_*): per top-level layer, its
/// seconds with `tapes` tapes written in turn over its seconds with one tape reused.
struct InFlight {
  std::vector<double> forward_ratio, backward_ratio;
  double tape_bytes = 0, bytes = 0;  ///< one micro-batch's tape, all the tapes timed
};
inline constexpr std::size_t in_flight_most_tapes = 8;                   ///< GPipe's 8 micro-batches
inline constexpr double in_flight_most_bytes = double(std::size_t{1} << 30);  ///< the tapes' memory, at most

/// The cache of one core, where the system says (Linux: the level-2 cache), else 1 MiB.
inline double core_cache_bytes() {
  long bytes = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
  bytes = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return bytes > 0 ? static_cast<double>(bytes) : double(std::size_t{1} << 20);
}

/// For each size of `sizes`: GPipe writes each micro-batch's tape in turn and reads them back after
/// all forwards, where calibration's passes (`pass`, on the network's own tape) reuse one tape,
/// which the cache may still hold. Each round times passes on the reused tape, then as many
/// forwards on tapes of their own (up to 8) and their backwards in the same order (as GPipe runs
/// them), per layer. A size whose tapes would take over 1 GiB together times as many as fit; one
/// whose second tape would not fit (out of the cache already), or whose tapes all fit in one core's
/// cache, is taken at ratio 1, untimed (a reused tape there differs only by the timings' noise,
/// which put the MLP's at 0.8-1.3 in benchmarks/oracle/frozen/xeon23.profile.json).
template <class Model, class Net, class Pass>
std::vector<InFlight> time_in_flight(Net& net, Pass& pass, const std::vector<std::size_t>& sizes,
                                     const CalibrationOptions& o) {
  using T = typename Net::scalar_type;
  constexpr std::size_t per_sample = tape_bytes_per_sample(Model::input_shape::size, Model::cost, sizeof(T));
  const std::size_t rounds = std::min<std::size_t>(o.repeats, 3);
  std::vector<InFlight> out;
  for (const std::size_t n : sizes) {
    InFlight f{std::vector<double>(Model::size, 1.0), std::vector<double>(Model::size, 1.0),
               static_cast<double>(per_sample * n), 0};
    const auto count = static_cast<std::size_t>(in_flight_most_bytes / std::max(1.0, f.tape_bytes));
    const std::size_t tapes = std::min(in_flight_most_tapes, count);
    f.bytes = static_cast<double>(std::max<std::size_t>(tapes, 2)) * f.tape_bytes;
    if (tapes < 2 || f.bytes <= core_cache_bytes()) {
      out.push_back(std::move(f));
      continue;
    }
    std::vector<typename Net::Tape> many;
    for (std::size_t k = 0; k < tapes; ++k) {
      many.push_back(net.make_tape(n));
      if constexpr (Net::classifier) Kokkos::deep_copy(many.back().labels, 1);
      load_calibration_input(net, many.back(), o.samples, n);
    }
    using Seconds = std::vector<double>;  // per layer: every timed pass
    std::vector<Seconds> one_forward(Model::size), one_backward(Model::size), many_forward(Model::size),
        many_backward(Model::size);
    for (std::size_t r = 0; r < rounds; ++r) {
      pass(n);
      for (std::size_t k = 0; k < tapes; ++k) {  // as many passes on the reused tape as on the others
        const auto [forward, backward] = pass(n);
        for (std::size_t u = 0; u < Model::size; ++u) {
          one_forward[u].push_back(forward[u]);
          one_backward[u].push_back(backward[u]);
        }
      }
      trace::Recorder recorder(std::size_t{1} << 20);
      trace::activate(&recorder, true);
      std::vector<std::size_t> ends;  // each pass's last event
      for (auto& t : many) {
        net.forward(t, n, Mode::train);
        Kokkos::fence();
        ends.push_back(recorder.events().size());
      }
      for (auto& t : many) {
        net.backward(t, T(1) / static_cast<T>(n));
        Kokkos::fence();
        ends.push_back(recorder.events().size());
      }
      trace::activate(nullptr, false);
      const std::vector<trace::Event>& events = recorder.events();
      for (std::size_t p = 0; p < ends.size(); ++p) {
        const auto begin = events.begin() + static_cast<std::ptrdiff_t>(p == 0 ? 0 : ends[p - 1]);
        const auto seconds = outermost_layer_seconds({begin, events.begin() + static_cast<std::ptrdiff_t>(ends[p])}, Model::size);
        for (std::size_t u = 0; u < Model::size; ++u) (p < tapes ? many_forward : many_backward)[u].push_back(seconds[u]);
      }
    }
    for (std::size_t u = 0; u < Model::size; ++u) {
      const auto ratio = [](const Seconds& many_s, const Seconds& one_s) {
        const double one = median(one_s);
        return one > 0 ? median(many_s) / one : 1.0;
      };
      f.forward_ratio[u] = ratio(many_forward[u], one_forward[u]);
      f.backward_ratio[u] = ratio(many_backward[u], one_backward[u]);
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// Per top-level layer of Model: seconds forward and backward at each size of `o.batches`, timed
/// inside the whole model (each layer reads what the one before it wrote, and backward finds the
/// activations forward left, as in training), with the scratch its kernels ask for; with
/// o.set_host_load, on a busy host too (UnitTiming::busy_forward_s, busy_backward_s). Under
/// o.split, with `allocations` active, also the buffers its split layers keep (UnitTiming::
/// split_buffer_elements).
template <class Model, class T, class Space>
std::vector<UnitTiming> time_layers(const CalibrationOptions& o, const BackendAllocations* allocations = nullptr) {
  using Net = Network<Model, T, Space>;
  using Seconds = std::vector<double>;  // per top-level layer
  static_assert(HPF_ENABLE_TRACE, "hpf::oracle::calibrate times layers by their trace spans: build with HPF_ENABLE_TRACE=1");
  if (o.samples) check_samples<Model>(*o.samples);
  NetworkOptions options{.matmul_precision = o.matmul_precision};
  using In = typename Model::input_shape;
  if (o.split.splits() && (!o.split.divides_layers() || spatial_peers_v<In>)) {
    throw std::invalid_argument("hpf::oracle::calibrate: CalibrationOptions::split takes a filter or channel split of a "
                                "whole model, not a " + o.split.describe() +
                                " (a spatial split's slab rank: calibrate<SpatialSplit<Model, G, 1>>)");
  }
  // One rank's slab of a spatial split (SpatialSplit<Model, G, 1>), or one member's part of a
  // filter or channel split, timed without its peers.
  if constexpr (spatial_held_v<In> < spatial_group_v<In>) {
    options.split_group = std::make_shared<AbsentPeersLayerGroup<T, Space>>(spatial_group_v<In>);
  }
  if (o.split.divides_layers()) {  // the last member: its share of each layer is the largest (split_begin)
    options.split = o.split;
    options.split_group = std::make_shared<AbsentPeersLayerGroup<T, Space>>(o.split.group, o.split.group - 1);
  }
  Net net(options);
  auto tape = net.make_tape(o.batches.back());
  if constexpr (Net::classifier) Kokkos::deep_copy(tape.labels, 1);
  // One forward and backward of n samples: each top-level layer's seconds, forward and backward.
  auto pass = [&](std::size_t n, std::vector<trace::Event>* keep_events = nullptr) {
    load_calibration_input(net, tape, o.samples, n);
    trace::Recorder recorder(std::size_t{1} << 20);
    trace::activate(&recorder, true);
    net.forward(tape, n, Mode::train);
    Kokkos::fence();
    const auto forward_events = static_cast<std::ptrdiff_t>(recorder.events().size());
    net.backward(tape, T(1) / static_cast<T>(n));
    Kokkos::fence();
    trace::activate(nullptr, false);
    const std::vector<trace::Event>& events = recorder.events();
    if (keep_events) *keep_events = events;
    return std::pair{outermost_layer_seconds({events.begin(), events.begin() + forward_events}, Model::size),
                     outermost_layer_seconds({events.begin() + forward_events, events.end()}, Model::size)};
  };
  // The host loads timed: as it is, or alone and busy in turn.
  const std::vector<HostLoad> loads = o.set_host_load ? std::vector{HostLoad::alone, HostLoad::busy} : std::vector<HostLoad>(1);
  auto set_load = [&](HostLoad load) {
    if (o.set_host_load) o.set_host_load(load);
  };
  // A first round warms every size up (its first pass builds the kernels' plans for it); a size
  // joins while the rounds of the smaller ones fit o.max_seconds. Then each round passes over
  // every size once: a disturbance of the host (seconds, on a shared machine) spoils one pass of
  // several sizes rather than every pass of one, and the median leaves it out. Within a round, a
  // size's timed passes follow an untimed one of that size, as each micro-batch in training follows
  // one of its size: a pass right after one of its own size ran 2-2.5 % faster (the CNN's, on the
  // Xeon), so timed alone right after a pass of another size and busy right after that, busy came
  // out 2.5 % faster than alone.
  // A split's layers grow their own buffers to the largest batch they saw: after each pass of the
  // first round (sizes ascending) they hold what that size needs, by the layer that allocated them.
  const bool split_buffers = o.split.divides_layers() && allocations && allocations->active();
  std::vector<LayerSpan> spans;
  std::vector<SplitBufferElements> split_elements;  // [size]: per layer
  // [size]: elements of the shared workspace the passes so far wrote (the largest any layer wrote,
  // every layer writing from its start), where the allocations are watched.
  const bool watched = allocations && allocations->active();
  std::vector<double> workspace_written;
  std::vector<std::size_t> sizes;
  double round_seconds = 0;
  set_load(HostLoad::alone);
  for (const std::size_t n : o.batches) {
    if (!sizes.empty() && round_seconds * static_cast<double>((loads.size() + 1) * o.repeats + 1) > o.max_seconds) break;
    std::vector<trace::Event> events;
    const auto start = Clock::now();
    pass(n, split_buffers ? &events : nullptr);
    round_seconds += seconds_since(start);
    sizes.push_back(n);
    if (watched) workspace_written.push_back(static_cast<double>(allocations->workspace_resident_bytes() / sizeof(T)));
    if (!split_buffers) continue;
    for_each_outermost_layer_span(events, Model::size, [&](std::size_t layer, const trace::Event& e) {
      spans.push_back({layer, e.begin, e.end});
    });
    split_elements.push_back(split_buffer_elements(allocations->split_buffers(), spans, Model::size, sizeof(T)));
  }
  // [load][size][layer]: the passes' seconds.
  std::vector<std::vector<std::vector<Seconds>>> forward(
      loads.size(), std::vector<std::vector<Seconds>>(sizes.size(), std::vector<Seconds>(Model::size)));
  auto backward = forward;
  for (std::size_t r = 0; r < o.repeats; ++r) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      set_load(loads[0]);
      pass(sizes[i]);  // untimed: a timed pass follows one of its size, as a micro-batch in training does
      for (std::size_t l = 0; l < loads.size(); ++l) {
        set_load(loads[l]);
        const auto [f, b] = pass(sizes[i]);
        for (std::size_t u = 0; u < Model::size; ++u) {
          forward[l][i][u].push_back(f[u]);
          backward[l][i][u].push_back(b[u]);
        }
      }
    }
  }
  set_load(HostLoad::alone);
  const std::vector<InFlight> in_flight = o.tapes_in_flight ? time_in_flight<Model>(net, pass, sizes, o) : std::vector<InFlight>{};
  // [size][layer]: the bf16 staging its products keep (one more pass per size, untimed: a
  // network's Bf16Gemm keeps its widest copies, which the memory model takes per stage).
  std::vector<std::vector<hpf::detail::Bf16StagingNeed>> staging(sizes.size());
  if (o.matmul_precision == MatmulPrecision::bf16) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::vector<std::pair<std::int64_t, hpf::detail::Bf16StagingNeed>> needs;
      const hpf::detail::Bf16StagingListening listening(
          [&](const hpf::detail::Bf16StagingNeed& need) { needs.emplace_back(trace::now_ns(), need); });
      std::vector<trace::Event> events;
      pass(sizes[i], &events);
      staging[i] = outermost_layer_staging(events, needs, Model::size);
    }
  }
  std::vector<UnitTiming> timings(Model::size);
  using where = hpf::detail::layer_positions<Model>;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t n = sizes[i];
    std::array<double, Model::size> workspace{}, scratch{};
    for_each_index<Model::size>([&](auto u) {
      const auto& child = net.layers().template child<decltype(u)::value>();
      workspace[u] = static_cast<double>(child.workspace(n));
      // A Repeat's own gradient buffers between copies depend on how many copies a stage holds:
      // the prediction adds them for the copies a stage holds; keep the block's scratch.
      const std::size_t copies = where::copies[u];
      const std::size_t own = where::repeats[u] && copies > 1 ? 2 * where::arrays::input_elements[u] * n : 0;
      scratch[u] = static_cast<double>(scratch_of(child, n) - own);
    });
    for (std::size_t u = 0; u < Model::size; ++u) {
      timings[u].batch.push_back(static_cast<double>(n));
      timings[u].forward_s.push_back(median(forward[0][i][u]));
      timings[u].backward_s.push_back(median(backward[0][i][u]));
      if (loads.size() > 1) {
        timings[u].busy_forward_s.push_back(median(forward[1][i][u]));
        timings[u].busy_backward_s.push_back(median(backward[1][i][u]));
      }
      timings[u].workspace_elements.push_back(workspace[u]);
      if (!workspace_written.empty()) {
        timings[u].workspace_resident_elements.push_back(std::min(workspace[u], workspace_written[i]));
      }
      timings[u].scratch_elements.push_back(scratch[u]);
      if (!split_elements.empty()) {
        timings[u].split_buffer_elements.push_back(split_elements[i].allocated[u]);
        timings[u].split_buffer_resident_elements.push_back(split_elements[i].resident[u]);
      }
      if (!in_flight.empty()) {
        timings[u].in_flight_forward_ratio.push_back(in_flight[i].forward_ratio[u]);
        timings[u].in_flight_backward_ratio.push_back(in_flight[i].backward_ratio[u]);
        timings[u].tape_bytes.push_back(in_flight[i].tape_bytes);
        timings[u].in_flight_bytes.push_back(in_flight[i].bytes);
      }
      if (!staging[i].empty()) {
        timings[u].bf16_rounded_a.push_back(static_cast<double>(staging[i][u].rounded_a));
        timings[u].bf16_rounded_b.push_back(static_cast<double>(staging[i][u].rounded_b));
        timings[u].bf16_bits.push_back(static_cast<double>(staging[i][u].bits));
      }
    }
  }
  return timings;
}

/// Seconds per parameter of what a step does once over the parameters: the optimizer's step,
/// the check that the gradients are finite and zeroing them, on `size` values.
template <class T, class Space>
double optimizer_seconds_per_parameter(std::size_t size, std::size_t repeats) {
  Buffer<T, Space> parameters("hpf::oracle::parameters", size), gradients("hpf::oracle::gradients", size);
  Optimizer<T, Space> optimizer(size, SgdOptions{.learning_rate = 0.01, .momentum = 0.9});
  std::vector<double> times;
  for (std::size_t r = 0; r < repeats + 1; ++r) {
    Kokkos::fence();
    const auto start = Clock::now();
    optimizer.step(parameters, gradients);
    if (count_non_finite(gradients) != 0) throw std::logic_error("hpf::oracle::calibrate: non-finite test values");
    Kokkos::deep_copy(gradients, T(0));
    Kokkos::fence();
    if (r > 0) times.push_back(seconds_since(start));
  }
  return median(times) / static_cast<double>(size);
}

/// Seconds per element added by the ordered reduction (hpf::ordered_sum of two copies of `size`
/// gradients, as 2 replicas sum a bucket): each call on buffers larger than a core's cache, as a
/// model's gradient is.
template <class T, class Space>
double exchange_sum_seconds_per_element(std::size_t size, std::size_t repeats) {
  Buffer<T, Space> copies("hpf::oracle::gathered", 2 * size), sum("hpf::oracle::summed", size);
  Kokkos::deep_copy(copies, T(1));
  std::vector<double> times;
  for (std::size_t r = 0; r < repeats + 1; ++r) {
    Kokkos::fence();
    const auto start = Clock::now();
    ordered_sum(Space{}, copies.data(), 2, size, sum.data(), size);
    Kokkos::fence();
    if (r > 0) times.push_back(seconds_since(start));
  }
  return median(times) / static_cast<double>(2 * size);
}

/// Seconds per element of copying a batch into a tape (the loader's gather and copy).
template <class T, class Space>
double load_seconds_per_element(std::size_t size, std::size_t repeats) {
  std::vector<T> host(size, T(1));
  Buffer<T, Space> device("hpf::oracle::input", size);
  auto mirror = Kokkos::create_mirror_view(device);
  std::vector<double> times;
  for (std::size_t r = 0; r < repeats + 1; ++r) {
    const auto start = Clock::now();
    std::memcpy(mirror.data(), host.data(), size * sizeof(T));
    Kokkos::deep_copy(device, mirror);
    Kokkos::fence();
    if (r > 0) times.push_back(seconds_since(start));
  }
  return median(times) / static_cast<double>(size);
}

}  // namespace detail

/// \brief Times every top-level layer of Model (a Repeat: per copy of its block) forward and
/// backward inside the whole model at each micro-batch size, on this process's backend and
/// threads and on `options.samples` (give it the training data), and the optimizer and batch
/// loading per value; adds them to `profile` under each layer's key (its kind and input shape),
/// replacing what was there: models sharing layers share their timings (PreActResNet-164's
/// calibrate PreActResNet-1001's blocks).
/// With options.set_host_load, the times of a busy host are stored too (UnitTiming::busy_forward_s),
/// timed in turn with those alone. With options.split, one member's part of each layer is timed,
/// under keys of its own, with the buffers its split layers keep (measured through Kokkos'
/// allocation callbacks, as runtime_bytes: not while a Kokkos tool is loaded).
/// It also records what the backend allocates for itself (MachineProfile::runtime_bytes): the
/// first calibration in a fresh process sees it, later ones keep the largest seen.
template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
void calibrate(MachineProfile& profile, const CalibrationOptions& options = {},
               const std::function<void(const std::string&, const UnitTiming&)>& on_unit = {}) {
  using where = hpf::detail::layer_positions<Model>;
  const std::vector<std::string> keys = layer_keys<Model>(options.matmul_precision, options.split);
  const detail::BackendAllocations backend;
  std::vector<UnitTiming> timings = detail::time_layers<Model, T, Space>(options, &backend);
  std::map<std::string, UnitTiming> measured;  // layers with one key (one kind and shape) averaged
  std::map<std::string, double> copies;
  constexpr std::array per_copy{&UnitTiming::forward_s, &UnitTiming::backward_s, &UnitTiming::busy_forward_s,
                                &UnitTiming::busy_backward_s, &UnitTiming::split_buffer_elements,
                                &UnitTiming::split_buffer_resident_elements};
  // Averaged over the layers of one key, weighed by their copies: the per-copy values, and the
  // factors of tapes in flight.
  constexpr std::array averaged{per_copy[0], per_copy[1], per_copy[2], per_copy[3], per_copy[4], per_copy[5],
                                &UnitTiming::in_flight_forward_ratio, &UnitTiming::in_flight_backward_ratio};
  for (std::size_t u = 0; u < Model::size; ++u) {
    UnitTiming& t = timings[u];
    const double n = static_cast<double>(where::copies[u]);  // a Repeat's span covers its copies
    for (const auto member : per_copy) {
      for (double& s : t.*member) s /= n;
    }
    auto [it, added] = measured.try_emplace(keys[u], t);
    if (!added) {
      const double before = copies[keys[u]];
      for (const auto member : averaged) {
        std::vector<double>& mean = it->second.*member;
        for (std::size_t i = 0; i < mean.size(); ++i) mean[i] = (mean[i] * before + (t.*member)[i] * n) / (before + n);
      }
    }
    copies[keys[u]] += n;
  }
  for (auto& [key, t] : measured) {
    if (on_unit) on_unit(key, t);
    profile.units[key] = std::move(t);
  }
  profile.optimizer_s_per_parameter = detail::optimizer_seconds_per_parameter<T, Space>(std::size_t{1} << 20, options.repeats);
  profile.load_s_per_element = detail::load_seconds_per_element<T, Space>(std::size_t{1} << 20, options.repeats);
  profile.exchange_sum_s_per_element = detail::exchange_sum_seconds_per_element<T, Space>(std::size_t{1} << 20, options.repeats);
  profile.threads_per_rank = static_cast<std::size_t>(Space().concurrency());
  if (backend.active()) {
    profile.runtime_bytes = std::max(profile.runtime_bytes, backend.peak());
    profile.empty_view_bytes = backend.template empty_view_bytes<T, Space>();
  }
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_CALIBRATE_HPP
