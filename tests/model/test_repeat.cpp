#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/zoo/blocks.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <set>

TEST_CASE("Repeat: N copies with their own parameters, costs scale with N") {
  using Block = hpf::Chain<hpf::Dense<6>, hpf::ReLU>;
  using M = hpf::Sequential<hpf::Input<6>, hpf::Repeat<4, Block>>;
  static_assert(M::leaves == 8);
  static_assert(M::cost.parameters == 4 * (36 + 6));
  hpf::Network<M> net;
  std::set<std::string> names;
  for (const auto& t : net.tensors()) names.insert(t.name);
  CHECK(names == std::set<std::string>{"0.0.0.weight", "0.0.0.bias", "0.1.0.weight", "0.1.0.bias", "0.2.0.weight",
                                       "0.2.0.bias", "0.3.0.weight", "0.3.0.bias"});
  // Copies start different (each tensor has its own random stream).
  CHECK(net.read(net.tensor("0.0.0.weight")) != net.read(net.tensor("0.1.0.weight")));
}

TEST_CASE("Repeat: the same as writing the blocks out") {
  using Block = hpf::Chain<hpf::Dense<5>, hpf::ReLU>;
  using Repeated = hpf::Sequential<hpf::Input<5>, hpf::Repeat<3, Block>>;
  using Written = hpf::Sequential<hpf::Input<5>, hpf::Repeat<1, Block>, hpf::Repeat<1, Block, 1>, hpf::Repeat<1, Block, 2>>;
  hpf::Network<Repeated, double> a;
  hpf::Network<Written, double> b;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string from = "0." + std::to_string(i) + ".0.";
    const std::string to = std::to_string(i) + "." + std::to_string(i) + ".0.";
    b.write(b.tensor(to + "weight"), a.read(a.tensor(from + "weight")));
    b.write(b.tensor(to + "bias"), a.read(a.tensor(from + "bias")));
  }
  auto ta = a.make_tape(4);
  auto tb = b.make_tape(4);
  hpf_test::fill_uniform(a.input(ta, 4), 2);
  hpf_test::fill_uniform(b.input(tb, 4), 2);
  a.forward(ta, 4);
  b.forward(tb, 4);
  CHECK(hpf_test::to_host(a.output(ta)) == hpf_test::to_host(b.output(tb)));
}

TEST_CASE("Repeat: finite-difference gradients through repeated residual blocks") {
  using M = hpf::Sequential<hpf::Input<3, 4, 4>, hpf::Repeat<3, hpf::zoo::BasicBlock<3>>>;
  auto r = hpf_test::gradient_check<M>(2, 5, 8);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}

TEST_CASE("Repeat: gradient-readiness watermark falls block by block during backward") {
  using M = hpf::Sequential<hpf::Input<4>, hpf::Dense<4>, hpf::Repeat<3, hpf::Dense<4>>, hpf::Dense<4>>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  hpf_test::fill_uniform(net.input(tape, 2), 1);
  net.forward(tape, 2);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", 8);
  Kokkos::deep_copy(dy, 1.0);
  std::vector<std::size_t> marks;
  net.backward(tape, 1.0, hpf::activation_view(dy, 4, 2, 1), {}, [&](std::size_t offset) { marks.push_back(offset); });
  // last Dense, then the three copies (each reported by Repeat), the Repeat as a whole, the first Dense
  const std::vector<std::size_t> expected = {net.tensor("2.weight").offset, net.tensor("1.2.weight").offset, net.tensor("1.1.weight").offset,
              net.tensor("1.0.weight").offset, net.tensor("1.0.weight").offset, net.tensor("0.weight").offset};
  CHECK(marks == expected);
}
