// SPDX-License-Identifier: MIT
#ifndef HPF_META_FLAT_TUPLE_HPP
#define HPF_META_FLAT_TUPLE_HPP

#include <hpf/meta/type_list.hpp>

#include <cstddef>
#include <utility>

namespace hpf {

// flat_tuple<T0..Tn>: one member per type, built by inheriting from indexed leaves in one pack
// expansion. libstdc++'s std::tuple nests one base per element, so a chain of 1000 layers hit the
// compiler's template depth limit of 900 and cost quadratic work in std::get; here the depth is
// constant and get<I> one cast.
namespace detail {
template <std::size_t I, class T>
struct tuple_leaf {
  [[no_unique_address]] T value;
};
template <class Indices, class... Ts>
struct flat_tuple_base;
template <std::size_t... Is, class... Ts>
struct flat_tuple_base<std::index_sequence<Is...>, Ts...> : tuple_leaf<Is, Ts>... {};

}  // namespace detail

/// \brief Value-initialised members of types Ts..., accessed with `get<I>(tuple)`.
template <class... Ts>
struct flat_tuple : detail::flat_tuple_base<std::index_sequence_for<Ts...>, Ts...> {
  static constexpr std::size_t size = sizeof...(Ts);
};

/// Member I of a flat_tuple: a cast to the leaf base whose type at_t names (deducing the base
/// from the arguments instead would try every base, quadratic work for a long chain).
template <std::size_t I, class... Ts>
constexpr auto& get(flat_tuple<Ts...>& tuple) {
  return static_cast<detail::tuple_leaf<I, at_t<type_list<Ts...>, I>>&>(tuple).value;
}
template <std::size_t I, class... Ts>
constexpr const auto& get(const flat_tuple<Ts...>& tuple) {
  return static_cast<const detail::tuple_leaf<I, at_t<type_list<Ts...>, I>>&>(tuple).value;
}

}  // namespace hpf

#endif  // HPF_META_FLAT_TUPLE_HPP
