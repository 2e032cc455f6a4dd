// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP
#define HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/window.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// \brief Where one member's rows of a 2-D convolution come from when samples are split into
/// slabs of rows (hpf::Spatial<G>). Member m holds input rows [m h, (m + 1) h) and computes
/// output rows [m oh, (m + 1) oh): it reads `rows` input rows from m h - pad on, its own and `pad`
/// rows of the member before it (its top halo) and `bottom` rows of the member after it, as an
/// unpadded image `padded_width` wide (zeros where the whole image is padded).
struct SlabGeometry {
  std::size_t members, held;           // G, and the members this process computes
  std::size_t rows_per_member;         // h
  std::size_t out_rows_per_member;     // oh
  std::size_t pad, rows, bottom;       // top halo, rows read, bottom halo
  std::size_t width, padded_width;     // W, W + 2 pad

  /// Whole convolution `g` split among `members`, `held` of them here; the caller has checked
  /// that rows align (h = oh * stride) and that halos come from one neighbour each.
  static constexpr SlabGeometry of(const WindowGeometry& g, std::size_t members, std::size_t held) {
    SlabGeometry s{};
    s.members = members;
    s.held = held;
    s.rows_per_member = g.height / members;
    s.out_rows_per_member = g.out_height / members;
    s.pad = g.pad;
    s.rows = (s.out_rows_per_member - 1) * g.stride + g.kernel;
    s.bottom = s.rows > g.pad + s.rows_per_member ? s.rows - g.pad - s.rows_per_member : 0;
    s.width = g.width;
    s.padded_width = g.width + 2 * g.pad;
    return s;
  }
  /// The convolution each member runs on its rows: unpadded, the same kernel and stride.
  static constexpr WindowGeometry member_geometry(const WindowGeometry& g, std::size_t members) {
    const SlabGeometry s = of(g, members, 1);
    return WindowGeometry(g.channels, s.rows, s.padded_width, g.kernel, g.stride, 0);
  }
  std::size_t padded_image() const { return rows * padded_width; }
};

/// Whether a convolution of whole geometry `g` splits into `members` slabs exactly: each member's
/// output rows read its own input rows and at most one neighbour's on either side.
constexpr bool slabs_align(const WindowGeometry& g, std::size_t members) {
  if (members <= 1) return true;
  if (g.height % members != 0 || g.out_height % members != 0) return false;
  const SlabGeometry s = SlabGeometry::of(g, members, 1);
  return s.rows_per_member == s.out_rows_per_member * g.stride && s.pad <= s.rows_per_member &&
         s.bottom <= s.rows_per_member;
}

/// Values of one sample's halo rows a tape keeps from forward to backward (those of other processes).
constexpr std::size_t slab_halo_elements(const WindowGeometry& whole, std::size_t members, std::size_t held) {
  if (members <= 1 || held == members) return 0;
  const SlabGeometry s = SlabGeometry::of(whole, members, held);
  return whole.channels * (s.pad + s.bottom) * s.width;
}

/// The compile error of a convolution whose windows do not follow its input's slabs.
template <class In, std::size_t Kernel, std::size_t Stride, std::size_t Pad>
struct conv2d_slabs_misaligned {
  static_assert(Kernel == 0,
                "hpf::Spatial<G>: this Conv2D does not split into the input's slabs of rows: each member's input "
                "rows (height / G) must be its output rows (output height / G) times the stride, as for a "
                "'same' convolution (kernel = 2 pad + 1) or a stride that divides the rows, with halos no taller "
                "than a member's rows");
};

/// \brief A 2-D convolution on slabs of rows (SplitKind::spatial): each member this process
/// holds runs `Inner` (the layer's unsplit kernel: oneDNN or im2col + GEMM) on its rows and halos
/// laid out as an unpadded image. The halos of members on other processes travel through the
/// group's swap_edges, forward (input rows) and backward (input-gradient rows); the members'
/// weight gradients are added in the group's fixed tree, so one process holding every member
/// gets the same bits as G processes holding one each.
template <class T, class Space, class Inner>
class SpatialConvolution {
 public:
  struct tape_type {
    Buffer<T, Space> from_previous, from_next;  // the forward's halos from other processes
  };

