// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_CHECKPOINT_OPTIONS_HPP
#define HPF_TRAIN_CHECKPOINT_OPTIONS_HPP

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace hpf {

/// \brief When a training run saves checkpoints and where it resumes from (hpf::Checkpointer).
/// Checkpoints are directories `<directory>/step-<global step>` (see hpf/io/checkpoint_format.hpp);
/// every rank must see `directory` (a shared file system on a cluster).
struct CheckpointOptions {
  /// Where checkpoints go; empty: none are written.
  std::filesystem::path directory;
  /// Save after every this many optimizer steps (0: not by step count).
  std::size_t every_steps = 0;
  /// Save when this many seconds have passed since the last save (0: not by time). Rank 0's
  /// clock decides, for every rank.
  double every_seconds = 0;
  /// Save after the last step.
  bool at_end = true;
  /// Keep the newest this many checkpoints, deleting older ones (0: keep all).
  std::size_t keep = 3;
  /// Resume from the newest intact checkpoint in `directory` (damaged ones are skipped, with a
  /// warning); start from the beginning if there is none.
  bool resume = false;
  /// Resume from this checkpoint directory; any problem with it is an error.
  std::filesystem::path resume_from;

  bool saves() const noexcept { return !directory.empty(); }

  /// Throws std::invalid_argument naming the first inconsistent setting.
  void check() const {
    if (every_seconds < 0) throw std::invalid_argument("hpf: checkpoint every_seconds must not be negative");
    if ((every_steps || every_seconds > 0 || resume) && directory.empty()) {
      throw std::invalid_argument("hpf: checkpoints every N steps or seconds, or resume, need a checkpoint directory");
    }
    if (resume && !resume_from.empty()) {
      throw std::invalid_argument("hpf: give either checkpoint resume (the newest in the directory) or resume_from, not both");
    }
  }
};

}  // namespace hpf

#endif  // HPF_TRAIN_CHECKPOINT_OPTIONS_HPP
