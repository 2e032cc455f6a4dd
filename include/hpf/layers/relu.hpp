// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_RELU_HPP
#define HPF_LAYERS_RELU_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
template <class T, class Space>
struct ReLUImpl : public ParameterFreeLayer {

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::ReLU::forward");
    const T* in = x.data();
    T* out = y.data();
    for_each_block(ctx.space, x.size(), "hpf::ReLU::forward", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) out[i] = relu(in[i]);
    });
  }
  /// Uses the output: y > 0 exactly where x > 0.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space> y,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::ReLU::backward");
    const T* out = y.data();
    const T* grad_out = dy.data();
    T* grad_in = dx.data();
    for_each_block(ctx.space, y.size(), "hpf::ReLU::backward", KOKKOS_LAMBDA(const std::size_t begin, const std::size_t end) {
      // The pointers local and the mask branch-free, so the loop vectorises (a conditional load
      // became a branch per element, mispredicted half the time).
      const T* o = out;
      const T* g = grad_out;
      T* d = grad_in;
      for (std::size_t i = begin; i < end; ++i) d[i] = relu_gradient(g[i], o[i]);
    });
  }
};
}  // namespace detail

/// \brief Rectified linear unit, max(x, 0), on any shape.
struct ReLU {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr LayerCost cost{.forward_flops = In::size, .backward_flops = In::size,
                                    .activations = In::size};
    static constexpr std::size_t leaves = 1;
    static constexpr bool takes_spatial_parts = true;  // elementwise
    static constexpr bool elementwise = true;         // may sit inside a DensePair
    static constexpr bool in_place = true;  // backward reads only the output
    static constexpr bool backward_reads_output = true;
    static constexpr bool is_relu = true;  // a layer before it may apply it (applies_next_relu)
    static std::string describe() { return "ReLU"; }
    template <class T, class Space>
    using impl = detail::ReLUImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_RELU_HPP
