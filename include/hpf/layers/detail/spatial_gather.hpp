// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPATIAL_GATHER_HPP
#define HPF_LAYERS_DETAIL_SPATIAL_GATHER_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// \brief The layers where samples split into slabs (SplitKind::spatial) become whole again:
/// each member's slab is positions [m slab, (m + 1) slab) of every channel. Holds the group and
/// the slab facts the two gathering layers share.
template <class T, class Space>
class SlabGather : public ParameterFreeLayer {
 public:
  SlabGather(std::size_t channels, std::size_t members, std::size_t held, std::size_t whole_spatial)
      : channels_(channels), members_(members), held_(held), whole_spatial_(whole_spatial) {}
  void bind(ParameterBinder<T, Space>& binder) { group_ = &binder.kernels().template layer_group<T, Space>(); }

 protected:
  std::size_t slab() const { return whole_spatial_ / members_; }
  /// First position (of a channel's whole_spatial) this process holds.
  std::size_t first_position() const { return group_->first_member() * slab(); }

  std::size_t channels_, members_, held_, whole_spatial_;
  const LayerGroup<T, Space>* group_ = nullptr;
};

/// Flatten of a sample split into slabs: the group gathers every member's slab, and each member
/// then holds the whole `[C*S][N]` feature vector, in PyTorch's order (a copy: the same bits
/// however the group is laid out). Backward takes the slab's own rows of the gradient.
template <class T, class Space>
class SpatialFlattenImpl : public SlabGather<T, Space> {
 public:
  using SlabGather<T, Space>::SlabGather;
  /// Every member's slabs, gathered (when other processes hold some).
  std::size_t workspace(std::size_t capacity) const {
    return this->held_ < this->members_ ? this->channels_ * capacity * this->whole_spatial_ : 0;
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, NoTape&) const {
    trace::Region region("hpf::Flatten::forward (slabs)");
    const std::size_t channels = x.extent(0), n = x.extent(1), slab = this->slab(), whole = this->whole_spatial_;
    const std::size_t held = this->held_, members = this->members_, part = channels * n * slab;
    const T* all = x.data();  // every member's slab, when this process holds them all
    if (held < members) {
      this->group_->gather_parts(x.data(), part, ctx.workspace.data());
      all = ctx.workspace.data();
    }
    T* out = y.data();
    Kokkos::parallel_for(
        "hpf::Flatten::gather_slabs", Kokkos::RangePolicy<Space>(ctx.space, 0, channels * whole), KOKKOS_LAMBDA(const std::size_t f) {
          const std::size_t c = f / whole, s = f % whole, m = s / slab;
          // Whole: [C][n][S]; gathered: [member][C][n][slab].
          for (std::size_t j = 0; j < n; ++j) {
            out[f * n + j] = held < members ? all[m * part + (c * n + j) * slab + s % slab] : all[(c * n + j) * whole + s];
          }
        });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, NoTape&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::Flatten::backward (slabs)");
    const std::size_t channels = dx.extent(0), n = dx.extent(1), held_positions = dx.extent(2);
    const std::size_t whole = this->whole_spatial_, first = this->first_position();
    const T* grad_out = dy.data();
    Kokkos::parallel_for(
        "hpf::Flatten::backward_slabs", Kokkos::RangePolicy<Space>(ctx.space, 0, channels * held_positions),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / held_positions, s = item % held_positions;
          for (std::size_t j = 0; j < n; ++j) dx(c, j, s) = grad_out[(c * whole + first + s) * n + j];
        });
  }
};

/// GlobalAvgPool of a sample split into slabs: each member this process holds sums its slab per
/// channel and sample, the group adds the members' sums in its fixed tree, and the mean is the
/// total over the whole sample's positions. Backward spreads the gradient over the slab's own
/// positions.
template <class T, class Space>
class SpatialGlobalAvgPoolImpl : public SlabGather<T, Space> {
 public:
  using SlabGather<T, Space>::SlabGather;

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y, NoTape&) const {
    trace::Region region("hpf::GlobalAvgPool::forward (slabs)");
    const std::size_t channels = x.extent(0), n = x.extent(1), per_plane = x.extent(2), held = this->held_;
    const std::size_t slab = per_plane / held, count = channels * n;
    ensure_capacity(parts_, held * count, "hpf::GlobalAvgPool::member_sums");
    ensure_capacity(total_, count, "hpf::GlobalAvgPool::group_sums");
    T* parts = parts_.data();
    Kokkos::parallel_for(
        "hpf::GlobalAvgPool::slab_sums", Kokkos::RangePolicy<Space>(ctx.space, 0, held * count), KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t k = item / count, plane = item % count;
          const T* in = x.data() + plane * per_plane + k * slab;
          T sum = 0;
          for (std::size_t i = 0; i < slab; ++i) sum += in[i];
          parts[item] = sum;
        });
    this->group_->sum(parts, count, total_.data());
    const T* total = total_.data();
    const T inv = T(1) / T(this->whole_spatial_);
    T* out = y.data();
    Kokkos::parallel_for(
        "hpf::GlobalAvgPool::slab_mean", Kokkos::RangePolicy<Space>(ctx.space, 0, count),
        KOKKOS_LAMBDA(const std::size_t plane) { out[plane] = total[plane] * inv; });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, NoTape&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::GlobalAvgPool::backward (slabs)");
    const std::size_t n = dx.extent(1), s = dx.extent(2);
    const T inv = T(1) / T(this->whole_spatial_);
    Kokkos::parallel_for(
        "hpf::GlobalAvgPool::backward_slabs", Kokkos::RangePolicy<Space>(ctx.space, 0, dx.extent(0) * n),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / n, j = item % n;
          const T g = dy(c, j, 0) * inv;
          for (std::size_t i = 0; i < s; ++i) dx(c, j, i) = g;
        });
  }

 private:
  mutable Buffer<T, Space> parts_, total_;  // the held members' sums, and the group's
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPATIAL_GATHER_HPP
