// Work side by side on the threads of Kokkos OpenMP (hpf::run_on_thread_groups), and the data
// shards of hpf::Trainer trained that way (TrainOptions::shards_side_by_side): bit for bit the
// shards one after another with the BLAS on one thread. Built for Kokkos OpenMP only and run with
// 2 threads (CMake).
#include <hpf/data/synthetic.hpp>
#include <hpf/parallel/thread_groups.hpp>
#include <hpf/system/blas.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("run_on_thread_groups: each group on a thread of its own, its kernels on that thread") {
  REQUIRE_MESSAGE(Space().concurrency() == 2, "run with OMP_NUM_THREADS=2 (the CTest test sets it)");
  REQUIRE(HPF_THREAD_GROUPS == 1);
  REQUIRE(hpf::thread_groups_available<Space>() == 2);
  std::mutex lock;
  std::vector<std::thread::id> group_thread(2);
  std::vector<std::set<std::thread::id>> kernel_threads(2);
  std::vector<int> runs(2, 0);
  std::vector<long> sums(2, 0);
  hpf::run_on_thread_groups<Space>(2, [&](std::size_t g) {
    long sum = 0;
    Kokkos::parallel_reduce(
        "test::sum", Kokkos::RangePolicy<Space>(0, 1000), KOKKOS_LAMBDA(const int i, long& s) { s += i; }, sum);
    Kokkos::parallel_for("test::where", Kokkos::RangePolicy<Space>(0, 64), [&](int) {
      const std::lock_guard<std::mutex> guard(lock);
      kernel_threads[g].insert(std::this_thread::get_id());
    });
    const std::lock_guard<std::mutex> guard(lock);
    group_thread[g] = std::this_thread::get_id();
    ++runs[g];
    sums[g] = sum;
  });
  CHECK(group_thread[0] == std::this_thread::get_id());  // group 0 on the caller
  CHECK(group_thread[1] != group_thread[0]);
  for (std::size_t g = 0; g < 2; ++g) {
    CHECK(runs[g] == 1);
    CHECK(sums[g] == 999 * 1000 / 2);
    CHECK(kernel_threads[g] == std::set<std::thread::id>{group_thread[g]});  // its kernels stay on its thread
  }
  std::set<std::thread::id> afterwards;  // and the whole pool serves kernels again
  Kokkos::parallel_for("test::where", Kokkos::RangePolicy<Space>(0, 64), [&](int) {
    const std::lock_guard<std::mutex> guard(lock);
    afterwards.insert(std::this_thread::get_id());
  });
  CHECK(afterwards.size() == 2);
}

TEST_CASE("run_on_thread_groups: more groups than threads run one after another; a group's exception reaches the caller") {
  std::vector<int> runs(3, 0);
  hpf::run_on_thread_groups<Space>(3, [&](std::size_t g) { ++runs[g]; });
  CHECK(runs == std::vector<int>{1, 1, 1});

  std::vector<int> finished(2, 0);
  const auto failing = [&](std::size_t g) {
    if (g == 1) throw std::runtime_error("group 1 failed");
    finished[g] = 1;
  };
  CHECK_THROWS_WITH_AS(hpf::run_on_thread_groups<Space>(2, failing), "group 1 failed", std::runtime_error);
  CHECK(finished[0] == 1);  // the other group finished its work
}

namespace {

template <class T = float>
struct Run {
  std::vector<double> losses;
  std::vector<T> parameters, buffers;
  std::size_t shard_threads = 0;
};

/// Trains `steps` steps (whole epochs and a partial last batch) and keeps every loss, parameter
/// and buffer.
template <class Model, class T>
Run<T> train(hpf::TrainOptions o, const hpf::data::Dataset& data, bool side_by_side, std::size_t epochs) {
  o.shards_side_by_side = side_by_side;
  o.evaluate = false;
  o.log = nullptr;
  hpf::Trainer<Model, T> trainer(o, data);
  Run<T> run;
  run.shard_threads = trainer.shard_threads();
  for (std::size_t e = 0; e < epochs; ++e)
    for (std::size_t s = 0; s < trainer.steps_per_epoch(); ++s) run.losses.push_back(trainer.step(e, s).loss_sum);
  auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().parameters());
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.network().buffers());
  run.parameters.assign(p.data(), p.data() + p.size());
  run.buffers.assign(b.data(), b.data() + b.size());
  return run;
}

template <class V>
std::size_t differing_bits(const std::vector<V>& a, const std::vector<V>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(V)) != 0;
  return n;
}

