// SPDX-License-Identifier: MIT
#ifndef HPF_IO_CHECKPOINT_FORMAT_HPP
#define HPF_IO_CHECKPOINT_FORMAT_HPP

#include <hpf/io/detail/json.hpp>
#include <hpf/io/durable_file.hpp>
#include <hpf/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

/// \brief The on-disk form of a training checkpoint: a directory holding
///   model-0000k-of-0000S.safetensors      stage k's parameters and buffers (PyTorch names)
///   optimizer-0000k-of-0000S.safetensors  stage k's optimizer state ("<tensor>.exp_avg", ...)
///   training_state.json                   where training stands (TrainingState)
///   model.safetensors.index.json          written last: format, version, model, the
///                                         weight_map of sharded safetensors, and every file's
///                                         size and CRC-32
/// Tensors are named per layer, not per process, so a checkpoint written by one layout loads
/// into any other of the same model.
namespace hpf::io {

inline constexpr const char* checkpoint_format_name = "hpf-checkpoint";
/// Raised when the format changes; a reader refuses newer versions.
inline constexpr std::uint64_t checkpoint_format_version = 1;
inline constexpr const char* checkpoint_index_file = "model.safetensors.index.json";
inline constexpr const char* training_state_file = "training_state.json";

/// "model-00002-of-00004.safetensors" for stage 1 of 4 (numbered from 1, as sharded
/// safetensors are).
inline std::string shard_file_name(const char* kind, std::size_t stage, std::size_t stages) {
  char name[96];
  std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", kind, stage + 1, stages);
  return name;
}

/// Where training stands at a checkpoint: the next step to run and what produced the state.
struct TrainingState {
  std::size_t epoch = 0;        ///< epoch of the next step
  std::size_t step = 0;         ///< step within that epoch of the next step
  std::size_t global_step = 0;  ///< optimizer steps taken
  std::uint64_t samples = 0;    ///< training samples visited
  std::size_t optimizer_steps = 0;
  std::string optimizer;        ///< hpf::describe(OptimizerOptions)
  std::size_t data_shards = 1;  ///< replicas (data shards) of the run that wrote it: the sample order
  std::uint64_t data_seed = 0;
  std::size_t stages = 1;       ///< pipeline stages of the run that wrote it (informative)
};

/// The index file's contents.
struct CheckpointIndex {
  std::uint64_t version = checkpoint_format_version;
  std::string model;  ///< the model's type (hpf::type_name)
  std::map<std::string, std::string> weight_map, optimizer_map;
  std::map<std::string, FileDigest> files;
};

namespace detail {
inline std::string json_number(std::uint64_t v) { return std::to_string(v); }
inline std::string json_map(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) out += (out.size() > 1 ? ",\n    " : "\n    ") + json_quote(k) + ": " + json_quote(v);
  return out + (m.empty() ? "}" : "\n  }");
}
inline const JsonValue& member(const JsonValue& object, const std::string& key, JsonValue::Kind kind,
                               const std::filesystem::path& file) {
  if (object.kind != JsonValue::Kind::object) throw FormatError(file, "expected a JSON object");
  for (const auto& [k, v] : object.members) {
    if (k != key) continue;
    if (v.kind != kind) throw FormatError(file, "'" + key + "' is a " + json_kind_name(v.kind) + ", expected a " + json_kind_name(kind));
    return v;
  }
  throw FormatError(file, "lacks '" + key + "'");
}
inline std::uint64_t unsigned_member(const JsonValue& object, const std::string& key, const std::filesystem::path& file) {
  std::uint64_t v = 0;
  if (!json_unsigned(member(object, key, JsonValue::Kind::number, file), v)) {
    throw FormatError(file, "'" + key + "' must be a non-negative integer");
  }
  return v;
}
inline std::map<std::string, std::string> string_map(const JsonValue& object, const std::string& key,
                                                     const std::filesystem::path& file) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : member(object, key, JsonValue::Kind::object, file).members) {
    if (v.kind != JsonValue::Kind::string) throw FormatError(file, "'" + key + "' entry '" + k + "' must be a string");
    if (!out.emplace(k, v.text).second) throw FormatError(file, "'" + key + "' names '" + k + "' twice");
  }
  return out;
}
/// `text` with control characters (a NUL from JSON "\u0000" among them) as \xNN, for messages.
inline std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(c >> 4) & 0xF];
      out += hex[c & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}
/// A small JSON file, whole (index and state files are kilobytes; refuses anything over 64 MiB).
inline JsonValue read_json_file(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) throw FormatError(file, "cannot read: " + ec.message());
  if (size > (std::uintmax_t{64} << 20)) throw FormatError(file, "is " + std::to_string(size) + " bytes, too large for a checkpoint file");
  std::ifstream in(file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw FormatError(file, "read error");
  try {
    return JsonParser::parse(text);
  } catch (const JsonError& e) {
    throw FormatError(file, std::string("malformed JSON: ") + e.what());
  }
}
}  // namespace detail

inline std::string to_json(const TrainingState& s) {
  using detail::json_number;
  return "{\n  \"format\": " + detail::json_quote(checkpoint_format_name) +
         ",\n  \"format_version\": " + json_number(checkpoint_format_version) + ",\n  \"epoch\": " + json_number(s.epoch) +
         ",\n  \"step\": " + json_number(s.step) + ",\n  \"global_step\": " + json_number(s.global_step) +
         ",\n  \"samples\": " + json_number(s.samples) + ",\n  \"optimizer\": " + detail::json_quote(s.optimizer) +
         ",\n  \"optimizer_steps\": " + json_number(s.optimizer_steps) + ",\n  \"data_shards\": " + json_number(s.data_shards) +
         ",\n  \"data_seed\": " + json_number(s.data_seed) + ",\n  \"stages\": " + json_number(s.stages) + "\n}\n";
}

