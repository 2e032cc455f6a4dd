// SPDX-License-Identifier: MIT
// Latency and bandwidth of hpf's own MPI wrappers (hpf::comm::isend/irecv/allreduce on Kokkos
// views) and of its bucketed gradient reducer (hpf::GradientBuckets), measured the way the OSU
// micro-benchmarks measure MPI (benchmarks/comm/run_comm_benchmark.py runs it and fits models):
//
//   mpiexec -n 2 hpf_bench_comm                                    # every primitive, 4 B .. 64 MiB
//   mpiexec -n 4 hpf_bench_comm --primitives allreduce,buckets --max-bytes 1048576 --csv out.csv
//
// Messages are views of floats in the default execution space's memory (so a size in bytes must
// be a power of two of at least 4), sent through the wrappers exactly as training sends them:
// every call fences the space, and device views go through host staging unless MPI is GPU-aware.
//
// Method (after OSU): for each size, warm-up repetitions, then timed ones, more up to 8 KiB (OSU's
// LARGE_MESSAGE_SIZE) than above, and fewer where a size would move more than --max-volume bytes
// (at least 10 stay), so that the 64 MiB end of the sweep takes seconds, not minutes. Each
// repetition is timed on its own and the report is the median and 99th percentile (nearest rank)
// over repetitions. All ranks meet at a barrier between sizes, and before every repetition of a
// collective (as OSU's collective tests do). Before each repetition the
// data is refilled with a pattern of (element, rank, repetition) and after it checked against the
// values computed locally, both outside the timed part; a mismatch aborts with a message.
//   latency    ping-pong between rank 0 and --peer (default: rank ranks/2, on another host when
//              ranks fill hosts in order): one-way time = round trip / 2, timed on rank 0
//   bw         rank 0 sends a window of --window non-blocking messages to the peer, which answers
//              with a 4-byte ack (osu_bw); timed on rank 0 per window; bandwidth = size x window / time
//   bibw       both send a window to each other at once (osu_bibw); bandwidth = 2 x size x window / time
//   allreduce  hpf::comm::allreduce (in place, sum) of one buffer on every rank; the time of a
//              repetition is the slowest rank's; bus bandwidth = size / time x 2(n-1)/n (nccl-tests)
//   rested     one message after the link rested --rest-us (default 20 ms; rank 0 busy, the peer
//              polling its posted receive): rank 0 sends, the peer answers with 4 bytes; time =
//              that round trip less the 4-byte answer's own one-way time (half a rested 4-byte
//              round trip, measured first; at most half the size's fastest round trip). A shaped
//              link (a token bucket, a policer) passes what its burst covers at line rate, so a
//              rested message is faster than `latency`'s back-to-back ones; 15 repetitions (the
//              rests dominate), polled without pause
//   steal      compute lost to traffic: both ranks of the pair run a fixed busy loop, testing
//              their requests every few tens of microseconds as training does between layers,
//              alone and while a message of the size goes each way; time = the loop's extra time
//              with traffic, the mean of the two ranks (the bytes a rank moves: 2 x size). Where
//              hosts share cores (network namespaces of one machine) or TCP copies on the
//              computing cores, it is what the network takes from computation. One size:
//              --steal-bytes (default 8 MiB)
//   buckets    hpf::GradientBuckets on the gradient buffer of a real model (--model, ResNet-20 by
//              default), for each bucket size in the sweep from --bucket-min-bytes up to the first
//              power of two that holds the whole gradient: one reduction of the whole gradient,
//              every bucket announced ready at once, with GradientReduction::ordered and ::allreduce
// Ranks outside the pair of a point-to-point test wait in a barrier that sleeps between polls, so
// that on an oversubscribed machine they leave the cores to the pair. Between the repetitions of a
// point-to-point test the pair exchanges a token, so that neither side's checking is timed.
// A window holds at most 64 MiB (--window-bytes): 64 messages of 64 MiB would take seconds per
// repetition and measure the same bandwidth as fewer.
//
// Rank 0 prints one `RESULT primitive=... ranks=... bytes=... median_us=... p99_us=...` line per
// size (benchmarks/bench_harness.py reads them) and, with --csv FILE, the same rows as CSV.
#include <hpf/comm/environment.hpp>
#include <hpf/comm/request.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/model/network.hpp>
#include <hpf/parallel/gradient_buckets.hpp>
#include <hpf/parallel/step_options.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Floats = Kokkos::View<float*, Space::memory_space>;
using Clock = std::chrono::steady_clock;

constexpr std::size_t large_message = 8192;        // OSU's LARGE_MESSAGE_SIZE
constexpr std::size_t min_timed_repetitions = 10;  // the volume cap never goes below this
constexpr int data_tag = 1, ack_tag = 2, token_tag = 3;
const std::vector<std::string> all_primitives = {"latency", "rested", "bw", "bibw", "steal", "allreduce", "buckets"};
constexpr std::size_t rested_repetitions = 15, steal_repetitions = 9;

