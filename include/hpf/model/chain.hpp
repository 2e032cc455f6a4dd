// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_CHAIN_HPP
#define HPF_MODEL_CHAIN_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/tensor/views.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>

namespace hpf {

// bind_chain<In, Layers...>: (x, L0..Ln) => Ln(...L1(L0(x))), as a left fold (CuTe style), each
// layer bound through layer_in_model<I, ...> so an error names its position.
namespace detail {
template <std::size_t I, class In, class... Bound>
struct chain_acc {
  using shape = In;
  using bound_list = type_list<Bound...>;
};
template <class Layer>
struct layer_tag {};
// The result type is deduced from the body: binding a layer in the signature would make a
// rejected layer a substitution failure as well (Clang: "invalid operands to binary expression").
template <std::size_t I, class In, class... Bound, class Layer>
auto operator|(chain_acc<I, In, Bound...>, layer_tag<Layer>) {
  using step = layer_in_model<I, Layer, In>;
  return chain_acc<I + 1, typename step::output_shape, Bound..., typename step::type>{};
}

template <class In, class... Layers>
using bind_chain_t = decltype((chain_acc<0, In>{} | ... | layer_tag<Layers>{}));

template <class List>
struct chain_facts;
template <class... Bound>
struct chain_facts<type_list<Bound...>> {
  static constexpr std::size_t count = sizeof...(Bound);
  using list = type_list<Bound...>;

  /// Child I writes its output over its input, the stored output of child I-1: it can run in
  /// place, child I-1's backward does not read that output, and neither buffer is the caller's.
  static constexpr std::array<bool, count> in_place = [] {
    std::array<bool, count> r{};
    for_each_index<count>([&](auto i) {
      if constexpr (i > 0 && i + 1 < count) {
        r[i] = runs_in_place<at_t<list, i>>() && !backward_reads_output<at_t<list, i - 1>>();
      }
    });
    return r;
  }();
  /// Which stored buffer holds child I's output (its own, or an in-place predecessor's).
  static constexpr std::array<std::size_t, count> storage = [] {
    std::array<std::size_t, count> r{};
    for (std::size_t i = 0; i < count; ++i) r[i] = in_place[i] ? r[i - 1] : i;
    return r;
  }();
  /// Parameters of children 0..I-1. When the caller wants no input gradient, a child with none
  /// of them before it needs no input gradient either, and such a child without parameters of its
  /// own has no backward work at all (as autograd leaves the layers next to the data alone).
  static constexpr std::array<std::size_t, count + 1> parameters_before = [] {
    std::array<std::size_t, count + 1> r{};
    for_each_index<count>([&](auto i) { r[i + 1] = r[i] + at_t<list, i>::cost.parameters; });
    return r;
  }();
  static constexpr LayerCost cost = [] {
    LayerCost c{};
    for_each_index<count>([&](auto i) {
      c += at_t<list, i>::cost;
      if (in_place[i]) c.activations -= at_t<list, i>::cost.activations;  // shares its input's buffer
    });
    return c;
  }();
  static constexpr std::size_t leaves = (std::size_t{0} + ... + Bound::leaves);
  static std::string describe() {
    std::string s;
    ((s += (s.empty() ? "" : ", ") + Bound::describe()), ...);
    return s;
  }
};

/// Run-time chain: children in order, each child's output buffered per micro-batch in the tape
/// (in-place children share their predecessor's buffer). Children are named NameBase +
/// position ("3", "4", ...), as in a PyTorch nn.Sequential.
template <class List, class T, class Space, std::size_t NameBase = 0>
class ChainImpl;

template <class... Bound, class T, class Space, std::size_t NameBase>
class ChainImpl<type_list<Bound...>, T, Space, NameBase> {
  static constexpr std::size_t count = sizeof...(Bound);
  using list = type_list<Bound...>;
  using facts = chain_facts<list>;
  template <std::size_t I>
  using output_shape_at = typename at_t<list, I>::output_shape;
  /// Largest output of children 0..count-2: the size of each of the two gradient buffers.
  static constexpr std::size_t largest_inner_output = [] {
    std::size_t most = 0;
    for_each_index<count>([&](auto i) {
      if constexpr (i + 1 < count) most = output_shape_at<i>::size > most ? output_shape_at<i>::size : most;
    });
    return most;
  }();

 public:
  struct tape_type {
    std::tuple<typename Bound::template impl<T, Space>::tape_type...> children;
    std::array<Buffer<T, Space>, count> outputs;  // outputs[i]: child i's output, if it has its own
  };

  void bind(ParameterBinder<T, Space>& binder) {
    for_each_index<count>([&](auto i) {
      parameter_begin_[i] = binder.parameter_offset();
      auto scope = binder.scope(NameBase + i);
      std::get<i>(children_).bind(binder);
    });
  }

  void reserve(tape_type& tape, std::size_t capacity) {
    for_each_index<count>([&](auto i) {
      std::get<i>(children_).reserve(std::get<i>(tape.children), capacity);
      if constexpr (i + 1 < count) {
        if (facts::storage[i] == i) ensure_capacity(tape.outputs[i], output_shape_at<i>::size * capacity, "hpf::Chain::output");
      }
    });
  }

