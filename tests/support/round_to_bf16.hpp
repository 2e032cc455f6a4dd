// A layer that rounds what passes through it to bf16, both ways: where a pipelined run with
// StepOptions::stage_precision bf16 rounds at a cut, this layer placed at the cut makes one process
// round alike (test support).
#ifndef HPF_TESTS_SUPPORT_ROUND_TO_BF16_HPP
#define HPF_TESTS_SUPPORT_ROUND_TO_BF16_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/tensor/bf16_arrays.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace hpf_test {

namespace detail {
template <class T, class Space>
struct RoundToBf16Impl : public hpf::ParameterFreeLayer {
  static_assert(std::is_same_v<T, float>, "hpf_test::RoundToBf16: float networks only, as stage_precision bf16");
  void forward(const hpf::Context<T, Space>& ctx, hpf::ConstActivation<T, Space> x, hpf::Activation<T, Space> y, tape_type&) const {
    Kokkos::deep_copy(ctx.space, y, x);
    hpf::round_to_bf16_in_place(ctx.space, y.data(), y.size());
  }
  void backward(const hpf::Context<T, Space>& ctx, hpf::ConstActivation<T, Space>, hpf::ConstActivation<T, Space>,
                hpf::ConstActivation<T, Space> dy, hpf::Activation<T, Space> dx, tape_type&) const {
    if (hpf::is_empty(dx)) return;
    Kokkos::deep_copy(ctx.space, dx, dy);
    hpf::round_to_bf16_in_place(ctx.space, dx.data(), dx.size());
  }
};
}  // namespace detail

/// y = bf16(x) forward, dx = bf16(dy) backward (ties to even): what the next stage reads of a bf16
/// activation and the previous stage of a bf16 gradient. No parameters.
struct RoundToBf16 {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = In;
    static constexpr hpf::LayerCost cost{.activations = In::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 0;
    static constexpr bool takes_spatial_parts = true;
    static std::string describe() { return "RoundToBf16"; }
    template <class T, class Space>
    using impl = detail::RoundToBf16Impl<T, Space>;
  };
};

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_ROUND_TO_BF16_HPP
