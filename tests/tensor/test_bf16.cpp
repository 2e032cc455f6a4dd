#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/bf16_arrays.hpp>
#include <hpf/tensor/ordered_sum.hpp>

#include <Kokkos_Core.hpp>
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

TEST_CASE("bf16: rounding to nearest, ties to even, as PyTorch's .to(torch.bfloat16)") {
  CHECK(hpf::to_bf16(1.0f) == 0x3f80);
  CHECK(hpf::to_bf16(-2.0f) == 0xc000);
  CHECK(hpf::to_bf16(0.0f) == 0x0000);
  CHECK(hpf::to_bf16(-0.0f) == 0x8000);
  const float ulp = std::ldexp(1.0f, -7);  // bf16's spacing in [1, 2)
  CHECK(hpf::round_to_bf16(1.0f + ulp) == 1.0f + ulp);                     // representable: kept
  CHECK(hpf::round_to_bf16(1.0f + ulp / 2) == 1.0f);                       // tie: to the even 1.0
  CHECK(hpf::round_to_bf16(1.0f + 3 * ulp / 2) == 1.0f + 2 * ulp);         // tie: to the even 1 + 2 ulp
  CHECK(hpf::round_to_bf16(1.0f + ulp / 2 + ulp / 64) == 1.0f + ulp);      // above the tie: up
  CHECK(hpf::round_to_bf16(-(1.0f + ulp / 2 + ulp / 64)) == -(1.0f + ulp));
  CHECK(hpf::round_to_bf16(0.1f) == 0.10009765625f);  // torch.tensor(0.1).bfloat16().item()
  CHECK(hpf::round_to_bf16(3.14159265f) == 3.140625f);
}

TEST_CASE("bf16: infinities, overflow, NaN and subnormals") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(hpf::round_to_bf16(inf) == inf);
  CHECK(hpf::round_to_bf16(-inf) == -inf);
  CHECK(hpf::round_to_bf16(std::numeric_limits<float>::max()) == inf);  // rounds past bf16's largest
  CHECK(hpf::from_bf16(0x7f7f) == std::ldexp(255.0f, 120));              // bf16's largest finite
  CHECK(std::isnan(hpf::round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low 16 bits must not round to infinity.
  CHECK(std::isnan(hpf::from_bf16(hpf::to_bf16(std::bit_cast<float>(0x7f800001u)))));
  const float tiny = std::numeric_limits<float>::denorm_min() * 65536.0f * 3.0f;
  CHECK(hpf::round_to_bf16(tiny) == tiny);  // subnormal with 2 significant bits: exact
}

TEST_CASE("bf16: every bf16 value converts back to itself") {
  for (unsigned bits = 0; bits < 0x10000u; ++bits) {
    const auto b = static_cast<hpf::bf16_bits>(bits);
    const float f = hpf::from_bf16(b);
    if (std::isnan(f)) continue;
    REQUIRE(hpf::to_bf16(f) == b);
  }
}

TEST_CASE("bf16 arrays: encoded, decoded and rounded in place on the execution space as value by value") {
  using Space = Kokkos::DefaultExecutionSpace;
  constexpr std::size_t n = 10000;  // several of the host's blocks
  Kokkos::View<float*, Space::memory_space> values("values", n), decoded("decoded", n), rounded("rounded", n);
  Kokkos::View<hpf::bf16_bits*, Space::memory_space> bits("bits", n);
  auto host = Kokkos::create_mirror_view(values);
  for (std::size_t i = 0; i < n; ++i) host(i) = std::ldexp(static_cast<float>(i % 997) + 0.37f, static_cast<int>(i % 40) - 20);
  Kokkos::deep_copy(values, host);
  Kokkos::deep_copy(rounded, values);
  hpf::encode_bf16(Space{}, values.data(), bits.data(), n);
  hpf::decode_bf16(Space{}, bits.data(), decoded.data(), n);
  hpf::round_to_bf16_in_place(Space{}, rounded.data(), n);
  Kokkos::fence();
  const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, bits);
  const auto d = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, decoded);
  const auto r = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rounded);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(b(i) == hpf::to_bf16(host(i)));
    CHECK(d(i) == hpf::round_to_bf16(host(i)));
    CHECK(r(i) == d(i));
    changed += d(i) != host(i);
  }
  CHECK(changed > n / 2);  // the values are not bf16 already
}

TEST_CASE("ordered_sum of bf16 parts: the tree of the float values they hold") {
  constexpr std::size_t parts = 5, n = 300;
  std::vector<hpf::bf16_bits> bits(parts * n);
  std::vector<float> values(parts * n);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    bits[i] = hpf::to_bf16(std::sin(static_cast<float>(i)) * 3.0f);
    values[i] = hpf::from_bf16(bits[i]);
  }
  std::vector<float> from_bits(n), from_values(n);
  hpf::ordered_sum(Kokkos::DefaultHostExecutionSpace{}, bits.data(), parts, n, from_bits.data(), n);
  hpf::ordered_sum(Kokkos::DefaultHostExecutionSpace{}, values.data(), parts, n, from_values.data(), n);
  Kokkos::fence();
  for (std::size_t i = 0; i < n; ++i) CHECK(std::bit_cast<std::uint32_t>(from_bits[i]) == std::bit_cast<std::uint32_t>(from_values[i]));
  // ((x0 + x1) + (x2 + x3)) + x4, in float
  CHECK(from_values[7] == ((values[7] + values[n + 7]) + (values[2 * n + 7] + values[3 * n + 7])) + values[4 * n + 7]);
}
