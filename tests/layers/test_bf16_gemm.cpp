// Bf16Gemm: float products of bf16-rounded inputs, on oneDNN's bf16 matmul or emulated in float.
// Also run with ONEDNN_MAX_CPU_ISA=AVX2 (CTest), where oneDNN has no bf16 kernel: the emulation.
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/random.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultHostExecutionSpace;
using HostMatrix = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace>;

HostMatrix random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  HostMatrix m("m", rows, cols);
  hpf::Rng rng(seed, "bf16_gemm");
  for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  return m;
}

/// op(m)(i, j).
float at(const HostMatrix& m, bool transposed, std::size_t i, std::size_t j) { return transposed ? m(j, i) : m(i, j); }

/// The largest error of c against alpha op(A) op(B) + beta c0 in double, with A and B rounded
/// to bf16 when `round` (else as they are), relative to the largest |entry| of the product.
double worst_error(const HostMatrix& c, const HostMatrix& c0, const HostMatrix& a, const HostMatrix& b, bool ta, bool tb,
                   float beta, bool round) {
  const std::size_t k = ta ? a.extent(0) : a.extent(1);
  const auto r = [&](float v) { return round ? static_cast<double>(hpf::round_to_bf16(v)) : static_cast<double>(v); };
  double worst = 0, scale = 0;
  std::vector<double> expected(c.size());
  for (std::size_t i = 0; i < c.extent(0); ++i)
    for (std::size_t j = 0; j < c.extent(1); ++j) {
      double sum = beta * c0(i, j);
      for (std::size_t p = 0; p < k; ++p) sum += r(at(a, ta, i, p)) * r(at(b, tb, p, j));
      expected[i * c.extent(1) + j] = sum;
      scale = std::max(scale, std::abs(sum));
    }
  for (std::size_t i = 0; i < c.extent(0); ++i)
    for (std::size_t j = 0; j < c.extent(1); ++j) worst = std::max(worst, std::abs(c(i, j) - expected[i * c.extent(1) + j]));
  return worst / scale;
}

/// A network's kernel choices with bf16 products.
hpf::KernelResources bf16_kernels() {
  hpf::KernelResources kernels;
  kernels.matmul_precision = hpf::MatmulPrecision::bf16;
  return kernels;
}

#if HPF_ENABLE_ONEDNN
bool oneDnn_limited_below_avx512() {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  return isa && std::string(isa).rfind("AVX2", 0) == 0;
}
#endif

}  // namespace

TEST_CASE("Bf16Gemm: inputs rounded to bf16, products summed in float, for every transposition") {
  const hpf::detail::Gemm<float, Space> gemm(bf16_kernels());
  const std::size_t m = 70, n = 61, k = 300;  // 1.3M multiply-adds: oneDNN's where it has bf16 kernels
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const float beta : {0.0f, 1.0f}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(beta);
        const HostMatrix a = ta ? random_matrix(k, m, 1) : random_matrix(m, k, 1);
        const HostMatrix b = tb ? random_matrix(n, k, 2) : random_matrix(k, n, 2);
        const HostMatrix c0 = random_matrix(m, n, 3);
        HostMatrix c("c", m, n);
        Kokkos::deep_copy(c, c0);
        gemm(ta ? "T" : "N", tb ? "T" : "N", 1.0f, a, b, beta, c);
        // Float sums of exact products: within a few float roundings per term of the rounded product.
        CHECK(worst_error(c, c0, a, b, ta, tb, beta, /*round=*/true) < 1e-5);
        // ... and bf16's rounding shows against the unrounded inputs (2^-9 relative per input).
        CHECK(worst_error(c, c0, a, b, ta, tb, beta, /*round=*/false) > 1e-4);
      }
}

TEST_CASE("Bf16Gemm on the default execution space: cuBLAS's bf16 GEMM in a CUDA build with cuBLAS") {
  using Device = Kokkos::DefaultExecutionSpace;
  using DeviceMatrix = Kokkos::View<float**, Kokkos::LayoutRight, Device::memory_space>;
  hpf::detail::Bf16Gemm<Device> products(bf16_kernels());
  const std::size_t m = 70, n = 61, k = 300;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const HostMatrix a = ta ? random_matrix(k, m, 11) : random_matrix(m, k, 11);
      const HostMatrix b = tb ? random_matrix(n, k, 12) : random_matrix(k, n, 12);
      const HostMatrix c0 = random_matrix(m, n, 13);
      const auto on_device = [](const HostMatrix& h) {
        DeviceMatrix d("d", h.extent(0), h.extent(1));
        Kokkos::deep_copy(d, h);
        return d;
      };
      const DeviceMatrix c = on_device(c0);
      products(ta ? "T" : "N", tb ? "T" : "N", 0.5f, on_device(a), on_device(b), 1.0f, c);
      HostMatrix result("result", m, n);
      Kokkos::deep_copy(result, c);
      for (std::size_t i = 0; i < result.size(); ++i) result.data()[i] = 2 * result.data()[i] - c0.data()[i];
      CHECK(worst_error(result, c0, a, b, ta, tb, 1.0f, /*round=*/true) < 1e-5);
      CHECK(worst_error(result, c0, a, b, ta, tb, 1.0f, /*round=*/false) > 1e-4);
    }
