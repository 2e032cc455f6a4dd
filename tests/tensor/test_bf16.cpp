#include <hpf/tensor/bf16.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

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
