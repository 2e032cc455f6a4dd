// Rank 0 waits for a message nobody sends. The watchdog must end the job after the wait limit
// with exit code 3 and one line saying which rank timed out and what it was waiting for, instead
// of waiting forever. The limit comes from HPF_WAIT_TIMEOUT, or with `--wait-limit S` from a
// hpf::comm::WaitLimit scope.
#include <hpf/comm/environment.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/comm/watchdog.hpp>

#include <cstdlib>
#include <optional>
#include <string>

int main(int argc, char** argv) {
  std::optional<double> limit;
  if (argc == 3 && std::string(argv[1]) == "--wait-limit") limit = std::strtod(argv[2], nullptr);
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    std::optional<hpf::comm::WaitLimit> scope;
    if (limit) scope.emplace(*limit);
    Kokkos::View<float*> x("x", 4);
    if (world.rank() == 0) hpf::comm::recv(world, x, 1, 7);
  });
}
