// Mock gradients of data shards, reduced by GradientBuckets as backward would, and one process's
// sum of the same shards: test support for the gradient exchange (MPI tests only).
#ifndef HPF_TESTS_SUPPORT_SHARD_GRADIENTS_HPP
#define HPF_TESTS_SUPPORT_SHARD_GRADIENTS_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/ordered_sum.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hpf_test {

using Space = Kokkos::DefaultExecutionSpace;
using Buffer = hpf::Buffer<float, Space>;

/// Shard g's gradient: values that round differently in every order of addition.
inline std::vector<float> shard_values(std::size_t g, std::size_t n) {
  std::vector<float> v(n);
  std::uint32_t state = 0x9e3779b9u * static_cast<std::uint32_t>(g + 1);
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 3.0f - 1.0f + static_cast<float>(g) * 1e-3f;
  }
  return v;
}

inline Buffer to_buffer(const std::vector<float>& v) {
  Buffer b("gradient", v.size());
  auto host = Kokkos::create_mirror_view(b);
  for (std::size_t i = 0; i < v.size(); ++i) host(i) = v[i];
  Kokkos::deep_copy(b, host);
  return b;
}

inline std::vector<float> to_vector(const Buffer& b) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b);
  return {host.data(), host.data() + host.extent(0)};
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp must not see the null data of empty vectors, even for 0 bytes
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// Reduces this rank's `shards` shard gradients (replica r's part j is shard j R + r) with
/// GradientBuckets of `bucket_bytes` in pieces of `piece_bytes`, started during a mock backward
/// (ready() from the end of the array towards its start) for one shard, after parking for several;
/// `hierarchy` and `precision` as StepOptions::hierarchy and ::exchange_precision.
inline std::vector<float> reduce(const hpf::comm::Communicator& world, std::size_t n, std::size_t shards,
                                 hpf::GradientReduction reduction, std::size_t bucket_bytes, std::size_t piece_bytes,
                                 hpf::HostHierarchy hierarchy = hpf::HostHierarchy::off,
                                 hpf::ExchangePrecision precision = hpf::ExchangePrecision::full) {
  const auto replicas = static_cast<std::size_t>(world.size()), r = static_cast<std::size_t>(world.rank());
  Buffer gradients("gradients", n);
  hpf::GradientBuckets<float, Space> buckets(world, gradients, bucket_bytes, reduction, -1, shards, piece_bytes, hierarchy,
                                             precision);
  buckets.begin_step();
  if (shards == 1) {
    Kokkos::deep_copy(gradients, to_buffer(shard_values(r, n)));
    for (std::size_t offset = n; offset > 0; offset = offset > 1000 ? offset - 1000 : 0) buckets.ready(offset);
  } else {
    for (std::size_t j = 0; j < shards; ++j) {
      const Buffer shard = to_buffer(shard_values(j * replicas + r, n));
      if (buckets.parks()) {
        buckets.park(j, shard);
      } else {  // ::allreduce: the shards accumulate in the gradient
        Kokkos::parallel_for(
            "add", Kokkos::RangePolicy<Space>(0, n), KOKKOS_LAMBDA(std::size_t i) { gradients(i) += shard(i); });
      }
    }
  }
  buckets.finish();
  Kokkos::fence();
  return to_vector(gradients);
}

/// One process's sum of all `count` shards in ordered_sum's tree; with `bf16`, of the shards
/// rounded to bf16, the sum rounded once more (ExchangePrecision::bf16).
inline std::vector<float> one_process(std::size_t count, std::size_t n, bool bf16 = false) {
  std::vector<float> all;
  for (std::size_t g = 0; g < count; ++g) {
    const std::vector<float> v = shard_values(g, n);
    all.insert(all.end(), v.begin(), v.end());
  }
  if (bf16) {
    for (float& x : all) x = hpf::round_to_bf16(x);
  }
  std::vector<float> out(n);
  hpf::ordered_sum(Kokkos::DefaultHostExecutionSpace{}, all.data(), count, n, out.data(), n);
  Kokkos::fence();
  if (bf16) {
    for (float& x : out) x = hpf::round_to_bf16(x);
  }
  return out;
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_SHARD_GRADIENTS_HPP
