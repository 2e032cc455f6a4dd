#include <hpf/data/dataset.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/embedding.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/position_embedding.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/parallel/stage_engine.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace {
constexpr std::size_t T = 5, V = 7, D = 3;
}

TEST_CASE("Embedding: row `token` of the table at each position; gradient only into the rows used") {
  using M = hpf::Sequential<hpf::Input<T>, hpf::Embedding<V, D>>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<T, D>>);
  static_assert(M::cost.parameters == V * D);
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{V, D});
  constexpr std::size_t N = 2;
  auto tape = net.make_tape(N);
  const std::vector<double> tokens{0, 3, 3, 6, 1, /* sample 1 */ 6, 2, 0, 0, 3};  // [N][T]
  auto x = Kokkos::create_mirror_view(net.input(tape, N));                       // [T][N][1]
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t t = 0; t < T; ++t) x(t, j, 0) = tokens[j * T + t];
  Kokkos::deep_copy(net.input(tape, N), x);
  net.forward(tape, N);
  const auto table = net.read(net.tensor("0.weight"));
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));  // [D][N][T]
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d) CHECK(y(d, j, t) == table[static_cast<std::size_t>(tokens[j * T + t]) * D + d]);

  // dL/dW for L = sum(y * g): row v gathers g over the positions holding token v.
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy_buffer("dy", D * N * T);
  const auto g = hpf_test::fill_uniform(dy_buffer, 4);
  net.zero_grad();
  net.backward(tape, 1.0, hpf::activation_view(dy_buffer, D, N, T));
  const auto grad = net.read(net.tensor("0.weight"), /*gradient=*/true);
  for (std::size_t v = 0; v < V; ++v)
    for (std::size_t d = 0; d < D; ++d) {
      double expected = 0;
      for (std::size_t j = 0; j < N; ++j)
        for (std::size_t t = 0; t < T; ++t)
          if (tokens[j * T + t] == static_cast<double>(v)) expected += g[(d * N + j) * T + t];
      CHECK(grad[v * D + d] == doctest::Approx(expected).epsilon(1e-15));
      if (v == 4 || v == 5) CHECK(grad[v * D + d] == 0.0);  // tokens nobody used
    }
}

TEST_CASE("PositionEmbedding: adds a [T, D] table per position") {
  using M = hpf::Sequential<hpf::Input<T, D>, hpf::PositionEmbedding>;
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{T, D});
  constexpr std::size_t N = 3;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 5);
  net.forward(tape, N);
  const auto table = net.read(net.tensor("0.weight"));
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t d = 0; d < D; ++d)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t t = 0; t < T; ++t) CHECK(y[(d * N + j) * T + t] == x[(d * N + j) * T + t] + table[t * D + d]);
  auto r = hpf_test::gradient_check<M>(N);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}

TEST_CASE("A token model: embeddings, LayerNorm, GELU and Dense per position, a loss per position") {
  using M = hpf::Sequential<hpf::Input<T>, hpf::Embedding<V, 6>, hpf::PositionEmbedding, hpf::LayerNorm,
                            hpf::Dense<8>, hpf::GELU, hpf::Dense<V>, hpf::SoftmaxCrossEntropy>;
  static_assert(hpf::Network<M, double>::label_size == T);
  // Token ids drawn as integers; they have no gradient (a nudged id is another token), the
  // parameters' are checked.
  auto r = hpf_test::gradient_check<M>(3, 2, 24, 1e-5, [](hpf::Rng& rng) { return static_cast<double>(rng.below(V)); });
  CHECK(r.worst_parameter_error < 1e-6);
}

TEST_CASE("Token sequences: labels per position, and tokens outside the vocabulary named") {
  const hpf::data::Shard all{};
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6}, next{2, 3, 4, 5, 6, 0};
  const auto d = hpf::data::Dataset::token_sequences(2, 3, V, all, tokens, next);
  CHECK(d.labels_per_sample() == 3);
  CHECK(d.sample_size() == 3);
  std::vector<std::int32_t> labels(6);
  const std::vector<std::size_t> order{1, 0};
  d.gather_labels(order, labels.data());
  CHECK(labels == std::vector<std::int32_t>{5, 6, 0, 2, 3, 4});
  std::vector<float> values(6);  // [T][n]
  d.gather(order, values.data());
  CHECK(values == std::vector<float>{4, 1, 5, 2, 6, 3});
  CHECK_THROWS_WITH_AS(hpf::data::Dataset::token_sequences(2, 3, V, all, {1, 2, 3, 4, 7, 6}, next),
                       "hpf::data::Dataset: token 7 of sample 1 at position 1 is out of range [0, 7)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(hpf::data::Dataset::token_sequences(2, 3, V, all, tokens, {2, 3, -1, 5, 6, 0}),
                       "hpf::data::Dataset: label -1 of sample 0 at position 2 is out of range [0, 7)",
                       std::invalid_argument);
}

TEST_CASE("A model that starts with an Embedding refuses input values that are not token ids, naming the first") {
  // A sequence classifier (one label per sample), so that any dataset kind can feed it.
  using M = hpf::Sequential<hpf::Input<3>, hpf::Embedding<V, 4>, hpf::Flatten, hpf::Dense<V>, hpf::SoftmaxCrossEntropy>;
  static_assert(hpf::model_input_vocabulary_v<M> == V);
  static_assert(hpf::model_input_vocabulary_v<hpf::Sequential<hpf::Input<3>, hpf::Dense<V>, hpf::SoftmaxCrossEntropy>> == 0);
  const auto facts = hpf::network_facts<M>();
  const auto check = [&](const hpf::data::Dataset& d) {
    hpf::check_stage_dataset(d, "training", facts, hpf::StagePosition{.classifies = true, .labels_per_sample = 1, .model = "test"});
  };
  const hpf::data::SampleDims dims{3, 1, 1};
  const auto values = [&](std::vector<float> v, hpf::data::Shard shard = {}) {
    return hpf::data::Dataset::from_values(2, dims, V, shard, std::move(v), std::vector<std::int32_t>(shard.size_of(2), 1));
  };
  CHECK_NOTHROW(check(values({0, 1, 2, 3, 4, 6})));
  CHECK_THROWS_WITH_AS(check(values({0, 1, 2, 3, 2.5f, 6})),
                       "hpf: the training set's input value 2.5 of sample 1 at position 1 is not a token id in [0, 7): "
                       "the model starts with an Embedding of 7 tokens",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(check(values({0, -1, 2, 3, 4, 6})),
                       doctest::Contains("input value -1 of sample 0 at position 1 is not a token id in [0, 7)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(check(values({0, 1, 2, 3, 4, 7})), doctest::Contains("input value 7 of sample 1 at position 2"),
                       std::invalid_argument);
  // A shard names the global sample; images scaled to [0, 1] are not tokens either.
  CHECK_THROWS_WITH_AS(check(values({5, 8, 0}, hpf::data::Shard{.index = 1, .count = 2})),
                       doctest::Contains("input value 8 of sample 1 at position 1"), std::invalid_argument);
  const auto image = hpf::data::Dataset::from_pixels(2, dims, V, {}, {0, 1, 2, 3, 4, 5}, {1, 1});
  CHECK_THROWS_WITH_AS(check(image), doctest::Contains("input value 0.00392157 of sample 0 at position 1"),
                       std::invalid_argument);
}
