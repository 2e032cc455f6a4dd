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

// chunks_t<L>: (T0..Tn) => [T0..T15], [T16..T31], ..., the last chunk shorter (chunk_size = 16).
// One left fold over the elements carries the finished chunks and the current one: each step
// re-makes a list of at most N / 16 chunks (tens of megabytes of g++ memory at N = 2000). Taking each
// chunk by overload resolution over all N elements cost 280 MB there, and Clang's
// __type_pack_element, which expands all N elements per lookup, 330 MB (both quadratic in N).
// The fold has N operands: the hpf target raises Clang's -fbracket-depth for it.
inline constexpr std::size_t chunk_size = 16;
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
template <class L>
struct chunks_impl {
  // An error "no type named 'type'" here means L is not an hpf::type_list
};
template <class Done, class Current>
struct chunk_acc {};
template <class T>
struct chunk_element {};
template <class... Done, class... Current, class T>
auto operator|(chunk_acc<type_list<Done...>, type_list<Current...>>, chunk_element<T>) {
  if constexpr (sizeof...(Current) + 1 == chunk_size) {
    return chunk_acc<type_list<Done..., type_list<Current..., T>>, type_list<>>{};
  } else {
    return chunk_acc<type_list<Done...>, type_list<Current..., T>>{};
  }
}
template <class... Done, class... Current>
auto finish_chunks(chunk_acc<type_list<Done...>, type_list<Current...>>) {
  if constexpr (sizeof...(Current) == 0) {
    return type_list<Done...>{};
  } else {
    return type_list<Done..., type_list<Current...>>{};
  }
}
template <class... Ts>
struct chunks_impl<type_list<Ts...>> {
  using type = decltype(finish_chunks((chunk_acc<type_list<>, type_list<>>{} | ... | chunk_element<Ts>{})));
};
}  // namespace detail

template <class L>
using chunks_t = typename detail::chunks_impl<L>::type;

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

// slice_t<L, From, To>: (T0..Tn) => [T_From .. T_(To-1)], chunk by chunk: a chunk inside the range
// is kept whole, one outside is dropped, and only the (at most two) chunks the bounds cut are
// filtered element by element. Positions are compared with From and To, never looked up.
namespace detail {
enum class SliceCut { all, none, some };
template <std::size_t First, std::size_t Size, std::size_t From, std::size_t To>
inline constexpr SliceCut slice_cut = (From <= First && First + Size <= To)   ? SliceCut::all
                                      : (First + Size <= From || To <= First) ? SliceCut::none
                                                                              : SliceCut::some;
template <std::size_t First, std::size_t From, std::size_t To, class Chunk,
          SliceCut Cut = slice_cut<First, size_v<Chunk>, From, To>>
struct slice_chunk {
  using type = Chunk;
};
template <std::size_t First, std::size_t From, std::size_t To, class Chunk>
struct slice_chunk<First, From, To, Chunk, SliceCut::none> {
  using type = type_list<>;
};
template <std::size_t First, std::size_t From, std::size_t To, class Chunk, class Positions>
struct slice_within;
template <std::size_t First, std::size_t From, std::size_t To, class... Ts, std::size_t... K>
struct slice_within<First, From, To, type_list<Ts...>, std::index_sequence<K...>> {
  using type = typename join_fold<
      type_list<std::conditional_t<(From <= First + K && First + K < To), type_list<Ts>, type_list<>>...>>::type;
};
template <std::size_t First, std::size_t From, std::size_t To, class Chunk>
struct slice_chunk<First, From, To, Chunk, SliceCut::some>
    : slice_within<First, From, To, Chunk, std::make_index_sequence<size_v<Chunk>>> {};
template <std::size_t From, std::size_t To, class Chunks, class Indices>
struct slice_impl;
template <std::size_t From, std::size_t To, class... Chunks, std::size_t... C>
struct slice_impl<From, To, type_list<Chunks...>, std::index_sequence<C...>> {
  using type = join_t<type_list<typename slice_chunk<C * chunk_size, From, To, Chunks>::type...>>;
};
}  // namespace detail

template <class L, std::size_t From, std::size_t To>
using slice_t = typename detail::slice_impl<From, To, chunks_t<L>, std::make_index_sequence<size_v<chunks_t<L>>>>::type;

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
