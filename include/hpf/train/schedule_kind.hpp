// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_SCHEDULE_KIND_HPP
#define HPF_TRAIN_SCHEDULE_KIND_HPP

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

}  // namespace hpf

#endif  // HPF_TRAIN_SCHEDULE_KIND_HPP
