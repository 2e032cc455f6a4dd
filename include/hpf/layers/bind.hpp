// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_BIND_HPP
#define HPF_LAYERS_BIND_HPP

#include <hpf/layers/cost.hpp>
#include <hpf/layers/protocol.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/tensor/spatial_part.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

/// \brief The layer protocol.
///
/// A layer (Dense<10>, ReLU, Residual<...>) is an empty type describing *what* to compute. Bound
/// to the shape of its input, `Layer::bind<In>` states the compile-time facts and the run-time
/// implementation:
///
///     template <class In> struct bind {
///       using input_shape = In;
///       using output_shape = ...;           // InvalidShape after a static_assert if In is rejected
///       static constexpr LayerCost cost;    // per sample (parameters per layer)
///       static constexpr std::size_t leaves;  // leaf layers inside (pipeline cut positions)
///       static constexpr bool in_place;     // forward may write its output over its input,
///                                           // because backward reads only the output (ReLU)
///       static constexpr bool backward_reads_output;  // backward reads the layer's own output
///       static std::string describe();      // one line for the summary table
///       template <class T, class Space> using impl = ...;  // default-constructible
///     };
///
/// and the impl provides (see DenseImpl for a complete one):
///
///     using tape_type = ...;                 // per micro-batch state kept for backward
///     void bind(ParameterBinder<T, Space>&); // claim named parameter and buffer slices
///     void reserve(tape_type&, std::size_t batch_capacity);
///     std::size_t workspace(std::size_t batch_capacity) const;  // scratch elements needed
///     void forward(const Context&, ConstActivation x, Activation y, tape_type&) const;
///     void backward(const Context&, ConstActivation x, ConstActivation y, ConstActivation dy,
///                   Activation dx, tape_type&) const;   // dx empty: input gradient not needed
///
/// Parameter gradients accumulate (+=) so micro-batches add up; the caller zeroes them per step.
/// Composites also provide `std::size_t scratch(std::size_t batch_capacity) const`: gradient
/// scratch they take from Context::scratch during backward (see scratch_of).
/// Kernel code depends on run-time sizes only, so each (T, Space) compiles one kernel per layer
/// kind no matter how many shapes a model uses. The concepts BoundLayer and LayerImplementation
/// (layers/protocol.hpp) state the same; a model checks every layer against them with one
/// static_assert per member, so a missing member is named in the error. A loss layer adds what
/// LossLayer (layers/loss.hpp) asks for.

/// State of a layer that keeps nothing between forward and backward.
struct NoTape {};

/// Base of layer implementations without parameters, tape or workspace (ReLU, Flatten, ...).
struct ParameterFreeLayer {
  using tape_type = NoTape;
  template <class Binder>
  void bind(Binder&) {}
  void reserve(tape_type&, std::size_t) {}
  std::size_t workspace(std::size_t) const { return 0; }
};

/// \brief Memory traits of a bound layer (members every layer states): a chain runs an in-place
/// layer over its predecessor's output buffer when that predecessor's backward does not read it,
/// saving one activation (what PyTorch frees after such a layer).
template <class Bound>
constexpr bool runs_in_place() {
  return Bound::in_place;
}
template <class Bound>
constexpr bool backward_reads_output() {
  return Bound::backward_reads_output;
}
/// The layer is hpf::ReLU.
template <class Bound>
constexpr bool is_relu() {
  if constexpr (requires { Bound::is_relu; }) return Bound::is_relu;
  return false;
}
/// The layer can apply a ReLU that follows it in its own pass over the values forward (its impl
/// has forward_relu) and backward (backward_relu): a chain then runs the two as one.
template <class Bound>
constexpr bool applies_next_relu_forward() {
  if constexpr (requires { Bound::applies_next_relu_forward; }) return Bound::applies_next_relu_forward;
  return false;
}
template <class Bound>
constexpr bool applies_next_relu_backward() {
  if constexpr (requires { Bound::applies_next_relu_backward; }) return Bound::applies_next_relu_backward;
  return false;
}
/// The layer can apply a ReLU before it in its own passes: forward (its impl has
/// forward_after_relu, given the ReLU's input) and backward (backward_after_relu, given the ReLU's
/// output or input: positive at the same places). A chain then runs the two as one.
template <class Bound>
constexpr bool applies_previous_relu() {
  if constexpr (requires { Bound::applies_previous_relu; }) return Bound::applies_previous_relu;
  return false;
}

