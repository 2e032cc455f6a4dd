// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_AGREEMENT_HPP
#define HPF_COMM_AGREEMENT_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/transfer.hpp>

#include <climits>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace hpf::comm {

/// \brief Runs `f` on every rank of `comm`; if it throws on any rank, every rank throws a
/// UsageError carrying the message of the lowest failing rank. Turns a problem one rank meets
/// (a missing file on one node) into one clear error everywhere and a clean stop, instead of a
/// lone failure that leaves the other ranks waiting. Collective.
template <class F>
auto agree(const Communicator& comm, F&& f) -> std::invoke_result_t<F> {
  using R = std::invoke_result_t<F>;
  std::string failure;
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> result;
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      result.emplace(0);
    } else {
      result.emplace(f());
    }
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  const int first_failed = allreduce_value(comm, result ? INT_MAX : comm.rank(), MPI_MIN);
  if (first_failed != INT_MAX) {
    int length = static_cast<int>(failure.size());
    check(MPI_Bcast(&length, 1, MPI_INT, first_failed, comm.get()), "MPI_Bcast");
    failure.resize(static_cast<std::size_t>(length));
    check(MPI_Bcast(failure.data(), length, MPI_CHAR, first_failed, comm.get()), "MPI_Bcast");
    throw UsageError("rank " + std::to_string(first_failed) + ": " + failure);
  }
  if constexpr (!std::is_void_v<R>) return std::move(*result);
}

/// Throws UsageError on every rank unless all ranks passed the same `value` (e.g. a hash of the
/// program's types and options). Collective.
inline void require_same_everywhere(const Communicator& comm, std::uint64_t value, const std::string& what) {
  const auto low = allreduce_value(comm, static_cast<unsigned long long>(value), MPI_MIN);
  const auto high = allreduce_value(comm, static_cast<unsigned long long>(value), MPI_MAX);
  if (low != high) {
    throw UsageError(what + " differs between ranks (this rank: " + std::to_string(value) + ", lowest: " +
                     std::to_string(low) + ", highest: " + std::to_string(high) +
                     "); start the same program with the same options on every rank");
  }
}

}  // namespace hpf::comm

#endif  // HPF_COMM_AGREEMENT_HPP
