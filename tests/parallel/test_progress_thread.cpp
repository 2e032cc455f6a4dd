// SPDX-License-Identifier: MIT
// A progress thread (StepOptions::exchange_progress = ExchangeProgress::thread): a message moves
// while both ranks compute without calling MPI, training keeps one process's bits, the log and
// the timeline say what ran. CTest runs this with HPF_MPI_THREADS=multiple at 1, 2, 4 and 6
// ranks, and once without it (the library grants MPI_THREAD_FUNNELED), where every case checks
// the fallback instead: progress between layers, with the reason in the log.
#include <hpf/comm/progress_thread.hpp>
#include <hpf/hpf.hpp>

#include <support/equivalence.hpp>
#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
bool granted_multiple() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

using Model = hpf::zoo::Mlp;

hpf::TrainOptions mlp_options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 3;
  o.data_seed = 4;
  o.bucket_bytes = 64 << 10;
  o.exchange_progress = hpf::ExchangeProgress::thread;
  o.exchange_progress_interval = std::chrono::microseconds(50);
  return o;
}
}  // namespace

TEST_CASE("Where HPF_MPI_THREADS=multiple asks for it, the MPI library grants MPI_THREAD_MULTIPLE") {
  const char* asked = std::getenv("HPF_MPI_THREADS");
  if (asked && std::string(asked) == "multiple") CHECK(granted_multiple());
  if (!asked || std::string(asked) == "funneled") CHECK_FALSE(granted_multiple());
}

TEST_CASE("A progress thread moves a message while both ranks compute without calling MPI") {
  const hpf::comm::Communicator world;
  std::string why_not;
  auto thread = hpf::comm::ProgressThread::make(world, std::chrono::microseconds(50), why_not);
  if (!granted_multiple()) {
    CHECK_FALSE(thread.has_value());
    CHECK(why_not.find("needs MPI_THREAD_MULTIPLE and the MPI library granted MPI_THREAD_FUNNELED") != std::string::npos);
    return;
  }
  REQUIRE(thread.has_value());
  CHECK(why_not.empty());
  // Pairs 0-1, 2-3, 4-5 (rank 0 with itself at 1 rank); 32 MiB, far above any eager limit: the
  // transfer needs both sides' progress after the receive is matched.
  const int peer = world.size() == 1 ? 0 : world.rank() ^ 1;
  const std::size_t n = std::size_t{4} << 20;
  std::vector<double> sent(n), received(n, -1.0);
  for (std::size_t i = 0; i < n; ++i) sent[i] = static_cast<double>(i % 1000) + world.rank();
  MPI_Request requests[2];
  REQUIRE(MPI_Irecv(received.data(), static_cast<int>(n), MPI_DOUBLE, peer, 7, world.get(), &requests[0]) == MPI_SUCCESS);
  REQUIRE(MPI_Isend(sent.data(), static_cast<int>(n), MPI_DOUBLE, peer, 7, world.get(), &requests[1]) == MPI_SUCCESS);
  thread->activate();
  // "Computing": no MPI call on this thread until the last value has arrived or 20 s have passed.
  const double last = static_cast<double>((n - 1) % 1000) + peer;
  const auto begin = std::chrono::steady_clock::now();
  bool arrived = false;
  while (!arrived && std::chrono::steady_clock::now() - begin < std::chrono::seconds(20)) {
    arrived = std::atomic_ref<double>(received[n - 1]).load(std::memory_order_acquire) == last;
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  // A message to oneself may be in place before the thread's first call: give it that call.
  while (thread->probes() == 0 && std::chrono::steady_clock::now() - begin < std::chrono::seconds(25)) std::this_thread::yield();
  thread->deactivate();
  REQUIRE(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
  INFO("waited ", waited, " s, ", thread->probes(), " probes");
  CHECK(arrived);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += received[i] != static_cast<double>(i % 1000) + peer;
  CHECK(wrong == 0);
  CHECK(thread->probes() > 0);
  // Deactivated, it stops calling MPI (one probe may still be under way).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto calls = thread->probes();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(thread->probes() == calls);
}

TEST_CASE("Every activation gets a probe, even one that ends before the thread first runs, and settle() waits for it") {
  const hpf::comm::Communicator world;
  std::string why_not;
  auto thread = hpf::comm::ProgressThread::make(world, std::chrono::seconds(1), why_not);
  REQUIRE(thread.has_value() == granted_multiple());
  if (!thread) return;  // the funneled run: the case above checks the reason
  // Windows far shorter than a wake-up on a busy core; the second one opens while the thread
  // waits out its interval after the first probe. The 1 s interval keeps a second probe per
  // window out of reach.
  for (int window = 1; window <= 2; ++window) {
    const auto before = thread->probes();
    thread->activate();
    thread->deactivate();
    CAPTURE(window);
    CHECK(thread->settle(std::chrono::seconds(20)));  // returns once the owed probe is made
    CHECK(thread->probes() == before + 1);
  }
}

TEST_CASE("With a progress thread every layout trains bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(mlp_options(), hpf_test::synthetic_source<Model>(24 * 4 + 7),
                                                                5, hpf_test::Precisions<float>{});
}

TEST_CASE("The log says how messages progress; the timeline counts the progress thread's calls") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = mlp_options();
  o.evaluate = false;
  o.progress = hpf::ProgressMode::none;
  o.steps_per_epoch = 2;
  const std::string path = "hpf_test_progress_thread_" + std::to_string(world.size()) + ".json";
  o.trace = {.path = path, .first_step = 0, .last_step = 1};
  std::ostringstream log;
  o.log = world.rank() == 0 ? &log : nullptr;
  hpf::fit<Model, hpf::DataParallel>(world, o, hpf_test::synthetic_source<Model>(48));
  world.barrier();
  const auto trace = hpf_test::read_trace(path);
  const bool threaded = world.size() > 1 && granted_multiple();
  for (const auto& [pid, p] : trace.processes) {
    CAPTURE(pid);
    CHECK((p.progress_calls > 0) == threaded);
    CHECK(p.progress_us >= 0);
  }
  if (world.rank() != 0) return;
  INFO(log.str());
  if (world.size() == 1) {
    CHECK(log.str().find("hpf: progress") == std::string::npos);  // nothing in flight to move
  } else if (threaded) {
    CHECK(log.str().find("hpf: progress, a thread per rank calls into MPI every 50 us") != std::string::npos);
  } else {
    CHECK(log.str().find("hpf: progress, between layers only: a progress thread needs MPI_THREAD_MULTIPLE") != std::string::npos);
  }
  std::ostringstream between;
  o.log = &between;
  o.trace = {};
  o.exchange_progress = hpf::ExchangeProgress::between_layers;
  hpf::fit<Model, hpf::DataParallel>(hpf::comm::Communicator(MPI_COMM_SELF), o, hpf_test::synthetic_source<Model>(48));
  CHECK(between.str().find("hpf: progress") == std::string::npos);  // the default says nothing
}

TEST_CASE("A progress interval under a microsecond is refused before training") {
  hpf::TrainOptions o = mlp_options();
  o.exchange_progress_interval = std::chrono::microseconds(0);
  const hpf::data::TrainTest data = hpf_test::synthetic_source<Model>(24)(hpf::data::Shard{});
  CHECK_THROWS_WITH_AS(hpf::Trainer<Model>(o, data.train), doctest::Contains("exchange_progress_interval must be at least 1 microsecond"),
                       std::invalid_argument);
}
