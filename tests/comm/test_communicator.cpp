#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>

#include <doctest/doctest.h>

TEST_CASE("Communicator: a duplicate of the world with the same ranks") {
  hpf::comm::Communicator world;
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(world.rank() == rank);
  CHECK(world.size() == size);
  int result = MPI_UNEQUAL;
  MPI_Comm_compare(world.get(), MPI_COMM_WORLD, &result);
  CHECK(result == MPI_CONGRUENT);  // same group, different context: hpf's messages never match the app's
}

TEST_CASE("Communicator: split by colour and key; freed with its last copy") {
  hpf::comm::Communicator world;
  const int color = world.rank() % 2;
  {
    hpf::comm::Communicator part = world.split(color, -world.rank());  // reversed order
    const int expected_size = (world.size() + (color == 0 ? 1 : 0)) / 2;
    CHECK(part.size() == expected_size);
    const int sum = hpf::comm::allreduce_value(part, world.rank());
    int expected_sum = 0;
    for (int r = color; r < world.size(); r += 2) expected_sum += r;
    CHECK(sum == expected_sum);
    hpf::comm::Communicator copy = part;  // shares
    CHECK(copy.get() == part.get());
    // the highest world rank of the colour has rank 0 in `part` (key = -rank)
    const int highest = hpf::comm::allreduce_value(part, world.rank(), MPI_MAX);
    CHECK((part.rank() == 0) == (world.rank() == highest));
  }
}

TEST_CASE("MPI errors become MpiError exceptions naming the operation and the rank") {
  hpf::comm::Communicator world;
  float x = 0;
  try {
    hpf::comm::check(MPI_Send(&x, 1, MPI_FLOAT, world.size() + 5, 0, world.get()), "MPI_Send");
    FAIL("an invalid destination rank must fail");
  } catch (const hpf::comm::MpiError& e) {
    CHECK(e.operation() == "MPI_Send");
    CHECK(e.rank() == world.rank());
    CHECK(std::string(e.what()).find("MPI_Send failed on rank " + std::to_string(world.rank())) != std::string::npos);
  }
}