/// What a layer bound to InvalidShape is: every fact empty, so one error does not cascade.
struct InvalidBound {
  using input_shape = InvalidShape;
  using output_shape = InvalidShape;
  static constexpr LayerCost cost{};
  static constexpr std::size_t leaves = 0;
  static constexpr bool in_place = false;
  static constexpr bool backward_reads_output = false;
  static std::string describe() { return "invalid"; }
  /// Never run (hpf::Network static_asserts Model::valid); exists so that nothing cascades.
  template <class T, class Space>
  struct impl {
    using tape_type = NoTape;
    template <class Binder>
    void bind(Binder&) {}
    void reserve(tape_type&, std::size_t) {}
    std::size_t workspace(std::size_t) const { return 0; }
    template <class... Args>
    void forward(const Args&...) const {}
    template <class... Args>
    void backward(const Args&...) const {}
  };
};

namespace detail {
template <class Layer, class In>
struct bind_impl {
  using type = typename Layer::template bind<In>;
};
template <class Layer>
struct bind_impl<Layer, InvalidShape> {
  using type = InvalidBound;
};
}  // namespace detail

/// Layer bound to input shape In (InvalidBound after an earlier error).
template <class Layer, class In>
using bind_t = typename detail::bind_impl<Layer, In>::type;

/// The layer computes on a sample split into slabs (a SpatialPart input, hpf::Spatial<G>): it
/// states `takes_spatial_parts` (elementwise layers, convolutions, BatchNorm, pooling whose
/// windows stay in a slab, and the layers that gather the whole sample).
template <class Bound>
constexpr bool takes_spatial_parts() {
  if constexpr (requires { Bound::takes_spatial_parts; }) return Bound::takes_spatial_parts;
  return false;
}
/// The compile error of a layer that cannot take a sample split into slabs.
template <class Layer, class In>
struct layer_rejects_slabs {
  static_assert(!std::is_same_v<Layer, Layer>,
                "hpf::Spatial<G>: the layer named above cannot take samples split into slabs of rows. Under "
                "Spatial<G> the layers before a Flatten or GlobalAvgPool (which gather the whole sample) must be "
                "Conv2D, Conv3D, BatchNorm, ReLU, GELU, MaxPool/AvgPool (2-D and 3-D) with windows inside a slab, "
                "SubsampleZeroPad, or blocks of them (Residual, Repeat, Chain)");
};

/// \brief Binds the layer at position LayerIndex of a model to its input shape. Exists to name
/// the position: when a layer rejects its input, compilers print this instantiation
/// (`layer_in_model<3, hpf::Dense<10>, hpf::Shape<32, 7, 7>>`) right at the static_assert.
template <std::size_t LayerIndex, class Layer, class InputShape>
struct layer_in_model {
  using type = bind_t<Layer, InputShape>;
  static constexpr bool takes_input = !is_spatial_part_v<InputShape> || takes_spatial_parts<type>();
  static_assert(sizeof(std::conditional_t<takes_input, char, layer_rejects_slabs<Layer, InputShape>>));
  // Instantiates the layer here, under this name.
  using output_shape = std::conditional_t<takes_input, typename type::output_shape, InvalidShape>;
  static_assert(layer_protocol_check<type>::value, "hpf: the layer named above does not follow the layer protocol");
};

/// Pattern for a check whose failure must not make the enclosing bind unusable (Clang treats a
/// class whose own static_assert failed as invalid, and each later use of it as one more error):
/// put the static_assert in a reporter struct and instantiate it only on failure,
///     static_assert(sizeof(std::conditional_t<accepted, char, some_reporter<In>>));

}  // namespace hpf

#endif  // HPF_LAYERS_BIND_HPP
