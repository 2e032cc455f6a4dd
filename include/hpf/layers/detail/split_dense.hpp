// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPLIT_DENSE_HPP
#define HPF_LAYERS_DETAIL_SPLIT_DENSE_HPP

#include <hpf/layers/detail/column_blocks.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/layers/detail/rows.hpp>
#include <hpf/layers/detail/split_members.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <vector>

namespace hpf::detail {

/// \brief The products of a Dense layer whose work a LayerGroup splits (KernelResources::split).
/// Every member holds the whole weight; member m computes its block of it:
/// - filter: rows [m out / G, ...) of W. Forward writes those outputs and gathers the rest;
///   backward adds W_m^T dY_m of every member in ordered_sum's tree for dX, and gathers dW and
///   the bias gradient by rows.
/// - channel: columns [m in / G, ...) of W. Forward adds W_m X_m of every member (member 0's
///   starting from the bias, as addmm) in the tree; backward gathers dX by rows and dW by
///   column blocks, and every member computes the whole bias gradient.
/// Afterwards every member holds the whole output, input gradient and weight gradient, so the
/// layers around run unchanged. In an hpf::DensePair (PairRole) the first layer is split by
/// filters and keeps its members' outputs, the second by channels and keeps its members' input
/// gradient: what one member computes the other's part of stays with it, zeros elsewhere.
template <class T, class Space>
class SplitDense {
 public:
  SplitDense() = default;
  SplitDense(const LayerGroup<T, Space>& group, SplitKind kind, PairRole role, std::size_t in, std::size_t out,
             Gemm<T, Space> gemm)
      : members_(group, splits_outputs(kind, role) ? out : in), filter_(splits_outputs(kind, role)),
        keeps_part_(role != PairRole::none), in_(in), out_(out), gemm_(std::move(gemm)) {}

  explicit operator bool() const { return static_cast<bool>(members_); }

  void forward(const Space& space, Matrix<const T, Space> weight, Vector<T, Space> bias, Matrix<const T, Space> x,
               Matrix<T, Space> y) const {
    const std::size_t cols = x.extent(1);
    const bool has_bias = bias.extent(0) > 0;
    if (filter_) {
      for (std::size_t m = first(); m < end(); ++m) {
        const std::size_t r = begin(m), rows = begin(m + 1) - r;
        const Matrix<T, Space> ym(y.data() + r * cols, rows, cols);
        if (has_bias) broadcast_rows(space, Vector<T, Space>(bias.data() + r, rows), ym, "hpf::Dense::bias");
        gemm_("N", "N", T(1), Matrix<const T, Space>(weight.data() + r * in_, rows, in_), x, has_bias ? T(1) : T(0), ym);
      }
      if (keeps_part_) {
        zero_others(space, y, cols);
      } else {
        members_.group().gather(y.data(), bounds(cols));
      }
      return;
    }
    ensure_capacity(partials_, (end() - first()) * out_ * cols, "hpf::Dense::split_partials");
    for (std::size_t m = first(); m < end(); ++m) {
      const Matrix<T, Space> part(partials_.data() + (m - first()) * out_ * cols, out_, cols);
      const bool adds_bias = has_bias && m == 0;
      if (adds_bias) broadcast_rows(space, bias, part, "hpf::Dense::bias");
      const std::size_t c = begin(m), width = begin(m + 1) - c;
      if (width == 0) {
        if (!adds_bias) Kokkos::deep_copy(space, part, T(0));
        continue;
      }
      const Matrix<const T, Space> xm(x.data() + c * cols, width, cols);
      gemm_("N", "N", T(1), weight_columns(weight, c, width), xm, adds_bias ? T(1) : T(0), part);
    }
    members_.group().sum(partials_.data(), out_ * cols, y.data());
  }

