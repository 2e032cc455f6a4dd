// SPDX-License-Identifier: MIT
// One training step of a zoo model, written as a user would: every kernel of the model's forward,
// backward and optimizer is instantiated, so compiling this TU measures what a model costs the
// compiler. measure.sh times it per model and compiler; the compile-budget test (CMakeLists.txt)
// holds the deepest model to its budget.
//
//   c++ -std=c++20 -O3 -march=native -DHPF_MODEL='hpf::zoo::PreActResNet<4502>' -c train_step.cpp
#include <hpf/model/network.hpp>
#include <hpf/optim/sgd.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/gpt.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

#ifndef HPF_MODEL
#define HPF_MODEL hpf::zoo::PreActResNet1001
#endif

// Class labels for a classifier, real targets for a regression model (CosmoFlow).
template <class Net>
void fill_targets(Net& net, const typename Net::Tape& tape, std::size_t batch) {
  if constexpr (Net::classifier) {
    Kokkos::deep_copy(net.labels(tape, batch), 1);
  } else {
    Kokkos::deep_copy(net.targets(tape, batch), 0.25f);
  }
}

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Model = HPF_MODEL;
  constexpr std::size_t batch = 8;
  hpf::Network<Model> net;
  auto tape = net.make_tape(batch);
  Kokkos::deep_copy(net.input(tape, batch), 0.5f);
  fill_targets(net, tape, batch);
  hpf::Sgd<float> opt(net.parameters().extent(0), {.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
  net.zero_grad();
  net.forward(tape, batch);
  net.backward(tape, 1.0f / batch);
  opt.step(net.parameters(), net.gradients());
  net.forward(tape, batch, hpf::Mode::eval);
  std::printf("%zu leaves, loss %g\n", Model::leaves, double(net.loss_sum(tape)) / batch);
  return 0;
}
