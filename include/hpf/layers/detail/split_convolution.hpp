// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPLIT_CONVOLUTION_HPP
#define HPF_LAYERS_DETAIL_SPLIT_CONVOLUTION_HPP

#include <hpf/layers/detail/chunking.hpp>
#include <hpf/layers/detail/column_blocks.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/layers/detail/im2col.hpp>
#include <hpf/layers/detail/onednn_convolution.hpp>
#include <hpf/layers/detail/rows.hpp>
#include <hpf/layers/detail/split_members.hpp>
#include <hpf/layers/detail/vol2col.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <vector>

namespace hpf::detail {

// The window arithmetic a split convolution needs from its geometry: images (Conv2D) and
// volumes (Conv3D) alike.
inline std::size_t channels_of(const WindowGeometry& g) { return g.channels; }
inline std::size_t channels_of(const VolumeGeometry& g) { return g.channels(); }
/// The same window over the first `channels` channels (a channel split's block of the input).
inline WindowGeometry with_channels(WindowGeometry g, std::size_t channels) {
  g.channels = channels;
  return g;
}
inline VolumeGeometry with_channels(VolumeGeometry g, std::size_t channels) {
  g.plane.channels = channels;
  return g;
}
template <class T, class Space>
void to_columns(const Space& space, const WindowGeometry& g, ConstActivation<T, Space> x, std::size_t first,
                std::size_t count, Matrix<T, Space> col) {
  im2col(space, g, x, first, count, col);
}
template <class T, class Space>
void to_columns(const Space& space, const VolumeGeometry& g, ConstActivation<T, Space> x, std::size_t first,
                std::size_t count, Matrix<T, Space> col) {
  vol2col(space, g, x, first, count, col);
}
template <class T, class Space>
void from_columns(const Space& space, const WindowGeometry& g, Matrix<const T, Space> col, std::size_t first,
                  std::size_t count, Activation<T, Space> dx) {
  col2im(space, g, col, first, count, dx);
}
template <class T, class Space>
void from_columns(const Space& space, const VolumeGeometry& g, Matrix<const T, Space> col, std::size_t first,
                  std::size_t count, Activation<T, Space> dx) {
  col2vol(space, g, col, first, count, dx);
}

/// \brief The products of a convolution (Conv2D: WindowGeometry, Conv3D: VolumeGeometry) whose
/// work a LayerGroup splits (KernelResources::split), as GEMMs over im2col/vol2col columns
/// Y[O][n*OS] = W[O][C*KS] col[C*KS][n*OS]. Every member holds the whole weight:
/// - filter: member m computes output channels [m O / G, ...): those rows of W and of Y, and of
///   dW and the bias gradient, which are gathered; its input gradient from them (col2im of
///   W_m^T dY_m) is added to the other members' in ordered_sum's tree.
/// - channel: member m reads input channels [m C / G, ...): its block of col's rows and of W's
///   columns. Forward adds W_m col_m of every member (member 0's from the bias) in the tree;
///   backward gathers dX by channels and dW by column blocks, and every member computes the
///   whole bias gradient.
/// Afterwards every member holds the whole output, input gradient and weight gradient, as for
/// SplitDense. In float on a host space with oneDNN, a filter split's member runs oneDNN's
/// convolution of its output channels (a contiguous block of W, Y and dY in hpf's layouts); the
/// other splits and spaces run the GEMMs.
template <class T, class Space, class Geometry>
class SplitConvolution {
#if HPF_ENABLE_ONEDNN
  static constexpr bool onednn_possible =
      std::is_same_v<T, float> && Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible;
#endif

 public:
  SplitConvolution(const LayerGroup<T, Space>& group, SplitKind kind, const Geometry& g, std::size_t out,
                   [[maybe_unused]] bool bias, Gemm<T, Space> gemm, [[maybe_unused]] const KernelResources& kernels)
      : members_(group, kind == SplitKind::filter ? out : channels_of(g)), filter_(kind == SplitKind::filter), g_(g),
        out_(out), gemm_(std::move(gemm)) {
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      const auto lanes = static_cast<std::size_t>(Space().concurrency());
      bool all = true;
      for (std::size_t m = members_.first(); filter_ && m < members_.end(); ++m) {
        const std::size_t rows = members_.begin(m + 1) - members_.begin(m);
        vendors_.push_back(rows == 0 ? std::nullopt : vendor_convolution(g, rows, bias, kernels, lanes));
        all = all && (rows == 0 || vendors_.back());
      }
      // Every member of this process that owns channels runs oneDNN, or none does (the GEMMs).
      const bool any = std::any_of(vendors_.begin(), vendors_.end(), [](const auto& v) { return v.has_value(); });
      if (!all || !any) vendors_.clear();
    }
#endif
  }

