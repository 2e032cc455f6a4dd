// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_CONV3D_HPP
#define HPF_LAYERS_CONV3D_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/chunking.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/layers/detail/onednn_convolution.hpp>
#include <hpf/layers/detail/rows.hpp>
#include <hpf/layers/detail/spatial_convolution.hpp>
#include <hpf/layers/detail/split_convolution.hpp>
#include <hpf/layers/detail/vol2col.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// 3-D convolution as GEMMs over `[C][N][D*H*W]` activations, as Conv2DImpl does for images: with
/// the batch folded into the column extent, one GEMM covers a chunk of volumes,
/// Y[O][n*ODHW] = W[O][CKKK] col[CKKK][n*ODHW]; 1x1x1 stride-1 unpadded convolutions use the
/// input itself as col. The gradients come in Conv2DImpl's order: per chunk, dW += dY col^T, then
/// dcol = W^T dY gathered back by col2vol (no atomics); the chunks depend only on the batch size.
/// In float on a host execution space, when hpf is built with oneDNN, the vendor convolution runs
/// instead, as for Conv2D (OneDnnConvolution over volumes, without Winograd's algorithm): vol2col
/// and col2vol, memory-bound copies, took a third of CosmoFlow's step (1 thread: 163 -> 101 ms).
template <class T, class Space>
class Conv3DImpl {
#if HPF_ENABLE_ONEDNN
  static constexpr bool onednn_possible =
      std::is_same_v<T, float> && Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible;
#else
  static constexpr bool onednn_possible = false;
#endif

 public:
  using tape_type = NoTape;

  Conv3DImpl(const VolumeGeometry& g, std::size_t out_channels, bool bias)
      : g_(g), out_(out_channels), bias_(bias), pointwise_(g.kernel() == 1 && g.stride() == 1 && g.pad() == 0) {}

  void bind(ParameterBinder<T, Space>& binder) {
    choose_kernels(binder.kernels());
    const std::size_t k = g_.kernel();
    auto w = binder.parameter("weight", {out_, g_.channels(), k, k, k},
                              InitRule::weight(g_.patch(), out_ * k * k * k, /*convolution=*/true));
    weight_ = Matrix<T, Space>(w.value.data(), out_, g_.patch());
    weight_grad_ = Matrix<T, Space>(w.grad.data(), out_, g_.patch());
    if (bias_) {
      auto b = binder.parameter("bias", {out_}, InitRule::uniform_fan_in(g_.patch()));
      bias_value_ = b.value;
      bias_grad_ = b.grad;
    }
  }
  void reserve(tape_type&, std::size_t) {}
  /// Binds no parameters: forward computes with `owner`'s, on this kernel's own geometry (the
  /// bands of rows of a spatial slab, hpf::detail::SpatialConvolution). Same channels and kernel.
  void share_parameters(const Conv3DImpl& owner, const KernelResources& kernels) {
    choose_kernels(kernels);
    weight_ = owner.weight_;
    bias_value_ = owner.bias_value_;
  }
  /// The gradients of the weight and bias the layer binds (a spatial split adds its group's sum into them).
  Matrix<T, Space> weight_gradient() const { return weight_grad_; }
  Vector<T, Space> bias_gradient() const { return bias_grad_; }
  std::size_t workspace(std::size_t capacity) const {
    if (split_) return 0;  // the split keeps its own scratch
#if HPF_ENABLE_ONEDNN
    if (vendor_) return vendor_->workspace(capacity);
#endif
    if (pointwise_) return 0;
    return per_volume() * samples_per_chunk<Space>(per_volume(), capacity);
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Conv3D::forward");
    if (split_) {
      split_->forward(ctx.space, weight_, bias_value_, x, y);
      return;
    }
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      if (vendor_) {
        vendor_->forward(x.data(), weight_.data(), bias_ ? bias_value_.data() : nullptr, y.data(), x.extent(1),
                         ctx.workspace.data());
        return;
      }
    }
#endif
    const auto out = as_matrix(y);  // [O][n*ODHW]
    if (bias_) broadcast_rows(ctx.space, bias_value_, out, "hpf::Conv3D::bias");
    const T beta = bias_ ? T(1) : T(0);
    if (pointwise_) {
      gemm_("N", "N", T(1), weight_, as_matrix(x), beta, out);
      return;
    }
    for_each_chunk(x.extent(1), [&](std::size_t first, std::size_t count) {
      auto col = columns(ctx, count);
      vol2col(ctx.space, g_, x, first, count, col);
      gemm_("N", "N", T(1), weight_, col, beta, columns_of(out, first, count));
    });
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    trace::Region region("hpf::Conv3D::backward");
    if (split_) {
      split_->backward(ctx.space, weight_, weight_grad_, bias_grad_, x, dy, dx);
      return;
    }
    backward_into(ctx, x, dy, dx, weight_grad_, bias_grad_);
  }

  /// backward, adding the weight and bias gradients into `weight_grad` and `bias_grad` instead of
  /// the layer's own (a spatial slab's partial gradients, which its group adds up). An empty dx or
  /// weight_grad skips that gradient: each alone computes what both together do, bit for bit.
  void backward_into(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                     Activation<T, Space> dx, Matrix<T, Space> weight_grad, Vector<T, Space> bias_grad) const {
    const bool want_dx = !is_empty(dx), want_weights = !is_empty(weight_grad);
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      if (vendor_) {
        vendor_->backward(ctx.space, x.data(), weight_.data(), dy.data(), want_dx ? dx.data() : nullptr,
                          want_weights ? weight_grad.data() : nullptr, bias_ && want_weights ? bias_grad.data() : nullptr,
                          x.extent(1), ctx.workspace.data());
        return;
      }
    }
