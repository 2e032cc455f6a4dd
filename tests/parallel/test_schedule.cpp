#include <hpf/parallel/schedule.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Compile-time proofs for the stage counts the tests and examples instantiate.
static_assert(hpf::schedules_verified<1>());
static_assert(hpf::schedules_verified<2>());
static_assert(hpf::schedules_verified<4>());
static_assert(hpf::schedules_verified<8>());

using hpf::Instruction;
using hpf::Op;
using hpf::Schedule;

TEST_CASE("schedules: every send has its receive and no stage deadlocks, for many S and M") {
  for (std::size_t stages = 1; stages <= 12; ++stages) {
    for (std::size_t micro = 1; micro <= 40; ++micro) {
      for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b}) {
        const auto check = hpf::check_schedule(kind, stages, micro);
        INFO("S=", stages, " M=", micro, " ", std::string(hpf::to_string(kind)), ": ", check.problem);
        REQUIRE(check.ok);
        // GPipe holds every micro-batch; 1F1B at most S (on the first stage).
        CHECK(check.peak_in_flight == (kind == Schedule::gpipe ? micro : std::min(stages, micro)));
        for (std::size_t s = 0; s < stages; ++s) {
          CHECK(hpf::slots_needed(kind, stages, s, micro) ==
                (kind == Schedule::gpipe ? micro : std::min(stages - s, micro)));
        }
      }
    }
  }
}

TEST_CASE("1F1B: the textbook program of a middle stage") {
  // 4 stages, stage 1, 6 micro-batches: warm-up of 2 forwards, then F/B pairs, then 2 backwards.
  const auto program = hpf::stage_program(Schedule::one_f_one_b, 4, 1, 6);
  std::vector<std::pair<Op, int>> compute;
  for (const Instruction& i : program)
    if (i.op == Op::forward || i.op == Op::backward) compute.emplace_back(i.op, int(i.micro_batch));
  const std::vector<std::pair<Op, int>> expected = {
      {Op::forward, 0}, {Op::forward, 1}, {Op::forward, 2}, {Op::backward, 0}, {Op::forward, 3}, {Op::backward, 1},
      {Op::forward, 4}, {Op::backward, 2}, {Op::forward, 5}, {Op::backward, 3}, {Op::backward, 4}, {Op::backward, 5}};
  CHECK(compute == expected);
  CHECK(program.front() == Instruction{Op::recv_activation, 0});
  CHECK(program.back() == Instruction{Op::send_gradient, 5});
}

// Programs broken on purpose: check_programs must reject each, naming the problem and where.
namespace {
using Programs = std::vector<std::vector<Instruction>>;
constexpr Instruction F(std::uint32_t m) { return {Op::forward, m}; }
constexpr Instruction B(std::uint32_t m) { return {Op::backward, m}; }
constexpr Instruction SA(std::uint32_t m) { return {Op::send_activation, m}; }
constexpr Instruction RA(std::uint32_t m) { return {Op::recv_activation, m}; }
constexpr Instruction SG(std::uint32_t m) { return {Op::send_gradient, m}; }
constexpr Instruction RG(std::uint32_t m) { return {Op::recv_gradient, m}; }

Programs built_in(Schedule kind, std::size_t stages, std::size_t micro) {
  Programs p;
  for (std::size_t s = 0; s < stages; ++s) p.push_back(hpf::stage_program(kind, stages, s, micro));
  return p;
}
void erase(std::vector<Instruction>& program, Instruction i) {
  const auto at = std::find(program.begin(), program.end(), i);
  REQUIRE(at != program.end());
  program.erase(at);
}
std::size_t index_of(const std::vector<Instruction>& program, Instruction i) {
  return std::size_t(std::find(program.begin(), program.end(), i) - program.begin());
}
void expect_rejected(const Programs& programs, std::size_t micro, std::string_view problem, std::size_t stage,
                     std::size_t position) {
  const auto check = hpf::check_programs(programs, micro);
  INFO("checker said: '", check.problem, "' at stage ", check.stage, ", position ", check.position);
  CHECK_FALSE(check.ok);
  CHECK(std::string_view(check.problem) == problem);
  CHECK(check.stage == stage);
  CHECK(check.position == position);
}
constexpr std::string_view deadlock = "deadlock: this stage waits for a message that is never sent";
}  // namespace

// The compile-time use: a broken program is a constant expression that evaluates to "not ok".
// (g++ 12 rejects a nested braced list of vectors in a constant expression: built step by step.)
constexpr bool two_stage_ok(bool swapped) {
  std::vector<std::vector<Instruction>> p(2);
  for (Instruction i : {F(0), SA(0), RG(0), B(0)}) p[0].push_back(i);
  if (swapped) std::swap(p[0][1], p[0][2]);
  for (Instruction i : {RA(0), F(0), B(0), SG(0)}) p[1].push_back(i);
  return hpf::check_programs(p, 1).ok;
}
static_assert(two_stage_ok(false));
static_assert(!two_stage_ok(true));

