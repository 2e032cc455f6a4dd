// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_CHAIN_HPP
#define HPF_MODEL_CHAIN_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/layers/protocol.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/meta/type_name.hpp>
#include <hpf/model/chain_roles.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/span.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace hpf {

// bind_chain<In, Layers...>: (x, L0..Ln) => Ln(...L1(L0(x))), as left folds (CuTe style), each
// layer bound through layer_in_model<I, ...> so an error names its position. A fold that carried
// every bound layer would re-hash a growing pack at each step (quadratic in the chain's length), so
// the layers are bound in chunks of chunk_size (16): the inner fold carries at most a chunk, the outer
// one a bound list per chunk, and the chunks are joined once at the end.
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

template <std::size_t First, class In, class Chunk>
struct bind_chunk;
template <std::size_t First, class In, class... Layers>
struct bind_chunk<First, In, type_list<Layers...>> {
  using type = decltype((chain_acc<First, In>{} | ... | layer_tag<Layers>{}));
};

template <std::size_t I, class In, class... BoundChunks>
struct chunks_acc {
  using shape = In;
  using bound_chunks = type_list<BoundChunks...>;
};
template <class Chunk>
struct chunk_tag {};
template <std::size_t I, class In, class... BoundChunks, class Chunk>
auto operator|(chunks_acc<I, In, BoundChunks...>, chunk_tag<Chunk>) {
  using step = typename bind_chunk<I, In, Chunk>::type;
  return chunks_acc<I + size_v<Chunk>, typename step::shape, BoundChunks..., typename step::bound_list>{};
}
template <class In, class... Chunks>
auto bind_chunks(type_list<Chunks...>) -> decltype((chunks_acc<0, In>{} | ... | chunk_tag<Chunks>{}));

// A list of at most one chunk is one fold: diagnostics then show as few instantiation levels per
// nesting level of blocks as before chunking (tests/compile_fail/nested_repeat_residual.cpp).
template <class In, class... Layers>
struct bind_chain {
  using chunks = chunks_t<type_list<Layers...>>;
  using acc = decltype(bind_chunks<In>(chunks{}));
  using shape = typename acc::shape;
  using bound_list = join_t<typename acc::bound_chunks>;
};
template <class In, class... Layers>
  requires(sizeof...(Layers) <= chunk_size)
struct bind_chain<In, Layers...> {
  using acc = decltype((chain_acc<0, In>{} | ... | layer_tag<Layers>{}));
  using shape = typename acc::shape;
  using bound_list = typename acc::bound_list;
};

/// Facts of a chain of bound layers, each from one pack expansion into an array (no per-index
/// instantiation, so a chain of thousands of layers costs linear compile time).
template <class List>
struct chain_facts;
template <class... Bound>
struct chain_facts<type_list<Bound...>> {
  static constexpr std::size_t count = sizeof...(Bound);
  using list = type_list<Bound...>;
  static constexpr std::array<LayerCost, count> costs{{Bound::cost...}};
  static constexpr std::array<std::size_t, count> output_size{{Bound::output_shape::size...}};
  static constexpr std::array<std::size_t, count> output_channels{{Bound::output_shape::channels...}};
  static constexpr std::array<std::size_t, count> output_spatial{{Bound::output_shape::spatial...}};