#if HPF_BF16_CUBLAS
  CHECK(products.vendor());  // every GPU with bf16 GEMMs (compute capability 8.0 on) takes it
#endif
}

TEST_CASE("Bf16Gemm: into columns of a wider matrix, and with alpha other than 1") {
  const hpf::detail::Gemm<float, Space> gemm(bf16_kernels());
  const std::size_t m = 64, n = 96, k = 200;  // 1.2M multiply-adds
  const HostMatrix a = random_matrix(m, k, 4), b = random_matrix(k, n, 5), wide = random_matrix(m, n + 30, 6);
  const HostMatrix before("before", m, n + 30);
  Kokkos::deep_copy(before, wide);
  const auto part = Kokkos::subview(wide, Kokkos::ALL, Kokkos::make_pair(std::size_t{10}, 10 + n));
  gemm("N", "N", 1.0f, a, b, 1.0f, part);
  HostMatrix c("c", m, n), c0("c0", m, n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      c(i, j) = part(i, j);
      c0(i, j) = before(i, 10 + j);
    }
  CHECK(worst_error(c, c0, a, b, false, false, 1.0f, true) < 1e-5);
  for (std::size_t i = 0; i < m; ++i)  // columns outside the product untouched
    for (std::size_t j : {std::size_t{0}, std::size_t{9}, 10 + n, n + 29}) CHECK(wide(i, j) == before(i, j));

  HostMatrix scaled("scaled", m, n);
  gemm("N", "N", 0.5f, a, b, 0.0f, scaled);  // emulated: oneDNN's path takes alpha 1 only
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) c(i, j) = 2 * scaled(i, j);
  CHECK(worst_error(c, c0, a, b, false, false, 0.0f, true) < 1e-5);
}

TEST_CASE("Bf16Gemm: oneDNN's bf16 matmul where the CPU has one, the emulation where it does not") {
  hpf::detail::Bf16Gemm<Space> products(bf16_kernels());
  const HostMatrix a = random_matrix(128, 64, 7), b = random_matrix(64, 128, 8);  // 1M multiply-adds
  HostMatrix c("c", 128, 128), c0("c0", 128, 128);
  products("N", "N", 1.0f, a, b, 0.0f, c);
  CHECK(worst_error(c, c0, a, b, false, false, 0.0f, true) < 1e-5);
#if HPF_ENABLE_ONEDNN
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  const bool bf16_isa = (isa & avx512) == avx512;  // oneDNN's bf16 GEMM: AVX-512 (native with AVX512-BF16)
  MESSAGE("oneDNN ISA: " << static_cast<int>(dnnl::get_effective_cpu_isa()) << ", bf16 matmul: " << products.vendor());
  if (oneDnn_limited_below_avx512()) CHECK_FALSE(products.vendor());
  if (bf16_isa) CHECK(products.vendor());
#else
  CHECK_FALSE(products.vendor());
#endif
}

TEST_CASE("Bf16Gemm: small products are emulated, with the same results") {
  hpf::detail::Bf16Gemm<Space> products(bf16_kernels());
  const HostMatrix a = random_matrix(64, 16, 9), b = random_matrix(16, 64, 10);  // 16K multiply-adds
  HostMatrix c("c", 16, 16), c0("c0", 16, 16);
  products("T", "T", 1.0f, a, b, 0.0f, c);
  CHECK(worst_error(c, c0, a, b, true, true, 0.0f, true) < 1e-5);
}

TEST_CASE("Gemm: full precision is the plain GEMM") {
  const hpf::detail::Gemm<float, Space> gemm(hpf::KernelResources{});
  const HostMatrix a = random_matrix(5, 7, 9), b = random_matrix(7, 3, 10);
  HostMatrix c("c", 5, 3), expected("e", 5, 3);
  gemm("N", "N", 1.0f, a, b, 0.0f, c);
  hpf::detail::gemm("N", "N", 1.0f, a, b, 0.0f, expected);
  for (std::size_t i = 0; i < c.size(); ++i) CHECK(c.data()[i] == expected.data()[i]);
}