  SpatialConvolution(const WindowGeometry& whole, std::size_t out_channels, bool bias, std::size_t members,
                     std::size_t held)
      : whole_(whole), slab_(SlabGeometry::of(whole, members, held)), out_(out_channels), bias_(bias),
        inner_(SlabGeometry::member_geometry(whole, members), out_channels, bias) {}

  void bind(ParameterBinder<T, Space>& binder) {
    inner_.bind(binder);
    group_ = &binder.kernels().template layer_group<T, Space>();
    weight_grad_ = inner_.weight_gradient();
    bias_grad_ = inner_.bias_gradient();
  }
  void reserve(tape_type& tape, std::size_t capacity) {
    ensure_capacity(tape.from_previous, halo(slab_.pad, capacity), "hpf::Conv2D::halo_from_previous");
    ensure_capacity(tape.from_next, halo(slab_.bottom, capacity), "hpf::Conv2D::halo_from_next");
  }
  /// The padded rows of a member, its output rows (when this process holds several members), the
  /// members' padded input gradients, the edges sent and received, then the inner kernel's own.
  std::size_t workspace(std::size_t capacity) const { return own_workspace(capacity) + inner_.workspace(capacity); }


  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::Conv2D::forward (slabs)");
    const std::size_t n = x.extent(1);
    swap_input_edges(ctx, x, tape);
    T* padded_x = ctx.workspace.data();
    T* member_y = padded_x + padded(n);
    const Context<T, Space> inner_ctx = inner_context(ctx, n);
    for (std::size_t k = 0; k < slab_.held; ++k) {
      pad_rows(ctx.space, x, tape, k, padded_x);
      const bool direct = slab_.held == 1;
      inner_.forward(inner_ctx, ConstActivation<T, Space>(padded_x, whole_.channels, n, slab_.padded_image()),
                     Activation<T, Space>(direct ? y.data() : member_y, out_, n, member_outputs()), inner_tape_);
      if (!direct) copy_member_rows(ctx.space, member_y, y, k, /*into_whole=*/true);
    }
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::Conv2D::backward (slabs)");
    const std::size_t n = x.extent(1), parameters = out_ * whole_.patch() + (bias_ ? out_ : 0);
    ensure_capacity(parts_, slab_.held * parameters, "hpf::Conv2D::member_gradients");
    ensure_capacity(total_, parameters, "hpf::Conv2D::group_gradient");
    Kokkos::deep_copy(ctx.space, Kokkos::subview(parts_, Kokkos::make_pair(std::size_t{0}, slab_.held * parameters)), T(0));
    T* padded_x = ctx.workspace.data();
    T* member_dy = padded_x + padded(n);
    T* padded_dx = member_dy + outputs(n);
    const Context<T, Space> inner_ctx = inner_context(ctx, n);
    const bool want_dx = !is_empty(dx);
    for (std::size_t k = 0; k < slab_.held; ++k) {
      pad_rows(ctx.space, x, tape, k, padded_x);
      const bool direct = slab_.held == 1;
      if (!direct) {
        copy_member_rows(ctx.space, member_dy, Activation<T, Space>(const_cast<T*>(dy.data()), out_, n, dy.extent(2)), k,
                         /*into_whole=*/false);
      }
      T* part = parts_.data() + k * parameters;
      inner_.backward_into(inner_ctx, ConstActivation<T, Space>(padded_x, whole_.channels, n, slab_.padded_image()),
                           ConstActivation<T, Space>(direct ? dy.data() : member_dy, out_, n, member_outputs()),
                           want_dx ? Activation<T, Space>(padded_dx + k * padded(n), whole_.channels, n, slab_.padded_image())
                                   : Activation<T, Space>(),
                           Matrix<T, Space>(part, out_, whole_.patch()),
                           Vector<T, Space>(bias_ ? part + out_ * whole_.patch() : nullptr, bias_ ? out_ : 0));
    }
    group_->sum(parts_.data(), parameters, total_.data());
    add_gradient(ctx.space, parameters);
    if (want_dx) input_gradient(ctx, padded_dx, dx);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions).

  /// Sends the rows neighbours on other processes read (the first `bottom` rows to the previous
  /// member, the last `pad` rows to the next) and receives this process's halos into the tape.
  void swap_input_edges(const Context<T, Space>& ctx, ConstActivation<T, Space> x, tape_type& tape) const {
    const std::size_t n = x.extent(1), held_rows = slab_.held * slab_.rows_per_member;
    if (slab_.held == slab_.members) return;  // no member on another process
    T* to_previous = edges(ctx, n);
    T* to_next = to_previous + halo(slab_.bottom, n);
    copy_rows(ctx.space, x.data(), held_rows, 0, to_previous, slab_.bottom, n);
    copy_rows(ctx.space, x.data(), held_rows, held_rows - slab_.pad, to_next, slab_.pad, n);
    group_->swap_edges(to_previous, halo(slab_.bottom, n), tape.from_previous.data(), halo(slab_.pad, n), to_next,
                       halo(slab_.pad, n), tape.from_next.data(), halo(slab_.bottom, n));
  }

  /// to[c][j][r][w] = from[c][j][first + r][w] for r < count: rows of `[C][n][rows * W]` images.
  void copy_rows(const Space& space, const T* from, std::size_t from_rows, std::size_t first, T* to, std::size_t count,
                 std::size_t n) const {
    if (count == 0) return;
    const std::size_t w = slab_.width, planes = whole_.channels * n;
    Kokkos::parallel_for(
        "hpf::Conv2D::halo_rows", Kokkos::RangePolicy<Space>(space, 0, planes * count), KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / count, r = item % count;
          const T* src = from + (plane * from_rows + first + r) * w;
          T* dst = to + (plane * count + r) * w;
          for (std::size_t i = 0; i < w; ++i) dst[i] = src[i];
        });
  }

  /// Member k's (of those held) rows and halos as an unpadded image: zeros outside the whole image.
  void pad_rows(const Space& space, ConstActivation<T, Space> x, const tape_type& tape, std::size_t k, T* padded_x) const {
    const SlabGeometry s = slab_;
    const std::size_t n = x.extent(1), planes = whole_.channels * n;
    const std::size_t first = group_->first_member(), member = first + k, members = s.members;
    const std::size_t held_rows = s.held * s.rows_per_member;
    const T* from_previous = tape.from_previous.data();
    const T* from_next = tape.from_next.data();
    Kokkos::parallel_for(
        "hpf::Conv2D::pad_rows", Kokkos::RangePolicy<Space>(space, 0, planes * s.rows), KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / s.rows, r = item % s.rows;
          T* out = padded_x + (plane * s.rows + r) * s.padded_width;
          // Global row of padded row r (signed: the rows above the image are negative).
          const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(member * s.rows_per_member + r) - static_cast<std::ptrdiff_t>(s.pad);
          const std::ptrdiff_t held_begin = static_cast<std::ptrdiff_t>(first * s.rows_per_member);
          const std::ptrdiff_t held_end = held_begin + static_cast<std::ptrdiff_t>(held_rows);
          const T* src = nullptr;
          if (row < 0 || row >= static_cast<std::ptrdiff_t>(members * s.rows_per_member)) {
            src = nullptr;  // the whole image's padding
          } else if (row < held_begin) {
            src = from_previous + (plane * s.pad + static_cast<std::size_t>(row - (held_begin - static_cast<std::ptrdiff_t>(s.pad)))) * s.width;
          } else if (row >= held_end) {
            src = from_next + (plane * s.bottom + static_cast<std::size_t>(row - held_end)) * s.width;
          } else {
            src = &x(plane / n, plane % n, static_cast<std::size_t>(row - held_begin) * s.width);
          }
          for (std::size_t i = 0; i < s.pad; ++i) out[i] = T(0);
          for (std::size_t i = 0; i < s.width; ++i) out[s.pad + i] = src ? src[i] : T(0);
          for (std::size_t i = s.pad + s.width; i < s.padded_width; ++i) out[i] = T(0);
        });
  }

  /// Member k's output rows between its own `[O][n][oh * OW]` buffer and the whole `[O][n][...]`
  /// activation this process holds (into_whole: from `member` into `whole`).
  void copy_member_rows(const Space& space, T* member, Activation<T, Space> whole, std::size_t k, bool into_whole) const {
    const std::size_t n = whole.extent(1), per_member = member_outputs(), per_plane = whole.extent(2);
    Kokkos::parallel_for(
        "hpf::Conv2D::member_rows", Kokkos::RangePolicy<Space>(space, 0, out_ * n), KOKKOS_LAMBDA(const std::size_t plane) {
          T* own = member + plane * per_member;
          T* all = whole.data() + plane * per_plane + k * per_member;
          for (std::size_t i = 0; i < per_member; ++i) {
            if (into_whole) {
              all[i] = own[i];
            } else {
              own[i] = all[i];
            }
          }
        });
  }

  /// The layer's gradients += the group's sum of the members' parts.
  void add_gradient(const Space& space, std::size_t parameters) const {
    const std::size_t weights = out_ * whole_.patch();
    const T* total = total_.data();
    T* const weight_grad = weight_grad_.data();
    T* const bias_grad = bias_grad_.data();
    Kokkos::parallel_for(
        "hpf::Conv2D::add_group_gradient", Kokkos::RangePolicy<Space>(space, 0, parameters), KOKKOS_LAMBDA(const std::size_t i) {
          if (i < weights) {
            weight_grad[i] += total[i];
          } else {
            bias_grad[i - weights] += total[i];
          }
        });
  }

  /// dx of the held rows: every member's padded input gradient that covers a row, added in the
  /// members' order (the one before, the row's own, the one after), those of other processes'
  /// members received through swap_edges.
  void input_gradient(const Context<T, Space>& ctx, const T* padded_dx, Activation<T, Space> dx) const {
    const SlabGeometry s = slab_;
    const std::size_t n = dx.extent(1), planes = whole_.channels * n, image = s.padded_image();
    const std::size_t first = group_->first_member(), held_rows = s.held * s.rows_per_member;
    // Rows of the first held member's padded gradient above it go to the member before, rows of
    // the last one's below it to the member after.
    T* to_previous = edges(ctx, n);
    T* to_next = to_previous + halo(s.pad, n);
    T* from_previous = to_next + halo(s.bottom, n);
    T* from_next = from_previous + halo(s.bottom, n);
    if (s.held < s.members) {
      crop_rows(ctx.space, padded_dx, 0, to_previous, s.pad, n);
      crop_rows(ctx.space, padded_dx + (s.held - 1) * planes * image, s.pad + s.rows_per_member, to_next, s.bottom, n);
      group_->swap_edges(to_previous, halo(s.pad, n), from_previous, halo(s.bottom, n), to_next, halo(s.bottom, n), from_next,
                         halo(s.pad, n));
    }
    const bool has_previous = first > 0, has_next = first + s.held < s.members;
    Kokkos::parallel_for(
        "hpf::Conv2D::slab_input_gradient", Kokkos::RangePolicy<Space>(ctx.space, 0, planes * held_rows),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / held_rows, local_row = item % held_rows;
          const std::size_t k = local_row / s.rows_per_member, r = local_row % s.rows_per_member;  // held member, its row
          // The padded row of member k +- 1 holding this row, when in range.
          const T* before = nullptr;
          if (r < s.bottom) {
            if (k > 0) {
              before = padded_dx + ((k - 1) * planes + plane) * image + (s.pad + s.rows_per_member + r) * s.padded_width + s.pad;
            } else if (has_previous) {
              before = from_previous + (plane * s.bottom + r) * s.width;
            }
          }
          const T* own = s.pad + r < s.rows ? padded_dx + (k * planes + plane) * image + (s.pad + r) * s.padded_width + s.pad : nullptr;
          const T* after = nullptr;
          if (r + s.pad >= s.rows_per_member) {
            const std::size_t above = r + s.pad - s.rows_per_member;  // row of the next member's top halo
            if (k + 1 < s.held) {
              after = padded_dx + ((k + 1) * planes + plane) * image + above * s.padded_width + s.pad;
            } else if (has_next) {
              after = from_next + (plane * s.pad + above) * s.width;
            }
          }
          T* out = dx.data() + (plane * held_rows + local_row) * s.width;
          for (std::size_t i = 0; i < s.width; ++i) {
            T sum = T(0);
            if (before) sum += before[i];
            if (own) sum += own[i];
            if (after) sum += after[i];
            out[i] = sum;
          }
        });
  }

  /// to[c][j][r][w] = padded[c][j][first + r][pad + w]: rows of the padded gradient without its columns of padding.
  void crop_rows(const Space& space, const T* padded, std::size_t first, T* to, std::size_t count, std::size_t n) const {
    if (count == 0) return;
    const SlabGeometry s = slab_;
    const std::size_t planes = whole_.channels * n, image = s.padded_image();
    Kokkos::parallel_for(
        "hpf::Conv2D::halo_gradient_rows", Kokkos::RangePolicy<Space>(space, 0, planes * count),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / count, r = item % count;
          const T* src = padded + plane * image + (first + r) * s.padded_width + s.pad;
          T* dst = to + (plane * count + r) * s.width;
          for (std::size_t i = 0; i < s.width; ++i) dst[i] = src[i];
        });
  }

 private:
  std::size_t halo(std::size_t rows, std::size_t n) const { return whole_.channels * n * rows * slab_.width; }
  std::size_t padded(std::size_t n) const { return whole_.channels * n * slab_.padded_image(); }
  std::size_t member_outputs() const { return slab_.out_rows_per_member * whole_.out_width; }
  std::size_t outputs(std::size_t n) const { return slab_.held > 1 ? out_ * n * member_outputs() : 0; }
  std::size_t edge_elements(std::size_t n) const {
    return slab_.held < slab_.members ? 2 * (halo(slab_.pad, n) + halo(slab_.bottom, n)) : 0;
  }
  std::size_t own_workspace(std::size_t n) const {
    return padded(n) + outputs(n) + slab_.held * padded(n) + edge_elements(n);
  }
  /// The workspace's room for the edges sent and received.
  T* edges(const Context<T, Space>& ctx, std::size_t n) const {
    return ctx.workspace.data() + padded(n) + outputs(n) + slab_.held * padded(n);
  }
  Context<T, Space> inner_context(const Context<T, Space>& ctx, std::size_t n) const {
    Context<T, Space> inner = ctx;
    inner.workspace = Kokkos::subview(ctx.workspace, Kokkos::make_pair(own_workspace(n), ctx.workspace.extent(0)));
    return inner;
  }

  WindowGeometry whole_;
  SlabGeometry slab_;
  std::size_t out_;
  bool bias_;
  Inner inner_;
  mutable typename Inner::tape_type inner_tape_{};
  const LayerGroup<T, Space>* group_ = nullptr;
  Matrix<T, Space> weight_grad_;
  Vector<T, Space> bias_grad_;
  mutable Buffer<T, Space> parts_, total_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP
