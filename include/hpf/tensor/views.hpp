// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_VIEWS_HPP
#define HPF_TENSOR_VIEWS_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace hpf {

/// Memory space that an execution space's kernels read and write.
template <class Space>
using memory_space_t = typename Space::memory_space;

/// \brief A batch of activations: `[C][N][S]` (channel, sample, spatial position H*W), row-major,
/// in Space's memory. Channel-major with the batch folded into the spatial extent lets one GEMM
/// cover a whole (chunk of a) batch for convolutions and dense layers alike, and makes BatchNorm's
/// per-channel reductions contiguous. Parameters follow PyTorch's layouts; only activations differ.
/// Views of this type never own memory: buffers own it (see Buffer).
template <class T, class Space>
using Activation = Kokkos::View<T***, Kokkos::LayoutRight, memory_space_t<Space>,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// A read-only batch of activations.
template <class T, class Space>
using ConstActivation = Kokkos::View<const T***, Kokkos::LayoutRight, memory_space_t<Space>,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Row-major, non-owning matrix (the layout all GEMM operands share, so KokkosBlas::gemm reaches
/// the vendor BLAS: mixed layouts fall back to a 20x slower native kernel).
template <class T, class Space>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, memory_space_t<Space>,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Non-owning vector.
template <class T, class Space>
using Vector = Kokkos::View<T*, Kokkos::LayoutRight, memory_space_t<Space>,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Owning flat storage in Space's memory; shaped views are carved out of it.
template <class T, class Space>
using Buffer = Kokkos::View<T*, memory_space_t<Space>>;

/// Non-owning view of `Data` (e.g. `float**`) in the memory of view V.
template <class Data, class V>
using unmanaged_like_t = Kokkos::View<Data, Kokkos::LayoutRight, typename V::memory_space,
                                      Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// `[C][N][S]` view over the first C*N*S elements of a flat buffer (which must be large enough).
/// The result is `Activation<T, Space>` for any Space sharing the buffer's memory space.
template <class FlatView>
unmanaged_like_t<typename FlatView::value_type***, FlatView> activation_view(
    const FlatView& buffer, std::size_t channels, std::size_t batch, std::size_t spatial) {
  static_assert(FlatView::rank == 1, "hpf::activation_view: expects a flat (rank-1) buffer");
  KOKKOS_ASSERT(buffer.extent(0) >= channels * batch * spatial);
  return unmanaged_like_t<typename FlatView::value_type***, FlatView>(buffer.data(), channels, batch,
                                                                       spatial);
}

/// The memory of a `[C][N][S]` activation as a `[C][N*S]` matrix.
template <class ActivationView>
unmanaged_like_t<typename ActivationView::value_type**, ActivationView> as_matrix(const ActivationView& a) {
  static_assert(ActivationView::rank == 3, "hpf::as_matrix: expects a [C][N][S] activation");
  return unmanaged_like_t<typename ActivationView::value_type**, ActivationView>(
      a.data(), a.extent(0), a.extent(1) * a.extent(2));
}

/// True for the empty view a caller passes as `dx` when it does not need the input gradient.
template <class View>
bool is_empty(const View& v) {
  return v.data() == nullptr;
}

/// Host copy of `size` elements of a flat buffer from `offset` on (any memory space).
template <class FlatView>
std::vector<typename FlatView::non_const_value_type> read_range(const FlatView& buffer, std::size_t offset, std::size_t size) {
  using T = typename FlatView::non_const_value_type;
  std::vector<T> out(size);
  Kokkos::deep_copy(Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(out.data(), size),
                    Kokkos::subview(buffer, Kokkos::make_pair(offset, offset + size)));
  return out;
}
/// Overwrites `values.size()` elements of a flat buffer from `offset` on with host values.
template <class FlatView>
void write_range(const FlatView& buffer, std::size_t offset, const std::vector<typename FlatView::non_const_value_type>& values) {
  using T = typename FlatView::non_const_value_type;
  Kokkos::deep_copy(Kokkos::subview(buffer, Kokkos::make_pair(offset, offset + values.size())),
                    Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values.data(), values.size()));
}

/// Grows a flat buffer to hold at least `elements` (never shrinks; contents are not kept).
template <class FlatView>
void ensure_capacity(FlatView& buffer, std::size_t elements, const char* label) {
  if (buffer.extent(0) < elements) {
    buffer = FlatView(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), elements);
  }
}

}  // namespace hpf

#endif  // HPF_TENSOR_VIEWS_HPP
