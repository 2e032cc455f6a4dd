// Started twice in one MPMD job with different HPF_SIGNATURE_MODEL: fit must refuse to train,
// saying so on every rank, instead of exchanging mismatched tensors.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#if HPF_SIGNATURE_MODEL == 1
using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<16>, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
#else
using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<32>, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
#endif

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [](const hpf::comm::Communicator& world) {
    hpf::TrainOptions o;
    o.batch = 8;
    hpf::fit<Model, hpf::DataParallel>(world, o, [](const hpf::data::Shard& shard) {
      return hpf::data::TrainTest{hpf::data::synthetic_dataset(16, 1, 28, 28, 10, 1, shard),
                                  hpf::data::synthetic_dataset(0, 1, 28, 28, 10, 1, shard)};
    });
  });
}
