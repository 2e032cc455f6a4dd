// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_GEMM_HPP
#define HPF_LAYERS_DETAIL_GEMM_HPP

#include <hpf/tensor/views.hpp>

#include <KokkosBlas3_gemm.hpp>

namespace hpf::detail {

/// C = alpha * op(A) * op(B) + beta * C on row-major views of one memory space. Goes through
/// KokkosBlas::gemm, which reaches the vendor BLAS (OpenBLAS here, cuBLAS on CUDA builds).
/// `trans_a`/`trans_b` are "N" or "T". Empty products still scale C, as BLAS does.
template <class AView, class BView, class CView>
void gemm(const char* trans_a, const char* trans_b, typename CView::const_value_type alpha,
          const AView& a, const BView& b, typename CView::const_value_type beta, const CView& c) {
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_GEMM_HPP
