// A small convolutional network (with BatchNorm buffers) trained with checkpoints, for the
// resume tests (tests/checkpoint/test_resume.sh). Every layout trains the same 2 data shards with
// the ordered reduction, so all of them give the same bits:
//   --layout trainer            one process (hpf::Trainer with data_shards 2)
//   --layout fit --stages S     hpf::fit with S stages (world size 2 S)
//   --layout slabs              hpf::fit with every sample in 2 slabs of rows (Spatial<2>, 2 ranks),
//   --layout slabs-trainer      and the one process that computes both slabs (the same bits as
//                               each other, not as the layouts above: the arithmetic differs)
// --kill-at G makes the last rank SIGKILL itself after step G: a crash, not a polite stop.
// For tests/checkpoint/pytorch_interop.py (one process): --export-test FILE writes the test set
// to FILE; --evaluate-weights FILE loads a safetensors file of PyTorch state_dict names instead
// of training; either prints "test accuracy A loss L" of the final weights.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/io/network_tensors.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/models.hpp>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU, hpf::Flatten,
                              hpf::Dense<16>, hpf::ReLU, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
using OtherModel = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU, hpf::Flatten,
                                   hpf::Dense<12>, hpf::ReLU, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

hpf::data::TrainTest data(const hpf::data::Shard& shard) {
  return {hpf::data::synthetic_dataset(96, 1, 8, 8, 10, 5, shard), hpf::data::synthetic_dataset(40, 1, 8, 8, 10, 6, shard)};
}

// The test set as F32 images [N, 1, 8, 8] and I64 labels [N].
void export_test_set(const hpf::data::Dataset& test, const std::string& file) {
  hpf::io::Safetensors out;
  std::vector<float> images(test.size() * 64);
  std::vector<std::int64_t> labels(test.size());
  for (std::size_t i = 0; i < test.size(); ++i) {
    const std::size_t index[] = {i};
    test.gather<float>(index, images.data() + i * 64);  // one channel: [C][1][H*W] is [H*W]
    labels[i] = test.label(i);
  }
  out.add("images", {test.size(), 1, 8, 8}, images);
  out.add("labels", {test.size()}, labels);
  out.save(file);
}

template <class M>
void train(const hpf::comm::Communicator& world, const hpf::TrainOptions& o, const std::string& layout, int stages,
           const std::string& export_test, const std::string& weights) {
  if (layout == "trainer") {
    if (world.size() != 1) throw hpf::comm::UsageError("--layout trainer runs on one process");
    const hpf::data::TrainTest d = data({});
    hpf::Trainer<M> trainer(o, d.train, &d.test);
    if (weights.empty()) {
      trainer.fit();
    } else {
      hpf::io::load_network_tensors(trainer.network(), std::filesystem::path(weights));
    }
    if (!export_test.empty()) export_test_set(d.test, export_test);
    const hpf::Evaluation e = trainer.evaluate();
    std::printf("test accuracy %.17g loss %.17g\n", e.accuracy, e.loss);
  } else if (layout == "slabs-trainer") {  // one process computing both slabs of Spatial<2>
    if (world.size() != 1) throw hpf::comm::UsageError("--layout slabs-trainer runs on one process");
    const hpf::data::TrainTest d = data({});
    hpf::Trainer<hpf::SpatialSplit<M, 2>>(o, d.train, &d.test).fit();
  } else if (layout == "slabs") {  // every sample in 2 slabs of rows over 2 ranks: one replica of both shards
    hpf::TrainOptions slabs = o;
    slabs.shards_per_replica = 2;
    hpf::fit<M, hpf::Pipeline<hpf::Cuts<>, hpf::Spatial<2>>>(world, slabs, data);
  } else if (stages == 1) {
    hpf::fit<M, hpf::DataParallel>(world, o, data);
  } else if (stages == 2) {
    hpf::fit<M, hpf::Pipeline<hpf::Balanced<2>>>(world, o, data);
  } else if (stages == 3) {
    hpf::fit<M, hpf::Pipeline<hpf::Balanced<3>>>(world, o, data);
  } else {
    throw hpf::comm::UsageError("--stages must be 1, 2 or 3");
  }
}

}  // namespace

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [argc, argv](const hpf::comm::Communicator& world) {
    hpf::TrainOptions o;
    o.batch = 8;
    o.micro_batches = 2;
    o.epochs = 2;
    o.data_shards = 2;
    o.reduction = hpf::GradientReduction::ordered;
    o.progress = hpf::ProgressMode::none;
    o.checkpoint.keep = 0;
    std::string layout = "fit", model = "a", export_test, weights;
    int stages = 1;
    std::size_t kill_at = 0;
    for (int k = 1; k < argc; ++k) {
      const std::string flag = argv[k];
      auto value = [&]() -> std::string {
        if (k + 1 >= argc) throw hpf::comm::UsageError(flag + " needs a value");
        return argv[++k];
      };
      if (flag == "--layout") layout = value();
      else if (flag == "--stages") stages = std::stoi(value());
      else if (flag == "--dir") o.checkpoint.directory = value();
      else if (flag == "--every") o.checkpoint.every_steps = std::stoul(value());
      else if (flag == "--keep") o.checkpoint.keep = std::stoul(value());
      else if (flag == "--every-seconds") o.checkpoint.every_seconds = std::stod(value());
      else if (flag == "--epochs") o.epochs = std::stoul(value());
      else if (flag == "--kill-at") kill_at = std::stoul(value());
      else if (flag == "--resume") o.checkpoint.resume = true;
      else if (flag == "--resume-from") o.checkpoint.resume_from = value();
      else if (flag == "--model") model = value();
      else if (flag == "--export-test") export_test = value();
      else if (flag == "--evaluate-weights") weights = value();
      else if (flag == "--adam") o.optimizer = hpf::AdamOptions{.learning_rate = 0.01, .weight_decay = 1e-4};
      else throw hpf::comm::UsageError("unknown option " + flag);
    }
    const bool victim = world.rank() + 1 == world.size();
    o.after_step = [kill_at, victim](std::size_t step) {
      if (step == kill_at && victim) std::raise(SIGKILL);
    };
    if (model == "a") train<Model>(world, o, layout, stages, export_test, weights);
    else train<OtherModel>(world, o, layout, stages, export_test, weights);
  });
}
