// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_SUMMARY_HPP
#define HPF_MODEL_SUMMARY_HPP

#include <hpf/layers/cost.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/tensor/shape.hpp>

#include <array>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace hpf {

namespace detail {
inline std::string fit_width(std::string s, std::size_t width) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}
inline std::string with_thousands(std::size_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
/// Per-layer facts of a bound list as arrays (values and functions), from pack expansions.
template <class List>
struct summary_rows;
template <class... Bound>
struct summary_rows<type_list<Bound...>> {
  static constexpr std::array<std::size_t, sizeof...(Bound)> leaves{{Bound::leaves...}};
  static constexpr std::array<LayerCost, sizeof...(Bound)> costs{{Bound::cost...}};
  static constexpr std::array<std::string (*)(), sizeof...(Bound)> describe{{&Bound::describe...}};
  static constexpr std::array<std::string (*)(), sizeof...(Bound)> output_shape{
      {&shape_string<typename Bound::output_shape>...}};
};
}  // namespace detail

/// \brief A table of the model's compile-time facts: for every top-level layer its leaf-index
/// range (the positions pipeline cuts name), output shape, parameters, forward FLOPs per sample
/// and activation memory for `batch` samples of `scalar_bytes` each; then the totals.
template <class Model>
std::string summary(std::size_t batch = 1, std::size_t scalar_bytes = sizeof(float)) {
  using bound = typename Model::bound_layers;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-4s %-11s %-52s %-12s %12s %11s %10s\n", "#", "leaves", "layer", "output",
                "params", "fwd MFLOP", "act MiB");
  out += line;
  out += std::string(108, '-') + "\n";
  using rows = detail::summary_rows<bound>;
  std::size_t first_leaf = 0;
  for (std::size_t i = 0; i < Model::size; ++i) {  // a run-time loop over tables: no code per layer
    const std::size_t n = rows::leaves[i];
    const LayerCost& cost = rows::costs[i];
    // Appended piece by piece: g++ 12 at -O3 warns falsely (-Wrestrict) on `"-" + std::string`.
    std::string leaves = n ? std::to_string(first_leaf) : "-";
    if (n > 1) leaves.append("-").append(std::to_string(first_leaf + n - 1));
    first_leaf += n;
    std::snprintf(line, sizeof line, "%-4zu %-11s %-52s %-12s %12s %11.2f %10.2f\n", i, leaves.c_str(),
                  detail::fit_width(rows::describe[i](), 52).c_str(), rows::output_shape[i]().c_str(),
                  detail::with_thousands(cost.parameters).c_str(), cost.forward_flops / 1e6,
                  static_cast<double>(cost.activations * batch * scalar_bytes) / (1 << 20));
    out += line;
  }
  constexpr LayerCost total = Model::cost;
  out += std::string(108, '-') + "\n";
  std::snprintf(line, sizeof line,
                "input %s, %zu layers (%zu leaves): %s parameters (%.2f MiB), %.2f MFLOP forward per sample,\n"
                "%.3f GFLOP per training step of %zu (6 x %s MACs per sample), %.2f MiB of activations\n",
                shape_string<typename Model::input_shape>().c_str(), Model::size, Model::leaves,
                detail::with_thousands(total.parameters).c_str(),
                static_cast<double>(total.parameters * scalar_bytes) / (1 << 20), total.forward_flops / 1e6,
                6.0 * total.macs * batch / 1e9, batch, detail::with_thousands(total.macs).c_str(),
                static_cast<double>(total.activations * batch * scalar_bytes) / (1 << 20));
  out += line;
  return out;
}

}  // namespace hpf

#endif  // HPF_MODEL_SUMMARY_HPP
