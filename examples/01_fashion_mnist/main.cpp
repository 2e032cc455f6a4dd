// Trains a Fashion-MNIST classifier with any parallel strategy, chosen when launching:
//
//   mpiexec -n 4 hpf_fashion_mnist --model cnn --stages 2     # 2 stages x 2 replicas (hybrid)
//   mpiexec -n 2 hpf_fashion_mnist --model mlp --stages 1     # data parallel
//   OMP_NUM_THREADS=2 mpiexec -n 2 hpf_fashion_mnist --stages 1 --shards 2   # 2 shards per rank, one per thread
//   mpiexec -n 4 hpf_fashion_mnist --stages auto --oracle-profile benchmarks/comm/profiles/local.json
//   hpf_fashion_mnist --model cnn                             # one process
//   hpf_fashion_mnist --model cnn --precision bf16            # bf16 products, float elsewhere (docs/precision.md)
//   mpiexec -n 2 hpf_fashion_mnist --model resnet20 --stages 1  # ResNet-20's layers, data parallel
//   mpiexec -n 4 hpf_fashion_mnist --checkpoint-dir ckpt --checkpoint-every 200 --resume yes
//
// Replicas = processes / stages. Rank 0 prints the model's compile-time summary, progress and
// the test accuracy after every epoch.
#include <hpf/comm/environment.hpp>
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/model/summary.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <common/arguments.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

/// ResNet-20's layers (hpf::zoo::CifarResNet<20>: conv3x3-16, three stages of 3 basic blocks at
/// 16/32/64 channels with option A shortcuts, global average pooling, fc) on Fashion-MNIST's 1x28x28
/// images: its stages at 28, 14 and 7 pixels. CIFAR-10, its own data, is not packaged in Debian.
using ResNet20 = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm,
                                 hpf::ReLU, hpf::Repeat<3, hpf::zoo::BasicBlock<16>>,  //
                                 hpf::zoo::BasicBlock<32, 2, false>, hpf::Repeat<2, hpf::zoo::BasicBlock<32>>,  //
                                 hpf::zoo::BasicBlock<64, 2, false>, hpf::Repeat<2, hpf::zoo::BasicBlock<64>>,  //
                                 hpf::GlobalAvgPool, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

struct Settings {
  std::string model;
  std::string stages;
  double min_accuracy;  // for tests: fail unless the final accuracy reaches it
  hpf::TrainOptions train;
  std::string data_dir;
};

template <class Model, class Strategy>
double train(const hpf::comm::Communicator& world, const Settings& s) {
  if (world.rank() == 0) {
    std::cout << hpf::summary<Model>(s.train.batch) << "\n" << world.size() << " process(es): ";
    if constexpr (requires { Strategy::stages; }) {
      std::cout << "the strategy the oracle predicts fastest (hpf::Auto)\n\n";
    } else {
      const auto bounds = hpf::stage_bounds_v<Model, typename Strategy::partition>;
      std::cout << bounds.size() - 1 << " stage(s) x " << world.size() / static_cast<int>(bounds.size() - 1)
                << " replica(s); stages begin at leaves";
      for (std::size_t i = 0; i + 1 < bounds.size(); ++i) std::cout << " " << bounds[i];
      std::cout << "; " << s.train.shards_per_replica << " data shard(s) per replica, " << s.train.micro_batches
                << " micro-batch(es), " << hpf::to_string(s.train.schedule) << "\n\n";
    }
  }
  const std::string dir = s.data_dir;
  const auto report = hpf::fit<Model, Strategy>(world, s.train, [dir](const hpf::data::Shard& shard) {
    return dir.empty() ? hpf::data::load_fashion_mnist(shard) : hpf::data::load_fashion_mnist(shard, dir);
  });
  if (world.rank() == 0 && report.shard_threads > 0) {
    std::cout << "each rank trained its " << s.train.shards_per_replica << " shards side by side on " << report.shard_threads
              << " threads\n";
  }
  return report.final_test_accuracy();
}