TEST_CASE("check_schedule is check_programs on the built-in programs") {
  for (std::size_t stages = 1; stages <= 6; ++stages) {
    for (std::size_t micro = 1; micro <= 9; ++micro) {
      for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b}) {
        const auto a = hpf::check_schedule(kind, stages, micro);
        const auto b = hpf::check_programs(built_in(kind, stages, micro), micro);
        CHECK(a.ok == b.ok);
        CHECK(a.peak_in_flight == b.peak_in_flight);
      }
    }
  }
  CHECK_FALSE(hpf::check_schedule(Schedule::gpipe, 2, 0).ok);
  CHECK_FALSE(hpf::check_schedule(Schedule::gpipe, 0, 2).ok);
  CHECK_FALSE(hpf::check_programs({}, 2).ok);
}

TEST_CASE("broken: a receive without its send deadlocks") {
  // Stage 0 of a 2-stage GPipe never sends micro-batch 1's activation: stage 1 waits for it
  // forever, and so does stage 0 for the gradient of micro-batch 0, which stage 1 never reaches.
  Programs p = built_in(Schedule::gpipe, 2, 3);
  erase(p[0], SA(1));
  REQUIRE(hpf::check_programs(built_in(Schedule::gpipe, 2, 3), 3).ok);
  expect_rejected(p, 3, deadlock, 0, index_of(p[0], RG(0)));
  // The same on the gradient side: the last stage forgets one send_gradient; stage 1 then never
  // sends its own, and the first stage found waiting is stage 0.
  p = built_in(Schedule::one_f_one_b, 3, 4);
  erase(p[2], SG(3));
  expect_rejected(p, 4, deadlock, 0, index_of(p[0], RG(3)));
}

TEST_CASE("broken: a send without its receive") {
  Programs p = built_in(Schedule::gpipe, 2, 2);
  erase(p[1], RA(1));
  // Stage 1 then runs forward(1) on an activation it never received.
  expect_rejected(p, 2, "forward before its activation arrived", 1, index_of(p[1], F(1)));
  p = built_in(Schedule::gpipe, 2, 2);
  p[0].insert(p[0].begin() + std::ptrdiff_t(index_of(p[0], SA(1))), SA(1));  // sent twice, received once
  expect_rejected(p, 2, "a message is sent but never received", 0, p[0].size());
}

TEST_CASE("broken: a swapped order deadlocks") {
  // Stage 0 waits for micro-batch 0's gradient before it sends micro-batch 0's activation.
  expect_rejected({{F(0), RG(0), SA(0), B(0)}, {RA(0), F(0), B(0), SG(0)}}, 1, deadlock, 0, 1);
  // Two middle stages of 1F1B with a receive moved ahead of the send the other side waits for.
  Programs p = built_in(Schedule::one_f_one_b, 3, 3);
  auto& s1 = p[1];
  const std::size_t send = index_of(s1, SA(0));
  std::swap(s1[send], s1[index_of(s1, RG(0))]);
  expect_rejected(p, 3, deadlock, 0, index_of(p[0], RG(0)));
}

TEST_CASE("broken: backward before forward, twice, or before its gradient") {
  expect_rejected({{B(0), F(0)}}, 1, "backward before forward", 0, 0);
  expect_rejected({{F(0), B(0), B(0)}}, 1, "a micro-batch goes backward twice", 0, 2);
  expect_rejected({{F(0), F(0), B(0)}}, 1, "a micro-batch goes forward twice", 0, 1);
  expect_rejected({{F(0), SA(0), B(0), RG(0)}, {RA(0), F(0), B(0), SG(0)}}, 1, "backward before its gradient arrived", 0, 2);
  expect_rejected({{F(0), SA(0), RG(0), B(0)}, {RA(0), F(0), SG(0), B(0)}}, 1, "gradient sent before backward", 1, 2);
  expect_rejected({{SA(0), F(0), RG(0), B(0)}, {RA(0), F(0), B(0), SG(0)}}, 1, "activation sent before forward", 0, 0);
}

TEST_CASE("broken: a missing or unknown micro-batch") {
  // Micro-batch 2 left out everywhere: every message matches, but it is never trained.
  Programs p = built_in(Schedule::one_f_one_b, 2, 3);
  for (auto& program : p) std::erase_if(program, [](Instruction i) { return i.micro_batch == 2; });
  expect_rejected(p, 3, "a micro-batch is never trained on this stage", 0, p[0].size());
  // Left out on the last stage only: stage 0's activation is never received.
  p = built_in(Schedule::gpipe, 2, 3);
  std::erase_if(p[1], [](Instruction i) { return i.micro_batch == 2; });
  erase(p[0], RG(2));
  erase(p[0], B(2));
  expect_rejected(p, 3, "a micro-batch is never trained on this stage", 0, p[0].size());
  expect_rejected({{F(0), B(0), F(1), B(1)}}, 1, "micro-batch index out of range", 0, 2);
}

TEST_CASE("broken: messages past the ends of the pipeline") {
  expect_rejected({{RA(0), F(0), B(0)}}, 1, "the first stage receives an activation", 0, 0);
  expect_rejected({{F(0), B(0), SG(0)}}, 1, "the first stage sends a gradient", 0, 2);
  expect_rejected({{F(0), SA(0), B(0)}}, 1, "the last stage sends an activation", 0, 1);
  expect_rejected({{F(0), RG(0), B(0)}}, 1, "the last stage receives a gradient", 0, 1);
}
