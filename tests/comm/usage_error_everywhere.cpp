// Every rank detects the same misconfiguration: each says so and the job exits with code 2.
#include <hpf/comm/environment.hpp>

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [](const hpf::comm::Communicator& world) {
    if (world.size() % 3 != 0) throw hpf::comm::UsageError("the process count must be a multiple of 3");
  });
}
