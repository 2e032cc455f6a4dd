// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_AVG_POOL_HPP
#define HPF_LAYERS_AVG_POOL_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/layers/detail/pooling.hpp>
#include <hpf/layers/detail/window.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpf {

namespace detail {

/// Average pooling with zero padding counted in the divisor (PyTorch's count_include_pad=True).
template <class T, class Space>
class AvgPoolImpl : public ParameterFreeLayer {
 public:
  explicit AvgPoolImpl(const WindowGeometry& g) : g_(g) {}

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::AvgPool::forward");
    const WindowGeometry g = g_;
    const std::size_t n = x.extent(1);
    const T inv_area = T(1) / T(g.kernel * g.kernel);
    Kokkos::parallel_for(
        "hpf::AvgPool::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n),
        KOKKOS_LAMBDA(const std::size_t plane) {
          const std::size_t c = plane / n, j = plane % n;
          const T* image = &x(c, j, 0);
          T* out = &y(c, j, 0);
          for (std::size_t oh = 0; oh < g.out_height; ++oh) {
            const auto [h0, h1] = window_rows(g, oh);
            for (std::size_t ow = 0; ow < g.out_width; ++ow) {
              const auto [w0, w1] = window_cols(g, ow);
              T sum = 0;
              for (std::size_t ih = h0; ih < h1; ++ih)
                for (std::size_t iw = w0; iw < w1; ++iw) sum += image[ih * g.width + iw];
              out[oh * g.out_width + ow] = sum * inv_area;
            }
          }
        });
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::AvgPool::backward");
    const WindowGeometry g = g_;
    const std::size_t n = dx.extent(1);
    const T inv_area = T(1) / T(g.kernel * g.kernel);
    // Per plane (one work item, so overlapping windows never race): zero, then spread each
    // window's gradient over the pixels it covers.
    Kokkos::parallel_for(
        "hpf::AvgPool::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n),
        KOKKOS_LAMBDA(const std::size_t plane) {
          const std::size_t c = plane / n, j = plane % n;
          T* grad_in = &dx(c, j, 0);
          const T* grad_out = &dy(c, j, 0);
          for (std::size_t i = 0; i < g.height * g.width; ++i) grad_in[i] = T(0);
          for (std::size_t oh = 0; oh < g.out_height; ++oh) {
            const auto [h0, h1] = window_rows(g, oh);
            for (std::size_t ow = 0; ow < g.out_width; ++ow) {
              const auto [w0, w1] = window_cols(g, ow);
              const T share = grad_out[oh * g.out_width + ow] * inv_area;
              for (std::size_t ih = h0; ih < h1; ++ih)
                for (std::size_t iw = w0; iw < w1; ++iw) grad_in[ih * g.width + iw] += share;
            }
          }
        });
  }

 private:
  WindowGeometry g_;
};

struct avg_pool_kernels {
  static constexpr bool saves_indices = false;
  static constexpr bool applies_previous_relu = false;
  template <class T, class Space>
  using type = AvgPoolImpl<T, Space>;
};
}  // namespace detail

/// \brief Average pooling over Kernel x Kernel windows (PyTorch nn.AvgPool2d with
/// count_include_pad=True; stride defaults to the window size). \tparam Options Stride<S>, Pad<P>
template <std::size_t Kernel, class... Options>
struct AvgPool {
  static_assert(Kernel > 0, "hpf::AvgPool: the window size must be positive");
  static_assert(check_spatial_options<Options...>::value);
  static_assert(bias_option_v<Options...>, "hpf::AvgPool: NoBias does not apply to pooling");
  template <class In>
  struct bind : detail::bound_pool<detail::avg_pool_kernels, Kernel, stride_option_v<Kernel, Options...>,
                                   pad_option_v<0, Options...>, In> {
    static std::string describe() {
      return detail::describe_pool("AvgPool", Kernel, stride_option_v<Kernel, Options...>, pad_option_v<0, Options...>);
    }
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_AVG_POOL_HPP
