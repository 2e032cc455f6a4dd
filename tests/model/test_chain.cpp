#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {
std::vector<std::string> regions;
void record_region(const char* name) { regions.emplace_back(name); }

std::size_t count_of(const std::string& name) {
  return static_cast<std::size_t>(std::count_if(regions.begin(), regions.end(), [&](const std::string& r) {
    return r.find(name) != std::string::npos;
  }));
}
}  // namespace

TEST_CASE("Chain: no backward work below the first layer that learns unless the input gradient is wanted") {
  // Flatten and ReLU sit between the data and the first Dense, as in an MLP on images.
  using M = hpf::Sequential<hpf::Input<1, 3, 3>, hpf::Flatten, hpf::ReLU, hpf::Dense<4>, hpf::ReLU, hpf::Dense<2>>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  hpf_test::fill_uniform(net.input(tape, 2), 1);
  net.forward(tape, 2);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", 2 * 2);
  hpf_test::fill_uniform(dy, 2);
  const auto output_grad = hpf::activation_view(dy, 2, 2, 1);

  auto backward = [&](hpf::Activation<double, Kokkos::DefaultExecutionSpace> input_grad) {
    net.zero_grad();
    regions.clear();
    Kokkos::Tools::Experimental::set_push_region_callback(record_region);
    net.backward(tape, 1.0, output_grad, input_grad);
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
    return hpf_test::to_host(net.gradients());
  };

  // No input gradient: two weight-gradient GEMMs and one input-gradient GEMM, nothing below.
  const auto without = backward({});
  CHECK(count_of("hpf::Flatten::backward") == 0);
  CHECK(count_of("hpf::ReLU::backward") == 1);  // only the one between the Dense layers
  CHECK(count_of("hpf::Dense::backward") == 2);
  CHECK(count_of("KokkosBlas::gemm") == 3);

  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dx("dx", 9 * 2);
  const auto with = backward(hpf::activation_view(dx, 1, 2, 9));
  CHECK(count_of("hpf::Flatten::backward") == 1);
  CHECK(count_of("hpf::ReLU::backward") == 2);
  CHECK(count_of("KokkosBlas::gemm") == 4);
  // Skipping changes no parameter gradient, and the input gradient is really computed.
  CHECK(without == with);
  const auto input_gradient = hpf_test::to_host(dx);
  CHECK(std::any_of(input_gradient.begin(), input_gradient.end(), [](double g) { return g != 0.0; }));
}
