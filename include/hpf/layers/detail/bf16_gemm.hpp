// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_BF16_GEMM_HPP
#define HPF_LAYERS_DETAIL_BF16_GEMM_HPP

#include <hpf/config.hpp>
#include <hpf/layers/detail/bf16_staging.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/system/blas_threads.hpp>
#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/views.hpp>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#if HPF_ENABLE_ONEDNN
#include <dnnl.hpp>
#endif

// cuBLAS where KokkosKernels was built with it (its config header, through KokkosBlas3_gemm.hpp,
// says so): KokkosKernels' GEMM has no bf16 inputs with float results, cuBLAS's GemmEx does.
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#define HPF_BF16_CUBLAS 1
#include <cublas_v2.h>
#else
#define HPF_BF16_CUBLAS 0
#endif

namespace hpf::detail {

/// Says once per process why bf16 products are emulated.
inline void note_bf16_emulated(const std::string& why) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::cerr << "hpf: MatmulPrecision::bf16 is emulated in float (" << why
              << "): the same results as bf16 products, at float's speed" << std::endl;
}

/// `value` rounded to bf16, as its bits or as the float it is.
template <class Out>
KOKKOS_INLINE_FUNCTION Out bf16_as(float value) {
  if constexpr (std::is_same_v<Out, bf16_bits>) {
    return to_bf16(value);
  } else {
    return round_to_bf16(value);
  }
}

/// out = matrix `m` rounded to bf16 (bits or floats), contiguous row-major, on Space. On the host a
/// row at a time, so that the compiler vectorizes the rounding over a contiguous row. (A free
/// function: CUDA forbids device lambdas in private member functions.)
template <class Space, class M, class Out>
void round_to_bf16_copy(const M& m, Out* out) {
  const std::size_t rows = m.extent(0), cols = m.extent(1);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible) {
    const float* data = m.data();
    const std::size_t ld = static_cast<std::size_t>(m.stride_0()), step = static_cast<std::size_t>(m.stride_1());
    Kokkos::parallel_for("hpf::bf16::convert", Kokkos::RangePolicy<Space>(0, rows), [=](const std::size_t i) {
      const float* row = data + i * ld;
      Out* to = out + i * cols;
      if (step == 1) {
        for (std::size_t j = 0; j < cols; ++j) to[j] = bf16_as<Out>(row[j]);
      } else {
        for (std::size_t j = 0; j < cols; ++j) to[j] = bf16_as<Out>(row[j * step]);
      }
    });
  } else {
    Kokkos::parallel_for("hpf::bf16::convert", Kokkos::RangePolicy<Space>(0, rows * cols),
                         KOKKOS_LAMBDA(const std::size_t i) { out[i] = bf16_as<Out>(m(i / cols, i % cols)); });
  }
  Space().fence();
}

/// \brief Float products with bfloat16 inputs, C = alpha op(A) op(B) + beta C: each input rounded
/// to the nearest bf16, products and sums in float (MatmulPrecision::bf16). One per network,
/// shared by its layers, which run one after another: it holds the operands' bf16 copies.
///
/// On the host with oneDNN, a product of 2^20 or more multiply-adds is oneDNN's bf16 matmul
/// (AVX512-BF16 or AMX where the CPU has them). On CUDA with cuBLAS every product is cuBLAS's
/// GemmEx on bf16 copies with float results and float sums (CUBLAS_COMPUTE_32F: the tensor cores
/// from Ampere on). Smaller host products, and all where neither has a bf16 kernel, round the
/// inputs in float copies and run the float GEMM: the product of two bf16 numbers is exact in
/// float, so this is the same arithmetic, summed in the BLAS's order.
template <class Space>
class Bf16Gemm : public KernelResources::SharedState {
  using memory_space = memory_space_t<Space>;
  static constexpr bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
#if HPF_BF16_CUBLAS
  static constexpr bool on_cuda = std::is_same_v<Space, Kokkos::Cuda>;
#else
  static constexpr bool on_cuda = false;
#endif

 public:
  explicit Bf16Gemm(const KernelResources& kernels) {
#if HPF_ENABLE_ONEDNN
    if constexpr (on_host) device_ = kernels.onednn();
#endif
    (void)kernels;
  }

  /// Whether products run on bf16 kernels: oneDNN's (those of vendor_min_products or more) or
  /// cuBLAS's (all). False: all are emulated in float.
  bool vendor() const {
    if constexpr (on_cuda) return !vendor_failed_;
#if HPF_ENABLE_ONEDNN
    if constexpr (on_host) return !vendor_failed_;
#endif
    return false;
  }

