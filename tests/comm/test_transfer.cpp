#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>

#include <doctest/doctest.h>

#include <vector>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("send/recv of views around a ring, blocking and non-blocking") {
  hpf::comm::Communicator world;
  const int next = (world.rank() + 1) % world.size(), prev = (world.rank() + world.size() - 1) % world.size();
  Kokkos::View<double**, Space> out("out", 3, 4), in("in", 3, 4);
  Kokkos::deep_copy(out, double(world.rank()));
  auto receive = hpf::comm::irecv(world, in, prev, 7);
  auto send = hpf::comm::isend(world, out, next, 7);
  receive.wait();
  send.wait();
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, in);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) CHECK(host(i, j) == double(prev));
  // blocking pair, ordered to avoid a cycle of blocking sends on 1 rank
  Kokkos::View<std::int32_t*, Space> token("token", 5);
  if (world.size() == 1) {
    Kokkos::deep_copy(token, 9);
  } else if (world.rank() == 0) {
    Kokkos::deep_copy(token, 9);
    hpf::comm::send(world, token, 1, 3);
  } else if (world.rank() == 1) {
    hpf::comm::recv(world, token, 0, 3);
  }
  if (world.rank() <= 1) {
    auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, token);
    CHECK(t(4) == 9);
  }
}

TEST_CASE("allreduce and iallreduce of views sum in place") {
  hpf::comm::Communicator world;
  Kokkos::View<float*, Space> v("v", 1000);
  Kokkos::deep_copy(v, float(world.rank() + 1));
  hpf::comm::allreduce(world, v);
  const float expected = float(world.size() * (world.size() + 1) / 2);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  CHECK(h(0) == expected);
  CHECK(h(999) == expected);
  Kokkos::View<double*, Space> w("w", 17);
  Kokkos::deep_copy(w, 2.0);
  auto request = hpf::comm::iallreduce(world, w, MPI_MAX);
  while (!request.test()) {
  }
  CHECK(request.done());
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, w);
  CHECK(hw(16) == 2.0);
}

TEST_CASE("non-contiguous views are refused with a clear message") {
  hpf::comm::Communicator world;
  Kokkos::View<double**, Kokkos::LayoutRight, Space> m("m", 4, 4);
  auto column = Kokkos::subview(m, Kokkos::ALL, 1);
  CHECK_THROWS_WITH_AS(hpf::comm::allreduce(world, column), "hpf::comm: iallreduce needs a contiguous view",
                       std::invalid_argument);
}
