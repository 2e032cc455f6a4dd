#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// ResNet-20 with BatchNorm. BatchNorm statistics are per micro-batch (as GPipe and PyTorch's
// pipeline libraries do) and per replica, so the single-process reference accumulates gradients
// over the same pieces: data_shards = replicas, the same micro-batches. Two samples per
// BatchNorm micro-batch at lr 0.1 make training chaotic (a last-bit difference grows ~3x per
// step, a flipped ReLU in float jumps to 1e-5): only an identical order of every addition
// reproduces it, which the ordered gradient reduction gives (see GradientReduction).
namespace {
using Model = hpf::zoo::ResNet20;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 8;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  o.network = {.seed = 20, .init = hpf::InitScheme::kaiming_normal_fan_out};
  o.data_seed = 21;
  o.bucket_bytes = 256 << 10;
  return o;
}
// Eight full batches and a partial one: one epoch of 9 steps (a last-bit difference would grow
// about 3^9-fold over it).
const auto source = hpf_test::synthetic_source<Model>(8 * 8 + 3);
}  // namespace

TEST_CASE("ResNet-20: data parallel") { hpf_test::check_strategy_all<Model, hpf::DataParallel>(options(), source, 9); }
TEST_CASE("ResNet-20: two balanced stages") {
  hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Balanced<2>>>(options(), source, 9);
}
TEST_CASE("ResNet-20: four balanced stages") {
  hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Balanced<4>>>(options(), source, 9);
}
