// Rank 1 fails while rank 0 waits for a message that will never come: run_main must abort the
// job (non-zero exit, message naming rank 1) instead of leaving rank 0 waiting forever.
#include <hpf/comm/environment.hpp>
#include <hpf/comm/transfer.hpp>

#include <stdexcept>

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [](const hpf::comm::Communicator& world) {
    if (world.rank() == 1) throw std::runtime_error("cannot open shard file /nonexistent");
    Kokkos::View<float*> x("x", 4);
    if (world.rank() == 0) hpf::comm::recv(world, x, 1, 0);
  });
}
