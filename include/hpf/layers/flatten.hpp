// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_FLATTEN_HPP
#define HPF_LAYERS_FLATTEN_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
/// `[C][N][S]` -> `[C*S][N][1]`: feature index c*S + s, PyTorch's flatten order of CHW, so a
/// following Dense layer's weight is interchangeable with PyTorch's.
template <class T, class Space>
struct FlattenImpl : public ParameterFreeLayer {

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Flatten::forward");
    const std::size_t c_count = x.extent(0), n = x.extent(1), s_count = x.extent(2);
    T* out = y.data();
    Kokkos::parallel_for(
        "hpf::Flatten::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, c_count * s_count),
        KOKKOS_LAMBDA(const std::size_t f) {  // feature f = c*S + s
          const std::size_t c = f / s_count, s = f % s_count;
          for (std::size_t j = 0; j < n; ++j) out[f * n + j] = x(c, j, s);
        });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::Flatten::backward");
    const std::size_t c_count = dx.extent(0), n = dx.extent(1), s_count = dx.extent(2);
    const T* grad_out = dy.data();
    Kokkos::parallel_for(
        "hpf::Flatten::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, c_count * s_count),
        KOKKOS_LAMBDA(const std::size_t f) {
          const std::size_t c = f / s_count, s = f % s_count;
          for (std::size_t j = 0; j < n; ++j) dx(c, j, s) = grad_out[f * n + j];
        });
  }
};
}  // namespace detail

/// \brief Flattens a sample to a feature vector in PyTorch's (C, H, W) order.
struct Flatten {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = Shape<In::size>;
    static constexpr LayerCost cost{.activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "Flatten"; }
    template <class T, class Space>
    using impl = detail::FlattenImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_FLATTEN_HPP