  /// Each child's role: in place, fused with a neighbouring ReLU, which gradient buffer
  /// (hpf::detail::ChainRole).
  static constexpr std::array<ChainChild, count> children{{chain_child<Bound>()...}};
  static constexpr std::array<ChainRole, count> roles = [] {
    std::array<ChainRole, count> r{};
    assign_chain_roles(children.data(), count, r.data());
    return r;
  }();
  /// The last child runs in place on the caller's output, which child count-2 writes.
  static constexpr bool last_in_place = roles[count - 1].in_place;
  /// The chain itself can take the backward of a ReLU that follows it: its last child does
  /// (it has backward_relu) and runs on a buffer of its own.
  static constexpr bool ends_applying_relu_backward = children[count - 1].can_apply_next_relu_backward && !last_in_place;
  /// Which stored buffer holds child I's output (its own, or an in-place predecessor's).
  static constexpr std::array<std::size_t, count> storage = [] {
    std::array<std::size_t, count> r{};
    for (std::size_t i = 0; i < count; ++i) r[i] = roles[i].in_place ? r[i - 1] : i;
    return r;
  }();
  /// Parameters of children 0..I-1. When the caller wants no input gradient, a child with none
  /// of them before it needs no input gradient either, and such a child without parameters of its
  /// own has no backward work at all (as autograd leaves the layers next to the data alone).
  static constexpr std::array<std::size_t, count + 1> parameters_before = [] {
    std::array<std::size_t, count + 1> r{};
    for (std::size_t i = 0; i < count; ++i) r[i + 1] = r[i] + costs[i].parameters;
    return r;
  }();
  static constexpr LayerCost cost = [] {
    LayerCost c{};
    for (std::size_t i = 0; i < count; ++i) {
      c += costs[i];
      if (roles[i].in_place) c.activations -= costs[i].activations;  // shares its input's buffer
    }
    return c;
  }();
  static constexpr std::size_t leaves = [] {
    constexpr std::array<std::size_t, count> each{{Bound::leaves...}};
    std::size_t n = 0;
    for (std::size_t l : each) n += l;
    return n;
  }();
  /// Largest output of children 0..count-2: the size of each of a chain's two gradient buffers.
  static constexpr std::size_t largest_inner_output = [] {
    std::size_t most = 0;
    for (std::size_t i = 0; i + 1 < count; ++i) most = output_size[i] > most ? output_size[i] : most;
    return most;
  }();
  /// A table of functions, not an array of strings: initialising N strings in one expression
  /// gives g++ N nested clean-ups to build (minutes at N = 2000).
  static std::string describe() {
    constexpr std::array<std::string (*)(), count> describers{{&Bound::describe...}};
    std::string s;
    for (auto describe_child : describers) s += (s.empty() ? "" : ", ") + describe_child();
    return s;
  }
};

/// How to make (value-initialised, or as a copy of `from`) and destroy one object of a type only
/// known at run time.
struct erased_kind {
  void* (*make)(const void* from);
  void (*destroy)(void* object);
};
template <class U>
struct erased_kind_of {
  static void* make(const void* from) { return from ? new U(*static_cast<const U*>(from)) : new U(); }
  static void destroy(void* object) { delete static_cast<U*>(object); }
  static constexpr erased_kind kind{&make, &destroy};
};

/// N heap objects of the kinds `Kinds::kinds[i]` (a static constexpr std::array<erased_kind, N>),
/// made, copied and destroyed in run-time loops. A class with thousands of members of distinct
/// types instead has constructors of quadratic size (each member's exception cleanup destroys
/// all before it), which g++ takes minutes to compile at 2000 members.
template <class Kinds>
class erased_array {
  static constexpr std::size_t n = Kinds::kinds.size();

 public:
  erased_array() { make_all(nullptr); }
  erased_array(const erased_array& other) { make_all(&other); }
  erased_array(erased_array&& other) noexcept : objects_(other.objects_) { other.objects_ = {}; }
  erased_array& operator=(erased_array other) noexcept {
    std::swap(objects_, other.objects_);
    return *this;
  }
  ~erased_array() { destroy_all(); }

  /// Object i (its type is the one Kinds::kinds[i] makes).
  void* operator[](std::size_t i) const { return objects_[i]; }

 private:
  void make_all(const erased_array* from) {
    try {
      for (std::size_t i = 0; i < n; ++i) objects_[i] = Kinds::kinds[i].make(from ? from->objects_[i] : nullptr);
    } catch (...) {
      destroy_all();
      throw;
    }
  }
  void destroy_all() noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      if (objects_[i]) Kinds::kinds[i].destroy(objects_[i]);
      objects_[i] = nullptr;
    }
  }
  std::array<void*, n> objects_{};
};

