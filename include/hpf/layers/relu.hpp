// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_RELU_HPP
#define HPF_LAYERS_RELU_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
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
    Kokkos::parallel_for(
        "hpf::ReLU::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, x.size()),
        KOKKOS_LAMBDA(const std::size_t i) { out[i] = in[i] > T(0) ? in[i] : T(0); });
  }
  /// Uses the output: y > 0 exactly where x > 0.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space> y,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::ReLU::backward");
    const T* out = y.data();
    const T* grad_out = dy.data();
    T* grad_in = dx.data();
    Kokkos::parallel_for(
        "hpf::ReLU::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, y.size()),
        KOKKOS_LAMBDA(const std::size_t i) { grad_in[i] = out[i] > T(0) ? grad_out[i] : T(0); });
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
    static constexpr bool in_place = true;  // backward reads only the output
    static constexpr bool backward_reads_output = true;
    static std::string describe() { return "ReLU"; }
    template <class T, class Space>
    using impl = detail::ReLUImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_RELU_HPP
