// SPDX-License-Identifier: MIT
#ifndef HPF_COMM_AGREEMENT_HPP
#define HPF_COMM_AGREEMENT_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/error.hpp>
#include <hpf/comm/gather_text.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/meta/hash.hpp>

#include <climits>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
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
    throw UsageError("rank " + std::to_string(first_failed) + ": " + broadcast_text(comm, failure, first_failed));
  }
  if constexpr (!std::is_void_v<R>) return std::move(*result);
}

/// Named facts about a run that every rank must share, in a fixed order: ("stages", "2"),
/// ("optimizer", "sgd(learning_rate=0.05, ...)"), ...
using Facts = std::vector<std::pair<std::string, std::string>>;

namespace detail {
inline std::string facts_text(const Facts& facts) {
  std::string text;
  for (const auto& [key, value] : facts) {
    text += key;
    text += '\0';
    text += value;
    text += '\0';
  }
  return text;
}
inline Facts facts_from_text(const std::string& text) {
  Facts facts;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t key_end = text.find('\0', at);
    const std::size_t value_end = text.find('\0', key_end + 1);
    facts.emplace_back(text.substr(at, key_end - at), text.substr(key_end + 1, value_end - key_end - 1));
    at = value_end + 1;
  }
  return facts;
}
/// A short quote of `a` around byte `at` (a long type name is quoted where it differs).
inline std::string excerpt(const std::string& a, std::size_t at) {
  constexpr std::size_t context = 60;
  if (a.size() <= 2 * context) return "'" + a + "'";
  const std::size_t begin = at > context ? at - context : 0;
  return std::string(begin ? "'..." : "'") + a.substr(begin, 2 * context) + (begin + 2 * context < a.size() ? "...'" : "'");
}
/// "stages is 2 on rank 0 but 3 on rank 1; ..." for every fact the two lists do not share.
inline std::string describe_difference(const Facts& first, int first_rank, const Facts& other, int other_rank) {
  const std::string on_first = " on rank " + std::to_string(first_rank), on_other = " on rank " + std::to_string(other_rank);
  std::string out;
  auto add = [&out](const std::string& line) { out += (out.empty() ? "" : "; ") + line; };
  auto find = [](const Facts& facts, const std::string& key) -> const std::string* {
    for (const auto& [k, v] : facts)
      if (k == key) return &v;
    return nullptr;
  };
  for (const auto& [key, value] : first) {
    const std::string* theirs = find(other, key);
    if (!theirs) {
      add(key + " is " + excerpt(value, 0) + on_first + " but not given" + on_other);
    } else if (*theirs != value) {
      std::size_t at = 0;
      while (at < value.size() && at < theirs->size() && value[at] == (*theirs)[at]) ++at;
      add(key + " is " + excerpt(value, at) + on_first + " but " + excerpt(*theirs, at) + on_other);
    }
  }
  for (const auto& [key, value] : other) {
    if (!find(first, key)) add(key + " is " + excerpt(value, 0) + on_other + " but not given" + on_first);
  }
  return out;
}
}  // namespace detail

/// \brief Throws UsageError on every rank unless all ranks passed the same `facts` (the
/// program's types and options). The message names each fact that differs and its value on rank
/// 0 and on the lowest rank that disagrees with it, the same message everywhere. Costs two
/// 64-bit allreduces of a hash when the facts agree. Collective.
inline void require_same_facts(const Communicator& comm, const Facts& facts, const std::string& who) {
  const std::string text = detail::facts_text(facts);
  // Compared as signed integers: only equality matters, and MPICH 4.0.2's MPI_MIN on
  // MPI_UNSIGNED_LONG_LONG was seen to compare as signed.
  const auto hash = static_cast<std::int64_t>(fnv1a(text));
  const auto low = allreduce_value(comm, hash, MPI_MIN);
  const auto high = allreduce_value(comm, hash, MPI_MAX);
  if (low == high) return;
  const std::string first_text = broadcast_text(comm, text, 0);
  const int other = allreduce_value(comm, text != first_text ? comm.rank() : INT_MAX, MPI_MIN);
  const Facts first = detail::facts_from_text(first_text);
  const Facts theirs = detail::facts_from_text(broadcast_text(comm, text, other));
  throw UsageError(who + ": the ranks were started differently (" + detail::describe_difference(first, 0, theirs, other) +
                   "); start the same program with the same options on every rank");
}

}  // namespace hpf::comm

#endif  // HPF_COMM_AGREEMENT_HPP
