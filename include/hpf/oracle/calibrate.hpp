// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_CALIBRATE_HPP
#define HPF_ORACLE_CALIBRATE_HPP

#include <hpf/model/network.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/profile.hpp>
#include <hpf/parallel/partition.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace hpf::oracle {

/// \brief How long and at which micro-batch sizes calibration times each distinct unit.
struct CalibrationOptions {
  std::vector<std::size_t> batches{1, 2, 4, 8, 16, 32, 64, 128};
  std::size_t repeats = 5;         ///< timed calls per size: the median is kept
  double max_seconds_per_unit = 4;  ///< larger sizes are skipped once a unit took this long
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

/// The stage of Model holding exactly leaves [Begin, End) (one unit), as a model.
template <class Model, std::size_t Begin, std::size_t End>
struct unit_model {
  using type = std::conditional_t<
      Begin == 0,
      std::conditional_t<End == Model::leaves, Stage<Model, Cuts<>, 0>, Stage<Model, Cuts<(End < Model::leaves ? End : 1)>, 0>>,
      std::conditional_t<End == Model::leaves, Stage<Model, Cuts<(Begin > 0 ? Begin : 1)>, 1>,
                         Stage<Model, Cuts<(Begin > 0 ? Begin : 1), (End < Model::leaves && End > Begin ? End : Begin + 1)>, 1>>>;
};

/// Times forward and backward of the unit model Unit at each size of `o.batches`.
template <class Unit, class T, class Space>
UnitTiming time_unit(const CalibrationOptions& o) {
  using Net = Network<Unit, T, Space>;
  Net net;
  const std::size_t largest = o.batches.back();
  auto tape = net.make_tape(largest);
  using In = typename Unit::input_shape;
  using Out = typename Unit::output_shape;
  constexpr bool first = Unit::is_first, last = Unit::is_last;
  Kokkos::deep_copy(tape.input, T(0.5));
  Buffer<T, Space> output_grad("hpf::oracle::output_grad", last ? 0 : Out::size * largest);
  Buffer<T, Space> input_grad("hpf::oracle::input_grad", first ? 0 : In::size * largest);
  Kokkos::deep_copy(output_grad, T(1e-3));
  if constexpr (Net::classifier) Kokkos::deep_copy(tape.labels, 1);
  UnitTiming t;
  const auto started = Clock::now();
  for (const std::size_t n : o.batches) {
    if (!t.batch.empty() && seconds_since(started) > o.max_seconds_per_unit) break;
    std::vector<double> forward, backward;
    for (std::size_t r = 0; r < o.repeats + 1; ++r) {  // the first call of a size warms up
      Kokkos::fence();
      auto start = Clock::now();
      net.forward(tape, n, Mode::train);
      Kokkos::fence();
      const double f = seconds_since(start);
      Activation<T, Space> dy, dx;
      if constexpr (!last) dy = activation_view(output_grad, Out::channels, n, Out::spatial);
      if constexpr (!first) dx = activation_view(input_grad, In::channels, n, In::spatial);
      start = Clock::now();
      net.backward(tape, T(1) / static_cast<T>(n), dy, dx);
      Kokkos::fence();
      const double b = seconds_since(start);
      if (r > 0) {
        forward.push_back(f);
        backward.push_back(b);
      }
    }
    t.batch.push_back(static_cast<double>(n));
    t.forward_s.push_back(median(forward));
    t.backward_s.push_back(median(backward));
    t.workspace_elements.push_back(static_cast<double>(net.layers().workspace(n)));
    t.scratch_elements.push_back(static_cast<double>(scratch_of(net.layers(), n)));
  }
  return t;
}

/// Seconds per parameter of the optimizer's step and of zeroing the gradients, on `size` values.
template <class T, class Space>
double optimizer_seconds_per_parameter(std::size_t size, std::size_t repeats) {
  Buffer<T, Space> parameters("hpf::oracle::parameters", size), gradients("hpf::oracle::gradients", size);
  Optimizer<T, Space> optimizer(size, SgdOptions{.learning_rate = 0.01, .momentum = 0.9});
  std::vector<double> times;
  for (std::size_t r = 0; r < repeats + 1; ++r) {
    Kokkos::fence();
    const auto start = Clock::now();
    optimizer.step(parameters, gradients);
    Kokkos::deep_copy(gradients, T(0));
    Kokkos::fence();
    if (r > 0) times.push_back(seconds_since(start));
  }
  return median(times) / static_cast<double>(size);
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

/// \brief Times every distinct unit of Model (a top-level layer, or one copy of a Repeat's block)
/// forward and backward at each micro-batch size, on this process's backend and threads, and
/// the optimizer and batch loading per value; adds them to `profile`. Units timed before (the
/// same key, from this model or another) are timed again. A Repeat of N copies costs one copy's
/// calibration: ResNet-1001 calibrates as fast as ResNet-164.
template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
void calibrate(MachineProfile& profile, const CalibrationOptions& options = {},
               const std::function<void(const std::string&, const UnitTiming&)>& on_unit = {}) {
  using where = hpf::detail::layer_positions<Model>;
  const std::vector<std::string> keys = layer_keys<Model>();
  std::vector<std::string> done;
  for_each_index<Model::size>([&](auto u) {
    constexpr std::size_t layer = decltype(u)::value;
    constexpr std::size_t begin = where::first_leaf[layer];
    constexpr std::size_t per_unit = where::repeats[layer] ? where::unit_leaves[layer] : where::arrays::leaves[layer];
    if constexpr (per_unit > 0) {
      if (std::find(done.begin(), done.end(), keys[layer]) != done.end()) return;
      done.push_back(keys[layer]);
      using Unit = typename detail::unit_model<Model, begin, begin + per_unit>::type;
      UnitTiming t = detail::time_unit<Unit, T, Space>(options);
      if (on_unit) on_unit(keys[layer], t);
      profile.units[keys[layer]] = std::move(t);
    }
  });
  profile.optimizer_s_per_parameter = detail::optimizer_seconds_per_parameter<T, Space>(std::size_t{1} << 20, options.repeats);
  profile.load_s_per_element = detail::load_seconds_per_element<T, Space>(std::size_t{1} << 20, options.repeats);
  profile.threads_per_rank = static_cast<std::size_t>(Space().concurrency());
}

}  // namespace hpf::oracle

#endif  // HPF_ORACLE_CALIBRATE_HPP