/// While alive, the BLAS computes on one thread, as it does for each shard side by side, whatever
/// OPENBLAS_NUM_THREADS and OMP_NUM_THREADS say (OpenBLAS' OpenMP build runs on OpenMP's count).
/// hpf's own kernels give the same bits on any number of threads; a BLAS need not: OpenBLAS
/// 0.3.21's SGEMM on an AMD Zen 5 (family 26) rounds the MLP's products (batch 16 against 784 or
/// 512 features) differently on 2 threads than on 1, with its Haswell and SkylakeX kernels, and
/// its DGEMM on a Zen 4 (family 25) and on a Xeon (family 6 model 167) the CNN's in double.
struct OneBlasThread {
  const int saved_blas = hpf::system::blas_threads(), saved_openmp = omp_get_max_threads();
  OneBlasThread() { set(1, 1); }
  ~OneBlasThread() { set(saved_blas, saved_openmp); }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;
  static void set(int blas, int openmp) {
    if (const auto set_blas = hpf::system::detail::openblas().set_threads; set_blas && blas > 0) set_blas(blas);
    omp_set_num_threads(openmp);
  }
};

/// Trains the shards one after another (the BLAS on one thread, as side by side) and side by side
/// on `threads` threads; returns the latter.
template <class Model, class T = float>
Run<T> check_side_by_side(const hpf::TrainOptions& o, const hpf::data::Dataset& data, std::size_t epochs,
                          std::size_t threads) {
  const auto one_after_another = [&] {
    const OneBlasThread one;
    return train<Model, T>(o, data, false, epochs);
  }();
  const auto side_by_side = train<Model, T>(o, data, true, epochs);
  CHECK(one_after_another.shard_threads == 0);
  CHECK(side_by_side.shard_threads == threads);
  REQUIRE(side_by_side.losses.size() == one_after_another.losses.size());
  CHECK(std::isfinite(side_by_side.losses.back()));
  CHECK(differing_bits(side_by_side.losses, one_after_another.losses) == 0);
  CHECK(differing_bits(side_by_side.parameters, one_after_another.parameters) == 0);
  CHECK(differing_bits(side_by_side.buffers, one_after_another.buffers) == 0);
  return side_by_side;
}

}  // namespace

TEST_CASE("Trainer: ResNet-20's shards side by side train bit for bit as one after another, BatchNorm buffers too") {
  // 4 shards on 2 threads: each thread trains two shards a step, and each must start from
  // replica 0's buffers, as replicas do.
  hpf::TrainOptions o;
  o.batch = 16;
  o.data_shards = 4;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  o.network = {.seed = 3, .init = hpf::InitScheme::kaiming_normal_fan_out};
  o.data_seed = 4;
  const auto data = hpf::data::synthetic_dataset(16 * 2 + 4, 3, 32, 32, 10, 5);  // 2 full batches and a partial one
  CHECK(!check_side_by_side<hpf::zoo::ResNet20>(o, data, 1, 2).buffers.empty());
}

TEST_CASE("Trainer: 4 MLP shards on 2 threads (two each) train bit for bit as one after another") {
  hpf::TrainOptions o;
  o.batch = 64;
  o.data_shards = 4;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 6;
  const auto data = hpf::data::synthetic_dataset(64 * 3, 1, 28, 28, 10, 7);
  check_side_by_side<hpf::zoo::Mlp>(o, data, 2, 2);
}

TEST_CASE("Trainer: the CNN's 3 shards side by side in double train bit for bit as one after another") {
  // In double the convolutions are hpf's own im2col and GEMMs (oneDNN serves float only).
  hpf::TrainOptions o;
  o.batch = 24;
  o.data_shards = 3;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 9;
  const auto data = hpf::data::synthetic_dataset(24 * 2 + 5, 1, 28, 28, 10, 10);
  check_side_by_side<hpf::zoo::Cnn, double>(o, data, 2, 2);
}

TEST_CASE("Trainer: shards side by side with the allreduce order train one after another") {
  hpf::TrainOptions o;
  o.batch = 32;
  o.data_shards = 2;
  o.reduction = hpf::GradientReduction::allreduce;
  o.shards_side_by_side = true;
  o.log = nullptr;
  const auto data = hpf::data::synthetic_dataset(64, 1, 28, 28, 10, 8);
  hpf::Trainer<hpf::zoo::Mlp, float> trainer(o, data);
  CHECK(trainer.shard_threads() == 0);
  CHECK(std::isfinite(trainer.step(0, 0).loss_sum));
}

TEST_CASE("Trainer: a NaN in a side-by-side shard's data stops training naming the data") {
  hpf::TrainOptions o;
  o.batch = 32;
  o.data_shards = 2;
  o.shards_side_by_side = true;
  o.log = nullptr;
  std::vector<float> values(32 * 28 * 28, 0.5f);
  std::vector<std::int32_t> labels(32, 1);
  values[5 * 28 * 28 + 17] = std::nanf("");  // one batch: whichever shard the sample falls to trains it in step 0
  const auto data = hpf::data::Dataset::from_values(32, {1, 28, 28}, 10, {}, std::move(values), std::move(labels));
  hpf::Trainer<hpf::zoo::Mlp, float> trainer(o, data);
  REQUIRE(trainer.shard_threads() == 2);
  CHECK_THROWS_WITH_AS(trainer.step(0, 0), doctest::Contains("the training data hold non-finite values"),
                       hpf::NonFiniteError);
}
