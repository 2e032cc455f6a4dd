// The README's example, as a user would build it against hpf: a model type, its compile-time
// facts, and a few parallel training steps on synthetic data.
#include <hpf/hpf.hpp>

#include <cstdio>

using Cnn = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Conv2D<32, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool<2>,
                            hpf::Conv2D<64, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool<2>, hpf::Flatten, hpf::Dense<128>,
                            hpf::ReLU, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
static_assert(std::is_same_v<Cnn::output_shape, hpf::Shape<10>>);
static_assert(Cnn::cost.parameters == 421'642);
static_assert(Cnn::cost.macs == 4'241'152);

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [](const hpf::comm::Communicator& world) {
    hpf::TrainOptions options;
    options.batch = 16;
    options.micro_batches = 2;
    options.epochs = 1;
    options.progress = hpf::ProgressMode::none;
    auto data = [](const hpf::data::Shard& shard) {
      return hpf::data::TrainTest{hpf::data::synthetic_dataset(64, 1, 28, 28, 10, 1, shard),
                                  hpf::data::synthetic_dataset(32, 1, 28, 28, 10, 2, shard)};
    };
    const auto report = hpf::fit<Cnn, hpf::Pipeline<hpf::Balanced<2>>>(world, options, data);
    if (world.rank() == 0) std::printf("consumer: %zu steps, last loss %.4f\n", report.step_losses.size(), report.step_losses.back());
  });
}
