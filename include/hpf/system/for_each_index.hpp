// SPDX-License-Identifier: MIT
#ifndef HPF_SYSTEM_FOR_EACH_INDEX_HPP
#define HPF_SYSTEM_FOR_EACH_INDEX_HPP

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace hpf::detail {

/// Calls `fn(i)` for every i in [0, count) on up to `threads` threads (this one among them), each
/// taking the next index as it finishes one: the calls must be independent, each writing its own
/// result. The first exception thrown stops the handing out of indices and is rethrown here once
/// every thread has stopped. threads <= 1 runs them in order on this thread.
template <class Fn>
void for_each_index(std::size_t count, std::size_t threads, Fn&& fn) {
  threads = std::min(threads, count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> hold(failure_lock);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads to be had: those started do the rest
      break;
    }
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace hpf::detail

#endif  // HPF_SYSTEM_FOR_EACH_INDEX_HPP
