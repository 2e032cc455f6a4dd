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

/// A unit calibrated at 1 and 64 samples: `forward` and `backward` seconds per sample, no scratch.
inline hpf::oracle::UnitTiming linear_unit(double forward, double backward) {
  hpf::oracle::UnitTiming t;
  t.batch = {1, 64};
  t.forward_s = {forward, 64 * forward};
  t.backward_s = {backward, 64 * backward};
  t.workspace_elements = {0, 0};
  t.scratch_elements = {0, 0};
  return t;
}

/// Every unit of Tiny takes 1 ms per sample forward and 2 ms backward; no communication cost.
inline hpf::oracle::MachineProfile linear_profile() {
  hpf::oracle::MachineProfile p;
  p.label = "test";
  p.cores = 64;
  for (const std::string& key : hpf::oracle::layer_keys<Tiny>()) p.units[key] = linear_unit(1e-3, 2e-3);
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
