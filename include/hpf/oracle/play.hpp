// SPDX-License-Identifier: MIT
#ifndef HPF_ORACLE_PLAY_HPP
#define HPF_ORACLE_PLAY_HPP

#include <hpf/parallel/schedule.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

/// \file
/// \brief The oracle's play of a pipeline's stage programs: each stage runs its passes in order, a
/// receive waits for its message, messages queue on their links, and the ranks computing at one
/// moment share the host's cores (processor sharing). predict() plays every plan it prices; a
/// `rank` query plays dozens, tens of thousands of events, so the play keeps its state in flat
/// arrays and local variables.

namespace hpf::oracle::detail {

/// Times of one stage's micro-batch of `m` samples, from the calibrated units (each unit's
/// backward: unit_backward).
struct StageTimes {
  double forward = 0, backward = 0;
};

/// One micro-batch's message between neighbouring stages: its lone latency and how long it keeps
/// the link busy in a stream (message_cost prices it).
struct MessageCost {
  double latency = 0, busy = 0;
};

/// One direction of the link between two neighbouring stages, as the play sees it: messages
/// queue on it one at a time; each arrives its lone latency after it starts and keeps the link
/// busy its streaming time.
struct LinkQueue {
  double free_at = 0;  ///< when the next message may start
  /// When a message sent at `now` arrives.
  double send(double now, const MessageCost& m) {
    const double start = std::max(now, free_at);
    free_at = start + m.busy;
    return start + m.latency;
  }
};

/// Every stage's program (stage_program) as its passes in order, in one array, stage s's at
/// [begin[s], begin[s + 1]). A program runs each pass between the receive and the send its stage's
/// place implies (for_each_instruction): a forward receives the previous stage's activations and
/// sends the next one its own, a backward receives the next stage's gradient and sends the previous
/// one its own; the first stage receives no activations and the last no gradient. The play steps
/// pass by pass, and a query plays thousands of programs, built without one allocation each.
struct StagePasses {
  struct Pass {
    bool backward = false;
    std::uint32_t micro_batch = 0;
  };
  std::vector<Pass> passes;
  std::vector<std::size_t> begin;
  StagePasses(Schedule kind, std::size_t stages, std::size_t micro) : passes(2 * micro * stages), begin(stages + 1, 0) {
    std::size_t size = 0;
    for (std::size_t s = 0; s < stages; ++s) {
      for_each_instruction(kind, stages, s, micro, [&](Instruction i) {
        if (i.op == Op::forward || i.op == Op::backward) passes[size++] = {i.op == Op::backward, i.micro_batch};
      });
      begin[s + 1] = size;
    }
  }
  std::span<const Pass> operator[](std::size_t s) const { return {passes.data() + begin[s], passes.data() + begin[s + 1]}; }
};

/// The play's pending events, each a time and a stage, kept sorted earliest first from a moving
/// head: taking the earliest moves the head, and a new one, almost always the latest (a pass ends
/// after those begun before it), is placed by a short scan from the back. Events of equal times
/// are taken in the order they came. At the few dozen events a play holds at once this beats a
/// binary heap, whose every level is a branch the processor cannot predict.
class EventQueue {
 public:
  /// Room for `capacity` events at once (a play holds at most one per stage in each queue).
  explicit EventQueue(std::size_t capacity) : events_(std::max<std::size_t>(1, capacity)) {}
  bool empty() const { return head_ == tail_; }
  double earliest_time() const { return events_[head_].at; }
  std::size_t earliest_stage() const { return events_[head_].stage; }
  void pop() {
    if (++head_ == tail_) head_ = tail_ = 0;  // empty: start again at the front
  }
  void push(double at, std::size_t stage) {
    if (tail_ == events_.size()) make_room();
    std::size_t place = tail_++;  // a place at the back, then the later ones move up past the new one
    for (; place > head_ && events_[place - 1].at > at; --place) events_[place] = events_[place - 1];
    events_[place] = Event{at, stage};
  }

 private:
  /// No room at the back: drops the taken ones, or makes more room.
  void make_room() {
    if (head_ == 0) events_.resize(2 * events_.size());
    std::copy(events_.begin() + static_cast<std::ptrdiff_t>(head_), events_.begin() + static_cast<std::ptrdiff_t>(tail_),
              events_.begin());
    tail_ -= head_;
    head_ = 0;
  }

