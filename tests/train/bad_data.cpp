// hpf::fit given data that does not fit the model (--case image-shape|classes|small): it must
// stop before any step with the same clear error on every rank (exit code 2), never read or
// write out of bounds. Non-finite values (--case nan-data: one sample holds a NaN; --case
// diverge: a learning rate of 1e30) stop training at the step they appear, naming where they
// came from, or with --skip leave that step out.
#include <hpf/comm/environment.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<16>, hpf::ReLU, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;

namespace {
// 64 samples of 1x28x28 whose global sample 3 holds a NaN.
hpf::data::Dataset with_nan(const hpf::data::Shard& shard) {
  const std::size_t count = 64, size = 28 * 28, local = shard.size_of(count);
  std::vector<float> values(shard.images ? local * size : 0);
  std::vector<std::int32_t> labels(shard.labels ? local : 0);
  for (std::size_t k = 0; k < local; ++k) {
    const std::size_t global = shard.index + k * shard.count;
    if (shard.labels) labels[k] = static_cast<std::int32_t>(global % 10);
    for (std::size_t v = 0; shard.images && v < size; ++v) values[k * size + v] = 0.01f * static_cast<float>((global + v) % 13);
    if (shard.images && global == 3) values[k * size + 100] = std::nanf("");
  }
  return hpf::data::Dataset::from_values(count, {1, 28, 28}, 10, shard, std::move(values), std::move(labels));
}
}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 2 ? argv[2] : "";
  const bool skip = argc > 3 && std::string(argv[3]) == "--skip";
  return hpf::comm::run_main(argc, argv, [&which, skip](const hpf::comm::Communicator& world) {
    hpf::TrainOptions o;
    o.batch = 8;
    o.progress = skip ? hpf::ProgressMode::lines : hpf::ProgressMode::none;
    o.evaluate = false;
    if (skip) o.non_finite = hpf::NonFinitePolicy::skip;
    if (which == "diverge") o.optimizer = hpf::SgdOptions{.learning_rate = 1e30};
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
      if (which == "nan-data" || which == "diverge") {
        return hpf::data::TrainTest{which == "nan-data" ? with_nan(shard) : synthetic_dataset(64, 1, 28, 28, 10, 1, shard),
                                    synthetic_dataset(16, 1, 28, 28, 10, 2, shard)};
      }
      throw std::invalid_argument("unknown --case '" + which + "'");
    };
    hpf::fit<Model, hpf::Pipeline<hpf::Balanced<2>>>(world, o, source);
  });
}
