#include <hpf/tensor/vector_math.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

TEST_CASE("vector_exp in float: within 1.01 ulp of e^x, 0 below float's range, inf above") {
  // Every 997th float in [-105, 88.7] (2.2 million of them, subnormal results too), against
  // double's e^x.
  const auto ulps = [](float got, double exact) {
    int exponent = 0;
    std::frexp(exact, &exponent);
    return std::abs(double(got) - exact) / std::ldexp(1.0, std::max(exponent - 24, -149));  // subnormals: 2^-149
  };
  double worst = 0;
  float worst_at = 0;
  for (std::uint32_t bits = 0; bits < 0x80000000u; bits += 997) {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint32_t b = bits | sign;
      float x;
      std::memcpy(&x, &b, sizeof x);
      if (!(x >= -105.0f && x <= 88.7f)) continue;
      const double error = ulps(hpf::math::vector_exp(x), std::exp(double(x)));
      if (error > worst) {
        worst = error;
        worst_at = x;
      }
    }
  }
  INFO("worst ", worst, " ulp at ", worst_at);
  CHECK(worst <= 1.01);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(hpf::math::vector_exp(0.0f) == 1.0f);
  CHECK(hpf::math::vector_exp(-0.0f) == 1.0f);
  for (const float x : {-104.0f, -200.0f, -1e30f, -inf}) CHECK(hpf::math::vector_exp(x) == 0.0f);
  CHECK(hpf::math::vector_exp(-103.9f) > 0.0f);  // the smallest subnormal, as std::exp
  for (const float x : {89.0f, 1e30f, inf}) CHECK(hpf::math::vector_exp(x) == inf);
  CHECK(std::isnan(hpf::math::vector_exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("vector_exp in double is exp") {
  for (const double x : {-700.0, -1.5, 0.0, 0.25, 3.0, 700.0}) CHECK(hpf::math::vector_exp(x) == std::exp(x));
}

TEST_CASE("clamp_magnitude: the value within [-limit, limit], the sign kept, NaN to +-limit") {
  const float limit = 7.90531110763549805f, inf = std::numeric_limits<float>::infinity();
  for (const float x : {0.0f, 1e-30f, -3.5f, 7.9f, -7.9053f, limit, -limit}) {
    CHECK(hpf::math::clamp_magnitude(x, limit) == x);
  }
  CHECK(std::signbit(hpf::math::clamp_magnitude(-0.0f, limit)));
  for (const float x : {8.0f, 1e30f, inf}) CHECK(hpf::math::clamp_magnitude(x, limit) == limit);
  for (const float x : {-8.0f, -1e30f, -inf}) CHECK(hpf::math::clamp_magnitude(x, limit) == -limit);
  CHECK(std::abs(hpf::math::clamp_magnitude(std::numeric_limits<float>::quiet_NaN(), limit)) == limit);
}
