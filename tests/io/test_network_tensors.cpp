// Tests of hpf/io/network_tensors.hpp: a network's parameters and buffers to a safetensors file
// and back, by PyTorch state_dict names.
#include <hpf/io/network_tensors.hpp>
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <data/idx_files.hpp>  // hpf_test::TempDir
#include <support/fill.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hpf::io::Dtype;
using hpf::io::Safetensors;

using Model = hpf::Sequential<hpf::Input<2, 4, 4>, hpf::Conv2D<3, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm, hpf::ReLU,
                              hpf::Flatten, hpf::Dense<5>, hpf::SoftmaxCrossEntropy>;

// One forward in training mode: BatchNorm's running statistics and counter move.
template <class Net>
void train_forward(Net& net) {
  auto tape = net.make_tape(3);
  hpf_test::fill_uniform(net.input(tape, 3), 7);
  auto labels = net.labels(tape, 3);
  for (std::size_t j = 0; j < 3; ++j) labels(j) = static_cast<std::int32_t>(j);
  net.forward(tape, 3);
}

template <class A, class B>
void check_same_tensors(const A& a, const B& b) {
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (std::size_t k = 0; k < a.tensors().size(); ++k) {
    const auto x = a.read(a.tensors()[k]);
    const auto y = b.read(b.tensors()[k]);
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(static_cast<double>(x[i]) == static_cast<double>(y[i]));
  }
}

}  // namespace

TEST_CASE("network tensors: every parameter and buffer by state_dict name, counters as I64") {
  hpf::Network<Model, double> net(hpf::NetworkOptions{.seed = 3});
  train_forward(net);
  train_forward(net);
  const Safetensors file = hpf::io::network_tensors(net);
  CHECK(file.names() == std::vector<std::string>{"0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                                 "1.num_batches_tracked", "4.weight", "4.bias"});
  CHECK(file.at("0.weight").shape == std::vector<std::size_t>{3, 2, 3, 3});
  CHECK(file.at("0.weight").dtype == Dtype::F64);
  CHECK(file.at("4.weight").shape == std::vector<std::size_t>{5, 48});
  CHECK(file.at("1.num_batches_tracked").dtype == Dtype::I64);
  CHECK(file.at("1.num_batches_tracked").shape.empty());
  CHECK(file.get<std::int64_t>("1.num_batches_tracked") == std::vector<std::int64_t>{2});
  CHECK(file.get<double>("1.running_mean") == net.read(net.tensor("1.running_mean")));
  CHECK(file.get<double>("0.weight") == net.read(net.tensor("0.weight")));

  CHECK(hpf::io::is_integer_tensor(net.tensor("1.num_batches_tracked")));
  CHECK_FALSE(hpf::io::is_integer_tensor(net.tensor("1.running_var")));
  hpf::TensorInfo lookalike;
  lookalike.name = "1.not_num_batches_tracked";
  lookalike.kind = hpf::TensorKind::buffer;
  CHECK_FALSE(hpf::io::is_integer_tensor(lookalike));
}

TEST_CASE("network tensors: save and load restore a network exactly") {
  hpf_test::TempDir dir;
  const fs::path file = dir / "net.safetensors";
  hpf::Network<Model, double> trained(hpf::NetworkOptions{.seed = 1});
  train_forward(trained);
  hpf::io::save_network_tensors(trained, file, {{"step", "1"}});
  CHECK(Safetensors::load(file).metadata().at("step") == "1");

  hpf::Network<Model, double> fresh(hpf::NetworkOptions{.seed = 2});
  CHECK(fresh.read(fresh.tensor("0.weight")) != trained.read(trained.tensor("0.weight")));
  hpf::io::load_network_tensors(fresh, file);
  check_same_tensors(fresh, trained);

  SUBCASE("into a float network (values rounded)") {
    hpf::Network<Model, float> single;
    hpf::io::load_network_tensors(single, file);
    const auto w = trained.read(trained.tensor("4.weight"));
    const auto v = single.read(single.tensor("4.weight"));
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(v[i] == static_cast<float>(w[i]));
    CHECK(single.read(single.tensor("1.num_batches_tracked")) == std::vector<float>{1});
    // ... and a float file back into a double network.
    hpf::io::save_network_tensors(single, dir / "single.safetensors");
    hpf::Network<Model, double> wide;
    hpf::io::load_network_tensors(wide, dir / "single.safetensors");
    check_same_tensors(wide, single);
  }
}

TEST_CASE("network tensors: missing, unexpected and misshapen tensors are refused before anything changes") {
  hpf_test::TempDir dir;
  hpf::Network<Model, double> source(hpf::NetworkOptions{.seed = 1});
  const Safetensors complete = hpf::io::network_tensors(source);
  hpf::Network<Model, double> target(hpf::NetworkOptions{.seed = 2});
  const auto before = target.read(target.tensor("0.weight"));
  auto message_of = [&](const Safetensors& file, hpf::io::LoadOptions options = {}) -> std::string {
    try {
      hpf::io::load_network_tensors(target, file, options);
    } catch (const hpf::io::FormatError& e) {
      return e.what();
    }
    return "";
  };
  auto copy_without = [&](const std::string& skip) {
    Safetensors out;
    for (const std::string& name : complete.names()) {
      if (name != skip) out.add(name, complete.at(name));
    }
    return out;
  };

  SUBCASE("missing") {
    const std::string m = message_of(copy_without("1.running_var"));
    CHECK_MESSAGE(m.find("lacks 1 of the network's tensors: '1.running_var'") != std::string::npos, m);
  }
  SUBCASE("unexpected") {
    Safetensors extra = copy_without("");
    extra.add<double>("9.weight", {1}, std::vector<double>{0});
    const std::string m = message_of(extra);
    CHECK_MESSAGE(m.find("holds 1 tensor(s) the network does not have: '9.weight'") != std::string::npos, m);
    CHECK(message_of(extra, {.ignore_unexpected = true}).empty());
    check_same_tensors(target, source);
    return;
  }
  SUBCASE("misshapen, named with the file") {
    Safetensors bad = copy_without("4.bias");
    bad.add<double>("4.bias", {1, 5}, std::vector<double>(5));
    const fs::path file = dir / "bad.safetensors";
    bad.save(file);
    std::string m;
    try {
      hpf::io::load_network_tensors(target, file);
    } catch (const hpf::io::FormatError& e) {
      m = e.what();
    }
    CHECK_MESSAGE(m.find("bad.safetensors: tensor '4.bias' has shape [1, 5] but the network's is [5]") != std::string::npos, m);
  }
  CHECK(target.read(target.tensor("0.weight")) == before);
}
