#include <hpf/layers/detail/max_pool_rows.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/max_pool3d.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#if HPF_MAX_POOL_ROWS

namespace {

std::uint32_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// Pools with the scalar scan and with the vector rows, each into buffers of `outputs` and one
/// more at each end: whether both wrote the same maxima and argmaxes, bit for bit, and nothing
/// outside.
template <class Scan, class Rows>
bool pools_alike(std::size_t outputs, Scan scan, Rows rows) {
  std::vector<float> expected(outputs + 2, 7.0f), pooled(outputs + 2, 7.0f);
  std::vector<std::int32_t> expected_at(outputs + 2, -7), pooled_at(outputs + 2, -7);
  scan(expected.data() + 1, expected_at.data() + 1);
  rows(pooled.data() + 1, pooled_at.data() + 1);
  bool same = pooled_at == expected_at;
  for (std::size_t o = 0; same && o < pooled.size(); ++o) same = bits_of(pooled[o]) == bits_of(expected[o]);
  return same;
}

/// A plane of random values, many of them tied, and special values sprinkled in when `special`.
std::vector<float> plane(std::size_t size, unsigned seed, bool special) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> level(-4, 4), pick(0, 15);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::signaling_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.0f, 0.0f,
                            std::numeric_limits<float>::denorm_min()};
  std::vector<float> values(size);
  for (auto& v : values) {
    v = 0.5f * static_cast<float>(level(rng));
    if (special && pick(rng) < 4) v = specials[static_cast<std::size_t>(pick(rng)) % 8];
  }
  return values;
}

}  // namespace

TEST_CASE("MaxPool 2x2 rows: the maxima and argmaxes of the scalar scan, bit for bit") {
  int planes = 0;
  for (std::size_t height : {2u, 3u, 5u, 14u}) {
    for (std::size_t width = 2; width <= 70; ++width) {
      for (bool special : {false, true}) {
        const hpf::detail::WindowGeometry g(1, height, width, 2, 2, 0);
        const std::vector<float> image = plane(height * width, static_cast<unsigned>(height * 1000 + width), special);
        const bool same = pools_alike(
            g.out_spatial(), [&](float* out, std::int32_t* at) { hpf::detail::pool_plane<2, 2>(g, image.data(), out, at); },
            [&](float* out, std::int32_t* at) {
              hpf::detail::max_pool_2x2_plane(image.data(), static_cast<std::int32_t>(width),
                                              static_cast<std::int32_t>(g.out_height),
                                              static_cast<std::int32_t>(g.out_width), out, at);
            });
        CAPTURE(height);
        CAPTURE(width);
        CAPTURE(special);
        CHECK(same);
        ++planes;
      }
    }
  }
  CHECK(planes == 4 * 69 * 2);
}

TEST_CASE("MaxPool3D 2x2x2 rows: the maxima and argmaxes of the scalar scan, bit for bit") {
  int volumes = 0;
  for (std::size_t depth : {2u, 3u, 4u}) {
    for (std::size_t height : {2u, 5u}) {
      for (std::size_t width = 2; width <= 40; ++width) {
        const hpf::detail::VolumeGeometry g(1, depth, height, width, 2, 2, 0);
        const std::vector<float> volume = plane(g.in_spatial(), static_cast<unsigned>(depth * 100 + height * 10 + width), true);
        const bool same = pools_alike(
            g.out_spatial(), [&](float* out, std::int32_t* at) { hpf::detail::pool_volume<2>(g, volume.data(), out, at); },
            [&](float* out, std::int32_t* at) {
              hpf::detail::max_pool_2x2x2_volume(volume.data(), static_cast<std::int32_t>(height),
                                                 static_cast<std::int32_t>(width), static_cast<std::int32_t>(g.out_depth),
                                                 static_cast<std::int32_t>(g.plane.out_height),
                                                 static_cast<std::int32_t>(g.plane.out_width), out, at);
            });
        CAPTURE(depth);
        CAPTURE(height);
        CAPTURE(width);
        CHECK(same);
        ++volumes;
      }
    }
  }
  CHECK(volumes == 3 * 2 * 39);
}

#else

TEST_CASE("MaxPool 2x2 and MaxPool3D 2x2x2 rows: not in this build") {
  // Counted as a skip (SKIP_REGULAR_EXPRESSION): the build targets no AVX-512, and the scalar scan
  // pools every plane.
  std::printf("hpf-skip: not in this configuration: max_pool_rows.hpp needs a build for AVX-512\n");
}

#endif
