// SPDX-License-Identifier: MIT
#include <hpf/meta/flat_tuple.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <utility>

namespace {
struct Empty {};
template <std::size_t I>
struct Tagged {
  std::size_t value = I;
};
template <class Indices>
struct long_tuple;
template <std::size_t... I>
struct long_tuple<std::index_sequence<I...>> {
  using type = hpf::flat_tuple<Tagged<I>...>;
};
}  // namespace

TEST_CASE("flat_tuple: get<I> reaches member I, value-initialised and writable") {
  hpf::flat_tuple<int, double, Empty, int> t{};
  CHECK(hpf::get<0>(t) == 0);
  CHECK(hpf::get<1>(t) == 0.0);
  hpf::get<0>(t) = 3;
  hpf::get<3>(t) = 7;
  hpf::get<1>(t) = 2.5;
  const auto& c = t;
  CHECK(hpf::get<0>(c) == 3);
  CHECK(hpf::get<1>(c) == 2.5);
  CHECK(hpf::get<3>(c) == 7);
  static_assert(std::is_same_v<decltype(hpf::get<2>(t)), Empty&>);
  static_assert(decltype(t)::size == 4);
}

TEST_CASE("flat_tuple: 3000 members without recursive instantiation") {
  // std::tuple of this length exceeds g++'s default template depth of 900.
  using Long = long_tuple<std::make_index_sequence<3000>>::type;
  static Long t{};
  CHECK(hpf::get<0>(t).value == 0);
  CHECK(hpf::get<1234>(t).value == 1234);
  CHECK(hpf::get<2999>(t).value == 2999);
  hpf::get<2999>(t).value = 1;
  CHECK(hpf::get<2999>(t).value == 1);
}
