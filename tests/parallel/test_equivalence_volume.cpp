#include <hpf/zoo/cosmoflow.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// A CosmoFlow-shaped 3-D CNN (Conv3D, MaxPool3D, dense layers, mean squared error on real targets)
// under every layout of the world size (1, 2, 4 or 6 ranks), bit for bit as one process: the
// convolutions' chunks and sums depend only on the micro-batch, so data parallel, pipelines cut
// anywhere (both schedules) and hybrids reproduce it exactly. 24 * 10 + 7 volumes give 11 steps,
// the last one short.
namespace {
using Model = hpf::zoo::CosmoFlow<8, 2, 3>;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 10;
  o.data_seed = 11;
  o.bucket_bytes = 64 << 10;  // several buckets for the 87k parameters
  return o;
}
const auto source = hpf_test::synthetic_regression_source<Model>(24 * 10 + 7);
constexpr std::size_t steps = 11;
}  // namespace

TEST_CASE("CosmoFlow 3-D CNN: every layout of the world size trains bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), source, steps);
}

TEST_CASE("CosmoFlow 3-D CNN in mixed precision (bf16 products): every layout bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), source, steps,
                                                                hpf_test::Precisions<hpf::Mixed<hpf::bf16>>{});
}
