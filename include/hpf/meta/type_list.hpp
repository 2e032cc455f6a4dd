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

// chunks_t<L>: (T0..Tn) => [T0..T15], [T16..T31], ..., the last chunk shorter (chunk_size = 16).
// Chunk C is one overload resolution: a function that skips 16 C arguments as `const void*`, deduces
// the next 16 and takes the rest as C varargs (the list is padded so that 16 always follow). That
// is linear work per chunk and nothing kept per element, where a lookup per element (at_t, by
// inheritance on g++ < 14) or a filter per chunk would instantiate N templates per chunk: gigabytes
// for lists of thousands.
inline constexpr std::size_t chunk_size = 16;
namespace detail {
template <class T>
struct wrap {};
struct chunk_pad {};
// A member type, not an alias that ignores its parameter: EDG (nvcc) drops the expansion of such
// an alias and then finds no match.
template <std::size_t>
struct skip_one {
  using type = const void*;
};
template <std::size_t>
struct pad_of {
  using type = chunk_pad;
};
template <class Skipped>
struct take_16_after;
template <std::size_t... S>
struct take_16_after<std::index_sequence<S...>> {
  template <class T0, class T1, class T2, class T3, class T4, class T5, class T6, class T7, class T8, class T9, class T10, class T11, class T12, class T13, class T14, class T15>
  static type_list<T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15> take(typename skip_one<S>::type..., wrap<T0>*, wrap<T1>*, wrap<T2>*, wrap<T3>*, wrap<T4>*, wrap<T5>*, wrap<T6>*, wrap<T7>*, wrap<T8>*, wrap<T9>*, wrap<T10>*, wrap<T11>*, wrap<T12>*, wrap<T13>*, wrap<T14>*, wrap<T15>*, ...);
};
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
template <class Chunk>
struct drop_pads;
template <class... Ts>
struct drop_pads<type_list<Ts...>> {
  using type = typename join_fold<type_list<std::conditional_t<std::is_same_v<Ts, chunk_pad>, type_list<>, type_list<Ts>>...>>::type;
};
template <class L, class Chunks>
struct chunks_impl {
  // An error "no type named 'type'" here means L is not an hpf::type_list
};
template <class... Ts, std::size_t... C>
struct chunks_impl<type_list<Ts...>, std::index_sequence<C...>> {
  template <std::size_t Chunk, std::size_t... P>
  static auto chunk(std::index_sequence<P...>)
      -> decltype(take_16_after<std::make_index_sequence<Chunk * chunk_size>>::take(
          static_cast<wrap<Ts>*>(nullptr)..., static_cast<wrap<typename pad_of<P>::type>*>(nullptr)...));
  template <std::size_t Chunk>
  using chunk_t = decltype(chunk<Chunk>(std::make_index_sequence<chunk_size>{}));
  static constexpr std::size_t last = sizeof...(C) - 1;
  using type = type_list<std::conditional_t<C == last, typename drop_pads<chunk_t<last>>::type, chunk_t<C>>...>;
};
template <>
struct chunks_impl<type_list<>, std::index_sequence<>> {
  using type = type_list<>;
};
}  // namespace detail

template <class L>
using chunks_t = typename detail::chunks_impl<L, std::make_index_sequence<(size_v<L> + chunk_size - 1) / chunk_size>>::type;

// join_t<type_list<L0..Ln>>: (L0..Ln) => L0 ++ L1 ++ ... ++ Ln, as a fold (a wrapper type lets ADL
// find the operator). A long list of lists is joined per chunk first, so that no fold has more
// than chunk_size operands (Clang's bracket depth) and the growing result is re-made fewer times.
namespace detail {
template <class Lists, bool Short = (size_v<Lists> <= chunk_size)>
struct join_impl : join_fold<Lists> {};
template <class Chunks>
struct join_chunks;
template <class... Chunks>
struct join_chunks<type_list<Chunks...>> {
  using type = typename join_impl<type_list<typename join_impl<Chunks>::type...>>::type;
};
template <class Lists>
struct join_impl<Lists, false> : join_chunks<chunks_t<Lists>> {};
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
