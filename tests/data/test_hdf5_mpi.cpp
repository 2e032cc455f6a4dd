// load_hdf5_dataset on 1, 2, 4 ranks: rank 0 writes an HDF5 file, each rank reads its own Shard
// (the rows i % ranks == rank, through the MPI-IO driver on MPI_COMM_SELF with a parallel HDF5),
// its rows and labels match the file, and over all ranks every row is read exactly once, from a
// contiguous float32 dataset and from a chunked, compressed float64 one; ranks of a 2-stage
// pipeline read only their stage's dataset; a label out of range, which only the rank holding it
// reads, stops every rank with its message once the ranks agree (as hpf::fit loads data).
#include <hpf/comm/agreement.hpp>
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/gather_text.hpp>
#include <hpf/data/hdf5_dataset.hpp>

#include <data/hdf5_files.hpp>

#include <doctest/doctest.h>

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr std::size_t samples = 37, channels = 2, height = 3, width = 5, classes = 7;
constexpr std::size_t per_sample = channels * height * width;

float value(std::size_t sample, std::size_t v) { return static_cast<float>(sample) * 100 + static_cast<float>(v) / 4; }
std::int32_t label(std::size_t sample) { return static_cast<std::int32_t>((sample * 3) % classes); }

// Rank 0 writes data.h5 into its scratch directory: "x" (float32, contiguous), "images/x64"
// (float64, chunks of 4 rows, gzip), "y" (int64) and "y_bad" (sample bad_label_of is 12); every
// rank gets the file's path.
std::filesystem::path shared_file(const hpf::comm::Communicator& world, const hpf_test::TempDir& dir,
                                  int bad_label_of) {
  const auto file = dir / "data.h5";
  if (world.rank() == 0) {
    std::vector<float> inputs(samples * per_sample);
    std::vector<std::int64_t> labels(samples);
    for (std::size_t i = 0; i < samples; ++i) {
      for (std::size_t v = 0; v < per_sample; ++v) inputs[i * per_sample + v] = value(i, v);
      labels[i] = label(i);
    }
    hpf_test::write_hdf5<float>(file, "x", {samples, channels, height, width}, inputs);
    hpf_test::write_hdf5<double>(file, "images/x64", {samples, channels, height, width}, inputs,
                                 hpf_test::Hdf5Layout{.chunk_rows = 4});
    hpf_test::write_hdf5<std::int64_t>(file, "y", {samples}, labels);
    labels[static_cast<std::size_t>(bad_label_of)] = 12;
    hpf_test::write_hdf5<std::int64_t>(file, "y_bad", {samples}, labels);
  }
  return hpf::comm::broadcast_text(world, file.string(), 0);
}

// Checks d's samples against the file's values and counts each one in `seen`.
void check_rows(const hpf::data::Dataset& d, std::size_t index, std::size_t count, std::vector<int>& seen) {
  for (std::size_t i = index; i < samples; i += count) {
    ++seen[i];
    if (d.has_labels()) CHECK(d.label(i) == label(i));
    if (!d.has_images()) continue;
    std::vector<float> out(per_sample);
    const std::size_t one[] = {i};
    d.gather(std::span<const std::size_t>(one), out.data());
    for (std::size_t v = 0; v < per_sample; ++v) CHECK(out[v] == value(i, v));  // [C][1][H*W] == file order
  }
}

void check_each_row_once(const hpf::comm::Communicator& world, std::vector<int>& seen) {
  MPI_Allreduce(MPI_IN_PLACE, seen.data(), static_cast<int>(samples), MPI_INT, MPI_SUM, world.get());
  for (std::size_t i = 0; i < samples; ++i) CHECK_MESSAGE(seen[i] == 1, "sample ", i, " read ", seen[i], " times");
}

}  // namespace

TEST_CASE("hdf5_file_access: MPI-IO on MPI_COMM_SELF with a parallel HDF5") {
  const auto fapl = hpf::data::detail::hdf5_file_access();
#ifdef H5_HAVE_PARALLEL
  CHECK(H5Pget_driver(fapl.get()) == H5FD_MPIO);
#else
  CHECK(H5Pget_driver(fapl.get()) == H5FD_SEC2);
#endif
}

TEST_CASE("load_hdf5_dataset: each rank reads its shard; every row once over the ranks") {
  hpf::comm::Communicator world;
  hpf_test::TempDir dir;
  const auto file = shared_file(world, dir, 0);
  const std::size_t rank = static_cast<std::size_t>(world.rank()), ranks = static_cast<std::size_t>(world.size());
  for (const char* inputs : {"x", "images/x64"}) {
    INFO("inputs ", inputs);
    const auto d = hpf::data::load_hdf5_dataset(file, inputs, "y", classes, {rank, ranks});
    CHECK(d.size() == samples);
    CHECK(d.shape_text() == "2x3x5");
    // Only this shard is held: its rows and labels, nothing more.
    CHECK(d.memory_bytes() == d.local_size() * (per_sample * sizeof(float) + sizeof(std::int32_t)));
    std::vector<int> seen(samples, 0);
    check_rows(d, rank, ranks, seen);
    check_each_row_once(world, seen);
  }
  world.barrier();  // rank 0 removes the file at scope exit
}

TEST_CASE("load_hdf5_dataset: ranks of a 2-stage pipeline read their stage's dataset") {
  hpf::comm::Communicator world;
  hpf_test::TempDir dir;
  const auto file = shared_file(world, dir, 0);
  const std::size_t rank = static_cast<std::size_t>(world.rank()), ranks = static_cast<std::size_t>(world.size());
  const std::size_t stages = ranks % 2 == 0 ? 2 : 1, replicas = ranks / stages;
  const auto shard = hpf::data::pipeline_shard(rank / stages, replicas, rank % stages, stages);
  const auto d = hpf::data::load_hdf5_dataset(file, "x", "y", classes, shard);
  CHECK(d.has_images() == (rank % stages == 0));
  CHECK(d.has_labels() == (rank % stages == stages - 1));
  CHECK(d.memory_bytes() == d.local_size() * ((d.has_images() ? per_sample * sizeof(float) : 0) +
                                              (d.has_labels() ? sizeof(std::int32_t) : 0)));
  // Each replica's first stage reads its inputs, its last stage its labels: every row once each.
  std::vector<int> inputs_seen(samples, 0), labels_seen(samples, 0);
  check_rows(d, shard.index, shard.count, d.has_images() ? inputs_seen : labels_seen);
  if (stages == 1) labels_seen = inputs_seen;
  check_each_row_once(world, inputs_seen);
  check_each_row_once(world, labels_seen);
  world.barrier();
}

TEST_CASE("load_hdf5_dataset: a label out of range stops every rank with the same message") {
  hpf::comm::Communicator world;
  hpf_test::TempDir dir;
  const int bad = 29;  // held by rank 29 % size
  const auto file = shared_file(world, dir, bad);
  const std::size_t rank = static_cast<std::size_t>(world.rank()), ranks = static_cast<std::size_t>(world.size());
  const std::string message = hpf_test::message_of<hpf::comm::UsageError>([&] {
    hpf::comm::agree(world, [&] { return hpf::data::load_hdf5_dataset(file, "x", "y_bad", classes, {rank, ranks}); });
  });
  CHECK_MESSAGE(hpf_test::contains(message, "rank " + std::to_string(bad % world.size()) + ": hpf::data: " +
                                                file.string() + ": dataset 'y_bad': label 12 of sample 29 is out of "
                                                                "range [0, 7)"),
                message);
  world.barrier();
}
