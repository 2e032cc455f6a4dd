// SPDX-License-Identifier: MIT
#ifndef HPF_TRAIN_CHECKPOINTER_HPP
#define HPF_TRAIN_CHECKPOINTER_HPP

#include <hpf/io/checkpoint_format.hpp>
#include <hpf/io/durable_file.hpp>
#include <hpf/io/network_tensors.hpp>
#include <hpf/io/safetensors_reader.hpp>
#include <hpf/optim/optimizer.hpp>
#include <hpf/train/checkpoint_options.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpf {

/// \brief Saves and restores everything a training run needs to go on exactly where it was:
/// weights, buffers, optimizer state, and the position in the data (epoch and step; the order
/// of samples is a function of them, the data seed and the replica count).
///
/// Saving is collective: each stage's first replica writes its stage's two files into a hidden
/// directory next to the last checkpoint, rank 0 adds the training state and, last, the index
/// with every file's size and CRC-32, then renames the directory to `step-<global step>`. A crash
/// at any point leaves the previous checkpoints intact; a half-written one is never picked up.
/// Loading reads from each file only the tensors of this rank's stage, whichever layout wrote
/// them. Any failure stops every rank with the same error.
template <class Engine>
class Checkpointer {
 public:
  using network_type = typename Engine::network_type;
  using T = typename network_type::scalar_type;

  /// \param log where rank 0 says what it saved, resumed or skipped (null: silent)
  Checkpointer(Engine& engine, const CheckpointOptions& options, std::ostream* log)
      : engine_(engine), options_(options), log_(log), last_save_(clock::now()) {}

  /// Loads the checkpoint the options name (resume_from, or the newest intact one with resume)
  /// and returns where training stands; a fresh start (all zeros) without one.
  io::TrainingState resume() {
    const auto& links = engine_.links();
    std::filesystem::path chosen = options_.resume_from;
    if (options_.resume) {
      chosen = links.share_from_first(links.agree([&] {
        return links.first_process() ? newest_intact().string() : std::string();
      }));
      if (chosen.empty()) {
        say("hpf: no checkpoint to resume from in " + options_.directory.string() + "; starting from the beginning");
        return {};
      }
    } else if (!chosen.empty()) {
      links.agree([&] {
        if (links.first_process()) io::verify_checkpoint_files(chosen, io::read_checkpoint_index(chosen));
      });
    } else {
      return {};
    }
    io::TrainingState state = load(chosen);
    last_saved_step_ = state.global_step;
    say("hpf: resumed from " + chosen.string() + " at epoch " + std::to_string(state.epoch) + ", step " +
        std::to_string(state.step) + " (" + std::to_string(state.global_step) + " steps taken)");
    if (state.data_shards != engine_.links().replicas()) {
      say("hpf: warning: the checkpoint was written by " + std::to_string(state.data_shards) + " replicas, this run has " +
          std::to_string(engine_.links().replicas()) + ": the order of samples from here on differs from the original run's");
    }
    return state;
  }

  /// Called after every step with where training now stands; saves when a checkpoint is due
  /// (every_steps, every_seconds, or `last` with at_end).
  void after_step(const io::TrainingState& now, bool last) {
    if (!options_.saves() || now.global_step == last_saved_step_) return;
    bool due = (options_.every_steps && now.global_step % options_.every_steps == 0) || (last && options_.at_end);
    if (options_.every_seconds > 0) {
      const auto& links = engine_.links();
      const bool late = std::chrono::duration<double>(clock::now() - last_save_).count() >= options_.every_seconds;
      due = links.share_from_first(due || late ? "1" : "0") == "1";  // rank 0's clock decides for all
    }
    if (due) save(now);
  }

  /// Writes a checkpoint of the engine at `state` now; returns its directory. Collective.
  std::filesystem::path save(const io::TrainingState& state) {
    namespace fs = std::filesystem;
    const auto& links = engine_.links();
    char name[40];
    std::snprintf(name, sizeof name, "step-%08zu", state.global_step);
    const fs::path final_dir = options_.directory / name;
    std::string hidden = ".";  // appended piece by piece: GCC 12 warns, wrongly, about "." + std::string
    hidden += name;
    hidden += ".partial";
    const fs::path partial = options_.directory / hidden;
    links.agree([&] {
      if (!links.first_process()) return;
      fs::create_directories(options_.directory);
      fs::remove_all(partial);
      fs::create_directory(partial);
    });
    const std::string written = links.agree([&] { return links.writes_stage() ? write_stage(partial) : std::string(); });
    const std::vector<std::string> parts = links.gather_on_first(written);
    if (links.first_process()) crash_here_for_tests(state.global_step);
    links.agree([&] {
      if (links.first_process()) publish(parts, state, partial, final_dir);
    });
    last_saved_step_ = state.global_step;
    last_save_ = clock::now();
    return final_dir;
  }