// --- options -----------------------------------------------------------------------------------

struct Settings {
  std::vector<std::string> primitives = all_primitives;
  std::size_t min_bytes = 4, max_bytes = std::size_t{64} << 20;
  std::size_t iterations = 1000, iterations_large = 100, warmup = 100, warmup_large = 10;
  std::size_t max_volume = std::size_t{1} << 30, window = 64, window_bytes = std::size_t{64} << 20;
  std::size_t bucket_min_bytes = 4096;
  std::size_t rest_us = 20000, steal_bytes = std::size_t{8} << 20;
  int peer = -1;  // -1: size / 2
  std::string model = "resnet20", csv;
  bool inject_error = false, help = false;
};

const char* const usage_text =
    "usage: mpiexec -n P hpf_bench_comm [--primitives latency,rested,bw,bibw,steal,allreduce,buckets]\n"
    "         [--min-bytes N] [--max-bytes N] [--iterations N] [--iterations-large N] [--warmup N]\n"
    "         [--warmup-large N] [--max-volume BYTES] [--window N] [--window-bytes BYTES] [--peer RANK]\n"
    "         [--model resnet20|resnet56|mlp] [--bucket-min-bytes N] [--rest-us N] [--steal-bytes N]\n"
    "         [--csv FILE] [--inject-error]\n"
    "  sizes: powers of two from --min-bytes (default 4) to --max-bytes (default 64 MiB), float elements\n"
    "  repetitions per size: --iterations (1000) timed after --warmup (100) up to 8 KiB, --iterations-large\n"
    "    (100) after --warmup-large (10) above, fewer where a size would move more than --max-volume bytes\n"
    "    (default 1 GiB; at least 10 stay); lower them all for a quick run\n"
    "  --window N      messages per bw/bibw repetition (default 64, at most --window-bytes / size, 64 MiB)\n"
    "  --peer RANK     the partner of rank 0 in latency, rested, bw, bibw and steal (default: ranks / 2)\n"
    "  --rest-us N     how long the pair rests before each rested message (default 20000)\n"
    "  --steal-bytes N the message size of steal, each way (default 8 MiB, at most --max-bytes)\n"
    "  --inject-error  corrupt one received element on each checking rank (tests the checks)\n";

std::size_t to_size(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    if (!text.empty() && text[0] != '-') value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw hpf::comm::UsageError(flag + " expects a whole number, got '" + text + "'\n" + usage_text);
  }
  return static_cast<std::size_t>(value);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

bool power_of_two(std::size_t n) { return n > 0 && (n & (n - 1)) == 0; }

/// Throws UsageError: every rank sees the same arguments, so every rank stops with exit code 2.
Settings parse(int argc, char** argv, int ranks) {
  Settings s;
  auto fail = [](const std::string& what) { throw hpf::comm::UsageError(what + "\n" + usage_text); };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind("--kokkos-", 0) == 0) continue;  // Kokkos' own
    if (flag == "--help" || flag == "-h") {
      s.help = true;
      continue;
    }
    if (flag == "--inject-error") {
      s.inject_error = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--primitives") {
      s.primitives = split(value);
      for (const auto& p : s.primitives) {
        if (std::find(all_primitives.begin(), all_primitives.end(), p) == all_primitives.end())
          fail("unknown primitive '" + p + "' (known: latency, rested, bw, bibw, steal, allreduce, buckets)");
      }
      if (s.primitives.empty()) fail("--primitives needs at least one primitive");
    } else if (flag == "--min-bytes") {
      s.min_bytes = to_size(flag, value);
    } else if (flag == "--max-bytes") {
      s.max_bytes = to_size(flag, value);
    } else if (flag == "--iterations") {
      s.iterations = to_size(flag, value);
    } else if (flag == "--iterations-large") {
      s.iterations_large = to_size(flag, value);
    } else if (flag == "--warmup") {
      s.warmup = to_size(flag, value);
    } else if (flag == "--warmup-large") {
      s.warmup_large = to_size(flag, value);
    } else if (flag == "--max-volume") {
      s.max_volume = to_size(flag, value);
    } else if (flag == "--window") {
      s.window = to_size(flag, value);
    } else if (flag == "--window-bytes") {
      s.window_bytes = to_size(flag, value);
    } else if (flag == "--bucket-min-bytes") {
      s.bucket_min_bytes = to_size(flag, value);
    } else if (flag == "--rest-us") {
      s.rest_us = to_size(flag, value);
    } else if (flag == "--steal-bytes") {
      s.steal_bytes = to_size(flag, value);
    } else if (flag == "--peer") {
      s.peer = static_cast<int>(std::min<std::size_t>(to_size(flag, value), std::numeric_limits<int>::max()));
    } else if (flag == "--model") {
      if (value != "resnet20" && value != "resnet56" && value != "mlp")
        fail("--model must be resnet20, resnet56 or mlp");
      s.model = value;
    } else if (flag == "--csv") {
      s.csv = value;
    } else {
      fail("unknown option " + flag);
    }
  }
  for (auto [name, bytes] : {std::pair{"--min-bytes", s.min_bytes}, std::pair{"--max-bytes", s.max_bytes},
                             std::pair{"--bucket-min-bytes", s.bucket_min_bytes}, std::pair{"--steal-bytes", s.steal_bytes}}) {
    if (!power_of_two(bytes) || bytes < sizeof(float) || bytes > (std::size_t{1} << 30))
      fail(std::string(name) + " must be a power of two from 4 (one float) to 1 GiB, got " + std::to_string(bytes));
  }
  if (s.min_bytes > s.max_bytes) fail("--min-bytes must not exceed --max-bytes");
  if (s.iterations == 0 || s.iterations_large == 0) fail("--iterations and --iterations-large must be positive");
  if (s.window == 0) fail("--window must be positive");
  if (s.peer < 0) s.peer = ranks / 2;
  const bool point_to_point = std::any_of(s.primitives.begin(), s.primitives.end(), [](const std::string& p) {
    return p == "latency" || p == "rested" || p == "bw" || p == "bibw" || p == "steal";
  });
  if (point_to_point && ranks < 2)
    fail("latency, rested, bw, bibw and steal need at least 2 ranks (or choose --primitives)");
  if (point_to_point && (s.peer < 1 || s.peer >= ranks))
    fail("--peer must be a rank from 1 to " + std::to_string(ranks - 1));
  return s;
}

