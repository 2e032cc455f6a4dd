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

/// `values` through hpf's ReLU: what the layer before a pool that reads through it would have written.
std::vector<float> through_relu(std::vector<float> values) {
  for (auto& v : values) v = hpf::detail::relu(v);
  return values;
}

/// The scalar scans of a plane and a volume, as pools_alike runs them.
template <bool Relu>
auto plane_scan(const hpf::detail::WindowGeometry& g, const std::vector<float>& image) {
  return [&g, &image](float* out, std::int32_t* at) { hpf::detail::pool_plane<2, 2, Relu>(g, image.data(), out, at); };
}
template <bool Relu>
auto volume_scan(const hpf::detail::VolumeGeometry& g, const std::vector<float>& volume) {
  return [&g, &volume](float* out, std::int32_t* at) { hpf::detail::pool_volume<2, Relu>(g, volume.data(), out, at); };
}

/// A plane pooled by the vector rows against the scalar scan; with Relu also against the scan of
/// the ReLU's output (read through the ReLU: the same maxima and argmaxes).
template <bool Relu>
bool plane_alike(const hpf::detail::WindowGeometry& g, const std::vector<float>& image) {
  const auto rows = [&](float* out, std::int32_t* at) {
    hpf::detail::max_pool_2x2_plane<Relu>(image.data(), static_cast<std::int32_t>(g.width),
                                          static_cast<std::int32_t>(g.out_height), static_cast<std::int32_t>(g.out_width),
                                          out, at);
  };
  const std::vector<float> relu_output = through_relu(image);
  return pools_alike(g.out_spatial(), plane_scan<Relu>(g, image), rows) &&
         (!Relu || pools_alike(g.out_spatial(), plane_scan<false>(g, relu_output), rows));
}

/// The same for a volume.
template <bool Relu>
bool volume_alike(const hpf::detail::VolumeGeometry& g, const std::vector<float>& volume) {
  const auto rows = [&](float* out, std::int32_t* at) {
    hpf::detail::max_pool_2x2x2_volume<Relu>(volume.data(), static_cast<std::int32_t>(g.plane.height),
                                             static_cast<std::int32_t>(g.plane.width), static_cast<std::int32_t>(g.out_depth),
                                             static_cast<std::int32_t>(g.plane.out_height),
                                             static_cast<std::int32_t>(g.plane.out_width), out, at);
  };
  const std::vector<float> relu_output = through_relu(volume);
  return pools_alike(g.out_spatial(), volume_scan<Relu>(g, volume), rows) &&
         (!Relu || pools_alike(g.out_spatial(), volume_scan<false>(g, relu_output), rows));
}

}  // namespace

TEST_CASE("MaxPool 2x2 rows: the maxima and argmaxes of the scalar scan, bit for bit, alone and after a ReLU") {
  int planes = 0;
  for (std::size_t height : {2u, 3u, 5u, 14u}) {
    for (std::size_t width = 2; width <= 70; ++width) {
      for (bool special : {false, true}) {
        const hpf::detail::WindowGeometry g(1, height, width, 2, 2, 0);
        const std::vector<float> image = plane(height * width, static_cast<unsigned>(height * 1000 + width), special);
        CAPTURE(height);
        CAPTURE(width);
        CAPTURE(special);
        CHECK(plane_alike<false>(g, image));
        CHECK(plane_alike<true>(g, image));
        ++planes;
      }
    }
  }
  CHECK(planes == 4 * 69 * 2);
}

TEST_CASE("MaxPool3D 2x2x2 rows: the maxima and argmaxes of the scalar scan, bit for bit, alone and after a ReLU") {
  int volumes = 0;
  for (std::size_t depth : {2u, 3u, 4u}) {
    for (std::size_t height : {2u, 5u}) {
      for (std::size_t width = 2; width <= 40; ++width) {
        const hpf::detail::VolumeGeometry g(1, depth, height, width, 2, 2, 0);
        const std::vector<float> volume = plane(g.in_spatial(), static_cast<unsigned>(depth * 100 + height * 10 + width), true);
        CAPTURE(depth);
        CAPTURE(height);
        CAPTURE(width);
        CHECK(volume_alike<false>(g, volume));
        CHECK(volume_alike<true>(g, volume));
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
