// SPDX-License-Identifier: MIT
// A flat model of HPF_FLAT_LAYERS layers (Dense<8>, ReLU, Dense<8>, ReLU, ...), one long type list
// without Repeat, as generated code or a layer-by-layer port writes it, trained through Trainer and
// through fit with a 4-stage pipeline. Compiling this TU measures what a long flat list costs the
// compiler (HPF_FLAT_LAYERS=N; flat_compile_time.py, hpf.compile_budget.flat_model2000), and running
// it on a multiple of 4 ranks checks that both paths take the same first step (tests/model/
// test_flat_model.cpp does so at 64 layers).
//
//   c++ -std=c++20 -O2 -DHPF_FLAT_LAYERS=2000 -c flat_model.cpp
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/train/trainer.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <type_traits>
#include <utility>

#ifndef HPF_FLAT_LAYERS
#define HPF_FLAT_LAYERS 2000
#endif

namespace {
constexpr std::size_t layers = HPF_FLAT_LAYERS;
static_assert(layers % 2 == 0, "HPF_FLAT_LAYERS: Dense, ReLU pairs");

// Sequential<Input, L0, ..., L(n-1), loss>: the list a generator would print, made by one pack
// expansion instead of 2000 lines.
template <std::size_t I>
using layer_at = std::conditional_t<I % 2 == 0, hpf::Dense<8>, hpf::ReLU>;
template <class Indices>
struct flat_model;
template <std::size_t... I>
struct flat_model<std::index_sequence<I...>> {
  using type = hpf::Sequential<hpf::Input<8>, layer_at<I>..., hpf::Dense<4>, hpf::SoftmaxCrossEntropy>;
};
using Model = typename flat_model<std::make_index_sequence<layers>>::type;
static_assert(Model::leaves == layers + 2);

hpf::data::TrainTest synthetic(const hpf::data::Shard& shard) {
  return {hpf::data::synthetic_dataset(64, 8, 1, 1, 4, 1, shard), hpf::data::synthetic_dataset(16, 8, 1, 1, 4, 2, shard)};
}
}  // namespace

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [](const hpf::comm::Communicator& world) {
    hpf::TrainOptions options;
    options.batch = 16;
    options.micro_batches = 4;
    options.steps_per_epoch = 1;
    options.progress = hpf::ProgressMode::none;
    const auto data = synthetic({});
    hpf::Trainer<Model> trainer(options, data.train, &data.test);
    const double single = trainer.fit().step_losses.at(0);
    const double piped = hpf::fit<Model, hpf::Pipeline<hpf::Balanced<4>>>(world, options, synthetic).step_losses.at(0);
    if (world.rank() == 0) std::printf("%zu flat layers: first loss %.6f (Trainer), %.6f (4-stage fit)\n", layers, single, piped);
    // A pipeline reproduces single-process training: the same weights and data give the same loss.
    if (!(std::fabs(single - piped) <= 1e-6 * std::fabs(single))) throw std::runtime_error("the 4-stage loss differs from Trainer's");
  });
}
