// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_RECEIVE_POSTING_HPP
#define HPF_PARALLEL_RECEIVE_POSTING_HPP

#include <hpf/parallel/schedule.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace hpf {

/// \brief When a stage may post each receive of its program: ahead of the forward and backward
/// passes before it, once the receive before it in its direction has completed and its slot's
/// buffers are free, but never ahead of a send.
///
/// Why ahead: over TCP, Open MPI moves a large message (its rendezvous protocol) only once the
/// receiver has posted the matching receive. Posted at its instruction, GPipe's gradients crossed a
/// 1 Gbit/s link one backward pass apart (CNN, 2 stages, M = 8: 4.1 ms per message against 3.3 ms
/// on the wire). Why one per direction: with all of them posted, Open MPI carried the messages
/// side by side and the first arrived with the last. Why not ahead of a send: posted ahead of
/// 1F1B's sends as well, its two directions shared the link's rate instead of each running at it,
/// and the CNN's 1F1B steps took 25-35 % longer.
struct ReceivePosting {
  /// Per program index (receives only): the receive may be posted once instructions [0, after)
  /// have run (0: at the start of the step).
  std::vector<std::size_t> after;
  /// The receives' program indices per direction (activations from the previous stage, gradients
  /// from the next), in program order: the order they are posted in.
  std::array<std::vector<std::size_t>, 2> in_order;

  static constexpr std::size_t activations = 0, gradients = 1;
};

/// The ReceivePosting of a stage's `program` (stage_program) whose micro-batch j lives in slot
/// j % slots (slots_needed): a receive into slot j % slots waits for micro-batch j - slots to have
/// passed backward, which read that slot's input and output gradient.
inline ReceivePosting receive_posting(const std::vector<Instruction>& program, std::size_t slots) {
  ReceivePosting posting{std::vector<std::size_t>(program.size(), 0), {}};
  std::size_t sends_run = 0;  // the sends before k have all run once [0, sends_run) ran
  for (std::size_t k = 0; k < program.size(); ++k) {
    const Instruction in = program[k];
    if (in.op == Op::send_activation || in.op == Op::send_gradient) sends_run = k + 1;
    if (in.op != Op::recv_activation && in.op != Op::recv_gradient) continue;
    std::size_t slot_free = 0;
    if (in.micro_batch >= slots) {
      slot_free = k;  // a checked schedule frees the slot before its next receive at the latest
      for (std::size_t j = 0; j < k; ++j) {
        if (program[j].op == Op::backward && program[j].micro_batch + slots == in.micro_batch) slot_free = j + 1;
      }
    }
    posting.after[k] = std::max(sends_run, slot_free);
    posting.in_order[in.op == Op::recv_activation ? ReceivePosting::activations : ReceivePosting::gradients].push_back(k);
  }
  return posting;
}

/// \brief One step's walk through a ReceivePosting: per direction, the receive in flight and the
/// next to post.
class ReceiveCursor {
 public:
  explicit ReceiveCursor(const ReceivePosting& posting) : posting_(&posting) {}

  /// Posts, per direction, each receive whose turn has come once instructions [0, ran) have run,
  /// one in flight at a time: `post(k)` posts program index k's receive, `done(k)` says whether it
  /// has completed (and may advance it). It asks about the receive in flight also when none is
  /// left to post: over TCP, the sender of a large message waits for its receiver's
  /// acknowledgement, which goes out only while the receiver is inside MPI. Without that question
  /// between the layers, a stage's last activation or gradient of the step waited for its pass to
  /// end (ResNet-20, 2 stages, GPipe, M = 2, 1 Gbit/s: 103-110 ms per step, 89-101 ms with it).
  template <class Done, class Post>
  void advance(std::size_t ran, const Done& done, const Post& post) {
    for (std::size_t d = 0; d < 2; ++d) {
      const std::vector<std::size_t>& queue = posting_->in_order[d];
      for (std::size_t& i = next_[d];; ++i) {
        if (i > 0 && !done(queue[i - 1])) break;
        if (i == queue.size() || posting_->after[queue[i]] > ran) break;
        post(queue[i]);
      }
    }
  }

 private:
  const ReceivePosting* posting_;
  std::array<std::size_t, 2> next_{};  // per direction: the first receive not posted yet
};

}  // namespace hpf

#endif  // HPF_PARALLEL_RECEIVE_POSTING_HPP