/// One child implementation's entry points as plain functions over `void*`: a chain calls its
/// children through a table of these in a run-time loop, so a chain of N children of K distinct
/// kinds instantiates K sets of functions, not N (and no function grows with N).
template <class T, class Space>
struct child_ops {
  void (*bind)(void* child, ParameterBinder<T, Space>& binder);
  void (*reserve)(void* child, void* tape, std::size_t capacity);
  std::size_t (*workspace)(const void* child, std::size_t capacity);
  std::size_t (*scratch)(const void* child, std::size_t capacity);
  void (*forward)(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
                  void* tape);
  void (*backward)(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                   ConstActivation<T, Space> y, ConstActivation<T, Space> dy, Activation<T, Space> dx, void* tape);
  // The same with a following ReLU applied in the child's passes, and with a preceding ReLU's
  // (null unless it can).
  decltype(forward) forward_relu;
  decltype(backward) backward_relu;
  decltype(forward) forward_after_relu;
  decltype(backward) backward_after_relu;
  std::string_view name;  ///< the layer kind, for per-layer trace spans
};
template <class Impl, class T, class Space>
struct erased_child {
  // Once per kind of child: a missing member of the run-time protocol is named here.
  static_assert(layer_implementation_check<Impl, T, Space>::value,
                "hpf: a layer implementation does not meet the layer protocol (see the error above)");
  using tape_type = typename Impl::tape_type;
  static void bind(void* child, ParameterBinder<T, Space>& binder) { static_cast<Impl*>(child)->bind(binder); }
  static void reserve(void* child, void* tape, std::size_t capacity) {
    static_cast<Impl*>(child)->reserve(*static_cast<tape_type*>(tape), capacity);
  }
  static std::size_t workspace(const void* child, std::size_t capacity) {
    return static_cast<const Impl*>(child)->workspace(capacity);
  }
  static std::size_t scratch(const void* child, std::size_t capacity) {
    return scratch_of(*static_cast<const Impl*>(child), capacity);
  }
  static void forward(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                      Activation<T, Space> y, void* tape) {
    static_cast<const Impl*>(child)->forward(ctx, x, y, *static_cast<tape_type*>(tape));
  }
  static void backward(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                       ConstActivation<T, Space> y, ConstActivation<T, Space> dy, Activation<T, Space> dx, void* tape) {
    static_cast<const Impl*>(child)->backward(ctx, x, y, dy, dx, *static_cast<tape_type*>(tape));
  }
  static void forward_relu(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                           Activation<T, Space> y, void* tape) {
    if constexpr (relu_forward) static_cast<const Impl*>(child)->forward_relu(ctx, x, y, *static_cast<tape_type*>(tape));
  }
  static void backward_relu(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                            ConstActivation<T, Space> y, ConstActivation<T, Space> dy, Activation<T, Space> dx,
                            void* tape) {
    if constexpr (relu_backward)
      static_cast<const Impl*>(child)->backward_relu(ctx, x, y, dy, dx, *static_cast<tape_type*>(tape));
  }
  static void forward_after_relu(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                                 Activation<T, Space> y, void* tape) {
    if constexpr (relu_before)
      static_cast<const Impl*>(child)->forward_after_relu(ctx, x, y, *static_cast<tape_type*>(tape));
  }
  static void backward_after_relu(const void* child, const Context<T, Space>& ctx, ConstActivation<T, Space> x,
                                  ConstActivation<T, Space> y, ConstActivation<T, Space> dy, Activation<T, Space> dx,
                                  void* tape) {
    if constexpr (relu_before)
      static_cast<const Impl*>(child)->backward_after_relu(ctx, x, y, dy, dx, *static_cast<tape_type*>(tape));
  }
  static constexpr bool relu_forward = requires(const Impl& layer, const Context<T, Space>& ctx,
                                                ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) {
    layer.forward_relu(ctx, x, y, tape);
  };
  static constexpr bool relu_backward = requires(const Impl& layer, const Context<T, Space>& ctx,
                                                 ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) {
    layer.backward_relu(ctx, x, x, x, y, tape);
  };
  static constexpr bool relu_before = requires(const Impl& layer, const Context<T, Space>& ctx,
                                               ConstActivation<T, Space> x, Activation<T, Space> y, tape_type& tape) {
    layer.forward_after_relu(ctx, x, y, tape);
    layer.backward_after_relu(ctx, x, x, x, y, tape);
  };
  static constexpr child_ops<T, Space> ops{&bind, &reserve, &workspace, &scratch, &forward, &backward,
                                           relu_forward ? &forward_relu : nullptr,
                                           relu_backward ? &backward_relu : nullptr,
                                           relu_before ? &forward_after_relu : nullptr,
                                           relu_before ? &backward_after_relu : nullptr, short_type_name<Impl>()};
};

