// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_RANDOM_HPP
#define HPF_TENSOR_RANDOM_HPP

#include <hpf/meta/hash.hpp>

#include <cmath>
#include <cstdint>
#include <string_view>

namespace hpf {

/// \brief Deterministic host random numbers (xoshiro256** seeded by splitmix64). The same seed
/// gives the same sequence on every platform and rank: initial weights and data order depend
/// only on (seed, tensor name or epoch), never on how the model is partitioned.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept {
    std::uint64_t x = seed;
    for (auto& s : state_) {
      x += 0x9e3779b97f4a7c15ull;
      std::uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      s = z ^ (z >> 31);
    }
  }
  /// A generator for one named stream under `seed` (e.g. a parameter's state_dict name).
  Rng(std::uint64_t seed, std::string_view stream) noexcept : Rng(hash_combine(seed, fnv1a(stream))) {}

  std::uint64_t next_u64() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Standard normal (Box-Muller; one value per call so the stream stays simple to reproduce).
  double normal() noexcept {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Uniform integer in [0, n), unbiased (Lemire's rejection).
  std::uint64_t below(std::uint64_t n) noexcept {
    if (n <= 1) return 0;
    const std::uint64_t limit = (0 - n) % n;
    for (;;) {
      const std::uint64_t r = next_u64();
      if (r >= limit) return r % n;
    }
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t state_[4];
};

}  // namespace hpf

#endif  // HPF_TENSOR_RANDOM_HPP
