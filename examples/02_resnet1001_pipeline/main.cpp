// A pre-activation bottleneck ResNet-1001 (10.3 M parameters, 3006 leaf layers) split into
// balanced pipeline stages, trained for a few steps on synthetic 3x32x32 images:
//
//   mpiexec -n 4 hpf_resnet1001_pipeline                 # 4 stages
//   mpiexec -n 8 hpf_resnet1001_pipeline --stages 4      # 4 stages x 2 replicas
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/model/summary.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <common/arguments.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

using Model = hpf::zoo::PreActResNet1001;

template <class Strategy>
void train(const hpf::comm::Communicator& world, const hpf::TrainOptions& options, std::size_t samples) {
  using P = typename Strategy::partition;
  constexpr std::size_t stages = hpf::stage_count_v<Model, P>;
  if (world.rank() == 0) {
    std::cout << hpf::summary<Model>(options.batch);
    hpf::for_each_index<stages>([](auto s) {
      using S = hpf::stage_t<Model, P, s>;
      std::printf("stage %zu: leaves %zu-%zu, %zu parameters, %.2f GFLOP per training sample\n", std::size_t(s),
                  S::first_leaf, S::end_leaf - 1, S::cost.parameters, S::cost.training_flops() / 1e9);
    });
  }
  const auto report = hpf::fit<Model, Strategy>(world, options, [samples](const hpf::data::Shard& shard) {
    return hpf::data::TrainTest{hpf::data::synthetic_dataset(samples, 3, 32, 32, 10, 1, shard),
                                hpf::data::synthetic_dataset(0, 3, 32, 32, 10, 2, shard)};
  });
  if (world.rank() == 0) {
    for (std::size_t i = 0; i < report.step_losses.size(); ++i) std::printf("step %zu: loss %.4f\n", i + 1, report.step_losses[i]);
    std::printf("%.2f images/s\n", report.epochs.back().images_per_second);
  }
  for (double loss : report.step_losses) {
    if (!std::isfinite(loss)) throw hpf::comm::UsageError("the loss is not finite");
  }
}

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    hpf_examples::Arguments args(argc, argv, "Pipelined training of a pre-activation ResNet-1001 on synthetic data");
    hpf::TrainOptions o;
    const auto stages = args.get<std::size_t>("stages", 4, "pipeline stages: 2 or 4 (replicas = processes / stages)");
    o.batch = args.get<std::size_t>("batch", 8, "global mini-batch");
    o.micro_batches = args.get<std::size_t>("micro-batches", 4, "micro-batches per replica batch");
    const auto steps = args.get<std::size_t>("steps", 3, "training steps");
    if (!args.finish(world.rank() == 0)) return;
    o.steps_per_epoch = steps;
    o.evaluate = false;
    o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
    o.network.init = hpf::InitScheme::kaiming_normal_fan_out;
    const std::size_t samples = o.batch * steps;
    if (stages == 2) {
      train<hpf::Pipeline<hpf::Balanced<2>>>(world, o, samples);
    } else if (stages == 4) {
      train<hpf::Pipeline<hpf::Balanced<4>>>(world, o, samples);
    } else {
      throw hpf::comm::UsageError("--stages must be 2 or 4");
    }
  });
}
