// SPDX-License-Identifier: MIT
#ifndef HPF_META_TYPE_LIST_HPP
#define HPF_META_TYPE_LIST_HPP

#include <cstddef>
#include <type_traits>
#include <utility>

namespace hpf {

/// \brief A compile-time list of types. Carries no data; algorithms below operate on it.
template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};

/// A `false` that depends on template arguments, for static_asserts in templates that must fail
/// only when instantiated.
template <class...>
inline constexpr bool dependent_false_v = false;

// size_v<L>
namespace detail {
template <class L>
struct size_impl {
  // An error "incomplete type" here means L is not an hpf::type_list
};
template <class... Ts>
struct size_impl<type_list<Ts...>> : std::integral_constant<std::size_t, sizeof...(Ts)> {};
}  // namespace detail

template <class L>
inline constexpr std::size_t size_v = detail::size_impl<L>::value;

// at_t<L, I>: (T0..Tn, I) => TI, without walking the list (style.md §3.3: indexing never recurses).
namespace detail {
#if defined(__has_builtin)
#if __has_builtin(__type_pack_element)
#define HPF_IMPL_HAS_TYPE_PACK_ELEMENT 1
#endif
#endif

template <class L, std::size_t I>
struct at_impl {
  // An error "no type named 'type'" here means L is not an hpf::type_list
};

#if defined(HPF_IMPL_HAS_TYPE_PACK_ELEMENT)
template <class... Ts, std::size_t I>
struct at_impl<type_list<Ts...>, I> {
  static_assert(I < sizeof...(Ts), "hpf::at_t: index out of range");
  using type = __type_pack_element<I, Ts...>;
};
#else
// Inheritance lookup (Boost.Mp11 mp_map_find): one base per element, overload resolution picks I.
template <std::size_t I, class T>
struct indexed {
  using type = T;
};
template <class Seq, class... Ts>
struct indexer;
template <std::size_t... Is, class... Ts>
struct indexer<std::index_sequence<Is...>, Ts...> : indexed<Is, Ts>... {};
template <std::size_t I, class T>
indexed<I, T> select_indexed(indexed<I, T> const*);

template <class... Ts, std::size_t I>
struct at_impl<type_list<Ts...>, I> {
  static_assert(I < sizeof...(Ts), "hpf::at_t: index out of range");
  using type = typename decltype(select_indexed<I>(
      static_cast<indexer<std::index_sequence_for<Ts...>, Ts...> const*>(nullptr)))::type;
};
#endif
}  // namespace detail

template <class L, std::size_t I>
using at_t = typename detail::at_impl<L, I>::type;

// for_each_index<N>(f): (f, N) => f(integral_constant<0>), ..., f(integral_constant<N-1>)
/// Calls `f(std::integral_constant<std::size_t, I>{})` for I = 0..N-1, in order, by one pack
/// expansion (no recursion).
template <std::size_t N, class F>
constexpr void for_each_index(F&& f) {
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (f(std::integral_constant<std::size_t, Is>{}), ...);
  }(std::make_index_sequence<N>{});
}

/// Calls `f(integral_constant<I>)` for I = N-1 down to 0.
template <std::size_t N, class F>
constexpr void for_each_index_reversed(F&& f) {
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (f(std::integral_constant<std::size_t, N - 1 - Is>{}), ...);
  }(std::make_index_sequence<N>{});
}

}  // namespace hpf

#endif  // HPF_META_TYPE_LIST_HPP
