#include <hpf/data/shard.hpp>

#include <doctest/doctest.h>

using hpf::data::Shard;

TEST_CASE("Shard: strided membership and sizes") {
  constexpr Shard all{};
  static_assert(all.holds(0) && all.holds(7) && all.size_of(10) == 10);
  const Shard s{1, 3};
  CHECK(s.holds(1));
  CHECK(s.holds(4));
  CHECK_FALSE(s.holds(3));
  CHECK(s.size_of(10) == 3);  // 1, 4, 7
  CHECK(s.size_of(11) == 4);  // 1, 4, 7, 10
  CHECK(s.size_of(1) == 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < 3; ++r) total += Shard{r, 3}.size_of(10);
  CHECK(total == 10);
  CHECK_NOTHROW(s.validate("test"));
  CHECK_THROWS_WITH_AS(Shard({3, 3}).validate("who"), "who: shard index 3 is not below shard count 3",
                       std::invalid_argument);
}

TEST_CASE("pipeline_shard: first stage keeps images, last keeps labels") {
  using hpf::data::pipeline_shard;
  const Shard first = pipeline_shard(1, 2, 0, 3), middle = pipeline_shard(1, 2, 1, 3), last = pipeline_shard(1, 2, 2, 3);
  CHECK((first.index == 1 && first.count == 2));
  CHECK((first.images && !first.labels));
  CHECK((!middle.images && !middle.labels));
  CHECK((!last.images && last.labels));
  const Shard only = pipeline_shard(0, 1, 0, 1);
  CHECK((only.images && only.labels));
}