#endif
    const auto grad_out = as_matrix(dy);  // [O][n*ODHW]
    if (bias_ && want_weights) add_row_sums(ctx.space, grad_out, bias_grad, "hpf::Conv3D::bias_grad");
    if (pointwise_) {
      if (want_weights) gemm_("N", "T", T(1), grad_out, as_matrix(x), T(1), weight_grad);  // dW += dY X^T
      if (want_dx) gemm_("T", "N", T(1), weight_, grad_out, T(0), as_matrix(dx));
      return;
    }
    for_each_chunk(x.extent(1), [&](std::size_t first, std::size_t count) {
      auto col = columns(ctx, count);
      const auto dy_chunk = columns_of(grad_out, first, count);
      if (want_weights) {
        vol2col(ctx.space, g_, x, first, count, col);              // recomputed: cheaper than keeping
        gemm_("N", "T", T(1), dy_chunk, col, T(1), weight_grad);  // dW += dY col^T
      }
      if (want_dx) {
        gemm_("T", "N", T(1), weight_, dy_chunk, T(0), col);      // dcol = W^T dY
        col2vol(ctx.space, g_, Matrix<const T, Space>(col), first, count, dx);
      }
    });
  }

 private:
  /// GEMMs through the run's BLAS, a filter or channel split's, or oneDNN's convolution where it applies.
  void choose_kernels(const KernelResources& kernels) {
    gemm_ = Gemm<T, Space>(kernels, convolution_precision(kernels.matmul_precision, g_.channels()));
    if (kernels.split.divides_layers()) {
      split_.emplace(kernels.layer_group<T, Space>(), kernels.split.kind, g_, out_, bias_, gemm_, kernels);
    }
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      if (!split_) vendor_ = vendor_convolution(g_, out_, bias_, kernels, static_cast<std::size_t>(Space().concurrency()));
    }
#endif
  }
  std::size_t per_volume() const { return g_.patch() * g_.out_spatial(); }
  template <class F>
  void for_each_chunk(std::size_t n, F&& f) const {
    const std::size_t chunk = samples_per_chunk<Space>(per_volume(), n);
    for (std::size_t first = 0; first < n; first += chunk) f(first, first + chunk <= n ? chunk : n - first);
  }
  Matrix<T, Space> columns(const Context<T, Space>& ctx, std::size_t count) const {
    KOKKOS_ASSERT(ctx.workspace.extent(0) >= per_volume() * count);
    return Matrix<T, Space>(ctx.workspace.data(), g_.patch(), count * g_.out_spatial());
  }
  template <class M>
  auto columns_of(const M& m, std::size_t first, std::size_t count) const {
    const std::size_t s = g_.out_spatial();
    return Kokkos::subview(m, Kokkos::ALL, Kokkos::make_pair(first * s, (first + count) * s));
  }
  VolumeGeometry g_;
  Gemm<T, Space> gemm_;
  std::size_t out_;
  bool bias_, pointwise_;
  std::optional<SplitConvolution<T, Space, VolumeGeometry>> split_;  // under NetworkOptions::split
#if HPF_ENABLE_ONEDNN
  std::optional<OneDnnConvolution> vendor_;  // float on the host, unless ConvolutionAlgorithm::gemm
#endif
  Matrix<T, Space> weight_, weight_grad_;
  Vector<T, Space> bias_value_, bias_grad_;
};

}  // namespace detail

// The named templates below put the rejected shape on the diagnostic's first line.
template <class In>
struct conv3d_input_not_a_volume {
  static_assert(In::rank == 4,
                "hpf::Conv3D: the input must be a volume Shape<C, D, H, W>; a 3-D convolution cannot follow an "
                "image, Flatten, Dense or GlobalAvgPool (hpf::Conv2D convolves images)");
};
template <class In, std::size_t Kernel, std::size_t Pad>
struct conv3d_kernel_larger_than_padded_volume {
  static_assert(In::depth + 2 * Pad >= Kernel && In::height + 2 * Pad >= Kernel && In::width + 2 * Pad >= Kernel,
                "hpf::Conv3D: the kernel is larger than the padded input volume");
};

