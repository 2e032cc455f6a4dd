// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_MAX_POOL3D_HPP
#define HPF_LAYERS_MAX_POOL3D_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/max_pool_passes.hpp>
#include <hpf/layers/detail/max_pool_rows.hpp>
#include <hpf/layers/detail/pooling.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpf {

namespace detail {

/// Max pooling of one `D x H x W` volume, scanning each window in (d, h, w) order with keep_max.
/// Kernel > 0: the windows are unpadded and Kernel wide (CosmoFlow's 2x2x2), so they unroll;
/// 0: clipped to the volume. With Relu each voxel is read through a ReLU (as pool_plane).
template <int Kernel, bool Relu, class T>
KOKKOS_INLINE_FUNCTION void pool_volume(const VolumeGeometry& g, const T* KOKKOS_RESTRICT volume,
                                        T* KOKKOS_RESTRICT out, std::int32_t* KOKKOS_RESTRICT where) {
  const auto W = static_cast<std::int32_t>(g.plane.width), HW = static_cast<std::int32_t>(g.plane.in_spatial());
  std::size_t o = 0;
  for (std::size_t od = 0; od < g.out_depth; ++od) {
    const auto depths = window_depths(g, od);
    for (std::size_t oh = 0; oh < g.plane.out_height; ++oh) {
      const auto rows = window_rows(g.plane, oh);
      for (std::size_t ow = 0; ow < g.plane.out_width; ++ow, ++o) {
        const auto cols = window_cols(g.plane, ow);
        const auto d0 = static_cast<std::int32_t>(depths.first), d1 = static_cast<std::int32_t>(depths.second);
        const auto h0 = static_cast<std::int32_t>(rows.first), h1 = static_cast<std::int32_t>(rows.second);
        const auto w0 = static_cast<std::int32_t>(cols.first), w1 = static_cast<std::int32_t>(cols.second);
        std::int32_t at = d0 * HW + h0 * W + w0;
        T best = relu_if<Relu>(volume[at]);
        if constexpr (Kernel > 0) {  // unpadded: the whole window lies inside, from `at`
          const std::int32_t corner = at;
          for (std::int32_t kd = 0; kd < Kernel; ++kd)
            for (std::int32_t kh = 0; kh < Kernel; ++kh)
              for (std::int32_t kw = 0; kw < Kernel; ++kw) {
                const std::int32_t i = corner + kd * HW + kh * W + kw;
                keep_max(relu_if<Relu>(volume[i]), i, best, at);
              }
        } else {
          for (std::int32_t id = d0; id < d1; ++id)
            for (std::int32_t ih = h0; ih < h1; ++ih)
              for (std::int32_t iw = w0; iw < w1; ++iw) {
                const std::int32_t i = id * HW + ih * W + iw;
                keep_max(relu_if<Relu>(volume[i]), i, best, at);
              }
        }
        out[o] = best;
        where[o] = at;
      }
    }
  }
}

/// 3-D max pooling; the tape keeps each window's argmax within its volume (PyTorch's indices).
/// Padding never wins: a window always holds at least one voxel (pad <= kernel / 2).
template <class T, class Space>
class MaxPool3DImpl : public MaxPoolPasses<MaxPool3DImpl<T, Space>, T, Space> {
 public:
  struct tape_type {
    Kokkos::View<std::int32_t*, memory_space_t<Space>> argmax;
  };
  explicit MaxPool3DImpl(const VolumeGeometry& g) : g_(g) {}
  void bind(ParameterBinder<T, Space>&) {}
  void reserve(tape_type& tape, std::size_t capacity) {
    const std::size_t need = g_.channels() * g_.out_spatial() * capacity;
    if (tape.argmax.extent(0) < need) tape.argmax = decltype(tape.argmax)("hpf::MaxPool3D::argmax", need);
  }
  std::size_t workspace(std::size_t) const { return 0; }

  // The forward kernel (public: CUDA forbids device lambdas in private member functions).
  template <bool Relu>
  void pool(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    trace::Region region("hpf::MaxPool3D::forward");
    const VolumeGeometry g = g_;
    const std::size_t n = x.extent(1);
    const auto argmax = tape.argmax;
#if HPF_MAX_POOL_ROWS
    if constexpr (max_pool_rows_for<T, Space>) {
      if (max_pool_rows_fit(g.plane)) {
        const auto height = static_cast<std::int32_t>(g.plane.height), width = static_cast<std::int32_t>(g.plane.width);
        Kokkos::parallel_for("hpf::MaxPool3D::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels() * n),
                             [=](const std::size_t v) {
                               max_pool_2x2x2_volume<Relu>(&x(v / n, v % n, 0), height, width,
                                                           static_cast<std::int32_t>(g.out_depth),
                                                           static_cast<std::int32_t>(g.plane.out_height),
                                                           static_cast<std::int32_t>(g.plane.out_width), &y(v / n, v % n, 0),
                                                           &argmax(v * g.out_spatial()));
                             });
        return;
      }
    }
#endif
    // One work item per (channel, sample) volume.
    Kokkos::parallel_for(
        "hpf::MaxPool3D::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels() * n),
        KOKKOS_LAMBDA(const std::size_t v) {
          const std::size_t c = v / n, j = v % n;
          std::int32_t* where = &argmax(v * g.out_spatial());
          if (g.pad() == 0 && g.kernel() == 2) {
            pool_volume<2, Relu>(g, &x(c, j, 0), &y(c, j, 0), where);
          } else {
            pool_volume<0, Relu>(g, &x(c, j, 0), &y(c, j, 0), where);
          }
        });
  }

  // What MaxPoolPasses reads besides pool<Relu>.
  static constexpr const char* backward_region = "hpf::MaxPool3D::backward";
  MaxPoolPlanes planes() const {
    return {g_.channels(), g_.in_spatial(), g_.out_spatial()};
  }

 private:
  VolumeGeometry g_;
};

struct max_pool3d_kernels {
  static constexpr bool saves_indices = true;  // the argmax of every output, for backward
  static constexpr bool applies_previous_relu = true;  // forward_after_relu, backward_after_relu
  template <class T, class Space>
  using type = MaxPool3DImpl<T, Space>;
};
}  // namespace detail

/// \brief Max pooling over cubic Kernel x Kernel x Kernel windows of a volume `Shape<C, D, H, W>`
/// (PyTorch nn.MaxPool3d; stride defaults to the window size; the first maximum in (d, h, w)
/// order wins, as do NaNs). \tparam Options Stride<S>, Pad<P> (at most Kernel / 2)
template <std::size_t Kernel, class... Options>
struct MaxPool3D {
  static_assert(Kernel > 0, "hpf::MaxPool3D: the window size must be positive");
  static_assert(check_spatial_options<Options...>::value);
  static_assert(bias_option_v<Options...>, "hpf::MaxPool3D: NoBias does not apply to pooling");
  template <class In>
  struct bind : detail::bound_pool3d<detail::max_pool3d_kernels, Kernel, stride_option_v<Kernel, Options...>,
                                     pad_option_v<0, Options...>, In> {
    static std::string describe() {
      return detail::describe_pool("MaxPool3D", Kernel, stride_option_v<Kernel, Options...>, pad_option_v<0, Options...>, 3);
    }
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_MAX_POOL3D_HPP
