// SPDX-License-Identifier: MIT
#ifndef HPF_META_TYPE_NAME_HPP
#define HPF_META_TYPE_NAME_HPP

#include <hpf/meta/hash.hpp>

#include <cstdint>
#include <string_view>

namespace hpf {

namespace detail {
template <class T>
constexpr std::string_view pretty_function() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  return __PRETTY_FUNCTION__;
#else
#error "hpf::type_name needs __PRETTY_FUNCTION__ (GCC, Clang, NVCC, Intel)"
#endif
}
}  // namespace detail

/// The compiler's spelling of T, as a compile-time string (e.g. "hpf::Dense<10>").
/// Spelling differs between compilers, so compare names only between binaries built alike.
template <class T>
constexpr std::string_view type_name() noexcept {
  constexpr std::string_view full = detail::pretty_function<T>();
  constexpr std::string_view key = "T = ";
  constexpr auto start = full.find(key) + key.size();
  constexpr auto end = full.find_first_of(";]", start);
  return full.substr(start, end - start);
}

/// T's template name without namespaces or arguments ("Dense" for hpf::Dense<10>::bind<...>): a
/// short label for a layer kind.
template <class T>
constexpr std::string_view short_type_name() noexcept {
  constexpr std::string_view full = type_name<T>();
  constexpr std::string_view head = full.substr(0, full.find('<'));
  constexpr auto colon = head.rfind("::");
  return colon == std::string_view::npos ? head : head.substr(colon + 2);
}

/// A 64-bit hash of `type_name<T>()`: the signature ranks compare before training together.
template <class T>
inline constexpr std::uint64_t type_hash_v = fnv1a(type_name<T>());

}  // namespace hpf

#endif  // HPF_META_TYPE_NAME_HPP
