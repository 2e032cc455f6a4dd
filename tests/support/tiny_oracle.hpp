// The oracle's tests' small model and a profile written by hand, whose steps can be worked out.
#ifndef HPF_TESTS_SUPPORT_TINY_ORACLE_HPP
#define HPF_TESTS_SUPPORT_TINY_ORACLE_HPP

#include <hpf/hpf.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>

#include <cstddef>
#include <string>

namespace hpf_test {

using Tiny = hpf::Sequential<hpf::Input<1, 4, 4>, hpf::Conv2D<2, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool<2>, hpf::Flatten,
                             hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;

/// Every unit of Tiny takes 1 ms per sample forward and 2 ms backward; no communication cost.
inline hpf::oracle::MachineProfile linear_profile() {
  hpf::oracle::MachineProfile p;
  p.label = "test";
  p.cores = 64;
  for (const std::string& key : hpf::oracle::layer_keys<Tiny>()) {
    p.units[key] = {{1, 64}, {1e-3, 64e-3}, {2e-3, 128e-3}, {0, 0}, {0, 0}, {}, {}, {}, {}, {}, {}, {}, {}};
  }
  return p;
}

/// A plan of Tiny at Balanced<stages>'s cuts.
inline hpf::oracle::Plan plan(std::size_t stages, std::size_t replicas, std::size_t batch, std::size_t micro,
                              hpf::Schedule schedule) {
  return {.stages = stages, .replicas = replicas, .batch = batch, .micro_batches = micro, .schedule = schedule,
          .bounds = hpf::oracle::balanced_bounds<Tiny>(stages)};
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_TINY_ORACLE_HPP
