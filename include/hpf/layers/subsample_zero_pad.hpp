// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_SUBSAMPLE_ZERO_PAD_HPP
#define HPF_LAYERS_SUBSAMPLE_ZERO_PAD_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
template <class T, class Space>
class SubsampleZeroPadImpl : public ParameterFreeLayer {
 public:
  SubsampleZeroPadImpl(std::size_t in_channels, std::size_t out_channels, std::size_t height, std::size_t width,
                       std::size_t stride)
      : in_channels_(in_channels), out_channels_(out_channels), height_(height), width_(width), stride_(stride) {}

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, tape_type&) const {
    trace::Region region("hpf::SubsampleZeroPad::forward");
    const std::size_t n = x.extent(1), before = pad_before(), in_c = in_channels_, s = stride_, w = width_;
    const std::size_t out_w = (width_ + s - 1) / s, out_h = (height_ + s - 1) / s;
    Kokkos::parallel_for(
        "hpf::SubsampleZeroPad::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, out_channels_ * n * out_h),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / (n * out_h), j = (item / out_h) % n, oh = item % out_h;
          T* row = &y(c, j, oh * out_w);
          if (c < before || c >= before + in_c) {  // a padding channel
            for (std::size_t ow = 0; ow < out_w; ++ow) row[ow] = T(0);
            return;
          }
          const T* source = &x(c - before, j, oh * s * w);
          for (std::size_t ow = 0; ow < out_w; ++ow) row[ow] = source[ow * s];
        });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::SubsampleZeroPad::backward");
    const std::size_t n = dx.extent(1), before = pad_before(), s = stride_, w = width_, h = height_;
    const std::size_t out_w = (width_ + s - 1) / s;
    Kokkos::parallel_for(
        "hpf::SubsampleZeroPad::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, in_channels_ * n * h),
        KOKKOS_LAMBDA(const std::size_t item) {
          // Zero the row, then place the sampled columns: no division per element.
          const std::size_t c = item / (n * h), j = (item / h) % n, ih = item % h;
          T* row = &dx(c, j, ih * w);
          for (std::size_t iw = 0; iw < w; ++iw) row[iw] = T(0);
          if (ih % s != 0) return;
          const T* source = &dy(c + before, j, (ih / s) * out_w);
          for (std::size_t ow = 0; ow < out_w; ++ow) row[ow * s] = source[ow];
        });
  }

 private:
  std::size_t pad_before() const { return (out_channels_ - in_channels_) / 2; }
  std::size_t in_channels_, out_channels_, height_, width_, stride_;
};
}  // namespace detail

/// \brief The parameter-free shortcut of CIFAR ResNets ("option A", He et al. 2016): keeps every
/// Stride-th row and column and pads the channels with zeros to OutChannels, half before and half
/// after (PyTorch: `F.pad(x[:, :, ::S, ::S], (0, 0, 0, 0, p, q))`, p = (Out - In) / 2).
template <std::size_t OutChannels, std::size_t Stride>
struct SubsampleZeroPad {
  static_assert(Stride > 0, "hpf::SubsampleZeroPad: the stride must be positive");
  template <class In>
  struct bind {
    static_assert(In::rank == 3, "hpf::SubsampleZeroPad: the input must be an image");
    static_assert(In::channels <= OutChannels, "hpf::SubsampleZeroPad: it can only add channels");
    // On a sample split into slabs (hpf::Spatial<G>) each member subsamples its own rows: the
    // stride must divide them.
    using whole_in = whole_shape_t<In>;
    static constexpr bool slabs_align = whole_in::height / spatial_group_v<In> % Stride == 0 || spatial_group_v<In> == 1;
    static_assert(slabs_align, "hpf::Spatial<G>: SubsampleZeroPad's stride must divide each member's rows (height / G)");
    static constexpr bool accepted = In::rank == 3 && In::channels <= OutChannels && slabs_align;
    static constexpr std::size_t out_height = (whole_in::height + Stride - 1) / Stride;
    static constexpr std::size_t out_width = (In::width + Stride - 1) / Stride;
    using input_shape = In;
    using output_shape = std::conditional_t<accepted, part_like_t<In, Shape<OutChannels, out_height, out_width>>, InvalidShape>;
    static constexpr bool takes_spatial_parts = true;
    static constexpr LayerCost cost{.activations = output_shape::size};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      return "SubsampleZeroPad(" + std::to_string(In::channels) + " -> " + std::to_string(OutChannels) + ", stride " +
             std::to_string(Stride) + ")";
    }
    template <class T, class Space>
    struct impl : detail::SubsampleZeroPadImpl<T, Space> {
      impl() : detail::SubsampleZeroPadImpl<T, Space>(In::channels, OutChannels, In::height, In::width, Stride) {}
    };
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_SUBSAMPLE_ZERO_PAD_HPP