  /// Restores the engine from checkpoint `directory` (every file already verified) and returns
  /// its training state. Collective.
  io::TrainingState load(const std::filesystem::path& directory) {
    const auto& links = engine_.links();
    io::CheckpointIndex index;
    io::TrainingState state;
    links.agree([&] {
      index = io::read_checkpoint_index(directory);
      state = io::read_training_state(directory);
      check_optimizer(state, directory);
      load_tensors(index, state, directory);
    });
    // Every tensor of every stage fits: a different model is named only now, after the first
    // mismatching tensor had the chance to be.
    links.agree([&] {
      if (index.model != engine_.position().model) {
        throw io::FormatError(directory / io::checkpoint_index_file,
                              "was written by the model '" + index.model + "', not by this one ('" +
                                  engine_.position().model + "')");
      }
    });
    return state;
  }

 private:
  using clock = std::chrono::steady_clock;

  /// Fault injection for tests of crash safety: with HPF_FAULT_KILL_IN_CHECKPOINT=<step>, rank 0
  /// kills itself (SIGKILL) while saving that step's checkpoint, after the stage files are written
  /// and before the index: the moment a crash must not damage the last good checkpoint.
  static void crash_here_for_tests(std::size_t step) {
    const char* at = std::getenv("HPF_FAULT_KILL_IN_CHECKPOINT");
    if (at && *at && std::strtoull(at, nullptr, 10) == step) std::raise(SIGKILL);
  }

  void say(const std::string& line) const {
    if (log_ && engine_.links().first_process()) *log_ << line << std::endl;
  }

  /// This stage's model and optimizer files in `partial`; returns lines for the index:
  /// "F <file> <bytes> <crc32>", "W <tensor> <file>", "O <tensor> <file>".
  std::string write_stage(const std::filesystem::path& partial) {
    const auto& links = engine_.links();
    const std::string model_file = io::shard_file_name("model", links.stage(), links.stages());
    const std::string optimizer_file = io::shard_file_name("optimizer", links.stage(), links.stages());
    const network_type& net = engine_.network();
    std::ostringstream lines;
    const io::Safetensors model = io::network_tensors(net);
    for (const std::string& tensor : model.names()) lines << "W\t" << tensor << '\t' << model_file << '\n';
    io::Safetensors optimizer;
    optimizer.metadata()["optimizer"] = describe(engine_.options().optimizer);
    for (const auto& [slot, values] : engine_.optimizer().state()) {
      for (const TensorInfo& info : net.tensors()) {
        if (info.kind != TensorKind::parameter) continue;
        const std::string tensor = info.name + "." + slot;
        optimizer.add(tensor, info.dims, read_range(values, info.offset, info.size));
        lines << "O\t" << tensor << '\t' << optimizer_file << '\n';
      }
    }
    const auto write = [&](const std::string& file, const io::Safetensors& contents) {
      const io::FileDigest d = io::write_synced(partial / file, contents.serialize());
      lines << "F\t" << file << '\t' << d.bytes << '\t' << d.crc32 << '\n';
    };
    write(model_file, model);
    write(optimizer_file, optimizer);
    return lines.str();
  }

  /// Rank 0: the training state, then the index, then the rename that makes it a checkpoint.
  void publish(const std::vector<std::string>& parts, const io::TrainingState& state, const std::filesystem::path& partial,
               const std::filesystem::path& final_dir) {
    namespace fs = std::filesystem;
    io::CheckpointIndex index;
    index.model = engine_.position().model;
    for (const std::string& part : parts) {
      std::istringstream in(part);
      std::string kind, a, b;
      while (std::getline(in, kind, '\t') && std::getline(in, a, '\t')) {
        if (kind == "F") {
          std::string crc;
          std::getline(in, b, '\t');
          std::getline(in, crc);
          index.files[a] = {std::stoull(b), static_cast<std::uint32_t>(std::stoul(crc))};
        } else {
          std::getline(in, b);
          (kind == "W" ? index.weight_map : index.optimizer_map)[a] = b;
        }
      }
    }
    index.files[io::training_state_file] = io::write_synced(partial / io::training_state_file, io::to_json(state));
    io::write_synced(partial / io::checkpoint_index_file, io::to_json(index));
    io::sync_directory(partial);
    fs::remove_all(final_dir);  // an older save of the same step (a rerun); the new one is complete
    fs::rename(partial, final_dir);
    io::sync_directory(options_.directory);
    say("hpf: saved checkpoint " + final_dir.string());
    if (options_.keep == 0) return;
    std::vector<fs::path> saved = checkpoints();
    for (std::size_t k = options_.keep; k < saved.size(); ++k) fs::remove_all(saved[k]);
  }

