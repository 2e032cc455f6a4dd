// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_GEMM_HPP
#define HPF_LAYERS_DETAIL_GEMM_HPP

#include <hpf/layers/detail/bf16_gemm.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/system/blas_threads.hpp>
#include <hpf/tensor/views.hpp>

#include <KokkosBlas3_gemm.hpp>

#include <memory>
#include <type_traits>

namespace hpf::detail {

/// C = alpha * op(A) * op(B) + beta * C on row-major views of one memory space. Goes through
/// KokkosBlas::gemm, which reaches the vendor BLAS (OpenBLAS here, cuBLAS on CUDA builds).
/// `trans_a`/`trans_b` are "N" or "T". Empty products still scale C, as BLAS does.
template <class AView, class BView, class CView>
void gemm(const char* trans_a, const char* trans_b, typename CView::const_value_type alpha,
          const AView& a, const BView& b, typename CView::const_value_type beta, const CView& c) {
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  system::note_blas_call();
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
}

/// \brief A layer's matrix products in the network's MatmulPrecision: `gemm` above, or for float
/// layers under MatmulPrecision::bf16 the network's Bf16Gemm. Set when the layer binds.
template <class T, class Space>
class Gemm {
 public:
  Gemm() = default;
  explicit Gemm(const KernelResources& kernels) : Gemm(kernels, kernels.matmul_precision) {}
  /// Products in `precision` instead of the network's (a layer's own choice: convolution_precision).
  Gemm(const KernelResources& kernels, MatmulPrecision precision) {
    if constexpr (std::is_same_v<T, float>)
      if (precision == MatmulPrecision::bf16) bf16_ = kernels.shared_state<Bf16Gemm<Space>>();
  }

  template <class AView, class BView, class CView>
  void operator()(const char* trans_a, const char* trans_b, T alpha, const AView& a, const BView& b, T beta,
                  const CView& c) const {
    if constexpr (std::is_same_v<T, float>) {
      if (bf16_) {
        if (c.extent(0) > 0 && c.extent(1) > 0) (*bf16_)(trans_a, trans_b, alpha, a, b, beta, c);
        return;
      }
    }
    gemm(trans_a, trans_b, alpha, a, b, beta, c);
  }

 private:
  std::shared_ptr<Bf16Gemm<Space>> bf16_;
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_GEMM_HPP
