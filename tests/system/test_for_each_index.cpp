#include <hpf/system/for_each_index.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>

TEST_CASE("for_each_index: every index exactly once, on as many threads as asked, none when empty") {
  for (const std::size_t threads : {0, 1, 2, 5, 64}) {
    CAPTURE(threads);
    std::vector<std::atomic<int>> calls(37);
    hpf::detail::for_each_index(calls.size(), threads, [&](std::size_t i) { ++calls[i]; });
    for (const auto& c : calls) CHECK(c == 1);
  }
  int none = 0;
  hpf::detail::for_each_index(0, 4, [&](std::size_t) { ++none; });
  CHECK(none == 0);
  // One thread: in order, on the caller's thread.
  std::vector<std::size_t> order;
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  hpf::detail::for_each_index(5, 1, [&](std::size_t i) {
    order.push_back(i);
    elsewhere |= std::this_thread::get_id() != caller;
  });
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4});
  CHECK(!elsewhere);
}

TEST_CASE("for_each_index: the first exception reaches the caller, and no index is handed out after it") {
  // Index 0 fails at once; every other call takes a millisecond. Handed out to the end, the 999
  // others would take a third of a second on 3 threads; stopped, only those already taken run
  // (a thread that took index 0 may be descheduled a while before it throws).
  std::atomic<std::size_t> started{0};
  CHECK_THROWS_WITH_AS(hpf::detail::for_each_index(1000, 3,
                                                   [&](std::size_t i) {
                                                     ++started;
                                                     if (i == 0) throw std::runtime_error("index 0 failed");
                                                     std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                                   }),
                       "index 0 failed", std::runtime_error);
  CHECK(started < 500);
}
