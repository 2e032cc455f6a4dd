// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP
#define HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/detail/window.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace hpf::detail {

/// \brief Where one member's rows of a convolution come from when samples are split into slabs
/// along their outermost spatial axis (hpf::Spatial<G>): the rows of an image, the planes of a
/// volume, "rows" here either way. Member m holds input rows [m h, (m + 1) h) and computes output
/// rows [m oh, (m + 1) oh): it reads `rows` input rows from m h - pad on, its own, `pad` rows of
/// the member before it (its top halo) and `bottom` rows of the member after it, each row padded
/// as the whole sample is (a row of `row_height` x `width` values, `padded_row` once padded: an
/// image's row is 1 x W, a volume's plane H x W), and convolves them without padding.
struct SlabGeometry {
  std::size_t members, held;           // G, and the members this process computes
  std::size_t rows_per_member;         // h
  std::size_t out_rows_per_member;     // oh
  std::size_t pad, rows, bottom;       // top halo, rows read, bottom halo
  std::size_t row_height, width;       // a row's extents: 1 x W (images), H x W (volumes)
  std::size_t row_pad;                 // padding around a row's height: 0 (images), pad (volumes)
  std::size_t channels, patch, out_row;  // C, C K^d, outputs per output row (OW, or OH OW)
  std::size_t kernel, stride;
  bool divides;  // the rows and the output rows divide among the members

