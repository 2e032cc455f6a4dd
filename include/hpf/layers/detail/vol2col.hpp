// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_VOL2COL_HPP
#define HPF_LAYERS_DETAIL_VOL2COL_HPP

#include <hpf/layers/detail/im2col.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// Columns for volumes [first, first + count) of x `[C][N][D*H*W]` (im2col in three dimensions):
///   col[((c*K + kd)*K + kh)*K + kw][j*OD*OH*OW + (od*OH + oh)*OW + ow] = x[c][first + j][(id*H + ih)*W + iw],
/// id = od*S - P + kd (likewise ih, iw), zero outside the volume. One work item per (patch row,
/// volume) writes OD*OH*OW contiguous values, a plane at a time through im2col_plane.
template <class T, class Space>
void vol2col(const Space& space, const VolumeGeometry& g, ConstActivation<T, Space> x, std::size_t first,
             std::size_t count, Matrix<T, Space> col) {
  const std::size_t k = g.kernel(), k2 = k * k, k3 = k2 * k;
  Kokkos::parallel_for(
      "hpf::vol2col", Kokkos::RangePolicy<Space>(space, 0, g.patch() * count),
      KOKKOS_LAMBDA(const std::size_t item) {
        const std::size_t row = item / count, j = item % count;
        const std::size_t c = row / k3, kd = (row % k3) / k2, kh = (row % k2) / k, kw = row % k;
        const std::size_t plane_in = g.plane.in_spatial(), plane_out = g.plane.out_spatial();
        const T* volume = &x(c, first + j, 0);
        T* out = &col(row, j * g.out_spatial());
        for (std::size_t od = 0; od < g.out_depth; ++od) {
          T* out_plane = out + od * plane_out;
          std::size_t id = 0;
          if (g.input_slice(od, kd, id)) {
            im2col_plane(g.plane, kh, kw, volume + id * plane_in, out_plane);
          } else {
            for (std::size_t o = 0; o < plane_out; ++o) out_plane[o] = T(0);
          }
        }
      });
}

/// Adjoint of vol2col, gathering: dx[c][first + j][(id*H + ih)*W + iw] = the sum of the col
/// entries vol2col copied from that voxel, in the order kd, kh, kw, ow. One work item per input
/// row writes it alone (no atomics), so the sums are the same whatever the thread count.
template <class T, class Space>
void col2vol(const Space& space, const VolumeGeometry& g, Matrix<const T, Space> col, std::size_t first,
             std::size_t count, Activation<T, Space> dx) {
  const std::size_t rows_per_volume = g.depth * g.plane.height;
  Kokkos::parallel_for(
      "hpf::col2vol", Kokkos::RangePolicy<Space>(space, 0, g.channels() * count * rows_per_volume),
      KOKKOS_LAMBDA(const std::size_t item) {
        const std::size_t c = item / (count * rows_per_volume);
        const std::size_t j = (item / rows_per_volume) % count, r = item % rows_per_volume;
        const std::size_t id = r / g.plane.height, ih = r % g.plane.height, k = g.kernel();
        T* out = &dx(c, first + j, r * g.plane.width);
        for (std::size_t iw = 0; iw < g.plane.width; ++iw) out[iw] = T(0);
        for (std::size_t kd = 0; kd < k; ++kd) {
          std::size_t od = 0;
          if (!g.output_slice(id, kd, od)) continue;
          col2im_row(g.plane, ih, &col((c * k + kd) * k * k, j * g.out_spatial() + od * g.plane.out_spatial()),
                     col.stride(0), out);
        }
      });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_VOL2COL_HPP