  /// Checkpoint directories ("step-*") in `options_.directory`, newest first.
  std::vector<std::filesystem::path> checkpoints() const {
    std::vector<std::filesystem::path> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options_.directory, ec)) {
      if (entry.is_directory() && entry.path().filename().string().rfind("step-", 0) == 0) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.filename() > b.filename(); });
    return found;
  }

  /// Rank 0: the newest checkpoint whose files are all present and intact (empty if none).
  std::filesystem::path newest_intact() const {
    for (const auto& candidate : checkpoints()) {
      try {
        io::verify_checkpoint_files(candidate, io::read_checkpoint_index(candidate));
        io::read_training_state(candidate);
        return candidate;
      } catch (const io::FormatError& e) {
        say(std::string("hpf: warning: skipping a damaged checkpoint: ") + e.what());
      }
    }
    return {};
  }

  void check_optimizer(const io::TrainingState& state, const std::filesystem::path& directory) const {
    const std::string mine = describe(engine_.options().optimizer);
    const auto kind = [](const std::string& d) { return d.substr(0, d.find('(')); };
    if (kind(state.optimizer) != kind(mine)) {
      throw io::FormatError(directory / io::training_state_file, "was written with the optimizer " + state.optimizer +
                                                                     "; this run uses " + mine);
    }
  }

  void load_tensors(const io::CheckpointIndex& index, const io::TrainingState& state, const std::filesystem::path& directory) {
    network_type& net = engine_.network();
    std::map<std::string, std::unique_ptr<io::SafetensorsReader>> readers;
    auto reader = [&](const std::map<std::string, std::string>& map, const std::string& tensor,
                      const char* what) -> io::SafetensorsReader& {
      const auto it = map.find(tensor);
      if (it == map.end()) {
        throw io::FormatError(directory, std::string("has no ") + what + " '" + tensor +
                                             "' that this model has (was it written by another model? it names '" +
                                             index.model + "')");
      }
      auto& open = readers[it->second];
      if (!open) open = std::make_unique<io::SafetensorsReader>(directory / it->second);
      return *open;
    };
    auto check_shape = [&](io::SafetensorsReader& file, const std::string& tensor, const std::vector<std::size_t>& dims) {
      const auto& shape = file.describe(tensor).shape;
      if (shape != dims) {
        throw io::FormatError(file.file(), "tensor '" + tensor + "' is " + io::shape_text(shape) +
                                               " in the checkpoint but " + io::shape_text(dims) +
                                               " in this model (was it written by another model? it names '" + index.model + "')");
      }
    };
    for (const TensorInfo& info : net.tensors()) check_shape(reader(index.weight_map, info.name, "tensor"), info.name, info.dims);
    const auto slots = engine_.optimizer().state();
    for (const auto& [slot, values] : slots) {
      for (const TensorInfo& info : net.tensors()) {
        if (info.kind != TensorKind::parameter) continue;
        const std::string tensor = info.name + "." + slot;
        check_shape(reader(index.optimizer_map, tensor, "optimizer state"), tensor, info.dims);
      }
    }
    for (const TensorInfo& info : net.tensors()) {
      net.write(info, reader(index.weight_map, info.name, "tensor").template read_converted<T>(info.name));
    }
    for (const auto& [slot, values] : slots) {
      for (const TensorInfo& info : net.tensors()) {
        if (info.kind != TensorKind::parameter) continue;
        const std::string tensor = info.name + "." + slot;
        write_range(values, info.offset, reader(index.optimizer_map, tensor, "optimizer state").template read_converted<T>(tensor));
      }
    }
    engine_.optimizer().set_steps(state.optimizer_steps);
  }

  Engine& engine_;
  CheckpointOptions options_;
  std::ostream* log_;
  clock::time_point last_save_;
  std::size_t last_saved_step_ = static_cast<std::size_t>(-1);
};

}  // namespace hpf

#endif  // HPF_TRAIN_CHECKPOINTER_HPP