  static constexpr SlabGeometry split(std::size_t extent, std::size_t out_extent, std::size_t kernel, std::size_t stride,
                                      std::size_t pad, std::size_t members, std::size_t held) {
    SlabGeometry s{};
    s.members = members;
    s.held = held;
    s.kernel = kernel;
    s.stride = stride;
    s.divides = extent % members == 0 && out_extent % members == 0;
    s.rows_per_member = extent / members;
    s.out_rows_per_member = out_extent / members;
    s.pad = pad;
    s.rows = s.out_rows_per_member > 0 ? (s.out_rows_per_member - 1) * stride + kernel : 0;
    s.bottom = s.rows > pad + s.rows_per_member ? s.rows - pad - s.rows_per_member : 0;
    return s;
  }
  /// Whole convolution `g` split among `members`, `held` of them here; the caller has checked
  /// that rows align (h = oh * stride) and that halos come from one neighbour each.
  static constexpr SlabGeometry of(const WindowGeometry& g, std::size_t members, std::size_t held) {
    SlabGeometry s = split(g.height, g.out_height, g.kernel, g.stride, g.pad, members, held);
    s.row_height = 1;
    s.width = g.width;
    s.row_pad = 0;
    s.channels = g.channels;
    s.patch = g.patch();
    s.out_row = g.out_width;
    return s;
  }
  static constexpr SlabGeometry of(const VolumeGeometry& g, std::size_t members, std::size_t held) {
    SlabGeometry s = split(g.depth, g.out_depth, g.kernel(), g.stride(), g.pad(), members, held);
    s.row_height = g.plane.height;
    s.width = g.plane.width;
    s.row_pad = g.pad();
    s.channels = g.channels();
    s.patch = g.patch();
    s.out_row = g.plane.out_spatial();
    return s;
  }
  /// The convolution that computes `in_rows` padded rows of a member (all of them: `rows`):
  /// unpadded, the same kernel and stride.
  static constexpr WindowGeometry member_geometry(const WindowGeometry& g, std::size_t members, std::size_t in_rows) {
    const SlabGeometry s = of(g, members, 1);
    return WindowGeometry(g.channels, in_rows, s.padded_width(), g.kernel, g.stride, 0);
  }
  static constexpr VolumeGeometry member_geometry(const VolumeGeometry& g, std::size_t members, std::size_t in_rows) {
    const SlabGeometry s = of(g, members, 1);
    return VolumeGeometry(g.channels(), in_rows, s.row_height + 2 * s.row_pad, s.padded_width(), g.kernel(), g.stride(), 0);
  }
  /// A member's interior, output rows [interior_begin(), interior_end()): they read only the
  /// member's own input rows, so they are computed while the halos travel.
  constexpr std::size_t interior_begin() const { return (pad + stride - 1) / stride; }
  constexpr std::size_t interior_end() const {
    if (pad + rows_per_member < kernel) return 0;
    const std::size_t end = (pad + rows_per_member - kernel) / stride + 1;
    return end < out_rows_per_member ? end : out_rows_per_member;
  }
  constexpr bool has_interior() const { return interior_end() > interior_begin(); }
  /// Padded input rows that `out_rows` consecutive output rows read.
  constexpr std::size_t band_rows(std::size_t out_rows) const { return out_rows > 0 ? (out_rows - 1) * stride + kernel : 0; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t padded_width() const { return width + 2 * pad; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t row() const { return row_height * width; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t padded_row() const { return (row_height + 2 * row_pad) * padded_width(); }
  std::size_t padded_image() const { return rows * padded_row(); }
  /// A row's values into its padded form (zeros around them, and for a null row).
  template <class T>
  KOKKOS_INLINE_FUNCTION void pad_row(const T* row_values, T* padded) const {
    const std::size_t pw = padded_width();
    for (std::size_t i = 0; i < row_pad * pw; ++i) padded[i] = T(0);  // the lines above (volumes)
    for (std::size_t h = 0; h < row_height; ++h) {
      T* line = padded + (row_pad + h) * pw;
      for (std::size_t w = 0; w < pad; ++w) line[w] = T(0);
      if (row_values) {
        for (std::size_t w = 0; w < width; ++w) line[pad + w] = row_values[h * width + w];
      } else {
        for (std::size_t w = 0; w < width; ++w) line[pad + w] = T(0);
      }
      for (std::size_t w = pad + width; w < pw; ++w) line[w] = T(0);
    }
    for (std::size_t i = (row_pad + row_height) * pw; i < padded_row(); ++i) padded[i] = T(0);  // and below
  }
  /// f(value index in a row, its index in the padded row) for every value of a row, line by line.
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each_value(const F& f) const {
    for (std::size_t h = 0; h < row_height; ++h) {
      const std::size_t from = h * width, to = (row_pad + h) * padded_width() + pad;
      for (std::size_t w = 0; w < width; ++w) f(from + w, to + w);
    }
  }
  /// Output values of one member per channel and sample.
  std::size_t member_outputs() const { return out_rows_per_member * out_row; }
};

/// Whether a convolution of whole geometry `g` (an image's or a volume's) splits into `members`
/// slabs exactly: each member's output rows read its own input rows and at most one neighbour's on
/// either side.
template <class Geometry>
constexpr bool slabs_align(const Geometry& g, std::size_t members) {
  if (members <= 1) return true;
  const SlabGeometry s = SlabGeometry::of(g, members, 1);
  return s.divides && s.out_rows_per_member > 0 && s.rows_per_member == s.out_rows_per_member * s.stride &&
         s.pad <= s.rows_per_member && s.bottom <= s.rows_per_member;
}

/// What a convolution on slabs adds to its cost where other processes hold members: the halo rows
/// its tape keeps from forward to backward (per sample), one halo swap each way in forward and
/// in backward (each direction's larger rows), and the group's sum of the weight gradients (an
/// allgather of `parameters`) in backward.
template <class Geometry>
constexpr LayerCost slab_convolution_cost(const Geometry& whole, std::size_t members, std::size_t held,
                                          std::size_t parameters) {
  if (members <= 1 || held == members) return {};
  const SlabGeometry s = SlabGeometry::of(whole, members, held);
  return {.activations = s.channels * (s.pad + s.bottom) * s.row(),
          .group = {.halo_swaps = 1,
                    .halo_elements = s.channels * (s.pad > s.bottom ? s.pad : s.bottom) * s.row(),
                    .backward_gathers = 1,
                    .backward_fixed = parameters}};
}

/// The compile error of a convolution whose windows do not follow its input's slabs.
template <class In, std::size_t Kernel, std::size_t Stride, std::size_t Pad>
struct convolution_slabs_misaligned {
  static_assert(Kernel == 0,
                "hpf::Spatial<G>: this convolution does not split into the input's slabs of rows (planes of a "
                "volume): each member's input rows (height / G; depth / G) must be its output rows times the "
                "stride, as for a 'same' convolution (kernel = 2 pad + 1) or a stride that divides the rows, with "
                "halos no taller than a member's rows");
};

/// \brief A convolution (2-D or 3-D) on slabs of rows (SplitKind::spatial): each member this process
/// holds runs `Inner` (the layer's unsplit kernel: oneDNN or im2col + GEMM) on its rows and halos
/// padded as the whole sample is. The halos of members on other processes travel through the
/// group's edge swaps, forward (input rows) and backward (input-gradient rows), while the
/// member's interior (forward) or weight gradient (backward) is computed; the members' weight
/// gradients are added in the group's fixed tree. Every layout computes the same rows with the
/// same kernels, so one process holding every member gets the same bits as G processes holding
/// one each.
template <class T, class Space, class Inner>
class SpatialConvolution {
 public:
  struct tape_type {
    Buffer<T, Space> from_previous, from_next;  // the forward's halos from other processes
  };

  /// \param whole the layer's geometry (WindowGeometry or VolumeGeometry) on whole samples
  template <class Geometry>
  SpatialConvolution(const Geometry& whole, std::size_t out_channels, bool bias, std::size_t members, std::size_t held)
      : slab_(SlabGeometry::of(whole, members, held)), out_(out_channels), bias_(bias),
        inner_(SlabGeometry::member_geometry(whole, members, slab_.rows), out_channels, bias) {
    if (!slab_.has_interior()) return;  // every output row reads a halo
    const std::size_t begin = slab_.interior_begin(), end = slab_.interior_end();
    const auto make = [&](Band& band, std::size_t first, std::size_t last) {
      band.begin = first;
      band.end = last;
      if (last > first) band.kernel.emplace(SlabGeometry::member_geometry(whole, members, slab_.band_rows(last - first)), out_, bias_);
    };
    make(interior_, begin, end);
    make(top_, 0, begin);
    make(bottom_, end, slab_.out_rows_per_member);
  }

  void bind(ParameterBinder<T, Space>& binder) {
    inner_.bind(binder);
    if (!binder.kernels().interior_first) {
      for (Band* band : {&interior_, &top_, &bottom_}) band->kernel.reset();
    }
    // The rows next to the halos through im2col + GEMM: a vendor convolution reorders its
    // weights on every call, which cost more than the rows themselves (oneDNN, ResNet-20 slabs).
    KernelResources edges = binder.kernels();
    edges.convolution = ConvolutionAlgorithm::gemm;
    if (interior_.kernel) interior_.kernel->share_parameters(inner_, binder.kernels());
    for (Band* band : {&top_, &bottom_}) {
      if (band->kernel) band->kernel->share_parameters(inner_, edges);
    }
    group_ = &binder.kernels().template layer_group<T, Space>();
  }
  /// The tape keeps the halos of members on other processes (none when this process holds all).
  void reserve(tape_type& tape, std::size_t capacity) {
    if (slab_.held == slab_.members) return;
    ensure_capacity(tape.from_previous, halo(slab_.pad, capacity), "hpf::SpatialConvolution::halo_from_previous");
    ensure_capacity(tape.from_next, halo(slab_.bottom, capacity), "hpf::SpatialConvolution::halo_from_next");
  }
  /// The padded rows of a member, its output rows (when this process holds several members or
  /// computes them in bands), the members' padded input gradients, the edges sent and received,
  /// then the inner kernels' own.
  std::size_t workspace(std::size_t capacity) const {
    std::size_t inner = inner_.workspace(capacity);
    for (const Band* band : {&interior_, &top_, &bottom_}) {
      if (band->kernel) inner = std::max(inner, band->kernel->workspace(capacity));
    }
    return own_workspace(capacity) + inner;
  }

  /// The halos start travelling; under KernelResources::interior_first every held member's
  /// interior rows are computed meanwhile, and once the halos are in, the rows above and below
  /// it (every row at once otherwise, or where none is interior).
  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    trace::Region region("hpf::SpatialConvolution::forward");
    start_input_edges(ctx, x, tape);
    if (interior_.kernel) {
      trace::Region interior("hpf::SpatialConvolution::interior");
      for (std::size_t k = 0; k < slab_.held; ++k) forward_rows(ctx, x, y, tape, k, *interior_.kernel, interior_.begin, interior_.end);
    }
    if (slab_.held < slab_.members) group_->finish_swap_edges();
    for (std::size_t k = 0; k < slab_.held; ++k) {
      if (!interior_.kernel) forward_rows(ctx, x, y, tape, k, inner_, 0, slab_.out_rows_per_member);
      if (top_.kernel) forward_rows(ctx, x, y, tape, k, *top_.kernel, top_.begin, top_.end);
      if (bottom_.kernel) forward_rows(ctx, x, y, tape, k, *bottom_.kernel, bottom_.begin, bottom_.end);
    }
  }

  /// Where other processes hold members, the input gradient comes first and its edges travel to
  /// the neighbours while the weight gradient is computed and summed in the group; each
  /// gradient alone is what both together give, so the bits do not depend on the order.
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    trace::Region region("hpf::SpatialConvolution::backward");
    const std::size_t n = x.extent(1), parameters = out_ * slab_.patch + (bias_ ? out_ : 0);
    ensure_capacity(parts_, slab_.held * parameters, "hpf::SpatialConvolution::member_gradients");
    ensure_capacity(total_, parameters, "hpf::SpatialConvolution::group_gradient");
    Kokkos::deep_copy(ctx.space, Kokkos::subview(parts_, Kokkos::make_pair(std::size_t{0}, slab_.held * parameters)), T(0));
    T* padded_x = ctx.workspace.data();
    T* member_dy = padded_x + padded(n);
    T* padded_dx = member_dy + outputs(n);
    const Context<T, Space> inner_ctx = inner_context(ctx, n);
    const bool want_dx = !is_empty(dx), direct = slab_.held == 1;
    const bool overlap = want_dx && slab_.held < slab_.members;  // the input gradient's edges travel meanwhile
    std::size_t prepared = slab_.held;  // the member whose rows padded_x (and member_dy) hold
    // Member k's input gradient (into its padded rows) and/or weight gradient (into its part).
    const auto gradients = [&](std::size_t k, bool input, bool weights) {
      if (prepared != k) {
        pad_rows(ctx.space, x, tape, k, 0, slab_.rows, padded_x);
        if (!direct) {
          copy_member_rows(ctx.space, member_dy, Activation<T, Space>(const_cast<T*>(dy.data()), out_, n, dy.extent(2)),
                           k, 0, slab_.out_rows_per_member, /*into_whole=*/false);
        }
        prepared = k;
      }
      T* part = parts_.data() + k * parameters;
      inner_.backward_into(inner_ctx, ConstActivation<T, Space>(padded_x, slab_.channels, n, slab_.padded_image()),
                           ConstActivation<T, Space>(direct ? dy.data() : member_dy, out_, n, member_outputs()),
                           input ? Activation<T, Space>(padded_dx + k * padded(n), slab_.channels, n, slab_.padded_image())
                                 : Activation<T, Space>(),
                           weights ? Matrix<T, Space>(part, out_, slab_.patch) : Matrix<T, Space>(),
                           Vector<T, Space>(weights && bias_ ? part + out_ * slab_.patch : nullptr, weights && bias_ ? out_ : 0));
    };
    if (overlap) {
      for (std::size_t k = 0; k < slab_.held; ++k) gradients(k, true, false);
      start_edge_gradients(ctx, padded_dx, n);
      for (std::size_t k = slab_.held; k-- > 0;) gradients(k, false, true);  // the last member's rows are still padded
    } else {
      for (std::size_t k = 0; k < slab_.held; ++k) gradients(k, want_dx, true);
    }
    group_->sum(parts_.data(), parameters, total_.data());
    add_gradient(ctx.space, parameters);
    if (want_dx) input_gradient(ctx, padded_dx, dx);
  }

  // The kernels (public: CUDA forbids device lambdas in private member functions).

  /// Output rows [begin, end) of held member k by `kernel`, from their padded rows, into y.
  void forward_rows(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                    const tape_type& tape, std::size_t k, const Inner& kernel, std::size_t begin, std::size_t end) const {
    const std::size_t n = x.extent(1), in_rows = slab_.band_rows(end - begin);
    T* padded_x = ctx.workspace.data();
    T* member_y = padded_x + padded(n);
    // One member's every row: straight into the layer's output.
    const bool direct = slab_.held == 1 && begin == 0 && end == slab_.out_rows_per_member;
    pad_rows(ctx.space, x, tape, k, begin * slab_.stride, in_rows, padded_x);
    kernel.forward(inner_context(ctx, n), ConstActivation<T, Space>(padded_x, slab_.channels, n, in_rows * slab_.padded_row()),
                   Activation<T, Space>(direct ? y.data() : member_y, out_, n, (end - begin) * slab_.out_row), inner_tape_);
    if (!direct) copy_member_rows(ctx.space, member_y, y, k, begin, end - begin, /*into_whole=*/true);
  }

  /// Sends the rows neighbours on other processes read (the first `bottom` rows to the previous
  /// member, the last `pad` rows to the next) and starts receiving this process's halos into the
  /// tape; finish_swap_edges completes it.
  void start_input_edges(const Context<T, Space>& ctx, ConstActivation<T, Space> x, tape_type& tape) const {
    const std::size_t n = x.extent(1), held_rows = slab_.held * slab_.rows_per_member;
    if (slab_.held == slab_.members) return;  // no member on another process
    T* to_previous = edges(ctx, n);
    T* to_next = to_previous + halo(slab_.bottom, n);
    copy_rows(ctx.space, x.data(), held_rows, 0, to_previous, slab_.bottom, n);
    copy_rows(ctx.space, x.data(), held_rows, held_rows - slab_.pad, to_next, slab_.pad, n);
    group_->start_swap_edges(to_previous, halo(slab_.bottom, n), tape.from_previous.data(), halo(slab_.pad, n), to_next,
                             halo(slab_.pad, n), tape.from_next.data(), halo(slab_.bottom, n));
  }

  /// to[c][j][r] = from[c][j][first + r] for rows r < count of `[C][n][rows * row]` activations.
  void copy_rows(const Space& space, const T* from, std::size_t from_rows, std::size_t first, T* to, std::size_t count,
                 std::size_t n) const {
    if (count == 0) return;
    const std::size_t w = slab_.row(), planes = slab_.channels * n;
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::halo_rows", Kokkos::RangePolicy<Space>(space, 0, planes * count), KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / count, r = item % count;
          const T* src = from + (plane * from_rows + first + r) * w;
          T* dst = to + (plane * count + r) * w;
          for (std::size_t i = 0; i < w; ++i) dst[i] = src[i];
        });
  }

  /// Padded rows [first, first + count) of member k (of those held), from its rows and halos,
  /// padded as the whole sample is: zeros outside it. Rows of the member's own read x alone.
  void pad_rows(const Space& space, ConstActivation<T, Space> x, const tape_type& tape, std::size_t k, std::size_t first_row,
                std::size_t count, T* padded_x) const {
    const SlabGeometry s = slab_;
    const std::size_t n = x.extent(1), planes = slab_.channels * n;
    const std::size_t first = group_->first_member(), member = first + k, members = s.members;
    const std::size_t held_rows = s.held * s.rows_per_member;
    const T* from_previous = tape.from_previous.data();
    const T* from_next = tape.from_next.data();
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::pad_rows", Kokkos::RangePolicy<Space>(space, 0, planes * count),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / count, r = item % count;
          T* out = padded_x + (plane * count + r) * s.padded_row();
          // Global row of padded row first_row + r (signed: the rows above the image are negative).
          const std::ptrdiff_t row =
              static_cast<std::ptrdiff_t>(member * s.rows_per_member + first_row + r) - static_cast<std::ptrdiff_t>(s.pad);
          const std::ptrdiff_t held_begin = static_cast<std::ptrdiff_t>(first * s.rows_per_member);
          const std::ptrdiff_t held_end = held_begin + static_cast<std::ptrdiff_t>(held_rows);
          const T* src = nullptr;
          if (row < 0 || row >= static_cast<std::ptrdiff_t>(members * s.rows_per_member)) {
            src = nullptr;  // the whole image's padding
          } else if (row < held_begin) {
            src = from_previous +
                  (plane * s.pad + static_cast<std::size_t>(row - (held_begin - static_cast<std::ptrdiff_t>(s.pad)))) * s.row();
          } else if (row >= held_end) {
            src = from_next + (plane * s.bottom + static_cast<std::size_t>(row - held_end)) * s.row();
          } else {
            src = &x(plane / n, plane % n, static_cast<std::size_t>(row - held_begin) * s.row());
          }
          s.pad_row(src, out);
        });
  }

  /// Output rows [first, first + count) of held member k between a `[O][n][count * OW]` buffer
  /// and the whole `[O][n][...]` activation this process holds (into_whole: from `member` into `whole`).
  void copy_member_rows(const Space& space, T* member, Activation<T, Space> whole, std::size_t k, std::size_t first,
                        std::size_t count, bool into_whole) const {
    const std::size_t n = whole.extent(1), per_member = count * slab_.out_row, per_plane = whole.extent(2);
    const std::size_t offset = k * member_outputs() + first * slab_.out_row;
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::member_rows", Kokkos::RangePolicy<Space>(space, 0, out_ * n), KOKKOS_LAMBDA(const std::size_t plane) {
          T* own = member + plane * per_member;
          T* all = whole.data() + plane * per_plane + offset;
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
    const std::size_t weights = out_ * slab_.patch;
    const T* total = total_.data();
    T* const weight_grad = inner_.weight_gradient().data();
    T* const bias_grad = inner_.bias_gradient().data();
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::add_group_gradient", Kokkos::RangePolicy<Space>(space, 0, parameters), KOKKOS_LAMBDA(const std::size_t i) {
          if (i < weights) {
            weight_grad[i] += total[i];
          } else {
            bias_grad[i - weights] += total[i];
          }
        });
  }

  /// Sends the rows of the held members' padded input gradients that belong to neighbours on other
  /// processes (above the first held member to the previous one, below the last to the next) and
  /// starts receiving theirs.
  void start_edge_gradients(const Context<T, Space>& ctx, const T* padded_dx, std::size_t n) const {
    const SlabGeometry s = slab_;
    T* to_previous = edges(ctx, n);
    T* to_next = to_previous + halo(s.pad, n);
    T* from_previous = to_next + halo(s.bottom, n);
    T* from_next = from_previous + halo(s.bottom, n);
    crop_rows(ctx.space, padded_dx, 0, to_previous, s.pad, n);
    crop_rows(ctx.space, padded_dx + (s.held - 1) * slab_.channels * n * s.padded_image(), s.pad + s.rows_per_member, to_next,
              s.bottom, n);
    group_->start_swap_edges(to_previous, halo(s.pad, n), from_previous, halo(s.bottom, n), to_next, halo(s.bottom, n),
                             from_next, halo(s.pad, n));
  }

  /// dx of the held rows: every member's padded input gradient that covers a row, added in the
  /// members' order (the one before, the row's own, the one after), those of other processes'
  /// members received through the edge swap start_edge_gradients began.
  void input_gradient(const Context<T, Space>& ctx, const T* padded_dx, Activation<T, Space> dx) const {
    const SlabGeometry s = slab_;
    const std::size_t n = dx.extent(1), planes = slab_.channels * n, image = s.padded_image();
    const std::size_t first = group_->first_member(), held_rows = s.held * s.rows_per_member;
    const T* from_previous = edges(ctx, n) + halo(s.pad, n) + halo(s.bottom, n);
    const T* from_next = from_previous + halo(s.bottom, n);
    if (s.held < s.members) group_->finish_swap_edges();
    const bool has_previous = first > 0, has_next = first + s.held < s.members;
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::input_gradient", Kokkos::RangePolicy<Space>(ctx.space, 0, planes * held_rows),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / held_rows, local_row = item % held_rows;
          const std::size_t k = local_row / s.rows_per_member, r = local_row % s.rows_per_member;  // held member, its row
          // The row in the padded gradient of member k - 1, k and k + 1 when they cover it (or as
          // received from another process's member, without padding).
          const T* before = nullptr;
          bool before_padded = true;
          if (r < s.bottom) {
            if (k > 0) {
              before = padded_dx + ((k - 1) * planes + plane) * image + (s.pad + s.rows_per_member + r) * s.padded_row();
            } else if (has_previous) {
              before = from_previous + (plane * s.bottom + r) * s.row();
              before_padded = false;
            }
          }
          const T* own = s.pad + r < s.rows ? padded_dx + (k * planes + plane) * image + (s.pad + r) * s.padded_row() : nullptr;
          const T* after = nullptr;
          bool after_padded = true;
          if (r + s.pad >= s.rows_per_member) {
            const std::size_t above = r + s.pad - s.rows_per_member;  // row of the next member's top halo
            if (k + 1 < s.held) {
              after = padded_dx + ((k + 1) * planes + plane) * image + above * s.padded_row();
            } else if (has_next) {
              after = from_next + (plane * s.pad + above) * s.row();
              after_padded = false;
            }
          }
          T* out = dx.data() + (plane * held_rows + local_row) * s.row();
          s.for_each_value([&](std::size_t i, std::size_t at) {
            T sum = T(0);
            if (before) sum += before[before_padded ? at : i];
            if (own) sum += own[at];
            if (after) sum += after[after_padded ? at : i];
            out[i] = sum;
          });
        });
  }

  /// to[c][j][r] = rows first + r < count of the padded gradient, without their padding.
  void crop_rows(const Space& space, const T* padded, std::size_t first, T* to, std::size_t count, std::size_t n) const {
    if (count == 0) return;
    const SlabGeometry s = slab_;
    const std::size_t planes = slab_.channels * n, image = s.padded_image();
    Kokkos::parallel_for(
        "hpf::SpatialConvolution::halo_gradient_rows", Kokkos::RangePolicy<Space>(space, 0, planes * count),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t plane = item / count, r = item % count;
          const T* src = padded + plane * image + (first + r) * s.padded_row();
          T* dst = to + (plane * count + r) * s.row();
          s.for_each_value([&](std::size_t i, std::size_t at) { dst[i] = src[at]; });
        });
  }

 private:
  std::size_t halo(std::size_t rows, std::size_t n) const { return slab_.channels * n * rows * slab_.row(); }
  std::size_t padded(std::size_t n) const { return slab_.channels * n * slab_.padded_image(); }
  std::size_t member_outputs() const { return slab_.member_outputs(); }
  std::size_t outputs(std::size_t n) const {
    return slab_.held > 1 || interior_.kernel ? out_ * n * member_outputs() : 0;
  }
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

  /// Output rows [begin, end) of each member, and the kernel that computes them with inner_'s
  /// parameters (none where the rows are empty).
  struct Band {
    std::size_t begin = 0, end = 0;
    std::optional<Inner> kernel;
  };

  SlabGeometry slab_;
  std::size_t out_;
  bool bias_;
  Inner inner_;                 // every row of a member: backward, and forward without an interior
  Band interior_, top_, bottom_;  // forward: the interior while halos travel, then the rows that read them
  mutable typename Inner::tape_type inner_tape_{};
  const LayerGroup<T, Space>* group_ = nullptr;
  mutable Buffer<T, Space> parts_, total_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_SPATIAL_CONVOLUTION_HPP
