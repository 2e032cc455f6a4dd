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

// concat_t<L1, L2>
namespace detail {
template <class A, class B>
struct concat_impl {
  // An error "no type named 'type'" here means an argument is not an hpf::type_list
};
template <class... As, class... Bs>
struct concat_impl<type_list<As...>, type_list<Bs...>> {
  using type = type_list<As..., Bs...>;
};
}  // namespace detail

template <class A, class B>
using concat_t = typename detail::concat_impl<A, B>::type;

// chunks_t<L, K>: (T0..Tn, K) => [T0..TK-1], [TK..T2K-1], ..., the last chunk shorter.
// With __type_pack_element each element is one lookup. Without it (g++ before 14), at_t's
// inheritance lookup tries every base, and thousands of such lookups into a list of thousands
// cost gigabytes; there, chunk C is the join of one pack expansion that keeps each element whose
// index falls in it (N / K expansions of N memoised conditionals, no recursion).
namespace detail {
template <class L>
struct list_box {};
template <class... As, class... Bs>
list_box<type_list<As..., Bs...>> operator+(list_box<type_list<As...>>, list_box<type_list<Bs...>>);
template <class L>
L unbox(list_box<L>);
template <class Lists>
struct join_fold {
  // An error "no type named 'type'" here means the argument is not an hpf::type_list of type_lists
};
template <class... Lists>
struct join_fold<type_list<Lists...>> {
  using type = decltype(unbox((list_box<type_list<>>{} + ... + list_box<Lists>{})));
};

template <class L, std::size_t Begin, std::size_t End, class Indices>
struct slice_impl;
#if defined(HPF_IMPL_HAS_TYPE_PACK_ELEMENT)
template <class... Ts, std::size_t Begin, std::size_t End, std::size_t... I>
struct slice_impl<type_list<Ts...>, Begin, End, std::index_sequence<I...>> {
  template <std::size_t... J>
  static auto pick(std::index_sequence<J...>) -> type_list<__type_pack_element<Begin + J, Ts...>...>;
  using type = decltype(pick(std::make_index_sequence<End - Begin>{}));
};
#else
template <class... Ts, std::size_t Begin, std::size_t End, std::size_t... I>
struct slice_impl<type_list<Ts...>, Begin, End, std::index_sequence<I...>> {
  using type = typename join_fold<
      type_list<std::conditional_t<(I >= Begin && I < End), type_list<Ts>, type_list<>>...>>::type;
};
#endif
template <class L, std::size_t K, class Chunks>
struct chunks_impl {
  // An error "no type named 'type'" here means L is not an hpf::type_list
};
template <class... Ts, std::size_t K, std::size_t... C>
struct chunks_impl<type_list<Ts...>, K, std::index_sequence<C...>> {
  static constexpr std::size_t n = sizeof...(Ts);
  using type = type_list<typename slice_impl<type_list<Ts...>, C * K, (n - C * K < K ? n : C * K + K),
                                             std::index_sequence_for<Ts...>>::type...>;
};
}  // namespace detail

template <class L, std::size_t K>
using chunks_t = typename detail::chunks_impl<L, K, std::make_index_sequence<(size_v<L> + K - 1) / K>>::type;

// join_t<type_list<L0..Ln>>: (L0..Ln) => L0 ++ L1 ++ ... ++ Ln, as a fold (a wrapper type lets ADL
// find the operator). A long list of lists is joined per chunk of 32 first, so that no fold has
// more than 32 operands (Clang's bracket depth) and the growing result is re-made fewer times.
namespace detail {
template <class Lists, bool Short = (size_v<Lists> <= 32)>
struct join_impl : join_fold<Lists> {};
template <class Chunks>
struct join_chunks;
template <class... Chunks>
struct join_chunks<type_list<Chunks...>> {
  using type = typename join_impl<type_list<typename join_impl<Chunks>::type...>>::type;
};
template <class Lists>
struct join_impl<Lists, false> : join_chunks<chunks_t<Lists, 32>> {};
}  // namespace detail

template <class Lists>
using join_t = typename detail::join_impl<Lists>::type;

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
