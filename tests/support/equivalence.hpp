// Parallel training must reproduce single-process training: test support (MPI tests only).
#ifndef HPF_TESTS_SUPPORT_EQUIVALENCE_HPP
#define HPF_TESTS_SUPPORT_EQUIVALENCE_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/parallel/fit.hpp>
#include <hpf/train/trainer.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace hpf_test {

struct Equivalence {
  double worst_loss = 0;       ///< max over steps of |loss - reference| / |reference|
  double worst_parameter = 0;  ///< max over tensors of max|w - reference| / max|reference|
  double worst_buffer = 0;     ///< the same for BatchNorm running statistics (model parallel only)
  std::size_t steps = 0;
  std::size_t tensors = 0;
  std::vector<double> loss_by_step;  ///< relative loss difference of each step
};

inline double norm_inf(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

/// Trains Model with Strategy on `world` and, on rank 0, the same run on one process over the
/// same pieces (data_shards = replicas, same micro-batches); compares every step's loss and, on
/// every rank, every tensor of its stage with the reference tensor of the same name.
template <class Model, class Strategy, class T>
Equivalence compare_with_single_process(const hpf::comm::Communicator& world, hpf::TrainOptions options,
                                        const hpf::DataSource& source) {
  constexpr std::size_t stages = hpf::stage_count_v<Model, typename Strategy::partition>;
  const std::size_t replicas = static_cast<std::size_t>(world.size()) / stages;
  options.progress = hpf::ProgressMode::none;
  options.evaluate = false;

  // Reference on rank 0, broadcast to all.
  std::vector<double> losses, parameters, buffers;
  hpf::Network<Model, T> layout(options.network);  // names -> offsets of the whole model
  losses.resize(options.epochs * 1000);
  parameters.resize(layout.parameters().extent(0));
  buffers.resize(layout.buffers().extent(0));
  long long steps = 0;
  if (world.rank() == 0) {
    hpf::TrainOptions reference = options;
    reference.data_shards = replicas;
    const auto data = source(hpf::data::Shard{});
    hpf::Trainer<Model, T> trainer(reference, data.train);
    const auto report = trainer.fit();
    steps = static_cast<long long>(report.step_losses.size());
    std::copy(report.step_losses.begin(), report.step_losses.end(), losses.begin());
    auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().parameters());
    auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().buffers());
    std::copy(p.data(), p.data() + p.size(), parameters.begin());
    std::copy(b.data(), b.data() + b.size(), buffers.begin());
  }
  MPI_Bcast(&steps, 1, MPI_LONG_LONG, 0, world.get());
  losses.resize(static_cast<std::size_t>(steps));
  MPI_Bcast(losses.data(), static_cast<int>(losses.size()), MPI_DOUBLE, 0, world.get());
  MPI_Bcast(parameters.data(), static_cast<int>(parameters.size()), MPI_DOUBLE, 0, world.get());
  MPI_Bcast(buffers.data(), static_cast<int>(buffers.size()), MPI_DOUBLE, 0, world.get());

  Equivalence e;
  const auto report = hpf::fit<Model, Strategy, T>(world, options, source, [&](auto& net, const hpf::ProcessGrid&) {
    for (const auto& t : net.tensors()) {
      const auto& ref = layout.tensor(t.name);
      const auto& source_values = t.kind == hpf::TensorKind::parameter ? parameters : buffers;
      const std::vector<double> expected(source_values.begin() + ref.offset, source_values.begin() + ref.offset + ref.size);
      const auto got = net.read(t);
      double diff = 0;
      for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(double(got[i]) - expected[i]));
      const double rel = diff / std::max(norm_inf(expected), 1e-30);
      if (t.kind == hpf::TensorKind::parameter) {
        e.worst_parameter = std::max(e.worst_parameter, rel);
      } else if (t.name.find("num_batches") == std::string::npos) {
        e.worst_buffer = std::max(e.worst_buffer, rel);
      }
      ++e.tensors;
    }
  });
  REQUIRE(report.step_losses.size() == losses.size());
  e.steps = losses.size();
  for (std::size_t s = 0; s < losses.size(); ++s) {
    e.loss_by_step.push_back(std::abs(report.step_losses[s] - losses[s]) / std::abs(losses[s]));
    e.worst_loss = std::max(e.worst_loss, e.loss_by_step.back());
  }
  e.worst_parameter = hpf::comm::allreduce_value(world, e.worst_parameter, MPI_MAX);
  e.worst_buffer = hpf::comm::allreduce_value(world, e.worst_buffer, MPI_MAX);
  return e;
}

/// Runs compare_with_single_process for Strategy when the world size fits it (a multiple of its
/// stage count) and checks losses and parameters within `tolerance`; with one replica also the
/// BatchNorm running statistics, which then follow exactly the reference's micro-batch order.
template <class Model, class Strategy, class T>
void check_strategy(const hpf::TrainOptions& options, const hpf::DataSource& source, double tolerance,
                    std::size_t expected_steps) {
  hpf::comm::Communicator world;
  constexpr std::size_t stages = hpf::stage_count_v<Model, typename Strategy::partition>;
  if (world.size() % stages != 0) return;
  const std::size_t replicas = static_cast<std::size_t>(world.size()) / stages;
  const auto e = compare_with_single_process<Model, Strategy, T>(world, options, source);
  std::string curve;
  for (double d : e.loss_by_step) {
    char text[32];
    std::snprintf(text, sizeof text, " %.1e", d);
    curve += text;
  }
  INFO("relative loss difference by step:", curve);
  INFO(stages, " stage(s) x ", replicas, " replica(s), ", std::string(hpf::to_string(options.schedule)), ", ", sizeof(T) * 8,
       "-bit: worst relative difference: loss ", e.worst_loss, ", parameters ", e.worst_parameter, ", buffers ",
       e.worst_buffer);
  CHECK(e.steps == expected_steps);
  CHECK(e.worst_loss <= tolerance);
  CHECK(e.worst_parameter <= tolerance);
  if (replicas == 1) CHECK(e.worst_buffer <= tolerance);
  if (world.rank() == 0) {
    MESSAGE(stages, "x", replicas, " ", std::string(hpf::to_string(options.schedule)), " ", sizeof(T) * 8, "-bit: loss ", e.worst_loss,
            ", parameters ", e.worst_parameter, ", buffers ", e.worst_buffer);
  }
}

/// Both schedules, both precisions (1e-9 in double, 1e-4 in float).
template <class Model, class Strategy>
void check_strategy_all(hpf::TrainOptions options, const hpf::DataSource& source, std::size_t expected_steps) {
  for (auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
    options.schedule = schedule;
    check_strategy<Model, Strategy, double>(options, source, 1e-9, expected_steps);
    check_strategy<Model, Strategy, float>(options, source, 1e-4, expected_steps);
  }
}

/// A synthetic training set of `count` samples of Model's input shape (10 classes) as a DataSource.
template <class Model>
hpf::DataSource synthetic_source(std::size_t count) {
  using In = typename Model::input_shape;
  return [count](const hpf::data::Shard& shard) {
    return hpf::data::TrainTest{hpf::data::synthetic_dataset(count, In::channels, In::height, In::width, 10, 5, shard),
                                hpf::data::synthetic_dataset(0, In::channels, In::height, In::width, 10, 6, shard)};
  };
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_EQUIVALENCE_HPP
