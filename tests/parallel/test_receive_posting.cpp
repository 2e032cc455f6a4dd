#include <hpf/parallel/receive_posting.hpp>
#include <hpf/parallel/schedule.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

using hpf::Op;
using hpf::Schedule;

namespace {

bool is_receive(Op op) { return op == Op::recv_activation || op == Op::recv_gradient; }
bool is_send(Op op) { return op == Op::send_activation || op == Op::send_gradient; }

/// Index in `program` of the first instruction of micro-batch `mb` with `op`, or program.size().
std::size_t index_of(const std::vector<hpf::Instruction>& program, Op op, std::size_t mb) {
  for (std::size_t k = 0; k < program.size(); ++k) {
    if (program[k].op == op && program[k].micro_batch == mb) return k;
  }
  return program.size();
}

}  // namespace

TEST_CASE("receive posting: never into a slot still in use, never ahead of a send, in program order") {
  for (std::size_t stages = 2; stages <= 8; ++stages) {
    for (std::size_t micro = 1; micro <= 20; ++micro) {
      for (Schedule kind : {Schedule::gpipe, Schedule::one_f_one_b}) {
        for (std::size_t stage = 0; stage < stages; ++stage) {
          const auto program = hpf::stage_program(kind, stages, stage, micro);
          const std::size_t slots = hpf::slots_needed(kind, stages, stage, micro);
          const hpf::ReceivePosting posting = hpf::receive_posting(program, slots);
          INFO("S=", stages, " stage ", stage, " M=", micro, " ", std::string(hpf::to_string(kind)));
          std::size_t receives = 0;
          for (std::size_t k = 0; k < program.size(); ++k) {
            if (!is_receive(program[k].op)) continue;
            ++receives;
            const std::size_t after = posting.after[k];
            CHECK(after <= k);  // at its own instruction at the latest
            for (std::size_t j = after; j < k; ++j) CHECK_FALSE(is_send(program[j].op));
            // Every other micro-batch of the same slot that started before is past backward by then.
            const std::size_t mb = program[k].micro_batch;
            for (std::size_t other = mb % slots; other < mb; other += slots) {
              CHECK(index_of(program, Op::backward, other) < after);
            }
          }
          // Each direction in program order, every receive once.
          CHECK(posting.in_order[0].size() + posting.in_order[1].size() == receives);
          for (const auto& queue : posting.in_order) {
            for (std::size_t i = 1; i < queue.size(); ++i) CHECK(queue[i - 1] < queue[i]);
          }
          for (std::size_t k : posting.in_order[hpf::ReceivePosting::activations]) CHECK(program[k].op == Op::recv_activation);
          for (std::size_t k : posting.in_order[hpf::ReceivePosting::gradients]) CHECK(program[k].op == Op::recv_gradient);
        }
      }
    }
  }
}

TEST_CASE("receive posting: GPipe's receives move ahead of the passes, 1F1B's stay behind its sends") {
  // GPipe, 2 stages, M = 4. Stage 1 holds every micro-batch and sends nothing before its
  // backwards: all its activation receives may be posted at the start (one at a time).
  {
    const auto program = hpf::stage_program(Schedule::gpipe, 2, 1, 4);
    const auto posting = hpf::receive_posting(program, 4);
    for (std::size_t mb = 0; mb < 4; ++mb) CHECK(posting.after[index_of(program, Op::recv_activation, mb)] == 0);
  }
  // Stage 0 receives the gradients after its last activation send (F0 S0 ... F3 S3 R0 B0 R1 B1 ...):
  // each may be posted from then on, ahead of the backwards before it.
  {
    const auto program = hpf::stage_program(Schedule::gpipe, 2, 0, 4);
    const auto posting = hpf::receive_posting(program, 4);
    const std::size_t last_send = index_of(program, Op::send_activation, 3);
    for (std::size_t mb = 0; mb < 4; ++mb) CHECK(posting.after[index_of(program, Op::recv_gradient, mb)] == last_send + 1);
  }
  // 1F1B, last of 2 stages, one slot: R0 F0 B0 S0 R1 F1 B1 S1 ...: each receive follows a send, so
  // it is posted at its own instruction.
  {
    const auto program = hpf::stage_program(Schedule::one_f_one_b, 2, 1, 3);
    const auto posting = hpf::receive_posting(program, 1);
    for (std::size_t mb = 1; mb < 3; ++mb) {
      const std::size_t k = index_of(program, Op::recv_activation, mb);
      CHECK(posting.after[k] == k);
    }
  }
}

TEST_CASE("receive cursor: one receive in flight per direction, asked about until it completes, also the last") {
  // GPipe, last of 2 stages, M = 2: both activation receives may be posted at the start.
  const auto program = hpf::stage_program(Schedule::gpipe, 2, 1, 2);
  const auto posting = hpf::receive_posting(program, 2);
  const std::size_t first = index_of(program, Op::recv_activation, 0);
  const std::size_t second = index_of(program, Op::recv_activation, 1);
  std::vector<bool> complete(program.size(), false);
  std::vector<std::size_t> posted, asked;
  hpf::ReceiveCursor cursor(posting);
  const auto advance = [&] {
    asked.clear();
    cursor.advance(
        0,
        [&](std::size_t k) {
          asked.push_back(k);
          return static_cast<bool>(complete[k]);
        },
        [&](std::size_t k) { posted.push_back(k); });
  };

  advance();  // the first is posted; the second waits for it
  CHECK(posted == std::vector<std::size_t>{first});
  CHECK(asked == std::vector<std::size_t>{first});
  advance();  // nothing new while the first is in flight
  CHECK(posted == std::vector<std::size_t>{first});
  complete[first] = true;
  advance();
  CHECK(posted == std::vector<std::size_t>{first, second});
  // With nothing left to post, the last receive in flight is still asked about on every call:
  // that question is what lets its message move over TCP while the stage computes.
  for (int call = 0; call < 3; ++call) {
    advance();
    CHECK(asked == std::vector<std::size_t>{second});
  }
  complete[second] = true;
  advance();
  CHECK(posted == std::vector<std::size_t>{first, second});
}

TEST_CASE("receive cursor: a receive waits for the instructions before its turn") {
  // GPipe, first of 2 stages, M = 2: the gradient receives wait for the last activation send.
  const auto program = hpf::stage_program(Schedule::gpipe, 2, 0, 2);
  const auto posting = hpf::receive_posting(program, 2);
  const std::size_t first = index_of(program, Op::recv_gradient, 0);
  std::vector<std::size_t> posted;
  hpf::ReceiveCursor cursor(posting);
  const auto advance = [&](std::size_t ran) {
    cursor.advance(ran, [](std::size_t) { return true; }, [&](std::size_t k) { posted.push_back(k); });
  };
  advance(posting.after[first] - 1);
  CHECK(posted.empty());
  advance(posting.after[first]);
  CHECK(posted == std::vector<std::size_t>{first, index_of(program, Op::recv_gradient, 1)});
}