  struct Event {
    double at;
    std::size_t stage;
  };
  std::vector<Event> events_;  // the pending ones at [head_, tail_)
  std::size_t head_ = 0, tail_ = 0;
};

/// What a play reads, per stage s of `stages`: its passes' times, what its micro-batch's messages
/// to s + 1 and s - 1 cost, and the rate at which each computing stage progresses while `active`
/// of them compute (rate_of[active], active in [0, stages]).
struct PlayInput {
  const StagePasses* programs = nullptr;
  const StageTimes* times = nullptr;
  const MessageCost* to_next = nullptr;
  const MessageCost* to_previous = nullptr;
  const double* rate_of = nullptr;
  std::size_t stages = 0, micro_batches = 0;
  bool with_transfers = true;  ///< false: every message arrives as it is sent
};

/// What a play found, per stage: when its program ended, when its last backward began and ended,
/// and how long it computed.
struct Played {
  explicit Played(std::size_t stages) : end(stages), last_backward_start(stages), last_backward_end(stages), computing(stages) {}
  std::vector<double> end, last_backward_start, last_backward_end, computing;
};

namespace play_detail {

using Pass = StagePasses::Pass;

/// What a pass of stage s of `stages` receives before it runs, and sends after it.
inline bool receives(std::size_t s, std::size_t stages, Pass p) { return p.backward ? s + 1 < stages : s > 0; }
inline bool sends(std::size_t s, std::size_t stages, Pass p) { return p.backward ? s > 0 : s + 1 < stages; }

/// Where each stage is in its program.
struct Cursor {
  const Pass* next = nullptr;  ///< the pass to run, or whose send is due
  const Pass* end = nullptr;
  bool waiting = false;  ///< at the receive before `next`, whose message is not sent yet
  bool passed = false;   ///< `next` has run: the send after it is due
  /// Messages to the next and the previous stage queue on their link.
  LinkQueue forward_link, backward_link;
};

inline std::vector<Cursor> at_start(const StagePasses& programs, std::size_t stages) {
  std::vector<Cursor> stage(stages);
  for (std::size_t s = 0; s < stages; ++s) {
    stage[s].next = programs[s].data();
    stage[s].end = programs[s].data() + programs[s].size();
  }
  return stage;
}

}  // namespace play_detail

/// \brief Plays the programs with events: a stage's pass ends, or a message reaches a stage waiting
/// for it; only the stages an event touches move. The computing stages share the cores alike, so
/// all progress at one rate: each pass's end is kept in work seconds (what every computing stage
/// has computed since the start), which the rate turns into time.
inline Played play(const PlayInput& in) {
  using play_detail::Pass;
  const std::size_t S = in.stages, M = in.micro_batches;
  Played out(S);
  double* const program_end = out.end.data();
  double* const backward_start = out.last_backward_start.data();
  double* const backward_end = out.last_backward_end.data();
  double* const computing = out.computing.data();
  // When each stage's micro-batch message arrives (stage s, micro-batch mb at s * M + mb): the
  // activations', then the gradients'; -1 until it is sent.
  std::vector<double> arrival(2 * S * M, -1), started(S, 0);  // started: when each stage's running pass began
  double* const activation = arrival.data();
  double* const gradient = activation + S * M;
  double* const pass_start = started.data();
  std::vector<play_detail::Cursor> cursors = play_detail::at_start(*in.programs, S);
  play_detail::Cursor* const stage = cursors.data();
  // Stages that may move now, [0, ready): a stage is in one place at a time (here, computing,
  // waiting for a message or for its arrival, done), so at most S.
  std::vector<std::size_t> ready_stack(S);
  std::size_t* const ready_stages = ready_stack.data();
  std::size_t ready = S;
  for (std::size_t s = 0; s < S; ++s) ready_stages[s] = s;
  EventQueue ends_in_work(S), arrivals(S);  // in work seconds, in time
  double now = 0, work = 0;
  std::size_t active = 0, done = 0;
  const bool transfers = in.with_transfers;
  const auto deliver = [&](std::size_t to, bool to_backward, std::uint32_t mb, double at) {
    (to_backward ? gradient : activation)[to * M + mb] = at;
    play_detail::Cursor& peer = stage[to];
    if (!peer.waiting || peer.next->backward != to_backward || peer.next->micro_batch != mb) return;
    peer.waiting = false;
    if (at <= now) {
      ready_stages[ready++] = to;
    } else {
      arrivals.push(at, to);
    }
  };
  const auto advance = [&](std::size_t s) {  // sends what stage s's pass sends, then starts its next pass
    play_detail::Cursor& st = stage[s];
    if (st.passed) {
      st.passed = false;
      const Pass p = *st.next;
      if (play_detail::sends(s, S, p)) {
        if (p.backward) {
          deliver(s - 1, true, p.micro_batch, transfers ? st.backward_link.send(now, in.to_previous[s]) : now);
        } else {
          deliver(s + 1, false, p.micro_batch, transfers ? st.forward_link.send(now, in.to_next[s]) : now);
        }
      }
      if (++st.next == st.end) {
        program_end[s] = now;
        ++done;
        return;
      }
    }
    const Pass p = *st.next;
    if (play_detail::receives(s, S, p)) {
      const double at = (p.backward ? gradient : activation)[s * M + p.micro_batch];
      if (at < 0) {
        st.waiting = true;
        return;
      }
      if (at > now) {
        arrivals.push(at, s);
        return;
      }
    }
    ++active;
    pass_start[s] = now;
    ends_in_work.push(work + (p.backward ? in.times[s].backward : in.times[s].forward), s);
    if (p.backward) backward_start[s] = now;
  };
  for (;;) {
    while (ready > 0) advance(ready_stages[--ready]);
    if (done == S) break;
    const double rate = in.rate_of[active];
    double wake = arrivals.empty() ? std::numeric_limits<double>::infinity() : arrivals.earliest_time();
    if (!ends_in_work.empty()) wake = std::min(wake, now + (ends_in_work.earliest_time() - work) / rate);
    if (!std::isfinite(wake)) break;  // cannot happen for a checked schedule
    work += (wake - now) * rate;
    now = wake;
    const double tolerance = 1e-12 * std::max(1.0, wake);
    while (!ends_in_work.empty() && ends_in_work.earliest_time() - work <= tolerance) {
      const std::size_t s = ends_in_work.earliest_stage();
      ends_in_work.pop();
      --active;
      computing[s] += now - pass_start[s];
      if (stage[s].next->backward) backward_end[s] = now;
      stage[s].passed = true;
      ready_stages[ready++] = s;
    }
    while (!arrivals.empty() && arrivals.earliest_time() <= now) {
      ready_stages[ready++] = arrivals.earliest_stage();
      arrivals.pop();
    }
  }
  return out;
}

/// \brief Plays the programs where every rank keeps its core however many compute (rate 1): a
/// stage's times follow from its own program and its messages' arrivals alone, so the programs run
/// one after another, each until it waits for a message not yet sent, with no events to order (the
/// play's step in a few operations per pass).
inline Played sweep(const PlayInput& in) {
  using play_detail::Pass;
  const std::size_t S = in.stages, M = in.micro_batches;
  Played out(S);
  std::vector<double> arrival(2 * S * M, -1);  // as in the play
  double* const activation = arrival.data();
  double* const gradient = activation + S * M;
  std::vector<play_detail::Cursor> stage = play_detail::at_start(*in.programs, S);
  std::vector<double> clock(S, 0);  // each stage's own time
  std::vector<std::size_t> ready(S);
  for (std::size_t s = 0; s < S; ++s) ready[s] = S - 1 - s;
  const auto deliver = [&](double* arrivals, std::size_t to, std::size_t mb, double at) {
    arrivals[to * M + mb] = at;
    if (stage[to].waiting) {  // it looks again at what it waits for
      stage[to].waiting = false;
      ready.push_back(to);
    }
  };
  while (!ready.empty()) {
    const std::size_t s = ready.back();
    ready.pop_back();
    play_detail::Cursor& st = stage[s];
    double& now = clock[s];
    for (; st.next != st.end; ++st.next) {
      const Pass p = *st.next;
      if (play_detail::receives(s, S, p)) {
        const double at = (p.backward ? gradient : activation)[s * M + p.micro_batch];
        if (at < 0) break;
        now = std::max(now, at);
      }
      if (p.backward) {
        out.last_backward_start[s] = now;
        now += in.times[s].backward;
        out.computing[s] += in.times[s].backward;
        out.last_backward_end[s] = now;
      } else {
        now += in.times[s].forward;
        out.computing[s] += in.times[s].forward;
      }
      if (!play_detail::sends(s, S, p)) continue;
      if (p.backward) {
        deliver(gradient, s - 1, p.micro_batch, in.with_transfers ? st.backward_link.send(now, in.to_previous[s]) : now);
      } else {
        deliver(activation, s + 1, p.micro_batch, in.with_transfers ? st.forward_link.send(now, in.to_next[s]) : now);
      }
    }
    if (st.next != st.end) {
      st.waiting = true;
    } else {
      out.end[s] = now;
    }
  }
  return out;
}

}  // namespace hpf::oracle::detail

#endif  // HPF_ORACLE_PLAY_HPP
