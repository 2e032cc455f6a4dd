// A scalar type MPI has no datatype for here (short).
// expect-message: hpf::comm::datatype: no MPI datatype for this scalar type
// expect-early: T = short int
#include <hpf/comm/mpi.hpp>

int main() {
  MPI_Datatype t = hpf::comm::datatype<short>();
  (void)t;
}
