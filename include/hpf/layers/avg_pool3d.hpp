// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_AVG_POOL3D_HPP
#define HPF_LAYERS_AVG_POOL3D_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/pooling.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {

/// 3-D average pooling with zero padding counted in the divisor (PyTorch's count_include_pad=True).
/// As PyTorch's CPU kernels: a window's sum in (d, h, w) order divided by K^3, and in backward
/// each output's gradient divided by K^3 and added to its window's voxels in output order.
template <class T, class Space>
class AvgPool3DImpl : public ParameterFreeLayer {
 public:
  explicit AvgPool3DImpl(const VolumeGeometry& g) : g_(g) {}

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::AvgPool3D::forward");
    const VolumeGeometry g = g_;
    const std::size_t n = x.extent(1);
    const T area = T(g.kernel() * g.kernel() * g.kernel());
    Kokkos::parallel_for(
        "hpf::AvgPool3D::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels() * n),
        KOKKOS_LAMBDA(const std::size_t v) {
          const std::size_t c = v / n, j = v % n, W = g.plane.width, HW = g.plane.in_spatial();
          const T* volume = &x(c, j, 0);
          T* out = &y(c, j, 0);
          std::size_t o = 0;
          for (std::size_t od = 0; od < g.out_depth; ++od) {
            const auto [d0, d1] = window_depths(g, od);
            for (std::size_t oh = 0; oh < g.plane.out_height; ++oh) {
              const auto [h0, h1] = window_rows(g.plane, oh);
              for (std::size_t ow = 0; ow < g.plane.out_width; ++ow, ++o) {
                const auto [w0, w1] = window_cols(g.plane, ow);
                T sum = 0;
                for (std::size_t id = d0; id < d1; ++id)
                  for (std::size_t ih = h0; ih < h1; ++ih)
                    for (std::size_t iw = w0; iw < w1; ++iw) sum += volume[id * HW + ih * W + iw];
                out[o] = sum / area;
              }
            }
          }
        });
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::AvgPool3D::backward");
    const VolumeGeometry g = g_;
    const std::size_t n = dx.extent(1);
    const T area = T(g.kernel() * g.kernel() * g.kernel());
    // Per volume (one work item, so overlapping windows never race): zero, then spread each
    // window's gradient over the voxels it covers.
    Kokkos::parallel_for(
        "hpf::AvgPool3D::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels() * n),
        KOKKOS_LAMBDA(const std::size_t v) {
          const std::size_t c = v / n, j = v % n, W = g.plane.width, HW = g.plane.in_spatial();
          T* grad_in = &dx(c, j, 0);
          const T* grad_out = &dy(c, j, 0);
          for (std::size_t i = 0; i < g.in_spatial(); ++i) grad_in[i] = T(0);
          std::size_t o = 0;
          for (std::size_t od = 0; od < g.out_depth; ++od) {
            const auto [d0, d1] = window_depths(g, od);
            for (std::size_t oh = 0; oh < g.plane.out_height; ++oh) {
              const auto [h0, h1] = window_rows(g.plane, oh);
              for (std::size_t ow = 0; ow < g.plane.out_width; ++ow, ++o) {
                const auto [w0, w1] = window_cols(g.plane, ow);
                const T share = grad_out[o] / area;
                for (std::size_t id = d0; id < d1; ++id)
                  for (std::size_t ih = h0; ih < h1; ++ih)
                    for (std::size_t iw = w0; iw < w1; ++iw) grad_in[id * HW + ih * W + iw] += share;
              }
            }
          }
        });
  }

 private:
  VolumeGeometry g_;
};

struct avg_pool3d_kernels {
  static constexpr bool saves_indices = false;
  static constexpr bool applies_previous_relu = false;
  template <class T, class Space>
  using type = AvgPool3DImpl<T, Space>;
};
}  // namespace detail

/// \brief Average pooling over cubic Kernel x Kernel x Kernel windows of a volume
/// `Shape<C, D, H, W>` (PyTorch nn.AvgPool3d with count_include_pad=True; stride defaults to the
/// window size). \tparam Options Stride<S>, Pad<P> (at most Kernel / 2)
template <std::size_t Kernel, class... Options>
struct AvgPool3D {
  static_assert(Kernel > 0, "hpf::AvgPool3D: the window size must be positive");
  static_assert(check_spatial_options<Options...>::value);
  static_assert(bias_option_v<Options...>, "hpf::AvgPool3D: NoBias does not apply to pooling");
  template <class In>
  struct bind : detail::bound_pool3d<detail::avg_pool3d_kernels, Kernel, stride_option_v<Kernel, Options...>,
                                     pad_option_v<0, Options...>, In> {
    static std::string describe() {
      return detail::describe_pool("AvgPool3D", Kernel, stride_option_v<Kernel, Options...>, pad_option_v<0, Options...>, 3);
    }
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_AVG_POOL3D_HPP
