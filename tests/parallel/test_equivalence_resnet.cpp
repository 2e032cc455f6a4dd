#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// ResNet-20 with BatchNorm. BatchNorm statistics are per micro-batch (as GPipe and PyTorch's
// pipeline libraries do) and per replica, so the single-process reference accumulates gradients
// over the same pieces: data_shards = replicas, the same micro-batches; its running statistics
// are replica 0's, which every replica holds after each step. Two samples per BatchNorm
// micro-batch (one with 6 replicas) at lr 0.1 make training chaotic (a last-bit difference grows
// ~3x per step): only an identical order of every addition reproduces it, which the ordered
// gradient reduction gives (see GradientReduction).
namespace {
using Model = hpf::zoo::ResNet20;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 12;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  o.network = {.seed = 20, .init = hpf::InitScheme::kaiming_normal_fan_out};
  o.data_seed = 21;
  o.bucket_bytes = 256 << 10;
  return o;
}
// Eight full batches and a partial one: one epoch of 9 steps.
const auto source = hpf_test::synthetic_source<Model>(12 * 8 + 3);
constexpr std::size_t steps = 9;
}  // namespace

TEST_CASE("ResNet-20: every layout of the world size trains bit for bit as one process, buffers included") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), source, steps);
}
