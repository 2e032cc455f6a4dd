#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// Every layout of the world size (1, 2, 4 or 6 ranks) trains the CNN bit for bit as one process.
namespace {
using Model = hpf::zoo::Cnn;

const auto source = hpf_test::synthetic_source<Model>(24 * 8 + 5);
constexpr std::size_t steps = 9;
}  // namespace

TEST_CASE("CNN: every layout of the world size trains bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Cuts<3, 7>>,
                               hpf::Pipeline<hpf::Cuts<2, 4, 7>>>(hpf_test::cnn_options(), source, steps);
}

TEST_CASE("CNN in mixed precision (bf16 products): every layout bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Cuts<3, 7>>,
                               hpf::Pipeline<hpf::Cuts<2, 4, 7>>>(hpf_test::cnn_options(), source, steps,
                                                                  hpf_test::Precisions<hpf::Mixed<hpf::bf16>>{});
}
TEST_CASE("CNN in mixed precision with gradients exchanged as bf16: every layout bit for bit as one process") {
  auto o = hpf_test::cnn_options();
  o.exchange_precision = hpf::ExchangePrecision::bf16;
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Cuts<3, 7>>,
                               hpf::Pipeline<hpf::Cuts<2, 4, 7>>>(o, source, steps,
                                                                  hpf_test::Precisions<hpf::Mixed<hpf::bf16>>{});
}
