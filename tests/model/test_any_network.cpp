#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/any_network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <typeinfo>
#include <vector>

namespace {
using Space = Kokkos::DefaultExecutionSpace;
using Classifier = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<5>, hpf::ReLU, hpf::Dense<4>,
                                   hpf::SoftmaxCrossEntropy>;
using Regressor = hpf::Sequential<hpf::Input<1, 2, 2>, hpf::Flatten, hpf::Dense<3>, hpf::MeanSquaredError>;

template <class V>
std::vector<double> host(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = h.data()[i];
  return out;
}

template <class View>
void fill_labels(const View& labels) {
  auto h = Kokkos::create_mirror_view(labels);
  for (std::size_t i = 0; i < h.size(); ++i) h(i) = static_cast<std::int32_t>(i % 4);
  Kokkos::deep_copy(labels, h);
}
}  // namespace

TEST_CASE("AnyNetwork: the model's facts as values") {
  const hpf::NetworkFacts c = hpf::network_facts<Classifier>();
  CHECK(c.input_shape == hpf::shape_string<Classifier::input_shape>());
  CHECK(c.input_channels == 2);
  CHECK(c.input_spatial == 9);
  CHECK(c.input_size() == 18);
  CHECK(c.output_size() == 4);
  CHECK(c.classifier);
  CHECK(c.target_size == 0);
  const hpf::NetworkFacts r = hpf::network_facts<Regressor>();
  CHECK_FALSE(r.classifier);
  CHECK(r.target_size == 3);
}

TEST_CASE("AnyNetwork: a step through the interface is the step of the Network behind it, bit for bit") {
  hpf::NetworkOptions options;
  options.seed = 7;
  hpf::Network<Classifier, double, Space> direct(options);
  hpf::NetworkHolder<Classifier, double, Space> holder(options);
  hpf::AnyNetwork<double, Space>& any = holder;
  CHECK(host(any.parameters()) == host(direct.parameters()));

  auto direct_tape = direct.make_tape(3);
  auto any_tape = any.make_tape(3);
  CHECK(any_tape->capacity() == 3);
  hpf_test::fill_uniform(direct.input(direct_tape, 3), 11);
  hpf_test::fill_uniform(any.input(*any_tape, 3), 11);
  fill_labels(direct.labels(direct_tape, 3));
  fill_labels(any.labels(*any_tape, 3));
  direct.forward(direct_tape, 3, hpf::Mode::train);
  any.forward(*any_tape, 3, hpf::Mode::train, {});
  CHECK(any_tape->batch() == 3);
  CHECK(any.loss_sum(*any_tape) == direct.loss_sum(direct_tape));
  CHECK(any.correct(*any_tape) == direct.correct(direct_tape));
  direct.backward(direct_tape, 1.0 / 3);
  any.backward(*any_tape, 1.0 / 3, {}, {}, {});
  CHECK(host(any.gradients()) == host(direct.gradients()));
  CHECK(&hpf::network_cast<Classifier>(any) == &holder.network());
}

TEST_CASE("AnyNetwork: a network sharing the parameters reads the owner's and keeps its own gradients") {
  hpf::NetworkHolder<Classifier, float, Space> owner(hpf::NetworkOptions{.seed = 3});
  const auto shard = owner.sharing_parameters();
  CHECK(shard->parameters().data() == owner.parameters().data());
  CHECK(shard->gradients().data() != owner.gradients().data());
  CHECK(shard->facts().input_size() == owner.facts().input_size());
}

TEST_CASE("AnyNetwork: asking a model for what it does not have is an error") {
  hpf::NetworkHolder<Regressor, float, Space> regressor(hpf::NetworkOptions{});
  auto tape = regressor.make_tape(2);
  CHECK_THROWS_WITH_AS(regressor.labels(*tape, 2), doctest::Contains("does not end with a classification loss"),
                       std::logic_error);
  CHECK(regressor.targets(*tape, 2).size() == 2 * 3);
  hpf::AnyNetwork<float, Space>& any = regressor;
  CHECK_THROWS_AS(hpf::network_cast<Classifier>(any), std::bad_cast);
}
