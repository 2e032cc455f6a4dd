#include <hpf/data/sampler.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

using hpf::data::Sampler;
using hpf::data::split_range;

namespace {

std::vector<std::size_t> to_vector(std::span<const std::size_t> s) { return {s.begin(), s.end()}; }

// Every index visited in an epoch, step by step, in the order batch() gives them.
std::vector<std::size_t> epoch_order(Sampler& sampler, std::size_t epoch) {
  std::vector<std::size_t> order;
  for (std::size_t step = 0; step < sampler.steps_per_epoch(); ++step) {
    const auto batch = sampler.batch(epoch, step);
    order.insert(order.end(), batch.begin(), batch.end());
  }
  return order;
}

bool is_permutation_of_range(std::vector<std::size_t> v, std::size_t n) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != i) return false;
  }
  return v.size() == n;
}

}  // namespace

TEST_CASE("Sampler: one shard is a per-epoch shuffle in batches, last partial batch kept") {
  Sampler sampler(1000, 128, 1, 0);
  CHECK(sampler.local_batch() == 128);
  CHECK(sampler.steps_per_epoch() == 8);  // 7 x 128 + 104
  CHECK(sampler.batch(0, 0).size() == 128);
  CHECK(sampler.batch(0, 7).size() == 104);
  CHECK(Sampler(60000, 128, 1, 0).steps_per_epoch() == 469);  // as the reference
  CHECK(Sampler(60000, 64, 1, 0).steps_per_epoch() == 938);
  const auto e0 = epoch_order(sampler, 0);
  CHECK(is_permutation_of_range(e0, 1000));
  const auto e1 = epoch_order(sampler, 1);
  CHECK(is_permutation_of_range(e1, 1000));
  CHECK(e0 != e1);
  std::vector<std::size_t> identity(1000);
  for (std::size_t i = 0; i < 1000; ++i) identity[i] = i;
  CHECK(e0 != identity);
  CHECK_THROWS_AS(sampler.piece(0, 8, 0), std::out_of_range);
  CHECK_THROWS_AS(sampler.piece(0, 0, 1), std::out_of_range);
}

TEST_CASE("Sampler: deterministic, and independent of the order of calls") {
  Sampler a(500, 60, 3, 7), b(500, 60, 3, 7), other_seed(500, 60, 3, 8);
  const auto forward = epoch_order(a, 2);
  CHECK(forward == epoch_order(b, 2));
  CHECK(forward != epoch_order(other_seed, 2));
  // Jumping between epochs (the cache is replaced) gives the same pieces again.
  const auto late = to_vector(b.piece(5, 3, 1));
  (void)b.piece(2, 0, 1);
  CHECK(to_vector(b.piece(5, 3, 1)) == late);
  CHECK(to_vector(a.piece(5, 3, 1)) == late);
}

TEST_CASE("Sampler: shards partition every epoch") {
  const std::size_t n = 103, shards = 4;
  Sampler sampler(n, 20, shards, 3);
  CHECK(sampler.local_batch() == 5);
  CHECK(sampler.shard_size(0) == 26);
  CHECK(sampler.shard_size(3) == 25);
  CHECK(sampler.steps_per_epoch() == 6);  // ceil(26 / 5)
  for (std::size_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::size_t> seen;
    for (std::size_t r = 0; r < shards; ++r) {
      std::set<std::size_t> mine;
      for (std::size_t step = 0; step < sampler.steps_per_epoch(); ++step) {
        for (std::size_t i : sampler.piece(epoch, step, r)) {
          CHECK(i % shards == r);  // a replica only needs its own Shard of the data
          mine.insert(i);
          seen.push_back(i);
        }
      }
      CHECK(mine.size() == sampler.shard_size(r));
    }
    CHECK(is_permutation_of_range(seen, n));
  }
  // In the last step shard 0 gives 1 sample, shards 1 and 2 one too, shard 3 none.
  CHECK(sampler.piece(0, 5, 0).size() == 1);
  CHECK(sampler.piece(0, 5, 3).empty());
  CHECK(sampler.batch(0, 5).size() == 3);
  CHECK(to_vector(sampler.permutation(1, 2)) != to_vector(sampler.permutation(2, 2)));
}