// --- repetitions and their statistics ------------------------------------------------------------

struct Repetitions {
  std::size_t warmup = 0, timed = 0;
};

/// OSU's counts for a message of `bytes`, fewer when a repetition moves `volume` bytes and all of
/// them together would exceed --max-volume.
Repetitions repetitions(const Settings& s, std::size_t bytes, std::size_t volume) {
  Repetitions r{bytes <= large_message ? s.warmup : s.warmup_large,
                bytes <= large_message ? s.iterations : s.iterations_large};
  const std::size_t affordable = s.max_volume / std::max<std::size_t>(volume, 1);
  if (r.timed > affordable) r.timed = std::max(std::min(min_timed_repetitions, r.timed), affordable);
  r.warmup = std::min(r.warmup, std::max<std::size_t>(1, r.timed / 5));
  return r;
}

struct Summary {
  double median = 0, p99 = 0;  // seconds
};

Summary summarize(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const std::size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  const auto rank99 = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  return {median, times[std::max<std::size_t>(rank99, 1) - 1]};
}

/// Every rank's time of each repetition, reduced to the slowest rank's (a collective is over
/// when its last rank is done).
std::vector<double> slowest(const hpf::comm::Communicator& comm, const std::vector<double>& times) {
  Kokkos::View<double*, Kokkos::HostSpace> v("hpf_bench_comm::times", times.size());
  std::copy(times.begin(), times.end(), v.data());
  hpf::comm::allreduce(comm, v, MPI_MAX);
  return {v.data(), v.data() + v.size()};
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// --- data and its checks ----------------------------------------------------------------------------

/// What `rank` sends in repetition `rep`: small whole numbers, so sums over ranks are exact.
struct Pattern {
  int rank;
  std::size_t rep;
  KOKKOS_INLINE_FUNCTION float operator()(std::size_t i) const {
    return static_cast<float>((i * 7 + static_cast<std::size_t>(rank) * 101 + rep * 13) % 1021);
  }
};

/// The sum of every rank's Pattern: what a reduction must produce.
struct SumOfPatterns {
  int ranks;
  std::size_t rep;
  KOKKOS_INLINE_FUNCTION float operator()(std::size_t i) const {
    float sum = 0;
    for (int r = 0; r < ranks; ++r) sum += Pattern{r, rep}(i);
    return sum;
  }
};

template <class Values>
void fill(const Floats& v, Values values) {
  Kokkos::parallel_for(
      "hpf_bench_comm::fill", Kokkos::RangePolicy<Space>(0, v.size()),
      KOKKOS_LAMBDA(std::size_t i) { v(i) = values(i); });
  Space().fence();
}

bool inject_error = false;  // --inject-error: the next check on this rank sees one wrong element

/// Throws (aborting the job: the other ranks may not see it) unless `v` holds `expected`.
template <class Values>
void check(const Floats& v, Values expected, const std::string& what) {
  if (inject_error) {
    inject_error = false;
    Kokkos::deep_copy(Kokkos::subview(v, v.size() - 1), -1.0f);
  }
  std::size_t first = std::numeric_limits<std::size_t>::max();
  Kokkos::parallel_reduce(
      "hpf_bench_comm::check", Kokkos::RangePolicy<Space>(0, v.size()),
      KOKKOS_LAMBDA(std::size_t i, std::size_t & found) {
        if (v(i) != expected(i) && i < found) found = i;
      },
      Kokkos::Min<std::size_t>(first));
  if (first == std::numeric_limits<std::size_t>::max()) return;
  float got = 0;
  Kokkos::deep_copy(got, Kokkos::subview(v, first));
  throw std::runtime_error("hpf_bench_comm: data mismatch in " + what + ": element " + std::to_string(first) + " of " +
                           std::to_string(v.size()) + " is " + std::to_string(got) + ", expected " +
                           std::to_string(expected(first)));
}

Floats floats(const std::string& label, std::size_t bytes) {
  return Floats(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), bytes / sizeof(float));
}