  template <class AView, class BView, class CView>
  void operator()(const char* trans_a, const char* trans_b, float alpha, const AView& a, const BView& b, float beta,
                  const CView& c) {
    const bool ta = *trans_a == 'T';
    [[maybe_unused]] const bool tb = *trans_b == 'T';  // read by the vendors' paths only
    const std::size_t k = ta ? a.extent(0) : a.extent(1);
#if HPF_BF16_CUBLAS
    if constexpr (on_cuda) {
      const bool rows_of_c = c.stride_1() == 1 && static_cast<std::size_t>(c.stride_0()) >= c.extent(1);  // ldc
      if (!vendor_failed_ && k > 0 && c.extent(0) > 0 && c.extent(1) > 0 && rows_of_c &&
          cublas_product(ta, tb, k, alpha, a, b, beta, c))
        return;
    }
#endif
#if HPF_ENABLE_ONEDNN
    if constexpr (on_host) {
      const std::size_t products = c.extent(0) * c.extent(1) * k;
      if (!vendor_failed_ && products >= vendor_min_products && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
          vendor_product(ta, tb, a, b, beta, c))
        return;
    }
#endif
    tell_staging({.rounded_a = a.extent(0) * a.extent(1), .rounded_b = b.extent(0) * b.extent(1)});
    const auto rounded_a = stage(a, rounded_a_);
    const auto rounded_b = stage(b, rounded_b_);
    // Where oneDNN's threads run the large products, the small ones run on one (BlasOnOneThread).
    std::optional<system::BlasOnOneThread> one_thread;
    if (on_host && vendor() && c.extent(0) * c.extent(1) * k < vendor_min_products) {
      one_thread.emplace();
    } else {
      system::note_blas_call();
    }
    KokkosBlas::gemm(trans_a, trans_b, alpha, rounded_a, rounded_b, beta, c);
  }

 private:
  using Rounded = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  /// Products below this many multiply-adds are emulated even where oneDNN has bf16 kernels: a
  /// oneDNN call costs 10-20 us more than a GEMM's, which an attention head's 64 x 64 x 16 products
  /// (65536) do not earn back (a GPT step took 2.1x float's time with them on oneDNN). The same
  /// results either way, up to the order of float sums; chosen by shape, so every layout agrees.
  static constexpr std::size_t vendor_min_products = std::size_t{1} << 20;

  /// `m` rounded to bf16, in float, as a contiguous row-major copy in `storage`.
  template <class M>
  Rounded stage(const M& m, Kokkos::View<float*, memory_space>& storage) const {
    grow(storage, m.extent(0) * m.extent(1));
    round_to_bf16_copy<Space>(m, storage.data());
    return Rounded(storage.data(), m.extent(0), m.extent(1));
  }

  static void tell_staging(const Bf16StagingNeed& need) {
    if (const auto& listener = bf16_staging_listener()) listener(need);
  }

  template <class V>
  static void grow(V& storage, std::size_t size) {
    if (storage.extent(0) < size) storage = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, "hpf::bf16::staging"), size);
  }

  /// a and b as bf16 bits, contiguous row-major, one after the other in bits_; b's offset.
  template <class AView, class BView>
  std::size_t stage_bits(const AView& a, const BView& b) {
    const std::size_t a_size = a.extent(0) * a.extent(1), size = a_size + b.extent(0) * b.extent(1);
    tell_staging({.bits = size});
    grow(bits_, size);
    round_to_bf16_copy<Space>(a, bits_.data());
    round_to_bf16_copy<Space>(b, bits_.data() + a_size);
    return a_size;
  }

  Kokkos::View<float*, memory_space> rounded_a_, rounded_b_;
  Kokkos::View<bf16_bits*, memory_space> bits_;
  bool vendor_failed_ = false;

#if HPF_BF16_CUBLAS
  struct CublasHandle {
    cublasHandle_t handle = nullptr;
    CublasHandle() = default;
    CublasHandle(const CublasHandle&) = delete;  // one owner destroys it
    CublasHandle& operator=(const CublasHandle&) = delete;
    ~CublasHandle() {
      if (handle) cublasDestroy(handle);
    }
  };

  /// The product on cuBLAS; false (and emulated from then on, said once) where cuBLAS refuses it,
  /// for example on a GPU without bf16 GEMMs. cuBLAS is column-major: a row-major m x n matrix is
  /// its n x m transpose there, so it computes C^T = op(B)^T op(A)^T with B as its first operand.
  template <class AView, class BView, class CView>
  bool cublas_product(bool ta, bool tb, std::size_t k, float alpha, const AView& a, const BView& b, float beta,
                      const CView& c) {
    if (!cublas_.handle) {
      cublasHandle_t made = nullptr;
      if (cublasCreate(&made) != CUBLAS_STATUS_SUCCESS) return cublas_refused("cublasCreate failed");
      cublas_.handle = made;
      // The stream Space's kernels run on: the rounding before and the layers after stay ordered.
      if (cublasSetStream(made, Space().cuda_stream()) != CUBLAS_STATUS_SUCCESS) return cublas_refused("cublasSetStream failed");
    }
    const std::size_t b_offset = stage_bits(a, b);
    const auto op = [](bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; };
    const cublasStatus_t status =
        cublasGemmEx(cublas_.handle, op(tb), op(ta), static_cast<int>(c.extent(1)), static_cast<int>(c.extent(0)),
                     static_cast<int>(k), &alpha, bits_.data() + b_offset, CUDA_R_16BF, static_cast<int>(b.extent(1)),
                     bits_.data(), CUDA_R_16BF, static_cast<int>(a.extent(1)), &beta, c.data(), CUDA_R_32F,
                     static_cast<int>(c.stride_0()), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS)
      return cublas_refused(std::string("cublasGemmEx with bf16 inputs: ") + cublasGetStatusString(status));
    return true;
  }

  bool cublas_refused(const std::string& why) {
    vendor_failed_ = true;
    note_bf16_emulated(why);
    return false;
  }

  CublasHandle cublas_;