/// Run-time chain: children in order, each child's output buffered per micro-batch in the tape
/// (in-place children share their predecessor's buffer). Children are named NameBase +
/// position ("3", "4", ...), as in a PyTorch nn.Sequential. A Paired chain is an hpf::DensePair:
/// its first child binds as the pair's column layer, its last as the row layer.
template <class List, class T, class Space, std::size_t NameBase = 0, bool Paired = false>
class ChainImpl;

template <class... Bound, class T, class Space, std::size_t NameBase, bool Paired>
class ChainImpl<type_list<Bound...>, T, Space, NameBase, Paired> {
  static constexpr std::size_t count = sizeof...(Bound);
  using facts = chain_facts<type_list<Bound...>>;
  static constexpr std::size_t largest_inner_output = facts::largest_inner_output;
  static constexpr std::array<const child_ops<T, Space>*, count> ops_{
      {&erased_child<typename Bound::template impl<T, Space>, T, Space>::ops...}};
  struct child_kinds {
    static constexpr std::array<erased_kind, count> kinds{
        {erased_kind_of<typename Bound::template impl<T, Space>>::kind...}};
  };
  struct tape_kinds {
    static constexpr std::array<erased_kind, count> kinds{
        {erased_kind_of<typename Bound::template impl<T, Space>::tape_type>::kind...}};
  };
  template <std::size_t I>
  using child_impl = typename at_t<type_list<Bound...>, I>::template impl<T, Space>;

 public:
  struct tape_type {
    erased_array<tape_kinds> children;    // children[i]: child i's tape
    std::array<Buffer<T, Space>, count> outputs;  // outputs[i]: child i's output, if it has its own
  };

  void bind(ParameterBinder<T, Space>& binder) {
    const auto& children = children_;
    for (std::size_t i = 0; i < count; ++i) {
      parameter_begin_[i] = binder.parameter_offset();
      auto scope = binder.scope(NameBase + i);
      const PairRole role = !Paired ? PairRole::none : i == 0 ? PairRole::column : i + 1 == count ? PairRole::row : PairRole::none;
      auto in_pair = binder.pair_role(role);
      ops_[i]->bind(children[i], binder);
    }
  }

  void reserve(tape_type& tape, std::size_t capacity) {
    const auto& children = children_;
    const auto& tapes = tape.children;
    for (std::size_t i = 0; i < count; ++i) {
      ops_[i]->reserve(children[i], tapes[i], capacity);
      if (i + 1 < count && facts::storage[i] == i && !writes_caller_output(i)) {
        ensure_capacity(tape.outputs[i], facts::output_size[i] * capacity, "hpf::Chain::output");
      }
    }
  }