TEST_CASE("Sampler: a single process's global batch is each replica's next samples, in replica order") {
  // Checked against a model of the contract rather than batch()'s own construction: every replica
  // walks its permutation (the indices r, r + R, ... shuffled per epoch) local_batch() samples a
  // step, and the global batch lists replica 0's samples of the step, then replica 1's, and so on.
  const std::size_t n = 250, batch = 24, replicas = 3;
  Sampler serial(n, batch, replicas, 11);
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<std::size_t>> walks(replicas);
    for (std::size_t r = 0; r < replicas; ++r) walks[r] = to_vector(Sampler(n, batch, replicas, 11).permutation(epoch, r));
    std::vector<std::size_t> cursor(replicas, 0);
    for (std::size_t step = 0; step < serial.steps_per_epoch(); ++step) {
      const auto global = serial.batch(epoch, step);
      REQUIRE(global.size() == serial.batch_size(step));
      std::size_t at = 0;
      for (std::size_t r = 0; r < replicas; ++r) {
        const std::size_t take = std::min(serial.local_batch(), walks[r].size() - cursor[r]);
        for (std::size_t k = 0; k < take; ++k, ++at) {
          CHECK(global[at] % replicas == r);
          CHECK(global[at] == walks[r][cursor[r] + k]);
        }
        cursor[r] += take;
      }
      CHECK(at == global.size());
    }
    for (std::size_t r = 0; r < replicas; ++r) CHECK(cursor[r] == walks[r].size());  // every sample, once
  }
}

TEST_CASE("Sampler: invalid arguments") {
  CHECK_THROWS_WITH_AS(Sampler(100, 10, 3, 0), "hpf::data::Sampler: global batch 10 is not divisible by the shard count 3",
                       std::invalid_argument);
  CHECK_THROWS_AS(Sampler(100, 0, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(Sampler(100, 8, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(Sampler(0, 8, 1, 0), std::invalid_argument);
  Sampler more_shards_than_samples(3, 8, 4, 0);  // shard 3 is empty
  CHECK(more_shards_than_samples.steps_per_epoch() == 1);
  CHECK(more_shards_than_samples.piece(0, 0, 3).empty());
}

TEST_CASE("split_range: near-equal contiguous pieces") {
  static_assert(split_range(10, 3, 0) == std::pair<std::size_t, std::size_t>{0, 4});
  CHECK(split_range(10, 3, 1) == std::pair<std::size_t, std::size_t>{4, 7});
  CHECK(split_range(10, 3, 2) == std::pair<std::size_t, std::size_t>{7, 10});
  CHECK(split_range(2, 4, 3) == std::pair<std::size_t, std::size_t>{2, 2});
  for (std::size_t n : {0u, 1u, 17u, 64u}) {
    for (std::size_t parts : {1u, 3u, 4u, 5u}) {
      std::size_t expected_begin = 0;
      for (std::size_t p = 0; p < parts; ++p) {
        const auto [begin, end] = split_range(n, parts, p);
        CHECK(begin == expected_begin);
        CHECK(end - begin >= n / parts);
        CHECK(end - begin <= n / parts + 1);
        expected_begin = end;
      }
      CHECK(expected_begin == n);
    }
  }
  CHECK_THROWS_AS(split_range(10, 3, 3), std::invalid_argument);
}

TEST_CASE("Sampler: batch_size counts every shard's piece, also in a short last step") {
  for (std::size_t shards : {1, 2, 3, 4}) {
    hpf::data::Sampler sampler(103, 12, shards, 9);
    for (std::size_t step = 0; step < sampler.steps_per_epoch(); ++step) {
      CHECK(sampler.batch_size(step) == sampler.batch(0, step).size());
    }
  }
}
