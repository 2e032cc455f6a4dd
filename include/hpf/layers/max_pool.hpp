// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_MAX_POOL_HPP
#define HPF_LAYERS_MAX_POOL_HPP

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

/// Max pooling; the tape keeps each window's argmax (first maximum in scan order, NaN wins, as
/// PyTorch), padding never wins.
template <class T, class Space>
class MaxPoolImpl {
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

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::MaxPool::forward");
    const WindowGeometry g = g_;
    const std::size_t n = x.extent(1);
    const auto argmax = tape.argmax;
    Kokkos::parallel_for(
        "hpf::MaxPool::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n * g.out_height),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / (n * g.out_height), j = (item / g.out_height) % n, oh = item % g.out_height;
          const T* image = &x(c, j, 0);
          for (std::size_t ow = 0; ow < g.out_width; ++ow) {
            T best = 0;
            std::int32_t where = -1;
            for (std::size_t kh = 0; kh < g.kernel; ++kh) {
              const std::size_t ih = oh * g.stride + kh;
              if (ih < g.pad || ih - g.pad >= g.height) continue;
              for (std::size_t kw = 0; kw < g.kernel; ++kw) {
                const std::size_t iw = ow * g.stride + kw;
                if (iw < g.pad || iw - g.pad >= g.width) continue;
                const std::size_t at = (ih - g.pad) * g.width + (iw - g.pad);
                const T v = image[at];
                if (where < 0 || v > best || v != v) {
                  best = v;
                  where = static_cast<std::int32_t>(at);
                }
                if (v != v) break;
              }
            }
            const std::size_t out = oh * g.out_width + ow;
            y(c, j, out) = best;
            argmax((c * n + j) * g.out_spatial() + out) = where;
          }
        });
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::MaxPool::backward");
    const WindowGeometry g = g_;
    const std::size_t n = dx.extent(1);
    const auto argmax = tape.argmax;
    Kokkos::parallel_for(
        "hpf::MaxPool::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, g.channels * n * g.height),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / (n * g.height), j = (item / g.height) % n, ih = item % g.height;
          const std::size_t base = (c * n + j) * g.out_spatial();
          for (std::size_t iw = 0; iw < g.width; ++iw) {
            const std::int32_t here = static_cast<std::int32_t>(ih * g.width + iw);
            T sum = 0;
            for_each_covering_window(g, ih, iw, [&](std::size_t oh, std::size_t ow) {
              const std::size_t out = oh * g.out_width + ow;
              if (argmax(base + out) == here) sum += dy(c, j, out);
            });
            dx(c, j, ih * g.width + iw) = sum;
          }
        });
  }

 private:
  WindowGeometry g_;
};

struct max_pool_kernels {
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
