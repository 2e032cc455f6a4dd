// Re-materialization (NetworkOptions::recompute): the same bits as keeping every activation, for
// far less activation memory.
#include <hpf/data/synthetic.hpp>
#include <hpf/data/text.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/blocks.hpp>
#include <hpf/zoo/gpt.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Trains `steps` steps with and without re-materialization and checks that losses, parameters and
/// buffers are the same bits.
template <class Model>
void check_same_bits(const hpf::data::Dataset& data, std::size_t steps) {
  std::vector<std::vector<double>> losses(2), parameters(2), buffers(2);
  for (int recompute = 0; recompute < 2; ++recompute) {
    hpf::TrainOptions options;
    options.batch = 8;
    options.micro_batches = 2;
    options.evaluate = false;
    options.network.seed = 4;
    options.network.recompute = recompute == 1;
    options.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
    hpf::Trainer<Model, double> trainer(options, data);
    for (std::size_t s = 0; s < steps; ++s) losses[recompute].push_back(trainer.step(0, s).loss_sum);
    parameters[recompute] = hpf::read_range(trainer.network().parameters(), 0, trainer.network().parameters().extent(0));
    buffers[recompute] = hpf::read_range(trainer.network().buffers(), 0, trainer.network().buffers().extent(0));
  }
  CHECK(same_bits(losses[0], losses[1]));
  CHECK(same_bits(parameters[0], parameters[1]));
  CHECK(same_bits(buffers[0], buffers[1]));
}

std::unordered_map<const void*, std::uint64_t> live;
std::uint64_t allocated_bytes = 0;
void on_allocate(Kokkos::Tools::SpaceHandle, const char*, const void* ptr, std::uint64_t size) {
  live[ptr] = size;
  allocated_bytes += size;
}

/// Bytes a tape for `capacity` samples allocates.
template <class Model>
std::uint64_t tape_bytes(bool recompute, std::size_t capacity) {
  hpf::Network<Model> net(hpf::NetworkOptions{.recompute = recompute});
  allocated_bytes = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  auto tape = net.make_tape(capacity);
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  return allocated_bytes;
}

std::vector<std::uint8_t> some_text(std::size_t bytes) {
  std::vector<std::uint8_t> text(bytes);
  for (std::size_t i = 0; i < bytes; ++i) text[i] = static_cast<std::uint8_t>("the quick brown fox "[i % 20] + i % 3);
  return text;
}

}  // namespace

TEST_CASE("Re-materialization: a GPT with dropout trains to the same bits") {
  using Model = hpf::zoo::Gpt<3, 16, 2, 8, hpf::data::byte_vocabulary, 10>;
  check_same_bits<Model>(hpf::data::text_windows(some_text(8 * 40 + 1), 8, {}), 4);
}

TEST_CASE("Re-materialization: BatchNorm's running statistics move once per forward, not again in backward") {
  using Model = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::Repeat<3, hpf::zoo::BasicBlock<4>>,
                                hpf::GlobalAvgPool, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
  check_same_bits<Model>(hpf::data::synthetic_dataset(32, 2, 6, 6, 3, 7), 3);
}

TEST_CASE("Re-materialization: a GPT of 8 blocks keeps several times less activation memory") {
  using Model = hpf::zoo::Gpt<8, 32, 4, 32, hpf::data::byte_vocabulary>;
  const std::uint64_t kept = tape_bytes<Model>(false, 16), recomputed = tape_bytes<Model>(true, 16);
  INFO("tape of 16 samples: ", kept, " bytes, with re-materialization ", recomputed);
  CHECK(static_cast<double>(kept) >= 2.0 * static_cast<double>(recomputed));
}
