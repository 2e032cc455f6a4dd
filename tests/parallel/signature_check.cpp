// Started twice in one MPMD job (`mpiexec -n 1 A : -n 1 B`) with a different model
// (HPF_SIGNATURE_MODEL), stage count (--stages 1|2|3), batch (--batch N) or learning rate
// (--learning-rate X): fit must refuse to train, on every rank, naming what differs, instead of
// hanging or exchanging mismatched tensors.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <cstdlib>
#include <string>

#if HPF_SIGNATURE_MODEL == 1
using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<16>, hpf::ReLU, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;
#else
using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<32>, hpf::ReLU, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;
#endif

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [argc, argv](const hpf::comm::Communicator& world) {
    hpf::TrainOptions o;
    o.batch = 8;
    int stages = 1;
    for (int k = 1; k + 1 < argc; k += 2) {
      const std::string flag = argv[k];
      if (flag == "--stages") stages = std::atoi(argv[k + 1]);
      if (flag == "--batch") o.batch = static_cast<std::size_t>(std::atoi(argv[k + 1]));
      if (flag == "--learning-rate") o.optimizer = hpf::SgdOptions{.learning_rate = std::atof(argv[k + 1]), .momentum = 0.9};
    }
    const auto source = [](const hpf::data::Shard& shard) {
      return hpf::data::TrainTest{hpf::data::synthetic_dataset(16, 1, 28, 28, 10, 1, shard),
                                  hpf::data::synthetic_dataset(0, 1, 28, 28, 10, 1, shard)};
    };
    if (stages == 1) hpf::fit<Model, hpf::DataParallel>(world, o, source);
    if (stages == 2) hpf::fit<Model, hpf::Pipeline<hpf::Balanced<2>>>(world, o, source);
    if (stages == 3) hpf::fit<Model, hpf::Pipeline<hpf::Balanced<3>>>(world, o, source);
  });
}
