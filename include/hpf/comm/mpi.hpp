// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_MPI_HPP
#define HPF_COMM_MPI_HPP

#include <hpf/config.hpp>

#if !HPF_ENABLE_MPI
#error "hpf/comm needs MPI: configure hpf with -DHPF_ENABLE_MPI=ON"
#endif

#include <mpi.h>

#include <cstdint>
#include <type_traits>

namespace hpf::comm {

/// The MPI datatype of a C++ scalar.
template <class T>
MPI_Datatype datatype() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, std::uint16_t>) return MPI_UINT16_T;  // bfloat16 bits
  else if constexpr (std::is_same_v<U, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<U, std::int64_t>) return MPI_INT64_T;
  else if constexpr (std::is_same_v<U, std::uint64_t>) return MPI_UINT64_T;
  else if constexpr (std::is_same_v<U, unsigned long long>) return MPI_UNSIGNED_LONG_LONG;
  else if constexpr (std::is_same_v<U, char>) return MPI_CHAR;
  else static_assert(!sizeof(U), "hpf::comm::datatype: no MPI datatype for this scalar type");
}

}  // namespace hpf::comm

#endif  // HPF_COMM_MPI_HPP