// --- synchronisation -----------------------------------------------------------------------------------

/// A barrier that polls with sleeps in between, so that waiting ranks leave the cores to the ones
/// being measured (on an oversubscribed machine MPI_Barrier spins).
void sleepy_barrier(const hpf::comm::Communicator& comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  hpf::comm::check(MPI_Ibarrier(comm.get(), &request), "MPI_Ibarrier");
  hpf::comm::Request pending(request, "MPI_Ibarrier");
  while (!pending.test()) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

/// Rank 0 and the peer exchange a 4-byte token: both are past their checks and have posted the
/// receives of the next repetition.
void pair_sync(const hpf::comm::Communicator& comm, int other, const Floats& token) {
  auto received = hpf::comm::irecv(comm, token, other, token_tag);
  hpf::comm::isend(comm, token, other, token_tag).wait();
  received.wait();
}

/// Before a repetition of a message from rank 0 to its peer: rank 0 fills `message` for
/// repetition `rep`, the peer posts its receive into it, and the two meet. The peer's receive.
hpf::comm::Request ready_one_way(const hpf::comm::Communicator& comm, int other, const Floats& message,
                                 const Floats& token, std::size_t rep) {
  hpf::comm::Request received;
  if (comm.rank() == 0) {
    fill(message, Pattern{0, rep});
  } else {
    received = hpf::comm::irecv(comm, message, 0, data_tag);
  }
  pair_sync(comm, other, token);
  return received;
}

// --- results ------------------------------------------------------------------------------------------

struct Row {
  std::string primitive;
  int ranks = 0;
  std::size_t bytes = 0;
  Repetitions reps;
  Summary time;
  std::vector<std::pair<std::string, std::string>> extra;  // key=value in print order
};

const std::vector<std::string> csv_columns = {
    "primitive", "ranks",  "bytes",     "median_us", "p99_us",    "bandwidth_MBps", "bus_bandwidth_MBps", "iterations",
    "warmup",    "window", "peer",      "model",     "reduction", "bucket_bytes",   "buckets",            "rest_us",
    "loop_us",   "exchange_us"};

std::string number(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

std::map<std::string, std::string> fields(const Row& row) {
  std::map<std::string, std::string> f = {
      {"primitive", row.primitive},           {"ranks", std::to_string(row.ranks)},
      {"bytes", std::to_string(row.bytes)},   {"median_us", number(row.time.median * 1e6, 3)},
      {"p99_us", number(row.time.p99 * 1e6, 3)}, {"iterations", std::to_string(row.reps.timed)},
      {"warmup", std::to_string(row.reps.warmup)}};
  for (const auto& [key, value] : row.extra) f[key] = value;
  return f;
}

class Report {
 public:
  Report(bool root, const std::string& csv_path) : root_(root) {
    if (!root_ || csv_path.empty()) return;
    csv_.open(csv_path);
    if (!csv_) throw std::runtime_error("hpf_bench_comm: cannot write " + csv_path);
    for (std::size_t c = 0; c < csv_columns.size(); ++c) csv_ << (c ? "," : "") << csv_columns[c];
    csv_ << "\n";
  }

  void add(const Row& row) {
    if (!root_) return;
    const auto f = fields(row);
    std::string line = "RESULT primitive=" + row.primitive + " ranks=" + f.at("ranks") + " bytes=" + f.at("bytes") +
                       " median_us=" + f.at("median_us") + " p99_us=" + f.at("p99_us") + " iterations=" +
                       f.at("iterations") + " warmup=" + f.at("warmup");
    for (const auto& [key, value] : row.extra) line += " " + key + "=" + value;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (csv_.is_open()) {
      for (std::size_t c = 0; c < csv_columns.size(); ++c) {
        const auto it = f.find(csv_columns[c]);
        csv_ << (c ? "," : "") << (it == f.end() ? "" : it->second);
      }
      csv_ << "\n" << std::flush;
    }
  }

 private:
  bool root_;
  std::ofstream csv_;
};

std::string megabytes_per_second(double bytes, double seconds) { return number(bytes / seconds / 1e6, 2); }

// --- point to point ----------------------------------------------------------------------------------

/// Ping-pong: rank 0 sends, the peer sends the data back; one-way time = round trip / 2. Rank 0
/// receives the echo into a buffer of its own, so that a missing echo cannot pass the check.
void latency(const hpf::comm::Communicator& comm, const Settings& s, std::size_t bytes, Report& report) {
  const int rank = comm.rank(), peer = s.peer;
  const Repetitions reps = repetitions(s, bytes, 2 * bytes);
  std::vector<double> times;
  if (rank == 0 || rank == peer) {
    const int other = rank == 0 ? peer : 0;
    Floats message = floats("hpf_bench_comm::message", bytes), echo = floats("hpf_bench_comm::echo", bytes);
    Floats token = floats("hpf_bench_comm::token", 4);
    Kokkos::deep_copy(echo, -1.0f);
    Kokkos::deep_copy(message, -1.0f);
    for (std::size_t rep = 0; rep < reps.warmup + reps.timed; ++rep) {
      hpf::comm::Request received = ready_one_way(comm, other, message, token, rep);
      if (rank == 0) {
        const auto start = Clock::now();
        hpf::comm::isend(comm, message, peer, data_tag).wait();
        hpf::comm::irecv(comm, echo, peer, data_tag).wait();
        if (rep >= reps.warmup) times.push_back(seconds(start, Clock::now()) / 2);
      } else {
        received.wait();
        hpf::comm::isend(comm, message, 0, data_tag).wait();
      }
      check(rank == 0 ? echo : message, Pattern{0, rep}, "latency at " + std::to_string(bytes) + " bytes");
    }
  }
  sleepy_barrier(comm);
  if (rank == 0) report.add({"latency", comm.size(), bytes, reps, summarize(times), {{"peer", std::to_string(peer)}}});
}

/// Windows of messages in one direction (bw) or in both at once (bibw).
void bandwidth(const hpf::comm::Communicator& comm, const Settings& s, std::size_t bytes, bool both, Report& report) {
  const int rank = comm.rank(), peer = s.peer;
  const std::size_t window = std::max<std::size_t>(1, std::min(s.window, s.window_bytes / bytes));
  const Repetitions reps = repetitions(s, bytes, (both ? 2 : 1) * window * bytes);
  const std::string what = std::string(both ? "bibw" : "bw") + " at " + std::to_string(bytes) + " bytes";
  std::vector<double> times;
  if (rank == 0 || rank == peer) {
    const int other = rank == 0 ? peer : 0;
    const bool sends = both || rank == 0, receives = both || rank == peer;
    Floats message = floats("hpf_bench_comm::message", bytes), token = floats("hpf_bench_comm::token", 4);
    Floats slots = floats("hpf_bench_comm::window", receives ? window * bytes : 4);
    Kokkos::deep_copy(slots, -1.0f);  // no stale data passes the first check
    const std::size_t n = bytes / sizeof(float);
    auto slot = [&](std::size_t k) { return Kokkos::subview(slots, Kokkos::make_pair(k * n, (k + 1) * n)); };
    for (std::size_t rep = 0; rep < reps.warmup + reps.timed; ++rep) {
      std::vector<hpf::comm::Request> requests;
      if (sends) fill(message, Pattern{rank, rep});
      if (receives) {
        for (std::size_t k = 0; k < window; ++k) requests.push_back(hpf::comm::irecv(comm, slot(k), other, data_tag));
      }
      pair_sync(comm, other, token);
      const auto start = Clock::now();
      if (sends) {
        for (std::size_t k = 0; k < window; ++k) requests.push_back(hpf::comm::isend(comm, message, other, data_tag));
      }
      for (auto& r : requests) r.wait();
      if (!both) {  // the receiver's ack ends the sender's window
        if (rank == 0) {
          hpf::comm::irecv(comm, token, peer, ack_tag).wait();
        } else {
          hpf::comm::isend(comm, token, 0, ack_tag).wait();
        }
      }
      if (rank == 0 && rep >= reps.warmup) times.push_back(seconds(start, Clock::now()));
      if (receives) check(slots, [=] KOKKOS_FUNCTION(std::size_t i) { return Pattern{other, rep}(i % n); }, what);
    }
  }
  sleepy_barrier(comm);
  if (rank == 0) {
    const Summary time = summarize(times);
    const double moved = static_cast<double>((both ? 2 : 1) * window * bytes);
    report.add({both ? "bibw" : "bw", comm.size(), bytes, reps, time,
                {{"bandwidth_MBps", megabytes_per_second(moved, time.median)}, {"window", std::to_string(window)},
                 {"peer", std::to_string(peer)}}});
  }
}

/// Round trips of a message of `bytes` from rank 0, answered with 4 bytes, each after the link
/// rested --rest-us (what a rested link does with one message); rank 0's times in seconds.
std::vector<double> rested_round_trips(const hpf::comm::Communicator& comm, const Settings& s, std::size_t bytes,
                                       std::size_t reps) {
  const int rank = comm.rank(), peer = s.peer, other = rank == 0 ? peer : 0;
  Floats message = floats("hpf_bench_comm::message", bytes), token = floats("hpf_bench_comm::token", 4);
  Kokkos::deep_copy(message, -1.0f);
  std::vector<double> times;
  for (std::size_t rep = 0; rep < reps; ++rep) {
    hpf::comm::Request received = ready_one_way(comm, other, message, token, rep);
    // Polled without pause: the link's time, not a wait's (hpf's wait sleeps between late polls).
    auto spin = [](hpf::comm::Request&& r) {
      while (!r.test()) {
      }
    };
    if (rank == 0) {
      // The rest keeps both ranks awake, as in training, where the sender computes and the
      // receiver polls: a rank woken from sleep would add its wake-up to the message.
      const auto rested_until = Clock::now() + std::chrono::microseconds(s.rest_us);
      while (Clock::now() < rested_until) {
      }
      const auto start = Clock::now();
      auto answer = hpf::comm::irecv(comm, token, peer, ack_tag);
      spin(hpf::comm::isend(comm, message, peer, data_tag));
      spin(std::move(answer));
      times.push_back(seconds(start, Clock::now()));
    } else {
      spin(std::move(received));
      spin(hpf::comm::isend(comm, token, 0, ack_tag));
      check(message, Pattern{0, rep}, "rested at " + std::to_string(bytes) + " bytes");
    }
  }
  return times;
}

/// One message after a rest (see the top of the file): the round trip less the answer's way.
void rested(const hpf::comm::Communicator& comm, const Settings& s, std::size_t bytes, double answer_s, Report& report) {
  const Repetitions reps{1, rested_repetitions};
  std::vector<double> times;
  if (comm.rank() == 0 || comm.rank() == s.peer) times = rested_round_trips(comm, s, bytes, reps.warmup + reps.timed);
  sleepy_barrier(comm);
  if (comm.rank() != 0) return;
  times.erase(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(reps.warmup));
  // The answer's way is at most half of any round trip that carries it (a message of these bytes
  // takes no less than the answer's 4): so bounded, an answer timed slow by a passing stall cannot
  // make every time 0, which left a quick run under ctest without a fit.
  const double answer = std::min(answer_s, *std::min_element(times.begin(), times.end()) / 2);
  for (double& t : times) t = std::max(0.0, t - answer);
  report.add({"rested", comm.size(), bytes, reps, summarize(times),
              {{"peer", std::to_string(s.peer)}, {"rest_us", std::to_string(s.rest_us)}}});
}

/// Half the median rested round trip of 4 bytes: the one-way time of rested's answer.
double rested_answer_seconds(const hpf::comm::Communicator& comm, const Settings& s) {
  std::vector<double> times;
  if (comm.rank() == 0 || comm.rank() == s.peer) times = rested_round_trips(comm, s, 4, rested_repetitions);
  sleepy_barrier(comm);
  double answer = comm.rank() == 0 ? summarize(times).median / 2 : 0;
  hpf::comm::check(MPI_Bcast(&answer, 1, MPI_DOUBLE, 0, comm.get()), "MPI_Bcast");
  return answer;
}

/// Element-wise sum of `values` over rank 0 and its peer (the other ranks wait elsewhere).
std::vector<double> pair_sum(const hpf::comm::Communicator& comm, int other, std::vector<double> values) {
  std::vector<double> theirs(values.size());
  hpf::comm::check(MPI_Sendrecv(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, other, token_tag,
                                theirs.data(), static_cast<int>(theirs.size()), MPI_DOUBLE, other, token_tag, comm.get(),
                                MPI_STATUS_IGNORE),
                   "MPI_Sendrecv");
  for (std::size_t i = 0; i < values.size(); ++i) values[i] += theirs[i];
  return values;
}

volatile double busy_loop_result = 0;  // keeps the loop's chain from being optimised away

/// A fixed amount of scalar work (a dependent chain the compiler cannot shorten) in chunks of
/// 20,000 steps (tens of microseconds); `between` runs after every chunk.
template <class Between>
double busy_loop(std::size_t chunks, Between&& between) {
  double x = 1.0;
  const auto start = Clock::now();
  for (std::size_t c = 0; c < chunks; ++c) {
    for (int i = 0; i < 20000; ++i) x = x * 1.0000001 + 1e-9;
    between();
  }
  busy_loop_result = x;
  return seconds(start, Clock::now());
}

/// Compute lost to traffic (see the top of the file): per repetition, the pair's busy loop alone,
/// then with a message of `bytes` each way in flight, tested between chunks. The loop is sized
/// to outlast the exchange (three times a waited one).
void steal(const hpf::comm::Communicator& comm, const Settings& s, Report& report) {
  const int rank = comm.rank(), peer = s.peer, other = rank == 0 ? peer : 0;
  const std::size_t bytes = std::min(s.steal_bytes, s.max_bytes);
  const Repetitions reps{1, steal_repetitions};
  std::vector<double> extra;
  double exchange = 0, loop = 0;
  if (rank == 0 || rank == peer) {
    Floats outgoing = floats("hpf_bench_comm::message", bytes), incoming = floats("hpf_bench_comm::echo", bytes);
    Floats token = floats("hpf_bench_comm::token", 4);
    fill(outgoing, Pattern{rank, 0});
    auto exchange_once = [&](auto&& while_in_flight) {
      auto received = hpf::comm::irecv(comm, incoming, other, data_tag);
      auto sent = hpf::comm::isend(comm, outgoing, other, data_tag);
      while_in_flight(received, sent);
      received.wait();
      sent.wait();
    };
    pair_sync(comm, other, token);
    auto start = Clock::now();
    exchange_once([](auto&, auto&) {});
    exchange = seconds(start, Clock::now());
    const double chunk = std::max(busy_loop(100, [] {}) / 100, 1e-7);
    const std::vector<double> agreed = pair_sum(comm, other, {exchange, chunk});  // both run one loop
    const auto chunks = static_cast<std::size_t>(std::ceil(3 * agreed[0] / agreed[1])) + 10;
    for (std::size_t rep = 0; rep < reps.warmup + reps.timed; ++rep) {
      pair_sync(comm, other, token);
      const double alone = busy_loop(chunks, [] {});
      pair_sync(comm, other, token);
      double with_traffic = 0;
      exchange_once([&](hpf::comm::Request& received, hpf::comm::Request& sent) {
        with_traffic = busy_loop(chunks, [&] {
          received.test();
          sent.test();
        });
      });
      check(incoming, Pattern{other, 0}, "steal at " + std::to_string(bytes) + " bytes");
      const std::vector<double> both = pair_sum(comm, other, {with_traffic - alone, alone});
      if (rep >= reps.warmup) extra.push_back(both[0] / 2);
      loop = both[1] / 2;
    }
  }
  sleepy_barrier(comm);
  if (rank != 0) return;
  report.add({"steal", comm.size(), bytes, reps, summarize(extra),
              {{"peer", std::to_string(peer)}, {"loop_us", number(loop * 1e6, 1)}, {"exchange_us", number(exchange * 1e6, 1)}}});
}

// --- collectives -----------------------------------------------------------------------------------------

void allreduce(const hpf::comm::Communicator& comm, const Settings& s, std::size_t bytes, Report& report) {
  const Repetitions reps = repetitions(s, bytes, bytes);
  Floats buffer = floats("hpf_bench_comm::allreduce", bytes);
  std::vector<double> times;
  for (std::size_t rep = 0; rep < reps.warmup + reps.timed; ++rep) {
    fill(buffer, Pattern{comm.rank(), rep});
    comm.barrier();
    const auto start = Clock::now();
    hpf::comm::allreduce(comm, buffer);
    Space().fence();
    if (rep >= reps.warmup) times.push_back(seconds(start, Clock::now()));
    check(buffer, SumOfPatterns{comm.size(), rep}, "allreduce at " + std::to_string(bytes) + " bytes");
  }
  const Summary time = summarize(slowest(comm, times));
  comm.barrier();
  const double n = comm.size();
  report.add({"allreduce", comm.size(), bytes, reps, time,
              {{"bandwidth_MBps", megabytes_per_second(static_cast<double>(bytes), time.median)},
               {"bus_bandwidth_MBps",
                megabytes_per_second(static_cast<double>(bytes) * 2 * (n - 1) / n, time.median)}}});
}

/// One reduction of the whole gradient per repetition through GradientBuckets of `bucket_bytes`.
void buckets(const hpf::comm::Communicator& comm, const Settings& s, const std::string& model,
             const hpf::Buffer<float, Space>& gradients, std::size_t bucket_bytes, hpf::GradientReduction reduction,
             Report& report) {
  const std::size_t bytes = gradients.size() * sizeof(float);
  const Repetitions reps = repetitions(s, bytes, bytes);
  const std::string name = hpf::to_string(reduction);
  // In pieces where the ranks span hosts, as training's buckets travel (StepOptions).
  const std::size_t piece_bytes = comm.spans_hosts() ? hpf::StepOptions{}.exchange_piece_bytes : 0;
  hpf::GradientBuckets<float, Space> reducer(comm, gradients, bucket_bytes, reduction, -1, 1, piece_bytes);
  std::vector<double> times;
  for (std::size_t rep = 0; rep < reps.warmup + reps.timed; ++rep) {
    fill(gradients, Pattern{comm.rank(), rep});
    comm.barrier();
    const auto start = Clock::now();
    reducer.begin_step();
    reducer.ready(0);  // backward over: every bucket at once
    reducer.finish();
    Space().fence();
    if (rep >= reps.warmup) times.push_back(seconds(start, Clock::now()));
    check(gradients, SumOfPatterns{comm.size(), rep},
          "buckets (" + name + ", " + std::to_string(bucket_bytes) + "-byte buckets)");
  }
  const Summary time = summarize(slowest(comm, times));
  comm.barrier();
  report.add({"buckets", comm.size(), bytes, reps, time,
              {{"bandwidth_MBps", megabytes_per_second(static_cast<double>(bytes), time.median)},
               {"model", model},
               {"reduction", name},
               {"bucket_bytes", std::to_string(bucket_bytes)},
               {"buckets", std::to_string(reducer.bucket_count())},
               {"piece_bytes", std::to_string(piece_bytes)}}});
}

template <class Model>
void sweep_buckets(const hpf::comm::Communicator& comm, const Settings& s, Report& report) {
  hpf::Network<Model, float, Space> network;
  const auto& gradients = network.gradients();
  std::size_t whole = s.bucket_min_bytes;  // the first power of two that holds the gradient
  while (whole < gradients.size() * sizeof(float)) whole *= 2;
  std::vector<hpf::GradientReduction> reductions = {hpf::GradientReduction::allreduce};
  if (static_cast<std::size_t>(comm.size()) <= hpf::ordered_sum_max_parts) {
    reductions.insert(reductions.begin(), hpf::GradientReduction::ordered);
  } else if (comm.rank() == 0) {
    std::printf("# buckets: ordered reduction skipped (more than %zu ranks)\n", hpf::ordered_sum_max_parts);
  }
  for (std::size_t b = std::max(s.min_bytes, s.bucket_min_bytes); b <= std::min(s.max_bytes, whole); b *= 2) {
    for (auto reduction : reductions) buckets(comm, s, s.model, gradients, b, reduction, report);
  }
}

// --- where the ranks are -----------------------------------------------------------------------------------

/// Host count and MPI library, as a `RESULT primitive=environment ...` line.
void describe(const hpf::comm::Communicator& comm, const Settings& s) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  hpf::comm::check(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
  const auto hosts = hpf::comm::allgather_value(comm, static_cast<std::uint64_t>(std::hash<std::string>{}(name)));
  std::map<std::uint64_t, int> per_host;
  for (auto h : hosts) ++per_host[h];
  int most = 0;
  for (const auto& [host, count] : per_host) most = std::max(most, count);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  hpf::comm::check(MPI_Get_library_version(library, &length), "MPI_Get_library_version");
  std::string mpi(library);
  mpi = mpi.substr(0, mpi.find_first_of(",\n"));
  if (comm.rank() != 0) return;
  const bool p2p_same_host = s.peer > 0 && s.peer < comm.size() && hosts[0] == hosts[static_cast<std::size_t>(s.peer)];
  std::printf("RESULT primitive=environment ranks=%d hosts=%zu ranks_per_host=%d peer=%d peer_same_host=%d "
              "kokkos=%s elements=float mpi=\"%s\"\n",
              comm.size(), per_host.size(), most, s.peer, p2p_same_host ? 1 : 0, Space::name(), mpi.c_str());
  std::fflush(stdout);
}

void run(const hpf::comm::Communicator& comm, const Settings& s) {
  inject_error = s.inject_error;
  describe(comm, s);
  Report report(comm.rank() == 0, s.csv);
  auto wants = [&](const char* p) {
    return std::find(s.primitives.begin(), s.primitives.end(), p) != s.primitives.end();
  };
  for (const char* primitive : {"latency", "rested", "bw", "bibw", "allreduce"}) {
    if (!wants(primitive)) continue;
    const std::string p = primitive;
    const double answer_s = p == "rested" ? rested_answer_seconds(comm, s) : 0;
    for (std::size_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 2) {
      sleepy_barrier(comm);
      if (p == "latency") latency(comm, s, bytes, report);
      if (p == "rested") rested(comm, s, bytes, answer_s, report);
      if (p == "bw" || p == "bibw") bandwidth(comm, s, bytes, p == "bibw", report);
      if (p == "allreduce") allreduce(comm, s, bytes, report);
    }
  }
  if (wants("steal")) {
    sleepy_barrier(comm);
    steal(comm, s, report);
  }
  if (wants("buckets")) {
    if (s.model == "resnet20") sweep_buckets<hpf::zoo::ResNet20>(comm, s, report);
    if (s.model == "resnet56") sweep_buckets<hpf::zoo::ResNet56>(comm, s, report);
    if (s.model == "mlp") sweep_buckets<hpf::zoo::Mlp>(comm, s, report);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    const Settings s = parse(argc, argv, world.size());
    if (s.help) {
      if (world.rank() == 0) std::fputs(usage_text, stdout);
      return;
    }
    run(world, s);
  });
}