#endif

#if HPF_ENABLE_ONEDNN
  using dims = dnnl::memory::dims;
  /// (op(A) transposed, op(B) transposed, C added to, A's extents, B's extents, C's strides).
  using Key = std::tuple<bool, bool, bool, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t>;
  struct Product {
    dnnl::matmul run;
    dnnl::memory::desc a, b, c, scratchpad;
  };

  /// The product on oneDNN's bf16 matmul; false (and emulated from then on) when it has none here.
  template <class AView, class BView, class CView>
  bool vendor_product(bool ta, bool tb, const AView& a, const BView& b, float beta, const CView& c) {
    const Product* p = product(ta, tb, a, b, beta, c);
    if (!p) return false;
    const std::size_t a_size = stage_bits(a, b);
    scratchpad_.resize(p->scratchpad.get_size());
    const dnnl::engine& engine = device_->engine;
    dnnl::stream& stream = device_->stream;
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(p->a, engine, bits_.data())},
                                               {DNNL_ARG_WEIGHTS, dnnl::memory(p->b, engine, bits_.data() + a_size)},
                                               {DNNL_ARG_DST, dnnl::memory(p->c, engine, c.data())}};
    if (!scratchpad_.empty()) args.insert({DNNL_ARG_SCRATCHPAD, dnnl::memory(p->scratchpad, engine, scratchpad_.data())});
    system::yield_blas_pool();
    p->run.execute(stream, args);
    stream.wait();
    return true;
  }

  /// op(m) of a contiguous row-major rows x cols bf16 copy, as oneDNN's strided descriptor.
  static dnnl::memory::desc operand(std::size_t rows, std::size_t cols, bool transposed) {
    const auto r = static_cast<dnnl::memory::dim>(rows), c = static_cast<dnnl::memory::dim>(cols);
    return transposed ? dnnl::memory::desc({c, r}, dnnl::memory::data_type::bf16, dims{1, c})
                      : dnnl::memory::desc({r, c}, dnnl::memory::data_type::bf16, dims{c, 1});
  }

  template <class AView, class BView, class CView>
  const Product* product(bool ta, bool tb, const AView& a, const BView& b, float beta, const CView& c) {
    const Key key{ta,          tb,          beta != 0.0f,
                  a.extent(0), a.extent(1), b.extent(0),
                  b.extent(1), static_cast<std::size_t>(c.stride_0()), static_cast<std::size_t>(c.stride_1())};
    const auto found = products_.find(key);
    if (found != products_.end()) return &found->second;
    try {
      Product p;
      p.a = operand(a.extent(0), a.extent(1), ta);
      p.b = operand(b.extent(0), b.extent(1), tb);
      p.c = dnnl::memory::desc({static_cast<dnnl::memory::dim>(c.extent(0)), static_cast<dnnl::memory::dim>(c.extent(1))},
                               dnnl::memory::data_type::f32,
                               dims{static_cast<dnnl::memory::dim>(c.stride_0()), static_cast<dnnl::memory::dim>(c.stride_1())});
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the network's, not oneDNN's one global buffer
      if (beta != 0.0f) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
      }
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), attr, device_->engine);
      p.scratchpad = pd.scratchpad_desc();
      p.run = dnnl::matmul(pd);
      return &products_.emplace(key, std::move(p)).first->second;
    } catch (const dnnl::error& e) {  // "could not create a primitive descriptor": no bf16 kernel for this CPU
      vendor_failed_ = true;
      note_bf16_emulated(std::string("oneDNN has no bf16 matmul on this CPU: ") + e.what());
      return nullptr;
    }
  }

  std::shared_ptr<OneDnnDevice> device_;
  std::vector<std::byte> scratchpad_;
  std::map<Key, Product> products_;
#endif
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_BF16_GEMM_HPP