inline std::string to_json(const CheckpointIndex& index) {
  std::uint64_t total = 0;
  std::string files = "{";
  for (const auto& [name, d] : index.files) {
    if (name.find("model-") == 0) total += d.bytes;
    files += (files.size() > 1 ? ",\n    " : "\n    ") + detail::json_quote(name) + ": {\"bytes\": " + std::to_string(d.bytes) +
             ", \"crc32\": " + std::to_string(d.crc32) + "}";
  }
  files += index.files.empty() ? "}" : "\n  }";
  return "{\n  \"metadata\": {\"format\": " + detail::json_quote(checkpoint_format_name) +
         ", \"format_version\": " + std::to_string(index.version) + ", \"total_size\": " + std::to_string(total) +
         ", \"model\": " + detail::json_quote(index.model) + "},\n  \"weight_map\": " + detail::json_map(index.weight_map) +
         ",\n  \"optimizer_map\": " + detail::json_map(index.optimizer_map) + ",\n  \"files\": " + files + "\n}\n";
}

/// Reads `directory`'s index; throws FormatError naming the file if it is missing, malformed,
/// of another format or of a newer version than this hpf reads.
inline CheckpointIndex read_checkpoint_index(const std::filesystem::path& directory) {
  using Kind = detail::JsonValue::Kind;
  const std::filesystem::path file = directory / checkpoint_index_file;
  if (!std::filesystem::exists(file)) {
    throw FormatError(directory, std::string("is not a checkpoint: it has no ") + checkpoint_index_file);
  }
  const detail::JsonValue root = detail::read_json_file(file);
  const detail::JsonValue& meta = detail::member(root, "metadata", Kind::object, file);
  if (detail::member(meta, "format", Kind::string, file).text != checkpoint_format_name) {
    throw FormatError(file, std::string("is not an hpf checkpoint index (format is not '") + checkpoint_format_name + "')");
  }
  CheckpointIndex index;
  index.version = detail::unsigned_member(meta, "format_version", file);
  if (index.version > checkpoint_format_version) {
    throw FormatError(file, "has format version " + std::to_string(index.version) + ", newer than the " +
                                std::to_string(checkpoint_format_version) + " this hpf reads; use a newer hpf");
  }
  index.model = detail::member(meta, "model", Kind::string, file).text;
  index.weight_map = detail::string_map(root, "weight_map", file);
  index.optimizer_map = detail::string_map(root, "optimizer_map", file);
  for (const auto& [name, entry] : detail::member(root, "files", Kind::object, file).members) {
    // A NUL (JSON "\u0000") would cut the path short: "..\u0000x" opens the parent directory.
    if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos || name == "." ||
        name == "..") {
      throw FormatError(file, "names a file '" + detail::printable(name) + "' outside the checkpoint directory");
    }
    const std::uint64_t crc = detail::unsigned_member(entry, "crc32", file);
    if (crc > 0xffffffffu) throw FormatError(file, "file '" + name + "' has a crc32 above 32 bits");
    index.files[name] = {detail::unsigned_member(entry, "bytes", file), static_cast<std::uint32_t>(crc)};
  }
  for (const auto* map : {&index.weight_map, &index.optimizer_map}) {
    for (const auto& [tensor, shard] : *map) {
      if (!index.files.count(shard)) throw FormatError(file, "maps tensor '" + tensor + "' to '" + shard + "', which it does not list");
    }
  }
  if (!index.files.count(training_state_file)) throw FormatError(file, std::string("does not list ") + training_state_file);
  return index;
}

/// Checks every file the index lists: present, of the recorded size and CRC-32. Throws
/// FormatError naming the first damaged file.
inline void verify_checkpoint_files(const std::filesystem::path& directory, const CheckpointIndex& index) {
  for (const auto& [name, expected] : index.files) {
    const std::filesystem::path file = directory / name;
    if (!std::filesystem::exists(file)) throw FormatError(file, "is missing from the checkpoint");
    const FileDigest found = digest_of_file(file);
    if (found.bytes != expected.bytes) {
      throw FormatError(file, "is " + std::to_string(found.bytes) + " bytes but the checkpoint index says " +
                                  std::to_string(expected.bytes) + " (truncated or overwritten)");
    }
    if (found.crc32 != expected.crc32) {
      throw FormatError(file, "is corrupt: its CRC-32 is " + std::to_string(found.crc32) + " but the checkpoint index says " +
                                  std::to_string(expected.crc32));
    }
  }
}

inline TrainingState read_training_state(const std::filesystem::path& directory) {
  using Kind = detail::JsonValue::Kind;
  const std::filesystem::path file = directory / training_state_file;
  const detail::JsonValue root = detail::read_json_file(file);
  if (detail::member(root, "format", Kind::string, file).text != checkpoint_format_name) {
    throw FormatError(file, "is not an hpf training state");
  }
  if (const auto v = detail::unsigned_member(root, "format_version", file); v > checkpoint_format_version) {
    throw FormatError(file, "has format version " + std::to_string(v) + ", newer than the " +
                                std::to_string(checkpoint_format_version) + " this hpf reads; use a newer hpf");
  }
  auto number = [&](const char* key) { return detail::unsigned_member(root, key, file); };
  TrainingState s;
  s.epoch = number("epoch");
  s.step = number("step");
  s.global_step = number("global_step");
  s.samples = number("samples");
  s.optimizer_steps = number("optimizer_steps");
  s.optimizer = detail::member(root, "optimizer", Kind::string, file).text;
  s.data_shards = number("data_shards");
  s.data_seed = number("data_seed");
  s.stages = number("stages");
  return s;
}

}  // namespace hpf::io

#endif  // HPF_IO_CHECKPOINT_FORMAT_HPP
