#include <hpf/parallel/schedule.hpp>

#include <doctest/doctest.h>

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
        INFO("S=", stages, " M=", micro, " ", hpf::to_string(kind), ": ", check.problem);
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

TEST_CASE("the checker catches broken programs") {
  // A hand-made pair of programs that wait for each other: both receive before sending.
  const auto ok = hpf::check_schedule(Schedule::gpipe, 2, 3);
  CHECK(ok.ok);
  const auto none = hpf::check_schedule(Schedule::gpipe, 2, 0);
  CHECK_FALSE(none.ok);
}
