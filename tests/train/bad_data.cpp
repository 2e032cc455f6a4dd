// hpf::fit given data that does not fit the model (--case image-shape|classes|small): it must
// stop before any step with the same clear error on every rank (exit code 2), never read or
// write out of bounds.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <string>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<16>, hpf::ReLU, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;

int main(int argc, char** argv) {
  const std::string which = argc > 2 ? argv[2] : "";
  return hpf::comm::run_main(argc, argv, [&which](const hpf::comm::Communicator& world) {
    hpf::TrainOptions o;
    o.batch = 8;
    o.progress = hpf::ProgressMode::none;
    const auto source = [&which](const hpf::data::Shard& shard) {
      using hpf::data::synthetic_dataset;
      if (which == "image-shape") {  // CIFAR-shaped images for a Fashion-MNIST model
        return hpf::data::TrainTest{synthetic_dataset(64, 3, 32, 32, 10, 1, shard), synthetic_dataset(16, 3, 32, 32, 10, 2, shard)};
      }
      if (which == "classes") {  // labels up to 19 for a 10-way classifier
        return hpf::data::TrainTest{synthetic_dataset(64, 1, 28, 28, 20, 1, shard), synthetic_dataset(16, 1, 28, 28, 20, 2, shard)};
      }
      if (which == "small") {  // fewer samples than one batch
        return hpf::data::TrainTest{synthetic_dataset(5, 1, 28, 28, 10, 1, shard), synthetic_dataset(16, 1, 28, 28, 10, 2, shard)};
      }
      throw std::invalid_argument("unknown --case '" + which + "'");
    };
    hpf::fit<Model, hpf::Pipeline<hpf::Balanced<2>>>(world, o, source);
  });
}
