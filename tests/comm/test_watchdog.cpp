// hpf/comm/watchdog.hpp: the wait limit (scope, environment, default), waits that complete, and
// what a rank says it waits for (a pipeline transfer, a gradient bucket, a collective). The
// timeout itself ends the job; hpf.comm.wait_forever.* and hpf.faults.* test it.
#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/mpi_links.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("the wait limit: a scope wins over HPF_WAIT_TIMEOUT, scopes nest, the default is 600 s") {
  const char* environment = std::getenv("HPF_WAIT_TIMEOUT");
  const double outside = environment ? std::strtod(environment, nullptr) : hpf::comm::default_wait_limit;
  CHECK(hpf::comm::default_wait_limit == 600);
  CHECK(hpf::comm::wait_timeout_exit_code == 3);
  CHECK(hpf::comm::wait_limit() == outside);
  {
    hpf::comm::WaitLimit scope(5);
    CHECK(hpf::comm::wait_limit() == 5);
    {
      hpf::comm::WaitLimit forever(0);
      CHECK(hpf::comm::wait_limit() == 0);
    }
    CHECK(hpf::comm::wait_limit() == 5);
  }
  CHECK(hpf::comm::wait_limit() == outside);
  CHECK_THROWS_AS(hpf::comm::WaitLimit(-1), hpf::comm::UsageError);
  CHECK(hpf::comm::wait_limit() == outside);
}

TEST_CASE("watched waits complete like MPI_Wait: a ring exchange, a barrier, collectives") {
  hpf::comm::Communicator world;
  hpf::comm::WaitLimit scope(60);
  const int next = (world.rank() + 1) % world.size(), prev = (world.rank() + world.size() - 1) % world.size();
  Kokkos::View<double*, Space> out("out", 1000), in("in", 1000);
  Kokkos::deep_copy(out, double(world.rank()));
  auto receive = hpf::comm::irecv(world, in, prev, 5);
  hpf::comm::send(world, out, next, 5);
  receive.wait();
  CHECK(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, in)(999) == double(prev));
  world.barrier();
  CHECK(hpf::comm::allreduce_value(world, 1ull) == static_cast<unsigned long long>(world.size()));
  const auto all = hpf::comm::allgather_value(world, world.rank());
  for (int r = 0; r < world.size(); ++r) CHECK(all[static_cast<std::size_t>(r)] == r);
  Kokkos::View<float*, Space> b("b", 3);
  if (world.rank() == 0) Kokkos::deep_copy(b, 4.f);
  hpf::comm::broadcast(world, b, 0);
  CHECK(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b)(2) == 4.f);
}

TEST_CASE("a pipeline transfer says its stage, micro-batch, peer (world rank), tag and size") {
  hpf::comm::Communicator world;
  if (world.size() < 2) {
    MESSAGE("needs 2 ranks");
    return;
  }
  // Ranks 0 and 1 as stages 0 and 1 of a pipeline, in a communicator of their own: the peer is
  // named by its rank in MPI_COMM_WORLD.
  const auto pair = world.split(world.rank() < 2 ? 0 : 1, world.size() - world.rank());
  if (world.rank() >= 2) return;
  Kokkos::View<float*, Space> activation("activation", 1024);
  const int stage = world.rank();
  if (stage == 1) {
    auto receive = hpf::comm::irecv(pair, activation, pair.rank() == 0 ? 1 : 0, 6, hpf::detail::pipeline_transfer(1, 6));
    CHECK(hpf::comm::describe(receive.waiting_for()) ==
          "receive of activation for stage 1, micro-batch 3 from rank 0 (tag 6, 4.0 KiB)");
    receive.wait();
  } else {
    auto send = hpf::comm::isend(pair, activation, pair.rank() == 0 ? 1 : 0, 6, hpf::detail::pipeline_transfer(0, 6));
    CHECK(hpf::comm::describe(send.waiting_for()) ==
          "send of activation from stage 0, micro-batch 3 to rank 1 (tag 6, 4.0 KiB)");
    send.wait();
  }
  const hpf::comm::WaitFor gradient = hpf::detail::pipeline_transfer(0, 7), evaluation = hpf::detail::pipeline_transfer(1, 1 << 14);
  CHECK(std::string(gradient.what) == "gradient");
  CHECK(gradient.micro_batch == 3);
  CHECK(gradient.stage == 0);
  CHECK(std::string(evaluation.what) == "evaluation activation");
  CHECK(evaluation.micro_batch == -1);
}

TEST_CASE("a gradient bucket says its number, size, stage and replicas") {
  hpf::comm::Communicator world;
  hpf::Buffer<float, Space> gradients("gradients", 3 * 1024 * 1024 / 4 + 10);
  hpf::GradientBuckets<float, Space> allreduce(world, gradients, 1200 * 1024, hpf::GradientReduction::allreduce, 1);
  CHECK(allreduce.bucket_count() == 3);
  CHECK(hpf::comm::describe(allreduce.waiting_for(1)) ==
        "allreduce of gradient bucket 1 (1.2 MiB) of stage 1 among " + std::to_string(world.size()) + " replicas");
  CHECK(hpf::comm::describe(allreduce.waiting_for(2)) ==
        "allreduce of gradient bucket 2 (672.0 KiB) of stage 1 among " + std::to_string(world.size()) + " replicas");
  hpf::GradientBuckets<float, Space> ordered(world, gradients, 1200 * 1024, hpf::GradientReduction::ordered);
  CHECK(hpf::comm::describe(ordered.waiting_for(0)) ==
        "allgather of gradient bucket 0 (1.2 MiB) among " + std::to_string(world.size()) + " replicas");
  // The buckets still reduce (each wait watched).
  Kokkos::deep_copy(gradients, 1.f);
  allreduce.begin_step();
  allreduce.finish();
  CHECK(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, gradients)(0) == float(world.size()));
}

TEST_CASE("collectives and plain transfers say what they are") {
  using hpf::comm::describe;
  CHECK(describe({.operation = "MPI_Ibcast", .kind = "broadcast", .what = "buffers", .group = 2, .members = "replicas",
                  .stage = 0, .bytes = 2048}) == "broadcast of buffers of stage 0 among 2 replicas (2.0 KiB)");
  CHECK(describe({.operation = "MPI_Iallgather", .kind = "allgather", .what = "the loss", .group = 4, .bytes = 8}) ==
        "allgather of the loss among 4 ranks (8 B)");
  CHECK(describe({.operation = "MPI_Irecv", .kind = "receive", .peer = 1, .tag = 7, .bytes = 16}) ==
        "receive from rank 1 (tag 7, 16 B)");
  CHECK(describe({.operation = "MPI_Wait"}) == "MPI_Wait");
  CHECK(describe({}) == "an MPI operation");
}