/// \brief 3-D convolution with a cubic kernel (PyTorch nn.Conv3d: weight `[Out, C, K, K, K]`,
/// bias `[Out]`, the same default initialisation) on volumes: `Shape<C, D, H, W>` to
/// `Shape<Out, D', H', W'>`, D' = (D + 2P - K) / S + 1 and likewise H', W'.
/// \tparam Out output channels
/// \tparam Kernel kernel depth, height and width
/// \tparam Options Stride<S> (default 1), Pad<P> (default 0), NoBias; the same along every axis
template <std::size_t Out, std::size_t Kernel, class... Options>
struct Conv3D {
  static constexpr std::size_t stride = stride_option_v<1, Options...>;
  static constexpr std::size_t pad = pad_option_v<0, Options...>;
  static constexpr bool has_bias = bias_option_v<Options...>;

  template <class In>
  struct bind {
    // Checks in bind, where layer_in_model<I, ...> names the layer's position (see Conv2D).
    using whole_in = whole_shape_t<In>;  // In, or the whole sample of a spatial slab
    static_assert(Out > 0, "hpf::Conv3D: the number of output channels must be positive");
    static_assert(Kernel > 0, "hpf::Conv3D: the kernel size must be positive");
    static_assert(check_spatial_options<Options...>::value);
    static_assert(stride > 0, "hpf::Conv3D: Stride<S> must be positive");
    static constexpr bool volume = In::rank == 4;
    static constexpr bool fits = whole_in::depth + 2 * pad >= Kernel && whole_in::height + 2 * pad >= Kernel &&
                                 whole_in::width + 2 * pad >= Kernel;
    // One error, naming the shape: not a volume, else a kernel too large.
    using too_large = conv3d_kernel_larger_than_padded_volume<whole_in, Kernel, pad>;
    static_assert(sizeof(std::conditional_t<!volume, conv3d_input_not_a_volume<In>, std::conditional_t<fits, char, too_large>>));
    static constexpr bool accepted = Out > 0 && Kernel > 0 && stride > 0 && volume && fits;
    static constexpr detail::VolumeGeometry geometry{whole_in::channels, whole_in::depth, whole_in::height, whole_in::width,
                                                     Kernel, stride, pad};
    static constexpr std::size_t members = spatial_group_v<In>;
    static constexpr bool slabs_align = !accepted || detail::slabs_align(geometry, members);
    static_assert(sizeof(std::conditional_t<slabs_align, char, detail::convolution_slabs_misaligned<In, Kernel, stride, pad>>));
    static constexpr std::size_t patch = geometry.patch();
    static constexpr std::size_t out_spatial = geometry.out_spatial();
    static constexpr std::size_t held_out_spatial = out_spatial / members * spatial_held_v<In>;

    using input_shape = In;
    using output_shape = std::conditional_t<
        accepted && slabs_align,
        part_like_t<In, Shape<Out, geometry.out_depth, geometry.plane.out_height, geometry.plane.out_width>>, InvalidShape>;
    // On slabs: the halos the tape keeps, and what the group exchanges.
    static constexpr LayerCost own_cost = product_cost(Out, patch, held_out_spatial, In::size, has_bias);
    static constexpr LayerCost cost =
        own_cost + detail::slab_convolution_cost(geometry, members, spatial_held_v<In>, own_cost.parameters);
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;
    static constexpr std::size_t leaves = 1;
    static std::string describe() {
      const std::string k = std::to_string(Kernel);
      return "Conv3D(" + std::to_string(In::channels) + " -> " + std::to_string(Out) + ", " + k + "x" + k + "x" + k +
             (stride != 1 ? ", stride " + std::to_string(stride) : std::string()) +
             (pad != 0 ? ", pad " + std::to_string(pad) : std::string()) + (has_bias ? ")" : ", no bias)");
    }
    template <class T, class Space>
    struct whole_impl : detail::Conv3DImpl<T, Space> {
      whole_impl() : detail::Conv3DImpl<T, Space>(geometry, Out, has_bias) {}
    };
    template <class T, class Space>
    struct slab_impl : detail::SpatialConvolution<T, Space, detail::Conv3DImpl<T, Space>> {
      slab_impl()
          : detail::SpatialConvolution<T, Space, detail::Conv3DImpl<T, Space>>(geometry, Out, has_bias, members,
                                                                              spatial_held_v<In>) {}
    };
    template <class T, class Space>
    using impl = std::conditional_t<is_spatial_part_v<In>, slab_impl<T, Space>, whole_impl<T, Space>>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_CONV3D_HPP
