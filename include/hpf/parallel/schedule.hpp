// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_SCHEDULE_HPP
#define HPF_PARALLEL_SCHEDULE_HPP

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hpf {

/// Order in which a pipeline stage runs the forward and backward passes of its micro-batches.
enum class Schedule {
  /// GPipe (fill-drain): all forwards, then all backwards; keeps every micro-batch's activations.
  gpipe,
  /// 1F1B (PipeDream-flush): after a warm-up, alternate one forward and one backward; stage s keeps
  /// at most S - s micro-batches of activations.
  one_f_one_b,
};

inline const char* to_string(Schedule s) { return s == Schedule::gpipe ? "gpipe" : "1f1b"; }

/// One step of a stage's program for one training step.
enum class Op : std::uint8_t {
  recv_activation,  ///< from the previous stage, into the micro-batch's input
  forward,
  send_activation,  ///< the micro-batch's output, to the next stage
  recv_gradient,    ///< from the next stage: gradient w.r.t. this stage's output
  backward,
  send_gradient,    ///< gradient w.r.t. this stage's input, to the previous stage
};

struct Instruction {
  Op op;
  std::uint32_t micro_batch;
  friend constexpr bool operator==(const Instruction&, const Instruction&) = default;
};

/// \brief Calls emit(Instruction) for the program of `stage` (of `stages`) training `micro`
/// micro-batches under `kind`. A pure function of its arguments: every rank derives the same
/// programs, at run time or at compile time.
template <class Emit>
constexpr void for_each_instruction(Schedule kind, std::size_t stages, std::size_t stage, std::size_t micro, Emit&& emit) {
  const bool first = stage == 0, last = stage + 1 == stages;
  auto forward = [&](std::size_t m) {
    const auto mb = static_cast<std::uint32_t>(m);
    if (!first) emit(Instruction{Op::recv_activation, mb});
    emit(Instruction{Op::forward, mb});
    if (!last) emit(Instruction{Op::send_activation, mb});
  };
  auto backward = [&](std::size_t m) {
    const auto mb = static_cast<std::uint32_t>(m);
    if (!last) emit(Instruction{Op::recv_gradient, mb});
    emit(Instruction{Op::backward, mb});
    if (!first) emit(Instruction{Op::send_gradient, mb});
  };
  if (kind == Schedule::gpipe) {
    for (std::size_t m = 0; m < micro; ++m) forward(m);
    for (std::size_t m = 0; m < micro; ++m) backward(m);
    return;
  }
  // 1F1B: warm up with the forwards that fill the pipeline below this stage, then alternate.
  const std::size_t warmup = stages - stage - 1 < micro ? stages - stage - 1 : micro;
  for (std::size_t m = 0; m < warmup; ++m) forward(m);
  for (std::size_t m = warmup; m < micro; ++m) {
    forward(m);
    backward(m - warmup);
  }
  for (std::size_t m = micro - warmup; m < micro; ++m) backward(m);
}

/// The program of one stage as a sequence.
constexpr std::vector<Instruction> stage_program(Schedule kind, std::size_t stages, std::size_t stage, std::size_t micro) {
  // At most a receive, a pass and a send per micro-batch and direction: written in place (an
  // oracle query builds thousands of programs).
  std::vector<Instruction> program(6 * micro);
  std::size_t size = 0;
  for_each_instruction(kind, stages, stage, micro, [&](Instruction i) { program[size++] = i; });
  program.resize(size);
  return program;
}

/// Outcome of checking all stages' programs against each other.
struct ScheduleCheck {
  bool ok = false;
  const char* problem = "";      ///< what went wrong, if anything
  std::size_t stage = 0;         ///< where
  std::size_t position = 0;      ///< instruction index in that stage's program
  std::size_t peak_in_flight = 0;  ///< most micro-batches any stage holds between forward and backward
};

/// \brief Runs any per-stage programs against each other (`programs[s]` is stage s's program for
/// one step of `micro` micro-batches): sends complete at once (hpf uses non-blocking sends), a
/// receive waits for its peer's matching send. Succeeds when every stage finishes, every send is
/// received by the right peer, and every micro-batch goes forward then backward exactly once on
/// every stage; `peak_in_flight` is then the most micro-batches a stage holds. On failure,
/// `problem`, `stage` and `position` name the first instruction found wrong, or where a stage is
/// stuck. check_schedule runs the built-in programs through it.
constexpr ScheduleCheck check_programs(const std::vector<std::vector<Instruction>>& programs, std::size_t micro) {
  ScheduleCheck result;
  const std::size_t stages = programs.size();
  if (stages == 0 || micro == 0) {
    result.problem = "a pipeline needs at least one stage and one micro-batch";
    return result;
  }
  // Flat per (stage, micro-batch) state, index s * micro + m. Messages in flight on each link:
  // activations s -> s+1 counted at s, gradients s+1 -> s counted at s.
  const std::size_t cells = stages * micro;
  std::vector<int> activation_sent(cells, 0), gradient_sent(cells, 0);
  std::vector<int> received_act(cells, 0), forwarded(cells, 0), received_grad(cells, 0), backwarded(cells, 0);
  std::vector<std::size_t> pc(stages, 0), in_flight(stages, 0);
  auto fail = [&](const char* what, std::size_t s) {
    result.problem = what;
    result.stage = s;
    result.position = pc[s];
    return result;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < stages; ++s) {
      while (pc[s] < programs[s].size()) {
        const Instruction in = programs[s][pc[s]];
        const std::size_t m = in.micro_batch;
        if (m >= micro) return fail("micro-batch index out of range", s);
        const std::size_t here = s * micro + m;
        bool blocked = false;
        switch (in.op) {
          case Op::recv_activation:
            if (s == 0) return fail("the first stage receives an activation", s);
            if (activation_sent[here - micro] == 0) {
              blocked = true;
            } else {
              --activation_sent[here - micro];
              ++received_act[here];
            }
            break;
          case Op::forward:
            if (s > 0 && received_act[here] != 1) return fail("forward before its activation arrived", s);
            if (forwarded[here]++) return fail("a micro-batch goes forward twice", s);
            if (++in_flight[s] > result.peak_in_flight) result.peak_in_flight = in_flight[s];
            break;
          case Op::send_activation:
            if (s + 1 == stages) return fail("the last stage sends an activation", s);
            if (!forwarded[here]) return fail("activation sent before forward", s);
            ++activation_sent[here];
            break;
          case Op::recv_gradient:
            if (s + 1 == stages) return fail("the last stage receives a gradient", s);
            if (gradient_sent[here] == 0) {
              blocked = true;
            } else {
              --gradient_sent[here];
              ++received_grad[here];
            }
            break;
          case Op::backward:
            if (!forwarded[here]) return fail("backward before forward", s);
            if (s + 1 < stages && received_grad[here] != 1) return fail("backward before its gradient arrived", s);
            if (backwarded[here]++) return fail("a micro-batch goes backward twice", s);
            --in_flight[s];
            break;
          case Op::send_gradient:
            if (s == 0) return fail("the first stage sends a gradient", s);
            if (!backwarded[here]) return fail("gradient sent before backward", s);
            ++gradient_sent[here - micro];
            break;
        }
        if (blocked) break;
        ++pc[s];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < stages; ++s) {
    if (pc[s] < programs[s].size()) return fail("deadlock: this stage waits for a message that is never sent", s);
    for (std::size_t m = 0; m < micro; ++m) {
      const std::size_t here = s * micro + m;
      if (!forwarded[here] || !backwarded[here]) return fail("a micro-batch is never trained on this stage", s);
      if (activation_sent[here] || gradient_sent[here]) return fail("a message is sent but never received", s);
    }
  }
  result.ok = true;
  return result;
}

/// \brief check_programs on the programs of every stage of `stages` training `micro`
/// micro-batches under `kind` (stage_program).
constexpr ScheduleCheck check_schedule(Schedule kind, std::size_t stages, std::size_t micro) {
  std::vector<std::vector<Instruction>> programs;
  for (std::size_t s = 0; s < stages; ++s) programs.push_back(stage_program(kind, stages, s, micro));
  return check_programs(programs, micro);
}

/// Micro-batches stage `stage` holds at most under `kind`: its activation slots.
constexpr std::size_t slots_needed(Schedule kind, std::size_t stages, std::size_t stage, std::size_t micro) {
  std::size_t live = 0, peak = 0;
  for_each_instruction(kind, stages, stage, micro, [&](Instruction i) {
    if (i.op == Op::forward && ++live > peak) peak = live;
    if (i.op == Op::backward) --live;
  });
  return peak;
}

namespace detail {
template <Schedule Kind, std::size_t Stages, std::size_t Micro>
inline constexpr bool schedule_ok = check_schedule(Kind, Stages, Micro).ok;

template <std::size_t Stages, std::size_t... M>
constexpr bool schedules_ok(std::index_sequence<M...>) {
  return ((schedule_ok<Schedule::gpipe, Stages, M + 1> && schedule_ok<Schedule::one_f_one_b, Stages, M + 1>) && ...);
}
}  // namespace detail

/// \brief True when both schedules check out for `Stages` stages and every micro-batch count up
/// to `MaxMicro` (the default covers fewer, as many and more micro-batches than stages, i.e. every
/// shape of 1F1B's warm-up): what hpf::fit asserts at compile time for the stage count it
/// instantiates. Other micro-batch counts are checked at run time before training starts.
/// Each (schedule, micro-batch count) is its own constant expression: nvcc's front end caps the
/// work of one evaluation and gives up on a loop over all of them from 8 stages on.
template <std::size_t Stages, std::size_t MaxMicro = 2 * Stages + 2>
constexpr bool schedules_verified() {
  return detail::schedules_ok<Stages>(std::make_index_sequence<MaxMicro>{});
}

}  // namespace hpf

#endif  // HPF_PARALLEL_SCHEDULE_HPP
