// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_MAX_POOL_HPP
#define HPF_LAYERS_MAX_POOL_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/trace/region.hpp>
#include <hpf/layers/detail/max_pool_passes.hpp>
#include <hpf/layers/detail/max_pool_rows.hpp>
#include <hpf/layers/detail/pooling.hpp>
#include <hpf/layers/detail/window.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpf {

namespace detail {

/// Max of one window and where it is, in scan order by keep_max (PyTorch's rule); with Relu, of
/// the window read through a ReLU.
template <bool Relu, class T, class Rows, class Cols>
KOKKOS_INLINE_FUNCTION void window_max(const T* KOKKOS_RESTRICT image, std::int32_t width, Rows rows, Cols cols, T& best,
                                       std::int32_t& at) {
  at = rows.first * width + cols.first;
  best = relu_if<Relu>(image[at]);
  for (std::int32_t ih = rows.first; ih < rows.second; ++ih) {
    for (std::int32_t iw = cols.first; iw < cols.second; ++iw) {
      const std::int32_t i = ih * width + iw;
      keep_max(relu_if<Relu>(image[i]), i, best, at);
    }
  }
}

/// One `H x W` plane; Kernel and Stride fixed at compile time (0: taken from g), so that the
/// common windows unroll and vectorise (7x faster than the same loops over run-time sizes).
/// With Relu each pixel is read through a ReLU: the bits and argmaxes of pooling the ReLU's output.
template <int Kernel, int Stride, bool Relu, class T>
KOKKOS_INLINE_FUNCTION void pool_plane(const WindowGeometry& g, const T* KOKKOS_RESTRICT image, T* KOKKOS_RESTRICT out,
                                       std::int32_t* KOKKOS_RESTRICT where) {
  const auto W = static_cast<std::int32_t>(g.width);
  const auto OW = static_cast<std::int32_t>(g.out_width), OH = static_cast<std::int32_t>(g.out_height);
  if constexpr (Kernel > 0) {  // unpadded: every window lies inside the image
    for (std::int32_t oh = 0; oh < OH; ++oh) {
      for (std::int32_t ow = 0; ow < OW; ++ow) {
        const std::int32_t top = oh * Stride * W + ow * Stride;
        T best = relu_if<Relu>(image[top]);
        std::int32_t at = top;
        for (std::int32_t kh = 0; kh < Kernel; ++kh) {
          for (std::int32_t kw = 0; kw < Kernel; ++kw) {
            const std::int32_t i = top + kh * W + kw;
            keep_max(relu_if<Relu>(image[i]), i, best, at);
          }
        }
        out[oh * OW + ow] = best;
        where[oh * OW + ow] = at;
      }
    }
  } else {
    for (std::int32_t oh = 0; oh < OH; ++oh) {
      const auto rows = window_rows(g, static_cast<std::size_t>(oh));
      for (std::int32_t ow = 0; ow < OW; ++ow) {
        const auto cols = window_cols(g, static_cast<std::size_t>(ow));
        T best;
        std::int32_t at;
        window_max<Relu>(image, W, Kokkos::pair<std::int32_t, std::int32_t>(rows.first, rows.second),
                         Kokkos::pair<std::int32_t, std::int32_t>(cols.first, cols.second), best, at);
        out[oh * OW + ow] = best;
        where[oh * OW + ow] = at;
      }
    }
  }
}

/// Max pooling; the tape keeps each window's argmax (see pool_plane). Padding never wins: a
/// window always holds at least one pixel (pad <= kernel / 2).
template <class T, class Space>
class MaxPoolImpl : public MaxPoolPasses<MaxPoolImpl<T, Space>, T, Space> {
 public:
  struct tape_type {
    Kokkos::View<std::int32_t*, memory_space_t<Space>> argmax;
  };
  explicit MaxPoolImpl(const WindowGeometry& g) : g_(g) {}
  void bind(ParameterBinder<T, Space>&) {}
  void reserve(tape_type& tape, std::size_t capacity) {
    const std::size_t need = g_.channels * g_.out_spatial() * capacity;
    if (tape.argmax.extent(0) < need) tape.argmax = decltype(tape.argmax)("hpf::MaxPool::argmax", need);
  }
  std::size_t workspace(std::size_t) const { return 0; }

  // The forward kernel (public: CUDA forbids device lambdas in private member functions).
  template <bool Relu>
  void pool(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) const {
    trace::Region region("hpf::MaxPool::forward");
    const WindowGeometry g = g_;
    const std::size_t n = x.extent(1);
    const auto argmax = tape.argmax;
#if HPF_MAX_POOL_ROWS
    if constexpr (max_pool_rows_for<T, Space>) {
      if (max_pool_rows_fit(g)) {
        Kokkos::parallel_for("hpf::MaxPool::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n),
                             [=](const std::size_t plane) {
                               max_pool_2x2_plane<Relu>(&x(plane / n, plane % n, 0), static_cast<std::int32_t>(g.width),
                                                        static_cast<std::int32_t>(g.out_height),
                                                        static_cast<std::int32_t>(g.out_width), &y(plane / n, plane % n, 0),
                                                        &argmax(plane * g.out_height * g.out_width));
                             });
        return;
      }
    }
#endif
    // One work item per (channel, image) plane.
    Kokkos::parallel_for(
        "hpf::MaxPool::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n),
        KOKKOS_LAMBDA(const std::size_t plane) {
          const std::size_t c = plane / n, j = plane % n;
          const T* in = &x(c, j, 0);
          T* out = &y(c, j, 0);
          std::int32_t* where = &argmax(plane * g.out_height * g.out_width);
          if (g.pad == 0 && g.kernel == 2 && g.stride == 2) {
            pool_plane<2, 2, Relu>(g, in, out, where);
          } else if (g.pad == 0 && g.kernel == 3 && g.stride == 2) {
            pool_plane<3, 2, Relu>(g, in, out, where);
          } else if (g.pad == 0 && g.kernel == 3 && g.stride == 1) {
            pool_plane<3, 1, Relu>(g, in, out, where);
          } else {
            pool_plane<0, 0, Relu>(g, in, out, where);
          }
        });
  }

  // What MaxPoolPasses reads besides pool<Relu>.
  static constexpr const char* backward_region = "hpf::MaxPool::backward";
  MaxPoolPlanes planes() const {
    return {g_.channels, g_.height * g_.width, g_.out_height * g_.out_width};
  }

 private:
  WindowGeometry g_;
};

struct max_pool_kernels {
  static constexpr bool saves_indices = true;  // the argmax of every output, for backward
  static constexpr bool applies_previous_relu = true;  // forward_after_relu, backward_after_relu
  template <class T, class Space>
  using type = MaxPoolImpl<T, Space>;
};
}  // namespace detail

/// \brief Max pooling over Kernel x Kernel windows (PyTorch nn.MaxPool2d; stride defaults to the
/// window size). \tparam Options Stride<S>, Pad<P>
template <std::size_t Kernel, class... Options>
struct MaxPool {
  static_assert(Kernel > 0, "hpf::MaxPool: the window size must be positive");
  static_assert(check_spatial_options<Options...>::value);
  static_assert(bias_option_v<Options...>, "hpf::MaxPool: NoBias does not apply to pooling");
  template <class In>
  struct bind : detail::bound_pool<detail::max_pool_kernels, Kernel, stride_option_v<Kernel, Options...>,
                                   pad_option_v<0, Options...>, In> {
    static std::string describe() {
      return detail::describe_pool("MaxPool", Kernel, stride_option_v<Kernel, Options...>, pad_option_v<0, Options...>);
    }
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_MAX_POOL_HPP
