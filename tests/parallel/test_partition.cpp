#include <hpf/model/network.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>

using hpf::Balanced;

// Stage costs add up to the model's, except activation memory: a ReLU that ends or starts a
// stage cannot write over its predecessor's output as it does inside one chain.
constexpr bool same_work(hpf::LayerCost a, hpf::LayerCost b) {
  return a.parameters == b.parameters && a.buffers == b.buffers && a.forward_flops == b.forward_flops &&
         a.backward_flops == b.backward_flops && a.macs == b.macs && a.activations >= b.activations;
}
using hpf::Cuts;
using hpf::stage_t;
namespace zoo = hpf::zoo;

// MLP leaves: Flatten 0, Dense 1, ReLU 2, Dense 3, ReLU 4, Dense 5, Loss 6
using Mlp2 = Cuts<3>;
static_assert(hpf::stage_count_v<zoo::Mlp, Mlp2> == 2);
static_assert(std::is_same_v<stage_t<zoo::Mlp, Mlp2, 0>::layers, hpf::type_list<hpf::Flatten, hpf::Dense<512>, hpf::ReLU>>);
static_assert(std::is_same_v<stage_t<zoo::Mlp, Mlp2, 0>::output_shape, hpf::Shape<512>>);
static_assert(std::is_same_v<stage_t<zoo::Mlp, Mlp2, 1>::input_shape, hpf::Shape<512>>);
static_assert(stage_t<zoo::Mlp, Mlp2, 1>::first_layer == 3);
static_assert(!stage_t<zoo::Mlp, Mlp2, 0>::trainable && stage_t<zoo::Mlp, Mlp2, 1>::trainable);
static_assert(same_work(stage_t<zoo::Mlp, Mlp2, 0>::cost + stage_t<zoo::Mlp, Mlp2, 1>::cost, zoo::Mlp::cost));

// ResNet-20: conv 0, bn 1, relu 2, Repeat<3, block of 6 leaves> 3..20, ... A cut at 9 (= 3 + 6)
// splits the first Repeat after its first copy.
using R20 = zoo::ResNet20;
static_assert(std::is_same_v<stage_t<R20, Cuts<9>, 0>::layers,
                             hpf::type_list<hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm, hpf::ReLU,
                                            hpf::Repeat<1, zoo::BasicBlock<16>, 0>>>);
static_assert(std::is_same_v<hpf::at_t<stage_t<R20, Cuts<9>, 1>::layers, 0>, hpf::Repeat<2, zoo::BasicBlock<16>, 1>>);
static_assert(same_work(stage_t<R20, Cuts<9>, 0>::cost + stage_t<R20, Cuts<9>, 1>::cost, R20::cost));
static_assert(stage_t<R20, Cuts<9>, 1>::first_layer == 3);

template <class Model, class Partition, std::size_t... I>
constexpr bool costs_add_up(std::index_sequence<I...>) {
  return same_work((hpf::LayerCost{} + ... + stage_t<Model, Partition, I>::cost), Model::cost) &&
         (std::size_t{0} + ... + stage_t<Model, Partition, I>::leaves) == Model::leaves;
}
static_assert(costs_add_up<R20, Balanced<4>>(std::make_index_sequence<4>{}));
static_assert(costs_add_up<zoo::ResNet56, Balanced<3>>(std::make_index_sequence<3>{}));
static_assert(costs_add_up<zoo::PreActResNet1001, Balanced<4>>(std::make_index_sequence<4>{}));
static_assert(costs_add_up<zoo::Cnn, Balanced<5>>(std::make_index_sequence<5>{}));

TEST_CASE("Balanced: stages within a unit of each other and no worse than any other split") {
  using M = zoo::ResNet56;
  constexpr auto bounds = hpf::stage_bounds_v<M, Balanced<2>>;
  const auto f0 = stage_t<M, Balanced<2>, 0>::cost.training_flops();
  const auto f1 = stage_t<M, Balanced<2>, 1>::cost.training_flops();
  MESSAGE("ResNet-56 balanced in 2: cut at leaf ", bounds[1], ", stage FLOPs ", f0, " / ", f1);
  const auto& units = hpf::detail::layer_positions<M>::units;
  std::uint64_t best = ~0ull;
  for (std::size_t k = 0; k + 1 < units.size; ++k) {  // brute force over every valid single cut
    std::uint64_t left = 0, right = 0;
    for (std::size_t j = 0; j < units.size; ++j) (j <= k ? left : right) += units.cost[j];
    best = std::min(best, std::max(left, right));
  }
  CHECK(std::max(f0, f1) == best);
}

TEST_CASE("Stage networks hold exactly the model's tensors, with the model's names and initial values") {
  using P = Balanced<3>;
  using M = R20;
  hpf::Network<M> whole(hpf::NetworkOptions{.seed = 11});
  std::set<std::string> names;
  hpf::for_each_index<3>([&](auto s) {
    hpf::Network<stage_t<M, P, s>> part(hpf::NetworkOptions{.seed = 11});
    for (const auto& t : part.tensors()) {
      CHECK(names.insert(t.name).second);
      CHECK(part.read(t) == whole.read(whole.tensor(t.name)));
    }
  });
  CHECK(names.size() == whole.tensors().size());
}

TEST_CASE("A stage inside one Repeat keeps the copies' global names") {
  using M = zoo::PreActResNet164;  // conv: leaf 0, projection block: 1-10, Repeat<17, bottleneck of 9 leaves>: 11-163
  using S = stage_t<M, Cuts<11 + 9 * 4, 11 + 9 * 9>, 1>;
  static_assert(S::size == 1);
  hpf::Network<S> net;
  CHECK(net.tensors().front().name.rfind("2.4.", 0) == 0);
  CHECK(net.tensors().back().name.rfind("2.8.", 0) == 0);
}
