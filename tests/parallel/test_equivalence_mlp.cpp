#include <hpf/data/synthetic.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

namespace {
using Model = hpf::zoo::Mlp;  // leaves: Flatten, Dense, ReLU, Dense, ReLU, Dense, loss

hpf::DataSource synthetic() {
  // 16 * 20 + 7 samples: the 21st step is a short one (and leaves some micro-batches empty).
  return [](const hpf::data::Shard& shard) {
    return hpf::data::TrainTest{hpf::data::synthetic_dataset(327, 1, 28, 28, 10, 5, shard),
                                hpf::data::synthetic_dataset(40, 1, 28, 28, 10, 6, shard)};
  };
}

hpf::TrainOptions options(hpf::Schedule schedule) {
  hpf::TrainOptions o;
  o.batch = 16;
  o.micro_batches = 2;
  o.schedule = schedule;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 1e-4};
  o.network.seed = 3;
  o.data_seed = 4;
  o.bucket_bytes = 64 << 10;  // several buckets for the 670k parameters
  return o;
}

template <class Strategy, class T>
void check(double tolerance, hpf::Schedule schedule) {
  hpf::comm::Communicator world;
  constexpr std::size_t stages = hpf::stage_count_v<Model, typename Strategy::partition>;
  if (world.size() % stages != 0) return;
  const auto e = hpf_test::compare_with_single_process<Model, Strategy, T>(world, options(schedule), synthetic());
  INFO("stages ", stages, ", replicas ", world.size() / stages, ", ", hpf::to_string(schedule), ", ", sizeof(T) * 8, "-bit");
  CHECK(e.steps == 21);
  CHECK(e.worst_loss <= tolerance);
  CHECK(e.worst_parameter <= tolerance);
  MESSAGE("worst relative difference: loss ", e.worst_loss, ", parameters ", e.worst_parameter);
}
}  // namespace

TEST_CASE("MLP: data parallel reproduces single-process training") {
  check<hpf::DataParallel, double>(1e-9, hpf::Schedule::one_f_one_b);
  check<hpf::DataParallel, float>(1e-4, hpf::Schedule::one_f_one_b);
}
TEST_CASE("MLP: two stages (model parallel, or hybrid on 4 ranks), both schedules") {
  for (auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
    check<hpf::Pipeline<hpf::Cuts<3>>, double>(1e-9, schedule);
    check<hpf::Pipeline<hpf::Cuts<3>>, float>(1e-4, schedule);
  }
}
TEST_CASE("MLP: four stages, both schedules") {
  for (auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
    check<hpf::Pipeline<hpf::Balanced<4>>, double>(1e-9, schedule);
    check<hpf::Pipeline<hpf::Balanced<4>>, float>(1e-4, schedule);
  }
}
