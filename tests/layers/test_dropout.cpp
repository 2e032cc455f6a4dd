#include <hpf/data/synthetic.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/dropout.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/trainer.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

// The mask as DropoutMask's documentation specifies it, written out again here from that text.
std::uint64_t fnv(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
bool kept(std::uint64_t seed, std::string_view layer, std::uint64_t step, std::uint64_t sample, std::uint64_t element,
          double p) {
  const double draw = static_cast<double>(mix(mix(mix(mix(seed, fnv(layer)), step), sample), element) >> 11);
  return draw >= p * 9007199254740992.0;  // 2^53
}

constexpr std::size_t C = 4, S = 6, F = C * S;
using M = hpf::Sequential<hpf::Input<C, 2, 3>, hpf::Dropout<25>>;

}  // namespace

TEST_CASE("Dropout: the mask its specification re-derives, scaled by 1 / (1 - p); the identity in evaluation") {
  hpf::Network<M, double> net(hpf::NetworkOptions{.seed = 11});
  constexpr std::size_t N = 200;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 3, 0.5, 1.5);  // never 0
  std::vector<std::size_t> ids(N);
  for (std::size_t j = 0; j < N; ++j) ids[j] = 1000 + 7 * j;
  net.set_samples(tape, ids);
  net.set_step(42);
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  std::size_t dropped = 0, mismatches = 0;
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t s = 0; s < S; ++s) {
        const std::size_t i = (c * N + j) * S + s;
        const bool keep = kept(11, "0.", 42, ids[j], c * S + s, 0.25);
        mismatches += keep ? y[i] != x[i] * (1.0 / (1.0 - 0.25)) : y[i] != 0.0;
        dropped += !keep;
      }
  CHECK(mismatches == 0);
  const double rate = static_cast<double>(dropped) / static_cast<double>(N * F);
  CHECK(rate == doctest::Approx(0.25).epsilon(0.05));  // 4800 draws: 0.25 +- 0.006 (1 sigma)

  net.forward(tape, N, hpf::Mode::eval);
  CHECK(hpf_test::to_host(net.output(tape)) == x);
}

TEST_CASE("Dropout: a sample's mask follows its global index and the step, not its batch") {
  hpf::Network<M, double> net;
  auto tape = net.make_tape(3);
  auto run = [&](std::vector<std::size_t> ids, std::uint64_t step) {
    auto x = Kokkos::create_mirror_view(net.input(tape, ids.size()));
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = 1.0;
    Kokkos::deep_copy(net.input(tape, ids.size()), x);
    net.set_samples(tape, ids);
    net.set_step(step);
    net.forward(tape, ids.size());
    return hpf_test::to_host(net.output(tape));
  };
  const auto batch = run({5, 9, 12}, 1), alone = run({9}, 1), later = run({9}, 2);
  std::size_t same = 0, same_later = 0;
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t s = 0; s < S; ++s) {
      same += batch[(c * 3 + 1) * S + s] == alone[c * S + s];
      same_later += later[c * S + s] == alone[c * S + s];
    }
  CHECK(same == F);
  CHECK(same_later < F);  // another step, another mask
}

TEST_CASE("Dropout: finite-difference gradients through the same mask") {
  using Net = hpf::Sequential<hpf::Input<6>, hpf::Dense<16>, hpf::Dropout<30>, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
  auto r = hpf_test::gradient_check<Net>(4);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}

TEST_CASE("Dropout in training: the engine hands each sample's global index, so micro-batching leaves the masks alone") {
  // The first step's loss before any update: with masks keyed by the position in a micro-batch,
  // 1, 2 and 4 micro-batches would drop different values and the losses would differ widely.
  using Net = hpf::Sequential<hpf::Input<1, 4, 4>, hpf::Flatten, hpf::Dropout<50>, hpf::Dense<2>, hpf::MeanSquaredError>;
  const auto data = hpf::data::synthetic_regression(64, 1, 4, 4, 2, 3);
  std::vector<double> losses;
  for (std::size_t micro_batches : {1, 2, 4}) {
    hpf::TrainOptions options;
    options.batch = 16;
    options.micro_batches = micro_batches;
    options.evaluate = false;
    options.network.seed = 5;
    hpf::Trainer<Net, double> trainer(options, data);
    losses.push_back(trainer.step(0, 0).loss_sum);
  }
  CHECK(losses[1] == doctest::Approx(losses[0]).epsilon(1e-14));
  CHECK(losses[2] == doctest::Approx(losses[0]).epsilon(1e-14));
}
