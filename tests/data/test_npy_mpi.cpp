// load_npy_dataset on 1, 2, 4 ranks: each rank reads its own Shard of a .npy pair (the rows
// i % ranks == rank), its rows match the file, and over all ranks every row is read exactly once;
// a label out of range, which only the rank holding it reads, stops every rank with its message
// once the ranks agree (as hpf::fit loads data).
#include <hpf/comm/agreement.hpp>
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/gather_text.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/data/npy_dataset.hpp>

#include <data/npy_files.hpp>

#include <doctest/doctest.h>

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr std::size_t samples = 37, channels = 2, height = 3, width = 5, classes = 7;

float value(std::size_t sample, std::size_t v) { return static_cast<float>(sample) * 100 + static_cast<float>(v) / 4; }
std::int32_t label(std::size_t sample) { return static_cast<std::int32_t>((sample * 3) % classes); }

// Rank 0 writes the files into its scratch directory; every rank gets its path.
std::filesystem::path shared_files(const hpf::comm::Communicator& world, const hpf_test::TempDir& dir, int bad_label_of) {
  if (world.rank() == 0) {
    std::vector<float> inputs(samples * channels * height * width);
    std::vector<std::int64_t> labels(samples);
    for (std::size_t i = 0; i < samples; ++i) {
      for (std::size_t v = 0; v < channels * height * width; ++v) inputs[i * channels * height * width + v] = value(i, v);
      labels[i] = i == static_cast<std::size_t>(bad_label_of) ? 12 : label(i);
    }
    hpf_test::write_npy<float>(dir / "x.npy", "<f4", {samples, channels, height, width}, inputs);
    hpf_test::write_npy<std::int64_t>(dir / "y.npy", "<i8", {samples}, labels, 2);
  }
  return hpf::comm::broadcast_text(world, dir.path().string(), 0);
}

}  // namespace

TEST_CASE("load_npy_dataset: each rank reads its shard; every row once over the ranks") {
  hpf::comm::Communicator world;
  hpf_test::TempDir dir;
  const auto path = shared_files(world, dir, -1);
  const std::size_t rank = static_cast<std::size_t>(world.rank()), ranks = static_cast<std::size_t>(world.size());
  const auto d = hpf::data::load_npy_dataset(path / "x.npy", path / "y.npy", classes, {rank, ranks});
  CHECK(d.size() == samples);
  CHECK(d.shape_text() == "2x3x5");
  // Only this shard is held: its rows and labels, nothing more.
  CHECK(d.memory_bytes() == d.local_size() * (channels * height * width * sizeof(float) + sizeof(std::int32_t)));
  std::vector<int> seen(samples, 0);
  const std::size_t per_sample = channels * height * width;
  for (std::size_t i = rank; i < samples; i += ranks) {
    ++seen[i];
    CHECK(d.label(i) == label(i));
    std::vector<float> out(per_sample);
    const std::size_t one[] = {i};
    d.gather(std::span<const std::size_t>(one), out.data());
    for (std::size_t v = 0; v < per_sample; ++v) CHECK(out[v] == value(i, v));  // [C][1][H*W] == file order
  }
  MPI_Allreduce(MPI_IN_PLACE, seen.data(), static_cast<int>(samples), MPI_INT, MPI_SUM, world.get());
  for (std::size_t i = 0; i < samples; ++i) CHECK_MESSAGE(seen[i] == 1, "sample ", i, " read ", seen[i], " times");
  world.barrier();  // rank 0 removes the files at scope exit
}

TEST_CASE("load_npy_dataset: a label out of range stops every rank with the same message") {
  hpf::comm::Communicator world;
  hpf_test::TempDir dir;
  const int bad = 29;  // held by rank 29 % size
  const auto path = shared_files(world, dir, bad);
  const std::size_t rank = static_cast<std::size_t>(world.rank()), ranks = static_cast<std::size_t>(world.size());
  const std::string message = hpf_test::message_of<hpf::comm::UsageError>([&] {
    hpf::comm::agree(world, [&] { return hpf::data::load_npy_dataset(path / "x.npy", path / "y.npy", classes, {rank, ranks}); });
  });
  CHECK_MESSAGE(hpf_test::contains(message, "rank " + std::to_string(bad % world.size()) + ": hpf::data: " +
                                                (path / "y.npy").string() + ": label 12 of sample 29 is out of range [0, 7)"),
                message);
  world.barrier();
}
