// A flat model, one long type list without Repeat (as generated code or a layer-by-layer port
// writes it), through Trainer and through a 4-stage pipeline fit: both take the same first step.
// benchmarks/compile_time/flat_model.cpp is the same model at 250..2000 layers for compile time.
#include <hpf/comm/communicator.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/train/trainer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace {
constexpr std::size_t pairs = 32;  // 64 layers before the head

template <std::size_t I>
using layer_at = std::conditional_t<I % 2 == 0, hpf::Dense<8>, hpf::ReLU>;
template <class Indices>
struct flat_model;
template <std::size_t... I>
struct flat_model<std::index_sequence<I...>> {
  using type = hpf::Sequential<hpf::Input<8>, layer_at<I>..., hpf::Dense<4>, hpf::SoftmaxCrossEntropy>;
};
using Model = typename flat_model<std::make_index_sequence<2 * pairs>>::type;
using Strategy = hpf::Pipeline<hpf::Balanced<4>>;

static_assert(Model::leaves == 2 * pairs + 2);
static_assert(hpf::stage_count_v<Model, Strategy::partition> == 4);
// The stages hold every layer once, in order.
static_assert(hpf::stage_t<Model, Strategy::partition, 0>::size + hpf::stage_t<Model, Strategy::partition, 1>::size +
                  hpf::stage_t<Model, Strategy::partition, 2>::size + hpf::stage_t<Model, Strategy::partition, 3>::size ==
              Model::size);
static_assert(hpf::stage_t<Model, Strategy::partition, 3>::trainable);

// The type-list algorithms behind long chains: chunks in order, the last one shorter, and back.
template <class Indices>
struct numbers;
template <int... I>
struct numbers<std::integer_sequence<int, I...>> {
  using type = hpf::type_list<std::integral_constant<int, I>...>;
};
using Numbers = typename numbers<std::make_integer_sequence<int, 37>>::type;  // 16 + 16 + 5
static_assert(hpf::size_v<hpf::chunks_t<Numbers>> == 3);
static_assert(std::is_same_v<hpf::at_t<hpf::at_t<hpf::chunks_t<Numbers>, 1>, 0>, std::integral_constant<int, 16>>);
static_assert(hpf::size_v<hpf::at_t<hpf::chunks_t<Numbers>, 2>> == 5);
static_assert(std::is_same_v<hpf::join_t<hpf::chunks_t<Numbers>>, Numbers>);
static_assert(hpf::size_v<hpf::chunks_t<hpf::type_list<>>> == 0 && hpf::size_v<hpf::chunks_t<hpf::type_list<int>>> == 1);
static_assert(std::is_same_v<hpf::join_t<hpf::chunks_t<Model::bound_layers>>, Model::bound_layers>);
// slice_t: whole chunks, dropped chunks and chunks cut by either bound.
static_assert(std::is_same_v<hpf::slice_t<Numbers, 0, 37>, Numbers>);
static_assert(std::is_same_v<hpf::slice_t<Numbers, 16, 32>, hpf::at_t<hpf::chunks_t<Numbers>, 1>>);
static_assert(hpf::size_v<hpf::slice_t<Numbers, 5, 5>> == 0 && hpf::size_v<hpf::slice_t<Numbers, 3, 35>> == 32);
static_assert(std::is_same_v<hpf::at_t<hpf::slice_t<Numbers, 3, 35>, 0>, std::integral_constant<int, 3>>);
static_assert(std::is_same_v<hpf::at_t<hpf::slice_t<Numbers, 3, 35>, 31>, std::integral_constant<int, 34>>);

hpf::data::TrainTest synthetic(const hpf::data::Shard& shard) {
  return {hpf::data::synthetic_dataset(64, 8, 1, 1, 4, 1, shard), hpf::data::synthetic_dataset(16, 8, 1, 1, 4, 2, shard)};
}
}  // namespace

TEST_CASE("a flat 64-layer list gives the same first loss through Trainer and a 4-stage fit") {
  const hpf::comm::Communicator world;
  if (world.size() % 4 != 0) {
    MESSAGE("needs a multiple of 4 ranks; skipped at ", world.size());
    return;
  }
  hpf::TrainOptions options;
  options.batch = 16;
  options.micro_batches = 4;
  options.steps_per_epoch = 1;
  options.progress = hpf::ProgressMode::none;
  const auto data = synthetic({});
  hpf::Trainer<Model> trainer(options, data.train, &data.test);
  const double single = trainer.fit().step_losses.at(0);
  const double piped = hpf::fit<Model, Strategy>(world, options, synthetic).step_losses.at(0);
  CHECK(std::isfinite(single));
  CHECK(piped == doctest::Approx(single).epsilon(1e-6));
}
