// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_DENSE_PAIR_HPP
#define HPF_MODEL_DENSE_PAIR_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/cost.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/chain.hpp>

#include <array>
#include <cstddef>
#include <string>

namespace hpf {

namespace detail {
template <class Bound>
constexpr bool is_dense_layer() {
  if constexpr (requires { Bound::is_dense; }) return Bound::is_dense;
  return false;
}
template <class Bound>
constexpr bool is_elementwise_layer() {
  if constexpr (requires { Bound::elementwise; }) return Bound::elementwise;
  return false;
}
/// Whether bound layers form a pair: Dense, elementwise layers, Dense.
template <class List>
struct pair_form;
template <class... Bound>
struct pair_form<type_list<Bound...>> {
  static constexpr std::size_t count = sizeof...(Bound);
  static constexpr bool value = [] {
    constexpr std::array<bool, count> dense{{is_dense_layer<Bound>()...}};
    constexpr std::array<bool, count> elementwise{{is_elementwise_layer<Bound>()...}};
    if (count < 2 || !dense[0] || !dense[count - 1]) return false;
    for (std::size_t i = 1; i + 1 < count; ++i) {
      if (!elementwise[i]) return false;
    }
    return true;
  }();
};
/// The compile error of a DensePair of other layers.
template <class... Layers>
struct dense_pair_malformed {
  static_assert(sizeof...(Layers) == 0,
                "hpf::DensePair: a pair is a Dense layer, elementwise layers (ReLU, GELU, GELUTanh, Dropout, "
                "Identity) and a Dense layer, in that order (the template arguments above)");
};
}  // namespace detail

/// \brief Two Dense layers and the elementwise layers between them (a transformer's MLP, an MLP's
/// hidden layer), which a filter or channel split (hpf::Filter<G>, hpf::Channel<G>) runs as
/// Megatron's column- then row-parallel pair: member m computes its share of the first layer's
/// outputs and keeps them, the elementwise layers run on them, and the second layer reads only
/// those and adds the members' partial outputs over the group. Forward and backward each add
/// over the group once for both layers (a filter split of two lone Dense layers gathers twice
/// and adds twice). Unsplit, it is the chain of its layers, with the same names and
/// parameters as a Chain<First, Rest...> (children "0", "1", ...).
///
/// The sums follow hpf::ordered_sum's tree, so one process computing every member and G
/// processes computing one each get the same bits. The activations between the two layers keep
/// their whole shape on every member (the other members' features are zeros there).
template <class First, class... Rest>
struct DensePair {
  template <class In>
  struct bind {
    using chain = typename detail::chain_named_from<0, First, Rest...>::template bind<In>;
    using bound_list = typename chain::bound_list;
    static constexpr bool shaped = chain::output_shape::valid;
    static constexpr bool paired = !shaped || detail::pair_form<bound_list>::value;
    static_assert(sizeof(std::conditional_t<paired, char, detail::dense_pair_malformed<First, Rest...>>));

    using input_shape = In;
    using output_shape = std::conditional_t<paired, typename chain::output_shape, InvalidShape>;
    /// The chain's, with the pair's traffic in place of its two layers' (LayerCost::split_pairs).
    static constexpr LayerCost cost = [] {
      LayerCost c = chain::cost;
      if constexpr (shaped) {
        constexpr LayerCost first = at_t<bound_list, 0>::cost;
        constexpr LayerCost last = at_t<bound_list, size_v<bound_list> - 1>::cost;
        c.split_inputs -= first.split_inputs + last.split_inputs;
        c.split_outputs -= first.split_outputs + last.split_outputs;
        c.split_pair_forward += last.split_outputs;
        c.split_pair_backward += first.split_inputs;
        c.split_pairs += 1;
      }
      return c;
    }();
    static constexpr std::size_t leaves = chain::leaves;
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = chain::backward_reads_output;
    static std::string describe() { return "DensePair[" + detail::chain_facts<bound_list>::describe() + "]"; }
    template <class T, class Space>
    using impl = detail::ChainImpl<bound_list, T, Space, 0, /*Paired=*/true>;
  };
};

}  // namespace hpf

#endif  // HPF_MODEL_DENSE_PAIR_HPP