  std::size_t workspace(std::size_t capacity) const {
    std::size_t most = 0;
    for_each_index<count>([&](auto i) {
      const std::size_t w = std::get<i>(children_).workspace(capacity);
      most = w > most ? w : most;
    });
    return most;
  }
  /// Two gradient buffers of this chain, then the deepest child's scratch after them.
  std::size_t scratch(std::size_t capacity) const {
    std::size_t children = 0;
    for_each_index<count>([&](auto i) {
      const std::size_t c = scratch_of(std::get<i>(children_), capacity);
      children = c > children ? c : children;
    });
    return 2 * largest_inner_output * capacity + children;
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    const std::size_t n = x.extent(1);
    for_each_index<count>([&](auto i) {
      std::get<i>(children_).forward(ctx, input_of<i>(x, tape, n), output_of<i>(y, tape, n),
                                     std::get<i>(tape.children));
    });
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> y,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    const std::size_t n = x.extent(1);
    T* gradients = ctx.scratch_at(2 * largest_inner_output * n);
    const Context<T, Space> inner = ctx.after_scratch(2 * largest_inner_output * n);
    const bool input_gradient_wanted = !is_empty(dx);
    for_each_index_reversed<count>([&](auto i) {
      const bool gradient_in_wanted = input_gradient_wanted || facts::parameters_before[i] > 0;
      if (!gradient_in_wanted && facts::parameters_before[i + 1] == 0) {  // nothing to learn here or below
        if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
        return;
      }
      ConstActivation<T, Space> grad_out;
      if constexpr (i + 1 == count) {
        grad_out = dy;
      } else {
        grad_out = gradient_view<i>(gradients, i % 2, n);
      }
      Activation<T, Space> grad_in;
      if constexpr (i == 0) {
        grad_in = dx;
      } else {
        if (gradient_in_wanted) grad_in = gradient_view<i - 1>(gradients, (i - 1) % 2, n);
      }
      std::get<i>(children_).backward(inner, input_of<i>(x, tape, n), output_of<i>(y, tape, n), grad_out, grad_in,
                                      std::get<i>(tape.children));
      if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
    });
  }

  /// Child I (for layers with extra entry points, such as the loss).
  template <std::size_t I>
  const auto& child() const {
    return std::get<I>(children_);
  }
  /// Child I's output as stored in `tape` (the last child's output belongs to the caller).
  template <std::size_t I>
  Activation<T, Space> stored_output(const tape_type& tape, std::size_t n) const {
    static_assert(I + 1 < count, "hpf::Chain: the last child's output is the caller's buffer");
    return activation_view(tape.outputs[facts::storage[I]], output_shape_at<I>::channels, n, output_shape_at<I>::spatial);
  }

 private:
  template <std::size_t I>
  ConstActivation<T, Space> input_of(ConstActivation<T, Space> x, const tape_type& tape, std::size_t n) const {
    if constexpr (I == 0) {
      return x;
    } else {
      return stored_output<I - 1>(tape, n);
    }
  }
  /// Child I's output: the tape's buffer, or for the last child the caller's view (mutable in
  /// forward, read-only in backward).
  template <std::size_t I, class OutputView>
  auto output_of(const OutputView& y, const tape_type& tape, std::size_t n) const {
    if constexpr (I + 1 == count) {
      return y;
    } else {
      return stored_output<I>(tape, n);
    }
  }
  template <std::size_t I>
  static Activation<T, Space> gradient_view(T* gradients, std::size_t which, std::size_t n) {
    return Activation<T, Space>(gradients + which * largest_inner_output * n, output_shape_at<I>::channels, n,
                                output_shape_at<I>::spatial);
  }

  std::tuple<typename Bound::template impl<T, Space>...> children_;
  std::array<std::size_t, count> parameter_begin_{};
};
}  // namespace detail

namespace detail {
/// A chain whose children are named NameBase, NameBase + 1, ...: a pipeline stage holding layers
/// NameBase.. of a model keeps the names they have in the whole model.
template <std::size_t NameBase, class... Layers>
struct chain_named_from {
  static_assert(sizeof...(Layers) > 0, "hpf::Chain: a chain needs at least one layer");

  template <class In>
  struct bind {
    using acc = bind_chain_t<In, Layers...>;
    using bound_list = typename acc::bound_list;
    using input_shape = In;
    using output_shape = typename acc::shape;
    static constexpr LayerCost cost = chain_facts<bound_list>::cost;
    static constexpr std::size_t leaves = chain_facts<bound_list>::leaves;
    static constexpr bool in_place = false;
    static constexpr bool backward_reads_output = hpf::backward_reads_output<at_t<bound_list, size_v<bound_list> - 1>>();
    static std::string describe() { return "[" + chain_facts<bound_list>::describe() + "]"; }
    template <class T, class Space>
    using impl = ChainImpl<bound_list, T, Space, NameBase>;
  };
};
}  // namespace detail

/// \brief Layers applied one after another; a block of a model (a residual body, a repeated
/// block) or, under Sequential, the model itself.
template <class... Layers>
struct Chain : detail::chain_named_from<0, Layers...> {};

}  // namespace hpf

#endif  // HPF_MODEL_CHAIN_HPP
