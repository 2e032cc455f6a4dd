// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_BF16_STAGING_HPP
#define HPF_LAYERS_DETAIL_BF16_STAGING_HPP

#include <cstddef>
#include <functional>
#include <utility>

namespace hpf::detail {

/// \brief The copies one product with bf16 inputs stages (Bf16Gemm), in elements: A and B
/// rounded in float (the emulation), or both as bf16 bits side by side (a vendor's kernel). A
/// network's Bf16Gemm keeps the largest of each for its life, so the oracle's memory model needs
/// them per layer: calibration listens while it times the layers.
struct Bf16StagingNeed {
  std::size_t rounded_a = 0, rounded_b = 0, bits = 0;

  /// Bytes of the three copies (float, float, bf16).
  constexpr std::size_t bytes() const noexcept { return 4 * (rounded_a + rounded_b) + 2 * bits; }
  /// The larger of each copy: what one staging that serves both keeps.
  constexpr Bf16StagingNeed widest(const Bf16StagingNeed& other) const noexcept {
    const auto most = [](std::size_t x, std::size_t y) { return x > y ? x : y; };
    return {most(rounded_a, other.rounded_a), most(rounded_b, other.rounded_b), most(bits, other.bits)};
  }
};

/// Told of every product's staging while set (nothing is, outside hpf::oracle::calibrate).
inline std::function<void(const Bf16StagingNeed&)>& bf16_staging_listener() {
  static std::function<void(const Bf16StagingNeed&)> listener;
  return listener;
}

/// \brief Listens to every product's staging while alive (one at a time: the listener is global).
class Bf16StagingListening {
 public:
  explicit Bf16StagingListening(std::function<void(const Bf16StagingNeed&)> listener) {
    bf16_staging_listener() = std::move(listener);
  }
  Bf16StagingListening(const Bf16StagingListening&) = delete;
  Bf16StagingListening& operator=(const Bf16StagingListening&) = delete;
  ~Bf16StagingListening() { bf16_staging_listener() = nullptr; }
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_BF16_STAGING_HPP