  void forward(const Space& space, Matrix<const T, Space> weight, Vector<T, Space> bias, ConstActivation<T, Space> x,
               Activation<T, Space> y) const {
    const std::size_t n = x.extent(1), cols = n * g_.out_spatial();
    const bool has_bias = bias.extent(0) > 0;
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      if (!vendors_.empty()) {
        T* const scratch = vendor_scratch(n);
        for (std::size_t m = members_.first(); m < members_.end(); ++m) {
          const auto& vendor = vendors_[m - members_.first()];
          if (!vendor) continue;  // owns no output channel
          const std::size_t r = members_.begin(m);
          vendor->forward(x.data(), weight.data() + r * g_.patch(), has_bias ? bias.data() + r : nullptr,
                          y.data() + r * cols, n, scratch);
        }
        members_.group().gather(y.data(), members_.bounds(cols));
        return;
      }
    }
#endif
    if (filter_) {
      for (std::size_t m = members_.first(); m < members_.end(); ++m) {
        if (has_bias) broadcast_rows(space, bias_rows(bias, m), output_rows(y.data(), m, cols), "hpf::Conv::bias");
      }
      for_each_chunk(g_, n, [&](std::size_t first, std::size_t count) {
        const auto col = columns(g_, count);
        to_columns(space, g_, x, first, count, col);
        for (std::size_t m = members_.first(); m < members_.end(); ++m) {
          gemm_("N", "N", T(1), weight_rows(weight, m), Matrix<const T, Space>(col), has_bias ? T(1) : T(0),
                columns_of(output_rows(y.data(), m, cols), first, count));
        }
      });
      members_.group().gather(y.data(), members_.bounds(cols));
      return;
    }
    ensure_capacity(partials_, (members_.end() - members_.first()) * out_ * cols, "hpf::Conv::split_partials");
    for (std::size_t m = members_.first(); m < members_.end(); ++m) {
      const Matrix<T, Space> part(partials_.data() + (m - members_.first()) * out_ * cols, out_, cols);
      const bool adds_bias = has_bias && m == 0;
      if (adds_bias) broadcast_rows(space, bias, part, "hpf::Conv::bias");
      const std::size_t c = members_.begin(m), width = members_.begin(m + 1) - c;
      if (width == 0) {
        if (!adds_bias) Kokkos::deep_copy(space, part, T(0));
        continue;
      }
      const Geometry gm = with_channels(g_, width);
      const auto wm = packed_weight(space, weight, c, width);
      for_each_chunk(gm, n, [&](std::size_t first, std::size_t count) {
        const auto col = columns(gm, count);
        to_columns(space, gm, input_channels(x, c, width), first, count, col);
        gemm_("N", "N", T(1), wm, Matrix<const T, Space>(col), adds_bias ? T(1) : T(0), columns_of(part, first, count));
      });
    }
    members_.group().sum(partials_.data(), out_ * cols, y.data());
  }

  void backward(const Space& space, Matrix<const T, Space> weight, Matrix<T, Space> weight_grad,
                Vector<T, Space> bias_grad, ConstActivation<T, Space> x, ConstActivation<T, Space> dy,
                Activation<T, Space> dx) const {
    const std::size_t n = x.extent(1), cols = n * g_.out_spatial(), in_elements = channels_of(g_) * n * g_.in_spatial();
    const bool has_bias = bias_grad.extent(0) > 0, wants_dx = dx.data() != nullptr;
#if HPF_ENABLE_ONEDNN
    if constexpr (onednn_possible) {
      if (!vendors_.empty()) {  // each member's weight, bias and input gradients at once; then as below
        const std::size_t local = members_.end() - members_.first();
        if (wants_dx) ensure_capacity(partials_, local * in_elements, "hpf::Conv::split_partials");
        T* const scratch = vendor_scratch(n);
        for (std::size_t m = members_.first(); m < members_.end(); ++m) {
          T* part = wants_dx ? partials_.data() + (m - members_.first()) * in_elements : nullptr;
          const auto& vendor = vendors_[m - members_.first()];
          if (!vendor) {
            if (part) Kokkos::deep_copy(space, Vector<T, Space>(part, in_elements), T(0));
            continue;
          }
          const std::size_t r = members_.begin(m);
          vendor->backward(space, x.data(), weight.data() + r * g_.patch(), dy.data() + r * cols, part,
                           weight_grad.data() + r * g_.patch(), has_bias ? bias_grad.data() + r : nullptr, n,
                           scratch);
        }
        members_.group().gather(weight_grad.data(), members_.bounds(g_.patch()));
        if (has_bias) members_.group().gather(bias_grad.data(), members_.bounds(1));
        if (wants_dx) members_.group().sum(partials_.data(), in_elements, dx.data());
        return;
      }
    }
#endif
    if (filter_) {
      for (std::size_t m = members_.first(); m < members_.end(); ++m) {
        if (has_bias) add_row_sums(space, grad_rows(dy, m, cols), bias_rows(bias_grad, m), "hpf::Conv::bias_grad");
      }
      for_each_chunk(g_, n, [&](std::size_t first, std::size_t count) {
        const auto col = columns(g_, count);
        to_columns(space, g_, x, first, count, col);
        for (std::size_t m = members_.first(); m < members_.end(); ++m) {  // dW_m += dY_m col^T
          const std::size_t r = members_.begin(m), rows = members_.begin(m + 1) - r;
          gemm_("N", "T", T(1), columns_of(grad_rows(dy, m, cols), first, count), Matrix<const T, Space>(col), T(1),
                Matrix<T, Space>(weight_grad.data() + r * g_.patch(), rows, g_.patch()));
        }
      });
      members_.group().gather(weight_grad.data(), members_.bounds(g_.patch()));
      if (has_bias) members_.group().gather(bias_grad.data(), members_.bounds(1));
      if (!wants_dx) return;
      ensure_capacity(partials_, (members_.end() - members_.first()) * in_elements, "hpf::Conv::split_partials");
      for (std::size_t m = members_.first(); m < members_.end(); ++m) {
        const Activation<T, Space> part(partials_.data() + (m - members_.first()) * in_elements, channels_of(g_), n,
                                        g_.in_spatial());
        if (members_.begin(m + 1) == members_.begin(m)) {
          Kokkos::deep_copy(space, part, T(0));
          continue;
        }
        for_each_chunk(g_, n, [&](std::size_t first, std::size_t count) {  // col2im(W_m^T dY_m)
          const auto col = columns(g_, count);
          gemm_("T", "N", T(1), weight_rows(weight, m), columns_of(grad_rows(dy, m, cols), first, count), T(0), col);
          from_columns(space, g_, Matrix<const T, Space>(col), first, count, part);
        });
      }
      members_.group().sum(partials_.data(), in_elements, dx.data());
      return;
    }
    const Matrix<const T, Space> grad_out(dy.data(), out_, cols);
    if (has_bias) add_row_sums(space, grad_out, bias_grad, "hpf::Conv::bias_grad");
    // dW's column blocks, member m's at O * begin(m) * KS, accumulated where they are packed.
    const std::size_t ks = kernel_elements();
    ensure_capacity(packed_grad_, out_ * g_.patch(), "hpf::Conv::split_weight_grad");
    for (std::size_t m = members_.first(); m < members_.end(); ++m) {
      const std::size_t c = members_.begin(m), width = members_.begin(m + 1) - c;
      const Matrix<T, Space> block(packed_grad_.data() + out_ * c * ks, out_, width * ks);
      pack_columns(space, Matrix<const T, Space>(weight_grad), c * ks, block);
      if (width == 0) continue;
      const Geometry gm = with_channels(g_, width);
      for_each_chunk(gm, n, [&](std::size_t first, std::size_t count) {
        const auto col = columns(gm, count);
        to_columns(space, gm, input_channels(x, c, width), first, count, col);
        gemm_("N", "T", T(1), columns_of(grad_out, first, count), Matrix<const T, Space>(col), T(1), block);
      });
    }
    members_.group().gather(packed_grad_.data(), members_.bounds(out_ * ks));
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const std::size_t c = members_.begin(m), width = members_.begin(m + 1) - c;
      unpack_columns(space, Matrix<const T, Space>(packed_grad_.data() + out_ * c * ks, out_, width * ks), c * ks,
                     weight_grad);
    }
    if (!wants_dx) return;
    const std::size_t per_channel = n * g_.in_spatial();
    for (std::size_t m = members_.first(); m < members_.end(); ++m) {
      const std::size_t c = members_.begin(m), width = members_.begin(m + 1) - c;
      if (width == 0) continue;
      const Geometry gm = with_channels(g_, width);
      const auto wm = packed_weight(space, weight, c, width);
      const Activation<T, Space> dxm(dx.data() + c * per_channel, width, n, g_.in_spatial());
      for_each_chunk(gm, n, [&](std::size_t first, std::size_t count) {  // col2im(W_m^T dY)
        const auto col = columns(gm, count);
        gemm_("T", "N", T(1), wm, columns_of(grad_out, first, count), T(0), col);
        from_columns(space, gm, Matrix<const T, Space>(col), first, count, dxm);
      });
    }
    members_.group().gather(dx.data(), members_.bounds(per_channel));
  }

 private:
  /// Weights per input channel: K*K, or K*K*K for volumes.
  std::size_t kernel_elements() const { return g_.patch() / channels_of(g_); }
  /// Member m's output channels of a [O][cols] array.
  Matrix<T, Space> output_rows(T* y, std::size_t m, std::size_t cols) const {
    const std::size_t r = members_.begin(m);
    return Matrix<T, Space>(y + r * cols, members_.begin(m + 1) - r, cols);
  }
  Matrix<const T, Space> grad_rows(ConstActivation<T, Space> dy, std::size_t m, std::size_t cols) const {
    const std::size_t r = members_.begin(m);
    return Matrix<const T, Space>(dy.data() + r * cols, members_.begin(m + 1) - r, cols);
  }
  Matrix<const T, Space> weight_rows(Matrix<const T, Space> weight, std::size_t m) const {
    const std::size_t r = members_.begin(m);
    return Matrix<const T, Space>(weight.data() + r * g_.patch(), members_.begin(m + 1) - r, g_.patch());
  }
  Vector<T, Space> bias_rows(Vector<T, Space> bias, std::size_t m) const {
    const std::size_t r = members_.begin(m);
    return Vector<T, Space>(bias.data() + r, members_.begin(m + 1) - r);
  }
  /// Input channels [c, c + width) of x (contiguous: activations are [C][N][S]).
  ConstActivation<T, Space> input_channels(ConstActivation<T, Space> x, std::size_t c, std::size_t width) const {
    return ConstActivation<T, Space>(x.data() + c * x.extent(1) * x.extent(2), width, x.extent(1), x.extent(2));
  }
  /// W's columns of input channels [c, c + width) as a matrix of their own.
  Matrix<const T, Space> packed_weight(const Space& space, Matrix<const T, Space> weight, std::size_t c,
                                       std::size_t width) const {
    const std::size_t ks = kernel_elements();
    ensure_capacity(packed_weight_, out_ * width * ks, "hpf::Conv::split_weight");
    const Matrix<T, Space> packed(packed_weight_.data(), out_, width * ks);
    pack_columns(space, weight, c * ks, packed);
    return packed;
  }
  /// Chunks of images whose columns under geometry g stay within the scratch budget.
  template <class F>
  static void for_each_chunk(const Geometry& g, std::size_t n, F&& f) {
    const std::size_t chunk = samples_per_chunk<Space>(g.patch() * g.out_spatial(), n);
    for (std::size_t first = 0; first < n; first += chunk) f(first, first + chunk <= n ? chunk : n - first);
  }
  Matrix<T, Space> columns(const Geometry& g, std::size_t count) const {
    ensure_capacity(columns_, g.patch() * count * g.out_spatial(), "hpf::Conv::split_columns");
    return Matrix<T, Space>(columns_.data(), g.patch(), count * g.out_spatial());
  }
  template <class M>
  auto columns_of(const M& m, std::size_t first, std::size_t count) const {
    const std::size_t os = g_.out_spatial();
    return Kokkos::subview(m, Kokkos::ALL, Kokkos::make_pair(first * os, (first + count) * os));
  }

#if HPF_ENABLE_ONEDNN
  /// Scratch for this process's members' oneDNN convolutions of a batch of n.
  T* vendor_scratch(std::size_t n) const {
    std::size_t need = 0;
    for (const auto& v : vendors_) need = std::max(need, v ? v->workspace(n) : 0);
    ensure_capacity(vendor_scratch_, need, "hpf::Conv::split_vendor_scratch");
    return vendor_scratch_.data();
  }
  std::vector<std::optional<OneDnnConvolution>> vendors_;  // per member this process computes; empty: GEMMs
  mutable Buffer<T, Space> vendor_scratch_;
#endif
  SplitMembers<T, Space> members_;
  bool filter_ = true;
  Geometry g_;
  std::size_t out_;
  Gemm<T, Space> gemm_;
  mutable Buffer<T, Space> partials_, packed_weight_, packed_grad_, columns_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPLIT_CONVOLUTION_HPP