  std::size_t workspace(std::size_t capacity) const {
    const auto& children = children_;
    std::size_t most = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t w = ops_[i]->workspace(children[i], capacity);
      most = w > most ? w : most;
    }
    return most;
  }
  /// Two gradient buffers of this chain, then the deepest child's scratch after them.
  std::size_t scratch(std::size_t capacity) const {
    const auto& children = children_;
    std::size_t deepest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t c = ops_[i]->scratch(children[i], capacity);
      deepest = c > deepest ? c : deepest;
    }
    return 2 * largest_inner_output * capacity + deepest;
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type& tape) const {
    const std::size_t n = x.extent(1);
    const auto& children = children_;
    const auto& tapes = tape.children;
    // A per-layer look at outputs (after_forward) sees each layer's own output: no fusing then.
    const bool fuse = !ctx.after_forward;
    for (std::size_t i = 0; i < count; ++i) {
      const trace::LayerSpan span(ops_[i]->name, NameBase + i);
      if (fuse && i > 0 && facts::roles[i - 1].applies_next_relu_forward) continue;  // child i-1 applied this ReLU
      if (fuse && i + 1 < count && facts::roles[i + 1].applies_previous_relu_forward) continue;  // child i+1 applies it
      const Activation<T, Space> out = output_at(i, y, tape, n);
      const auto run = fuse && facts::roles[i].applies_next_relu_forward       ? ops_[i]->forward_relu
                       : fuse && facts::roles[i].applies_previous_relu_forward ? ops_[i]->forward_after_relu
                                                                               : ops_[i]->forward;
      run(children[i], ctx, input_of(i, x, y, tape, n), out, tapes[i]);
      if (ctx.after_forward) ctx.after_forward(NameBase + i, ops_[i]->name, out);
      if (ctx.between_layers) ctx.between_layers();
    }
  }

  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> y,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type& tape) const {
    backward_through<false>(ctx, x, y, dy, {}, dx, tape);
  }
  /// backward, given the output gradient of a ReLU that follows the chain and that ReLU's output
  /// (relu_y): the last child forms the gradient through the ReLU as it reads it.
  void backward_relu(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> relu_y,
                     ConstActivation<T, Space> relu_dy, Activation<T, Space> dx, tape_type& tape) const
    requires(facts::ends_applying_relu_backward)
  {
    backward_through<true>(ctx, x, {}, relu_dy, relu_y, dx, tape);  // no child reads the chain's output
  }

  /// Child I (for layers with extra entry points, such as the loss).
  template <std::size_t I>
  const child_impl<I>& child() const {
    return *static_cast<const child_impl<I>*>(children_[I]);
  }
  /// Child I's tape in the chain's tape.
  template <std::size_t I>
  static typename child_impl<I>::tape_type& child_tape(tape_type& tape) {
    return *static_cast<typename child_impl<I>::tape_type*>(tape.children[I]);
  }
  template <std::size_t I>
  static const typename child_impl<I>::tape_type& child_tape(const tape_type& tape) {
    return *static_cast<const typename child_impl<I>::tape_type*>(tape.children[I]);
  }
  /// Child i's output as stored in `tape` (the last child's output belongs to the caller, and so
  /// does the one before it when the last runs in place).
  Activation<T, Space> stored_output(std::size_t i, const tape_type& tape, std::size_t n) const {
    KOKKOS_ASSERT(!writes_caller_output(i));
    return activation_view(tape.outputs[facts::storage[i]], facts::output_channels[i], n, facts::output_spatial[i]);
  }

 private:
  /// Child i writes the chain's output y: the last child, and the one before it when the last
  /// runs in place.
  static constexpr bool writes_caller_output(std::size_t i) {
    return i + 1 == count || (i + 2 == count && facts::last_in_place);
  }
  Activation<T, Space> output_at(std::size_t i, Activation<T, Space> y, const tape_type& tape, std::size_t n) const {
    return writes_caller_output(i) ? y : stored_output(i, tape, n);
  }
  ConstActivation<T, Space> input_of(std::size_t i, ConstActivation<T, Space> x, ConstActivation<T, Space> y,
                                     const tape_type& tape, std::size_t n) const {
    if (i == 0) return x;
    return writes_caller_output(i - 1) ? y : ConstActivation<T, Space>(stored_output(i - 1, tape, n));
  }

  /// The backward of every child, last to first; with Relu, the chain's output gradient is a
  /// following ReLU's (dy, with that ReLU's output relu_y), which the last child applies.
  template <bool Relu>
  void backward_through(const Context<T, Space>& ctx, ConstActivation<T, Space> x, ConstActivation<T, Space> y,
                        ConstActivation<T, Space> dy, ConstActivation<T, Space> relu_y, Activation<T, Space> dx,
                        tape_type& tape) const {
    const std::size_t n = x.extent(1);
    T* gradients = ctx.scratch_at(2 * largest_inner_output * n);
    const Context<T, Space> inner = ctx.after_scratch(2 * largest_inner_output * n);
    const bool input_gradient_wanted = !is_empty(dx);
    const auto& children = children_;
    const auto& tapes = tape.children;
    // The output and output gradient of child i (the caller's y and dy for the last).
    const auto output = [&](std::size_t i) {
      return writes_caller_output(i) ? y : ConstActivation<T, Space>(stored_output(i, tape, n));
    };
    const auto output_gradient = [&](std::size_t i) {
      return i + 1 == count ? dy : ConstActivation<T, Space>(gradient_view(i, gradients, facts::roles[i].gradient_buffer, n));
    };
    for (std::size_t i = count; i-- > 0;) {
      const bool gradient_in_wanted = wants_input_gradient(input_gradient_wanted, facts::parameters_before[i]);
      if (!gradient_in_wanted && facts::parameters_before[i + 1] == 0) {  // nothing to learn here or below
        if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
        continue;
      }
      Activation<T, Space> grad_in;
      if (i == 0) {
        grad_in = dx;
      } else if (gradient_in_wanted) {
        grad_in = gradient_view(i - 1, gradients, facts::roles[i - 1].gradient_buffer, n);
      }
      const trace::LayerSpan span(ops_[i]->name, NameBase + i);
      // This ReLU's backward runs in child i-1's or in child i+1's.
      if (backward_applied_by_neighbour(facts::roles.data(), count, i)) {
        if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
        continue;
      }
      const ConstActivation<T, Space> in = input_of(i, x, y, tape, n);
      if (Relu && i + 1 == count) {  // the following ReLU's output and output gradient
        ops_[i]->backward_relu(children[i], inner, in, relu_y, dy, grad_in, tapes[i]);
      } else if (facts::roles[i].applies_next_relu_backward) {  // given the next child's (a ReLU's) output and output gradient
        ops_[i]->backward_relu(children[i], inner, in, output(i + 1), output_gradient(i + 1), grad_in, tapes[i]);
      } else if (facts::roles[i].applies_previous_relu_backward) {  // grad_in: the gradient at the ReLU's input
        ops_[i]->backward_after_relu(children[i], inner, in, output(i), output_gradient(i), grad_in, tapes[i]);
      } else {
        ops_[i]->backward(children[i], inner, in, output(i), output_gradient(i), grad_in, tapes[i]);
      }
      if (ctx.gradients_ready) ctx.gradients_ready(parameter_begin_[i]);
    }
  }
  static Activation<T, Space> gradient_view(std::size_t i, T* gradients, std::size_t which, std::size_t n) {
    return Activation<T, Space>(gradients + which * largest_inner_output * n, facts::output_channels[i], n,
                                facts::output_spatial[i]);
  }

  erased_array<child_kinds> children_;
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
    using acc = bind_chain<In, Layers...>;
    using bound_list = typename acc::bound_list;
    using input_shape = In;
    using output_shape = typename acc::shape;
    static constexpr LayerCost cost = chain_facts<bound_list>::cost;
    static constexpr std::size_t leaves = chain_facts<bound_list>::leaves;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;  // its children say whether they do
    static constexpr bool backward_reads_output = hpf::backward_reads_output<at_t<bound_list, size_v<bound_list> - 1>>();
    /// backward_relu: the last child takes a following ReLU's gradient (a residual body ending
    /// in BatchNorm; the chain gives no forward_relu, so a chain never fuses it on its own).
    static constexpr bool applies_next_relu_backward = chain_facts<bound_list>::ends_applying_relu_backward;
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
