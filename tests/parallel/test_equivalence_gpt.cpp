#include <hpf/data/text.hpp>
#include <hpf/tensor/random.hpp>
#include <hpf/zoo/gpt.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

// A GPT with 10 % dropout under every layout of the world size (1, 2, 4 or 6 ranks), bit for bit
// as one process: attention, LayerNorm and the per-position loss keep each sample's arithmetic its
// own, and Dropout's masks follow each sample's global index and the step, so data parallel,
// pipelines cut between blocks (both schedules) and hybrids reproduce it exactly.
namespace {
using Model = hpf::zoo::Gpt<4, 16, 2, 8, hpf::data::byte_vocabulary, 10>;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 5;
  o.data_seed = 6;
  o.bucket_bytes = 8 << 10;  // several buckets
  return o;
}

// 24 * 10 + 7 windows of a byte stream with some structure to learn (a noisy cycle), the last
// step short.
hpf::DataSource text_source() {
  return [](const hpf::data::Shard& shard) {
    constexpr std::size_t context = Model::input_shape::size, windows = 24 * 10 + 7;
    hpf::Rng rng(7, "text");
    std::vector<std::uint8_t> text(windows * context + 1);
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>(rng.below(4) == 0 ? rng.below(256) : 97 + i % 13);
    return hpf::data::TrainTest{hpf::data::text_windows(text, context, shard),
                                hpf::data::text_windows(std::span<const std::uint8_t>(), context, shard)};
  };
}
constexpr std::size_t steps = 11;
}  // namespace

TEST_CASE("GPT with dropout: every layout of the world size trains bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), text_source(), steps);
}

TEST_CASE("GPT with dropout in mixed precision (bf16 products): every layout bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), text_source(), steps,
                                                                hpf_test::Precisions<hpf::Mixed<hpf::bf16>>{});
}

TEST_CASE("GPT with dropout, blocks re-materialized in backward: every layout bit for bit as one process") {
  // With test_recompute's single process (the same bits with and without re-materialization), the
  // parallel runs with it are the same bits as one process without.
  auto o = options();
  o.network.recompute = true;
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Balanced<2>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(o, text_source(), steps);
}

TEST_CASE("GPT with dropout, its Dense layers split over groups of ranks: every layout bit for bit as one process") {
  // The feed-forward layers of every block and the output layer split; attention, LayerNorm and
  // the embeddings run whole on every member of a group.
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<>, hpf::Filter<1>>>(o, text_source(), steps);
      break;
    case 2:
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<>, hpf::Filter<2>>>(o, text_source(), steps);
      break;
    case 4:
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<>, hpf::Channel<2>>>(o, text_source(), steps);
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Balanced<2>, hpf::Filter<2>>>(o, text_source(), steps);
      break;
    case 6:
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<>, hpf::Filter<3>>>(o, text_source(), steps);
      hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Balanced<3>, hpf::Channel<2>>>(o, text_source(), steps);
      break;
    default:
      FAIL("no layouts listed for ", hpf_test::world_size(), " ranks");
  }
}
