// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_IDENTITY_HPP
#define HPF_LAYERS_IDENTITY_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
template <class T, class Space>
struct IdentityImpl : public ParameterFreeLayer {
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type&) const {
    Kokkos::deep_copy(ctx.space, y, x);
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (!is_empty(dx)) Kokkos::deep_copy(ctx.space, dx, dy);
  }
};
}  // namespace detail

/// \brief Passes its input through. The default shortcut of a Residual block (which adds the
/// input directly and never runs this copy).
struct Identity {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr LayerCost cost{.activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 0;  // no layer of its own: nothing to cut at
    static constexpr bool takes_spatial_parts = true;
    static constexpr bool elementwise = true;  // may sit inside a DensePair
    static std::string describe() { return "Identity"; }
    template <class T, class Space>
    using impl = detail::IdentityImpl<T, Space>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_IDENTITY_HPP
