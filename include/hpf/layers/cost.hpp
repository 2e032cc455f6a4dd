// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_COST_HPP
#define HPF_LAYERS_COST_HPP

#include <cstddef>

namespace hpf {

/// \brief What one process of a spatial split (hpf::Spatial<G>) exchanges with its group per
/// micro-batch, in elements: halo swaps with its neighbours, where each direction carries its
/// largest rows (`halo_elements`, per sample, summed over swaps; backward swaps as many back), and
/// the group's allgathers (LayerGroup::sum and gather_parts: every member receives the others'
/// parts) in forward and backward, of `fixed` elements plus `per_sample` per sample of the
/// micro-batch.
struct GroupTraffic {
  std::size_t halo_swaps = 0, halo_elements = 0;
  std::size_t forward_gathers = 0, forward_fixed = 0, forward_per_sample = 0;
  std::size_t backward_gathers = 0, backward_fixed = 0, backward_per_sample = 0;

  constexpr GroupTraffic& operator+=(const GroupTraffic& o) noexcept {
    halo_swaps += o.halo_swaps;
    halo_elements += o.halo_elements;
    forward_gathers += o.forward_gathers;
    forward_fixed += o.forward_fixed;
    forward_per_sample += o.forward_per_sample;
    backward_gathers += o.backward_gathers;
    backward_fixed += o.backward_fixed;
    backward_per_sample += o.backward_per_sample;
    return *this;
  }
  friend constexpr GroupTraffic operator*(std::size_t n, GroupTraffic t) noexcept {
    return {n * t.halo_swaps,     n * t.halo_elements,    n * t.forward_gathers,   n * t.forward_fixed,
            n * t.forward_per_sample, n * t.backward_gathers, n * t.backward_fixed, n * t.backward_per_sample};
  }
  friend constexpr bool operator==(const GroupTraffic&, const GroupTraffic&) = default;
};

/// \brief Compile-time cost facts of a layer bound to its input shape, per sample unless noted.
/// Sums over a model are `constexpr`; the performance oracle and the balanced partitioner read
/// them. FLOPs count multiply and add as two (the convention of the reference figures).
struct LayerCost {
  /// Trainable scalars (per layer, not per sample).
  std::size_t parameters = 0;
  /// Non-trainable state such as BatchNorm running statistics (per layer).
  std::size_t buffers = 0;
  /// Forward FLOPs per sample.
  std::size_t forward_flops = 0;
  /// Backward FLOPs per sample (input and weight gradients).
  std::size_t backward_flops = 0;
  /// Activation elements per sample the layer keeps alive from forward to backward
  /// (its output; composites include their internal intermediates).
  std::size_t activations = 0;
  /// Multiply-accumulates of the forward GEMM work per sample (convolutions and dense layers
  /// only): the count published figures use, training FLOPs being 6 x MACs.
  std::size_t macs = 0;
  /// int32 indices per sample the layer keeps from forward to backward besides its activations
  /// (max pooling's argmax).
  std::size_t saved_indices = 0;
  /// What a layer split (LayerSplit: Dense, Conv2D, Conv3D) divides and moves: the split layers'
  /// multiply-accumulates per sample (forward; backward does twice as many), their input and output
  /// elements per sample, their weights and biases (per layer), and how many layers split.
  std::size_t split_macs = 0;
  std::size_t split_inputs = 0;
  std::size_t split_outputs = 0;
  std::size_t split_weights = 0;
  std::size_t split_layers = 0;
  /// What hpf::DensePair blocks move instead (their Dense layers count in split_macs, split_weights
  /// and split_layers, not in split_inputs and split_outputs): the elements per sample each
  /// pass adds over the group (forward the second layer's outputs, backward the first's input
  /// gradient), and how many pairs.
  std::size_t split_pair_forward = 0;
  std::size_t split_pair_backward = 0;
  std::size_t split_pairs = 0;
  /// What a slab process of a spatial split exchanges with its group (zero elsewhere).
  GroupTraffic group{};

  constexpr LayerCost& operator+=(const LayerCost& o) noexcept {
    parameters += o.parameters;
    buffers += o.buffers;
    forward_flops += o.forward_flops;
    backward_flops += o.backward_flops;
    activations += o.activations;
    macs += o.macs;
    saved_indices += o.saved_indices;
    split_macs += o.split_macs;
    split_inputs += o.split_inputs;
    split_outputs += o.split_outputs;
    split_weights += o.split_weights;
    split_layers += o.split_layers;
    split_pair_forward += o.split_pair_forward;
    split_pair_backward += o.split_pair_backward;
    split_pairs += o.split_pairs;
    group += o.group;
    return *this;
  }
  friend constexpr LayerCost operator+(LayerCost a, const LayerCost& b) noexcept { return a += b; }
  friend constexpr LayerCost operator*(std::size_t n, LayerCost c) noexcept {
    return {n * c.parameters,   n * c.buffers,      n * c.forward_flops, n * c.backward_flops,
            n * c.activations,  n * c.macs,         n * c.saved_indices, n * c.split_macs,
            n * c.split_inputs, n * c.split_outputs, n * c.split_weights, n * c.split_layers,
            n * c.split_pair_forward, n * c.split_pair_backward, n * c.split_pairs, n * c.group};
  }
  /// Forward + backward FLOPs for one training sample.
  constexpr std::size_t training_flops() const noexcept { return forward_flops + backward_flops; }
  friend constexpr bool operator==(const LayerCost&, const LayerCost&) = default;
};

/// The cost of a convolution (Conv2D, Conv3D) or dense product of `outputs` filters, each over
/// `patch` inputs at `positions` output positions, reading `inputs` elements per sample: a layer
/// a LayerSplit divides.
constexpr LayerCost product_cost(std::size_t outputs, std::size_t patch, std::size_t positions, std::size_t inputs,
                                 bool bias) noexcept {
  const std::size_t macs = outputs * patch * positions, bias_flops = bias ? outputs * positions : 0;
  const std::size_t weights = outputs * patch + (bias ? outputs : 0);
  return {.parameters = weights,
          .forward_flops = 2 * macs + bias_flops,
          .backward_flops = 4 * macs + bias_flops,
          .activations = outputs * positions,
          .macs = macs,
          .split_macs = macs,
          .split_inputs = inputs,
          .split_outputs = outputs * positions,
          .split_weights = weights,
          .split_layers = 1};
}

}  // namespace hpf

#endif  // HPF_LAYERS_COST_HPP
