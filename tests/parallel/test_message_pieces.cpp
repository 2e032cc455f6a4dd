// Messages in pieces (StepOptions::exchange_piece_bytes): point-to-point transfers sent and
// received in pieces arrive whole; gradient buckets in pieces have fixed ranges and give the bits
// of whole buckets and of one process adding every shard in hpf::ordered_sum's tree, for both
// reductions, parked shards and a short last piece; and fit's links choose pieces only where the
// peers are on another host, unless pieces_on_one_host.
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/mpi_links.hpp>
#include <hpf/tensor/ordered_sum.hpp>

#include <support/shard_gradients.hpp>

#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using Space = hpf_test::Space;
using Buffer = hpf_test::Buffer;
using hpf_test::one_process;
using hpf_test::reduce;
using hpf_test::same_bits;
using hpf_test::shard_values;
using hpf_test::to_buffer;
using hpf_test::to_vector;

}  // namespace

TEST_CASE("a bucket's pieces: fixed ranges of at most the piece size, the last one short") {
  hpf::comm::Communicator world;
  Buffer gradients("gradients", 10000);
  // Buckets of 4,000 bytes (1,000 floats) cut from the end; pieces of 300 floats.
  hpf::GradientBuckets<float, Space> buckets(world, gradients, 4000, hpf::GradientReduction::ordered, -1, 1, 1200);
  REQUIRE(buckets.bucket_count() == 10);
  for (std::size_t b = 0; b < 10; ++b) CHECK(buckets.pieces(b) == 4);  // 300 + 300 + 300 + 100
  hpf::GradientBuckets<float, Space> whole(world, gradients, 4000, hpf::GradientReduction::ordered);
  for (std::size_t b = 0; b < 10; ++b) CHECK(whole.pieces(b) == 1);
  // A piece larger than its bucket is the bucket.
  hpf::GradientBuckets<float, Space> large(world, gradients, 4000, hpf::GradientReduction::ordered, -1, 1, 1 << 20);
  for (std::size_t b = 0; b < 10; ++b) CHECK(large.pieces(b) == 1);
}

TEST_CASE("pieces give the bits of whole buckets and of one process adding every shard") {
  hpf::comm::Communicator world;
  const auto replicas = static_cast<std::size_t>(world.size());
  const std::size_t n = 10007;  // buckets and pieces that do not divide it
  for (const std::size_t shards : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(shards);
    const std::vector<float> expected = one_process(replicas * shards, n);
    const std::vector<float> whole = reduce(world, n, shards, hpf::GradientReduction::ordered, 16384, 0);
    CHECK(same_bits(whole, expected));
    for (const std::size_t piece_bytes : {std::size_t{40}, std::size_t{1000}, std::size_t{4096}, std::size_t{20000}}) {
      CAPTURE(piece_bytes);
      CHECK(same_bits(reduce(world, n, shards, hpf::GradientReduction::ordered, 16384, piece_bytes), expected));
    }
    // MPI's allreduce: no order is promised, but pieces are the same elementwise reductions.
    const std::vector<float> allreduce = reduce(world, n, shards, hpf::GradientReduction::allreduce, 16384, 0);
    const std::vector<float> pieces = reduce(world, n, shards, hpf::GradientReduction::allreduce, 16384, 1000);
    REQUIRE(pieces.size() == n);
    for (std::size_t i = 0; i < n; ++i) CHECK(pieces[i] == doctest::Approx(allreduce[i]).epsilon(1e-5));
  }
}

TEST_CASE("a message sent in pieces arrives whole, whatever the piece size") {
  hpf::comm::Communicator world;
  // Pairs of ranks; a rank alone sends to itself. The registered sizes (1, 2, 4) leave no one out.
  const int peer = world.size() == 1 ? 0 : world.rank() ^ 1;
  REQUIRE(peer < world.size());
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{4097}}) {
    for (const std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1024}, std::size_t{5000}}) {
      CAPTURE(count);
      CAPTURE(piece);
      const std::vector<float> mine = shard_values(static_cast<std::size_t>(world.rank()), count);
      const Buffer sent = to_buffer(mine), received("received", count);
      // Both directions at once, as opposite pipeline messages go.
      hpf::comm::Request receiving = hpf::comm::irecv(world, received, peer, 5, {}, piece);
      hpf::comm::Request sending = hpf::comm::isend(world, sent, peer, 5, {}, piece);
      receiving.wait();
      sending.wait();
      CHECK(receiving.done());
      CHECK(same_bits(to_vector(received), shard_values(static_cast<std::size_t>(peer), count)));
    }
  }
}

TEST_CASE("fit's links: pieces where the replicas span hosts, or everywhere when asked") {
  hpf::comm::Communicator world;
  const hpf::ProcessGrid grid(world, 1);
  Buffer gradients("gradients", 100000), buffers("buffers", 0);
  hpf::StepOptions options;
  options.batch = 4 * static_cast<std::size_t>(world.size());
  options.bucket_bytes = 4 << 20;  // the whole gradient in one bucket
  const auto messages = [&](const hpf::StepOptions& o) {
    hpf::MpiLinks<float, Space> links(grid, gradients, buffers, o);
    return links.bucket_pieces().front();
  };
  // mpiexec here starts every rank on this host: whole buckets unless pieces_on_one_host.
  CHECK_FALSE(world.spans_hosts());
  CHECK(messages(options) == 1);
  options.exchange_piece_bytes = 40000;
  options.pieces_on_one_host = true;
  CHECK(messages(options) == (world.size() > 1 ? 10 : 1));  // 400,000 bytes; alone there is nothing to send
  // Between pipeline stages: pieces to a neighbour on another host, or on this one when asked.
  if (world.size() % 2 == 0) {
    const hpf::ProcessGrid two_stages(world, 2);
    options.exchange_piece_bytes = 4000;
    options.pieces_on_one_host = false;
    const hpf::MpiLinks<float, Space> whole(two_stages, gradients, buffers, options);
    CHECK(whole.previous_piece_elements() == 0);
    CHECK(whole.next_piece_elements() == 0);
    options.pieces_on_one_host = true;
    const hpf::MpiLinks<float, Space> pieces(two_stages, gradients, buffers, options);
    CHECK(pieces.previous_piece_elements() == (two_stages.stage() == 1 ? 1000 : 0));
    CHECK(pieces.next_piece_elements() == (two_stages.stage() == 0 ? 1000 : 0));
  }
  options.exchange_piece_bytes = 0;
  CHECK_THROWS_WITH_AS(hpf::check_step_options(options, 1, "fit"),
                       "fit: pieces_on_one_host needs exchange_piece_bytes > 0", std::invalid_argument);
}