  void backward(const Space& space, Matrix<const T, Space> weight, Matrix<T, Space> weight_grad,
                Vector<T, Space> bias_grad, Matrix<const T, Space> x, Matrix<const T, Space> dy,
                Matrix<T, Space> dx) const {
    const std::size_t cols = x.extent(1);
    const bool has_bias = bias_grad.extent(0) > 0, wants_dx = dx.data() != nullptr;
    if (filter_) {
      for (std::size_t m = first(); m < end(); ++m) {
        const std::size_t r = begin(m), rows = begin(m + 1) - r;
        const Matrix<const T, Space> dym(dy.data() + r * cols, rows, cols);
        gemm_("N", "T", T(1), dym, x, T(1), Matrix<T, Space>(weight_grad.data() + r * in_, rows, in_));
        if (has_bias) add_row_sums(space, dym, Vector<T, Space>(bias_grad.data() + r, rows), "hpf::Dense::bias_grad");
      }
      members_.group().gather(weight_grad.data(), bounds(in_));
      if (has_bias) members_.group().gather(bias_grad.data(), bounds(1));
      if (!wants_dx) return;
      ensure_capacity(partials_, (end() - first()) * in_ * cols, "hpf::Dense::split_partials");
      for (std::size_t m = first(); m < end(); ++m) {
        const std::size_t r = begin(m), rows = begin(m + 1) - r;
        const Matrix<T, Space> part(partials_.data() + (m - first()) * in_ * cols, in_, cols);
        if (rows == 0) {
          Kokkos::deep_copy(space, part, T(0));
          continue;
        }
        gemm_("T", "N", T(1), Matrix<const T, Space>(weight.data() + r * in_, rows, in_),
              Matrix<const T, Space>(dy.data() + r * cols, rows, cols), T(0), part);
      }
      members_.group().sum(partials_.data(), in_ * cols, dx.data());
      return;
    }
    if (has_bias) add_row_sums(space, dy, bias_grad, "hpf::Dense::bias_grad");
    // dW's column blocks, member m's at out * begin(m), accumulated where they are packed.
    ensure_capacity(packed_grad_, out_ * in_, "hpf::Dense::split_weight_grad");
    for (std::size_t m = first(); m < end(); ++m) {
      const std::size_t c = begin(m), width = begin(m + 1) - c;
      const Matrix<T, Space> block(packed_grad_.data() + out_ * c, out_, width);
      pack_columns(space, Matrix<const T, Space>(weight_grad), c, block);
      gemm_("N", "T", T(1), dy, Matrix<const T, Space>(x.data() + c * cols, width, cols), T(1), block);
    }
    members_.group().gather(packed_grad_.data(), bounds(out_));
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const std::size_t c = begin(m), width = begin(m + 1) - c;
      unpack_columns(space, Matrix<const T, Space>(packed_grad_.data() + out_ * c, out_, width), c, weight_grad);
    }
    if (!wants_dx) return;
    for (std::size_t m = first(); m < end(); ++m) {
      const std::size_t c = begin(m), width = begin(m + 1) - c;
      if (width == 0) continue;
      const Matrix<T, Space> dxm(dx.data() + c * cols, width, cols);
      gemm_("T", "N", T(1), weight_columns(weight, c, width), dy, T(0), dxm);
    }
    if (keeps_part_) {
      zero_others(space, dx, cols);
    } else {
      members_.group().gather(dx.data(), bounds(cols));
    }
  }

 private:
  static constexpr bool splits_outputs(SplitKind kind, PairRole role) {
    return role == PairRole::none ? kind == SplitKind::filter : role == PairRole::column;
  }
  /// Rows of `m` ([things][cols]) that other processes' members own, zero: a pair's part kept.
  void zero_others(const Space& space, Matrix<T, Space> m, std::size_t cols) const {
    const std::size_t mine = begin(first()) * cols, mine_end = begin(end()) * cols, all = m.extent(0) * cols;
    using Flat = Kokkos::View<T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    if (mine > 0) Kokkos::deep_copy(space, Flat(m.data(), mine), T(0));
    if (mine_end < all) Kokkos::deep_copy(space, Flat(m.data() + mine_end, all - mine_end), T(0));
  }
  std::size_t begin(std::size_t m) const { return members_.begin(m); }
  std::size_t first() const { return members_.first(); }
  std::size_t end() const { return members_.end(); }
  std::vector<std::size_t> bounds(std::size_t per_row) const { return members_.bounds(per_row); }
  /// W's columns [c, c + width), in place: a row-major view whose rows are `in` apart (the
  /// BLAS's leading dimension), no copy.
  static auto weight_columns(Matrix<const T, Space> weight, std::size_t c, std::size_t width) {
    return Kokkos::subview(weight, Kokkos::ALL, Kokkos::make_pair(c, c + width));
  }

  SplitMembers<T, Space> members_;
  bool filter_ = true, keeps_part_ = false;
  std::size_t in_ = 0, out_ = 0;
  Gemm<T, Space> gemm_;
  mutable Buffer<T, Space> partials_, packed_grad_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPLIT_DENSE_HPP
