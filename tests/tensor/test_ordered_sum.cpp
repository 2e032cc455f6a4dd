#include <hpf/tensor/ordered_sum.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

// ordered_sum's documented order: neighbours first, ((x0 + x1) + (x2 + x3)) + ..., an odd last
// part carried up unchanged. Checked to the bit in float against references written out here,
// on values for which other orders give other bits (checked too, so the test can fail).

namespace {

using Space = Kokkos::DefaultHostExecutionSpace;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

/// Parts of `n` elements each with a wide range of magnitudes and both signs: rounding differs
/// between orders on most elements.
std::vector<float> random_parts(std::size_t count, std::size_t n, std::size_t stride, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 12), sign(0, 1);
  std::vector<float> parts(count * stride, std::numeric_limits<float>::quiet_NaN());  // gaps stay NaN
  for (std::size_t p = 0; p < count; ++p)
    for (std::size_t i = 0; i < n; ++i)
      parts[p * stride + i] = (sign(rng) ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
  return parts;
}

std::vector<float> run(const std::vector<float>& parts, std::size_t count, std::size_t stride, std::size_t n) {
  std::vector<float> out(n + 1, -7.0f);  // one element past the end must stay untouched
  hpf::ordered_sum(Space{}, parts.data(), count, stride, out.data(), n);
  Space{}.fence();
  CHECK(bits(out[n]) == bits(-7.0f));
  out.pop_back();
  return out;
}

/// The tree for the counts written out by hand (1 to 8), x = the parts of one element.
float by_hand(const std::vector<float>& x) {
  switch (x.size()) {
    case 1: return x[0];
    case 2: return x[0] + x[1];
    case 3: return (x[0] + x[1]) + x[2];
    case 4: return (x[0] + x[1]) + (x[2] + x[3]);
    case 5: return ((x[0] + x[1]) + (x[2] + x[3])) + x[4];
    case 6: return ((x[0] + x[1]) + (x[2] + x[3])) + (x[4] + x[5]);
    case 7: return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + x[6]);
    case 8: return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
  }
  FAIL("no hand-written tree for ", x.size(), " parts");
  return 0;
}

/// The same tree for any count, level by level into new vectors (not the header's in-place loop).
float by_levels(std::vector<float> level) {
  while (level.size() > 1) {
    std::vector<float> next;
    for (std::size_t j = 0; j + 1 < level.size(); j += 2) next.push_back(level[j] + level[j + 1]);
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  return level[0];
}

float left_to_right(const std::vector<float>& x) {
  float s = 0;
  for (float v : x) s += v;
  return s;
}
float right_to_left(const std::vector<float>& x) {
  float s = 0;
  for (std::size_t p = x.size(); p-- > 0;) s += x[p];
  return s;
}

std::vector<float> element(const std::vector<float>& parts, std::size_t count, std::size_t stride, std::size_t i) {
  std::vector<float> x;
  for (std::size_t p = 0; p < count; ++p) x.push_back(parts[p * stride + i]);
  return x;
}

}  // namespace

TEST_CASE("ordered_sum: the documented tree, bit for bit, for 1 to 8 parts") {
  const std::size_t n = 1000;
  for (std::size_t count = 1; count <= 8; ++count) {
    INFO(count, " parts");
    const auto parts = random_parts(count, n, n, unsigned(count));
    const auto out = run(parts, count, n, n);
    std::size_t differ_forward = 0, differ_backward = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto x = element(parts, count, n, i);
      REQUIRE(bits(out[i]) == bits(by_hand(x)));
      differ_forward += bits(left_to_right(x)) != bits(by_hand(x));
      differ_backward += bits(right_to_left(x)) != bits(by_hand(x));
    }
    // The values tell orders apart: a sum in another order would have failed above.
    // (For 3 parts the tree is the left-to-right order.)
    if (count >= 4) CHECK(differ_forward > 0);
    if (count >= 3) CHECK(differ_backward > 0);
  }
}