template <class Model>
double train_with_stages(const hpf::comm::Communicator& world, const Settings& s) {
  if (s.stages == "1") return train<Model, hpf::DataParallel>(world, s);
  if (s.stages == "2") return train<Model, hpf::Pipeline<hpf::Balanced<2>>>(world, s);
  if (s.stages == "4") return train<Model, hpf::Pipeline<hpf::Balanced<4>>>(world, s);
  if (s.stages == "auto") return train<Model, hpf::Auto<1, 2, 4>>(world, s);
  throw hpf::comm::UsageError("--stages must be 1, 2, 4 or auto (got '" + s.stages + "')");
}

}  // namespace

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    hpf_examples::Arguments args(argc, argv, "Fashion-MNIST training with hpf (data, model or hybrid parallel)");
    Settings s;
    s.model = args.get<std::string>("model", "cnn",
                                    "mlp (784-512-512-10), cnn (conv32-pool-conv64-pool-fc128-fc10) or resnet20 (ResNet-20's "
                                    "layers on 28x28 images; --stages 1)");
    s.stages = args.get<std::string>("stages", "", "pipeline stages: 1, 2 or 4 (replicas = processes / stages), or auto: the oracle's choice (default: 2; resnet20: 1)");
    s.train.oracle_profile = args.get<std::string>("oracle-profile", "", "machine profile for --stages auto (default: $HPF_ORACLE_PROFILE)");
    s.train.epochs = args.get<std::size_t>("epochs", 1, "passes over the 60000 training images");
    s.train.batch = args.get<std::size_t>("batch", 0, "global mini-batch (0: 128 for mlp, 64 for cnn and resnet20)");
    s.train.micro_batches = args.get<std::size_t>("micro-batches", 2, "micro-batches per replica batch");
    s.train.shards_per_replica = args.get<std::size_t>("shards", 1, "data shards per replica, trained side by side on the rank's threads (Kokkos OpenMP, one stage)");
    const auto schedule = args.get<std::string>("schedule", "1f1b", "pipeline schedule: 1f1b or gpipe");
    const double lr = args.get<double>("lr", 0.05, "SGD learning rate (momentum 0.9)");
    s.train.steps_per_epoch = args.get<std::size_t>("steps", 0, "stop each epoch after this many steps (0: whole epochs)");
    s.train.network.seed = args.get<std::uint64_t>("seed", 0, "seed of the initial weights and of the data order");
    const auto precision = args.get<std::string>("precision", "float", "float, or bf16: the products of Dense and Conv2D read bf16 inputs (as hpf::Mixed<hpf::bf16>)");
    s.data_dir = args.get<std::string>("data-dir", "", "directory of the IDX files (default: $HPF_FASHION_MNIST_DIR or Debian's)");
    s.min_accuracy = args.get<double>("expect-accuracy", 0.0, "exit with an error unless the final test accuracy reaches this (0-1)");
    s.train.checkpoint.directory = args.get<std::string>("checkpoint-dir", "", "save checkpoints here (at the end, and as below)");
    s.train.checkpoint.every_steps = args.get<std::size_t>("checkpoint-every", 0, "also save every this many steps (0: only at the end)");
    s.train.checkpoint.every_seconds = args.get<double>("checkpoint-seconds", 0, "also save when this many seconds have passed");
    s.train.checkpoint.resume = args.get<std::string>("resume", "no", "yes: resume from the newest intact checkpoint in --checkpoint-dir") == "yes";
    if (!args.finish(world.rank() == 0)) return;
    if (schedule != "1f1b" && schedule != "gpipe") throw hpf::comm::UsageError("--schedule must be 1f1b or gpipe");
    if (precision != "float" && precision != "bf16") throw hpf::comm::UsageError("--precision must be float or bf16 (got '" + precision + "')");
    // What fit<Model, Strategy, hpf::Mixed<hpf::bf16>> sets, chosen here at run time: one binary for both.
    if (precision == "bf16") s.train.network.matmul_precision = hpf::MatmulPrecision::bf16;
    s.train.schedule = schedule == "gpipe" ? hpf::Schedule::gpipe : hpf::Schedule::one_f_one_b;
    s.train.data_seed = s.train.network.seed;
    s.train.shards_side_by_side = s.train.shards_per_replica > 1;
    s.train.optimizer = hpf::SgdOptions{.learning_rate = lr, .momentum = 0.9};
    if (s.train.batch == 0) s.train.batch = s.model == "mlp" ? 128 : 64;
    if (s.stages.empty()) s.stages = s.model == "resnet20" ? "1" : "2";
    // Convolutions start as CIFAR ResNets' do (He et al.: N(0, 2 / fan_out)); the others, as PyTorch's defaults.
    if (s.model == "resnet20") s.train.network.init = hpf::InitScheme::kaiming_normal_fan_out;

    double accuracy = 0;
    if (s.model == "mlp") {
      accuracy = train_with_stages<hpf::zoo::Mlp>(world, s);
    } else if (s.model == "cnn") {
      accuracy = train_with_stages<hpf::zoo::Cnn>(world, s);
    } else if (s.model == "resnet20") {
      // Data parallel only: each strategy compiled for a 20-layer model adds to this example's
      // compile time (hpf_resnet1001_pipeline shows a ResNet's pipeline).
      if (s.stages != "1") throw hpf::comm::UsageError("--model resnet20 takes --stages 1 (got '" + s.stages + "')");
      accuracy = train<ResNet20, hpf::DataParallel>(world, s);
    } else {
      throw hpf::comm::UsageError("--model must be mlp, cnn or resnet20 (got '" + s.model + "')");
    }
    if (world.rank() == 0) std::printf("final test accuracy: %.2f%%\n", 100.0 * accuracy);
    if (s.min_accuracy > 0 && !(accuracy >= s.min_accuracy)) {
      throw hpf::comm::UsageError("test accuracy " + std::to_string(100 * accuracy) + "% is below the expected " +
                                  std::to_string(100 * s.min_accuracy) + "%");
    }
  });
}
