// SPDX-License-Identifier: MIT
#ifndef HPF_META_HASH_HPP
#define HPF_META_HASH_HPP

#include <cstdint>
#include <string_view>

namespace hpf {

/// 64-bit FNV-1a of a byte string; constexpr so model signatures and per-tensor seeds can be
/// computed at compile time and agree across compilers and ranks.
constexpr std::uint64_t fnv1a(std::string_view text,
                              std::uint64_t seed = 0xcbf29ce484222325ull) noexcept {
  std::uint64_t h = seed;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// Mixes two 64-bit values (splitmix64 finaliser over their combination).
constexpr std::uint64_t hash_combine(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace hpf

#endif  // HPF_META_HASH_HPP
