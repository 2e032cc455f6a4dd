// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_MAX_POOL_PASSES_HPP
#define HPF_LAYERS_DETAIL_MAX_POOL_PASSES_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/elementwise.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace hpf::detail {

/// A plane's (volume's) input gradient from its windows' output gradients, `where` their maxima:
/// zero, then each window's gradient added at its maximum, in output order (one work item per
/// plane, so overlapping windows never race). With AfterRelu the pool's input `relu_out` is a
/// ReLU's output (or its input, where the pool took the ReLU forward too: positive at the same
/// places), and the result is the gradient at the ReLU's input: a window's gradient passes where
/// the ReLU's output at its maximum is positive. Every window adding at one position sees
/// the same value there, so these are the bits of the ReLU's own backward over the sums.
template <bool AfterRelu, class T>
KOKKOS_INLINE_FUNCTION void add_at_maxima(T* grad_in, std::size_t inputs, const T* grad_out, const std::int32_t* where,
                                          std::size_t outputs, const T* relu_out) {
  for (std::size_t i = 0; i < inputs; ++i) grad_in[i] = T(0);
  for (std::size_t o = 0; o < outputs; ++o) {
    if constexpr (AfterRelu) {
      grad_in[where[o]] += relu_gradient(grad_out[o], relu_out[where[o]]);
    } else {
      grad_in[where[o]] += grad_out[o];
    }
  }
}

/// A max pool's planes (volumes): how many there are per sample, and how many values one has in
/// and out.
struct MaxPoolPlanes {
  std::size_t channels, inputs, outputs;
};

/// The passes of a max pool over images or volumes (MaxPool, MaxPool3D), alone or with the ReLU
/// before it. `Impl` derives from it and gives its forward kernel `pool<Relu>` (Relu: each value
/// read through the ReLU), its tape's `argmax` (each window's maximum within its plane or
/// volume), `planes()` and its `backward_region`.
template <class Impl, class T, class Space>
class MaxPoolPasses {
 public:
  template <class Tape>
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, Tape& tape) const {
    static_cast<const Impl&>(*this).template pool<false>(ctx, x, y, tape);
  }
  /// forward of the ReLU before the pool, then the pool, given that ReLU's input: each value read
  /// through the ReLU (a chain runs the two as one, and never writes the ReLU's output).
  template <class Tape>
  void forward_after_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                          Tape& tape) const {
    static_cast<const Impl&>(*this).template pool<true>(ctx, x, y, tape);
  }
  template <class Tape>
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, Tape& tape) const {
    add_gradients<false>(ctx, x, dy, dx, tape.argmax);
  }
  /// backward, then the backward of the ReLU before the pool, whose output (or input) is x: the
  /// gradient at the ReLU's input, in one pass (a chain runs the two as one).
  template <class Tape>
  void backward_after_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                           ConstActivation<T, Space> dy, Activation<T, Space> dx, Tape& tape) const {
    add_gradients<true>(ctx, x, dy, dx, tape.argmax);
  }

  // The kernel (public: CUDA forbids device lambdas in private member functions).
  template <bool AfterRelu, class Argmax>
  void add_gradients(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                     Activation<T, Space> dx, const Argmax& argmax) const {
    if (is_empty(dx)) return;
    trace::Region region(Impl::backward_region);
    const MaxPoolPlanes p = static_cast<const Impl&>(*this).planes();
    const std::size_t n = dx.extent(1);
    Kokkos::parallel_for(
        Impl::backward_region, Kokkos::RangePolicy<Space>(ctx.space, 0, p.channels * n),
        KOKKOS_LAMBDA(const std::size_t plane) {
          const std::size_t c = plane / n, j = plane % n;
          add_at_maxima<AfterRelu>(&dx(c, j, 0), p.inputs, &dy(c, j, 0), &argmax(plane * p.outputs), p.outputs,
                                   AfterRelu ? &x(c, j, 0) : nullptr);
        });
  }
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_MAX_POOL_PASSES_HPP