TEST_CASE("ordered_sum: up to ordered_sum_max_parts parts against the level-by-level tree") {
  const std::size_t n = 200;
  for (std::size_t count : {9, 13, 16, 17, 31, 33, 63, 64}) {
    INFO(count, " parts");
    REQUIRE(count <= hpf::ordered_sum_max_parts);
    const auto parts = random_parts(count, n, n, 100 + unsigned(count));
    const auto out = run(parts, count, n, n);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto x = element(parts, count, n, i);
      REQUIRE(bits(out[i]) == bits(by_levels(x)));
      differ += bits(left_to_right(x)) != bits(by_levels(x));
    }
    CHECK(differ > 0);
  }
  // The level-by-level reference is the hand-written tree where both exist.
  const auto parts = random_parts(8, 50, 50, 7);
  for (std::size_t count = 1; count <= 8; ++count)
    for (std::size_t i = 0; i < 50; ++i) CHECK(bits(by_levels(element(parts, count, 50, i))) == bits(by_hand(element(parts, count, 50, i))));
}

TEST_CASE("ordered_sum: one example to read, where the order decides the result") {
  // 2^-24 is half an ulp of 1: added to 1 alone it rounds away (ties to even), two of them first make one ulp.
  const float tiny = std::ldexp(1.0f, -24);
  const std::vector<float> parts = {1.0f, tiny, tiny, 0.0f};
  const auto out = run(parts, 4, 1, 1);
  CHECK(out[0] == (1.0f + tiny) + (tiny + 0.0f));
  CHECK(out[0] == 1.0f);
  CHECK(1.0f + (tiny + tiny) != 1.0f);  // another order, another result
  const std::vector<float> three = {tiny, tiny, 1.0f};  // (tiny + tiny) + 1: the pair first
  CHECK(run(three, 3, 1, 1)[0] == 1.0f + std::ldexp(1.0f, -23));
}

TEST_CASE("ordered_sum: lengths and strides") {
  SUBCASE("n = 0 writes nothing") {
    const auto parts = random_parts(3, 4, 4, 1);
    std::vector<float> out(1, -7.0f);
    hpf::ordered_sum(Space{}, parts.data(), 3, 4, out.data(), 0);
    Space{}.fence();
    CHECK(bits(out[0]) == bits(-7.0f));
  }
  SUBCASE("one part is a copy") {
    const auto parts = random_parts(1, 17, 17, 2);
    const auto out = run(parts, 1, 17, 17);
    for (std::size_t i = 0; i < 17; ++i) CHECK(bits(out[i]) == bits(parts[i]));
  }
  SUBCASE("n = 1") {
    const auto parts = random_parts(5, 1, 1, 3);
    CHECK(bits(run(parts, 5, 1, 1)[0]) == bits(by_hand(parts)));
  }
  SUBCASE("stride larger than n: the gaps (NaN) are never read") {
    for (std::size_t count : {2, 5, 8}) {
      const std::size_t n = 10, stride = 13;
      const auto parts = random_parts(count, n, stride, 4 + unsigned(count));
      const auto out = run(parts, count, stride, n);
      for (std::size_t i = 0; i < n; ++i) {
        CHECK(!std::isnan(out[i]));
        CHECK(bits(out[i]) == bits(by_hand(element(parts, count, stride, i))));
      }
    }
  }
  SUBCASE("a prefix of each part: n smaller than the parts' length") {
    const std::size_t stride = 30, n = 7;
    const auto parts = random_parts(6, stride, stride, 9);
    const auto out = run(parts, 6, stride, n);
    for (std::size_t i = 0; i < n; ++i) CHECK(bits(out[i]) == bits(by_hand(element(parts, 6, stride, i))));
  }
  SUBCASE("the sum of all parts equal: one process holding R copies") {
    std::vector<float> parts(7 * 3);
    for (std::size_t p = 0; p < 7; ++p)
      for (std::size_t i = 0; i < 3; ++i) parts[p * 3 + i] = 0.1f * float(i + 1);
    const auto out = run(parts, 7, 3, 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(bits(out[i]) == bits(by_hand(element(parts, 7, 3, i))));
  }
}

TEST_CASE("ordered_sum: many blocks, lanes and a partial last lane, for every count") {
  // Long enough for several of the host's blocks and lanes, with a remainder in both.
  const std::size_t n = 2 * 4096 + 64 * 3 + 29, stride = n + 5;
  for (std::size_t count : {1, 2, 3, 4, 5, 6, 7, 8, 12, 23, 64}) {
    INFO(count, " parts");
    const auto parts = random_parts(count, n, stride, 300 + unsigned(count));
    const auto out = run(parts, count, stride, n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += bits(out[i]) != bits(by_levels(element(parts, count, stride, i)));
    CHECK(wrong == 0);
  }
}
