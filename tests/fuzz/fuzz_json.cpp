// SPDX-License-Identifier: MIT
// libFuzzer target for hpf::io::detail::JsonParser (include/hpf/io/detail/json.hpp), the JSON
// reader of safetensors headers and checkpoints, and for the checkpoint files read with it
// (io/checkpoint_format.hpp): the index model.safetensors.index.json (read_checkpoint_index,
// verify_checkpoint_files) and training_state.json (read_training_state).
//
// Documented outcomes: a JsonValue, or JsonError whose offset lies within the text. A parsed value
// written back as JSON (strings through json_quote, numbers as written) parses to the same value,
// and json_unsigned accepts exactly the plain digit strings below 2^64. As checkpoint files: a
// result or hpf::io::FormatError; an index that loads names only files inside the checkpoint
// directory and maps tensors only to files it lists. Anything else (another exception, a crash, a
// sanitizer report, a hang, a stack overflow) is a finding.
#include <fuzz/scratch.hpp>
#include <hpf/io/checkpoint_format.hpp>
#include <hpf/io/detail/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>


namespace {

using hpf::io::detail::JsonValue;

void check(bool condition) {
  if (!condition) std::abort();
}

std::string write(const JsonValue& v) {
  using Kind = JsonValue::Kind;
  switch (v.kind) {
    case Kind::null: return "null";
    case Kind::boolean: return v.boolean ? "true" : "false";
    case Kind::number: return v.text;
    case Kind::string: return hpf::io::detail::json_quote(v.text);
    case Kind::array: {
      std::string out = "[";
      for (const JsonValue& item : v.items) out += (out.size() > 1 ? "," : "") + write(item);
      return out + "]";
    }
    case Kind::object: {
      std::string out = "{";
      for (const auto& [key, value] : v.members) {
        out += (out.size() > 1 ? "," : "") + hpf::io::detail::json_quote(key) + ":" + write(value);
      }
      return out + "}";
    }
  }
  std::abort();
}

bool same(const JsonValue& a, const JsonValue& b) {
  if (a.kind != b.kind || a.boolean != b.boolean || a.text != b.text || a.items.size() != b.items.size() ||
      a.members.size() != b.members.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.items.size(); ++i) {
    if (!same(a.items[i], b.items[i])) return false;
  }
  for (std::size_t i = 0; i < a.members.size(); ++i) {
    if (a.members[i].first != b.members[i].first || !same(a.members[i].second, b.members[i].second)) return false;
  }
  return true;
}

void check_numbers(const JsonValue& v) {
  if (v.kind == JsonValue::Kind::number) {
    std::uint64_t value = 0;
    const bool plain = v.text.find_first_not_of("0123456789") == std::string::npos;
    if (hpf::io::detail::json_unsigned(v, value)) {
      check(plain && std::to_string(value) == v.text);  // the parser allows no leading zeros
    } else {
      check(!plain || v.text.size() >= 20);  // only too large a value is refused
    }
  }
  for (const JsonValue& item : v.items) check_numbers(item);
  for (const auto& member : v.members) check_numbers(member.second);
}

const std::filesystem::path& scratch_directory() {
  static const std::filesystem::path directory = [] {
    auto d = hpf_fuzz::scratch_path("hpf_fuzz_json", "");
    std::filesystem::create_directories(d);
    return d;
  }();
  return directory;
}

// The text as a checkpoint's index and training state, read as resuming reads them.
void read_as_checkpoint(std::string_view text) {
  const std::filesystem::path& directory = scratch_directory();
  for (const char* name : {hpf::io::checkpoint_index_file, hpf::io::training_state_file}) {
    hpf_fuzz::write_scratch(directory / name, text.data(), text.size());
  }
  try {
    const hpf::io::CheckpointIndex index = hpf::io::read_checkpoint_index(directory);
    for (const auto& [name, digest] : index.files) {
      // Only plain names of files in the directory: the loader opens directory / name.
      check(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
            name.find('\0') == std::string::npos);
    }
    for (const auto* map : {&index.weight_map, &index.optimizer_map}) {
      for (const auto& [tensor, shard] : *map) check(index.files.count(shard) == 1);
    }
    check(index.files.count(hpf::io::training_state_file) == 1);
    hpf::io::verify_checkpoint_files(directory, index);
  } catch (const hpf::io::FormatError&) {
  }
  try {
    hpf::io::read_training_state(directory);
  } catch (const hpf::io::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  JsonValue value;
  try {
    value = hpf::io::detail::JsonParser::parse(text);
  } catch (const hpf::io::detail::JsonError& e) {
    check(e.offset() <= size);
    return 0;
  }
  check_numbers(value);
  const std::string written = write(value);
  try {
    check(same(hpf::io::detail::JsonParser::parse(written), value));
  } catch (const hpf::io::detail::JsonError&) {
    std::abort();  // what json_quote and the parser's own output make must parse
  }
  if (value.kind == JsonValue::Kind::object) read_as_checkpoint(text);
  return 0;
}
