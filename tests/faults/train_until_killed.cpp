// A 2-stage x 2-replica hybrid training run (hpf::fit, Pipeline<Balanced<2>>) of a small MLP on
// synthetic data that runs for hours unless stopped: the subject of tests/faults/kill_one_rank.sh,
// which kills (or stops) one rank while it trains and checks that the job ends soon after.
//
//   mpiexec -n 4 hpf_faults_train_until_killed <directory>
//
// Every rank writes its process id to <directory>/rank<R>.pid as it starts, so the script can
// signal one rank and clean up after all of them; rank 0 prints progress lines while training.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <unistd.h>

#include <fstream>
#include <string>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Flatten, hpf::Dense<32>, hpf::ReLU, hpf::Dense<32>, hpf::ReLU,
                              hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main(int argc, char** argv) {
  const std::string directory = argc > 1 ? argv[argc - 1] : ".";
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    std::ofstream(directory + "/rank" + std::to_string(world.rank()) + ".pid") << getpid() << "\n";
    hpf::TrainOptions o;
    o.batch = 32;
    o.micro_batches = 4;
    o.epochs = 1'000'000;
    o.evaluate = false;
    o.progress = hpf::ProgressMode::lines;
    hpf::fit<Model, hpf::Pipeline<hpf::Balanced<2>>>(world, o, [](const hpf::data::Shard& shard) {
      return hpf::data::TrainTest{hpf::data::synthetic_dataset(8192, 1, 8, 8, 10, 1, shard),
                                  hpf::data::synthetic_dataset(0, 1, 8, 8, 10, 2, shard)};
    });
  });
}
