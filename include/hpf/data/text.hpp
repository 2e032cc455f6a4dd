// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_TEXT_HPP
#define HPF_DATA_TEXT_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/error.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/data/train_test.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace hpf::data {

/// Tokens of a byte-level language model: every byte value is a token.
inline constexpr std::size_t byte_vocabulary = 256;

/// The bytes of `files`, one after another. Throws DataError naming a file that is missing or
/// unreadable, and when all of them together are empty.
inline std::vector<std::uint8_t> read_text_bytes(std::span<const std::filesystem::path> files) {
  std::vector<std::uint8_t> bytes;
  for (const auto& file : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) throw DataError(file, "no such text file");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw DataError(file, "cannot be opened for reading");
    bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(file, "read failed");
  }
  if (bytes.empty()) throw DataError("the text files hold no bytes" + (files.empty() ? std::string(" (none given)") : ""));
  return bytes;
}

/// \brief Windows of `context` + 1 bytes of `text` as token sequences: window i starts at byte
/// i * context; its first `context` bytes are the input, its last `context` the labels (each byte's
/// next). Consecutive windows share one byte, so every byte but the first is a label once. Only
/// `shard`'s windows are kept.
inline Dataset text_windows(std::span<const std::uint8_t> text, std::size_t context, Shard shard) {
  if (context == 0) throw std::invalid_argument("hpf::data::text_windows: the context must be at least one byte");
  const std::size_t windows = text.size() > context ? (text.size() - 1) / context : 0;
  const std::size_t local = shard.size_of(windows);
  std::vector<std::int32_t> tokens(shard.images ? local * context : 0), labels(shard.labels ? local * context : 0);
  for (std::size_t k = 0; k < local; ++k) {
    const std::uint8_t* window = text.data() + (shard.index + k * shard.count) * context;
    for (std::size_t t = 0; t < context; ++t) {
      if (shard.images) tokens[k * context + t] = window[t];
      if (shard.labels) labels[k * context + t] = window[t + 1];
    }
  }
  return Dataset::token_sequences(windows, context, byte_vocabulary, shard, tokens, std::move(labels));
}

/// \brief A byte-level language-modelling dataset from text files: their bytes one after another,
/// the first (1 - held_out) of them for training and the rest for testing (a split in the text,
/// so no test window overlaps a training one), each cut into windows by text_windows.
/// \param held_out fraction of the bytes in the test set, in [0, 1)
inline TrainTest load_text(std::span<const std::filesystem::path> files, std::size_t context, double held_out,
                           Shard shard = {}) {
  if (!(held_out >= 0 && held_out < 1)) {
    throw std::invalid_argument("hpf::data::load_text: the held-out fraction must lie in [0, 1), got " +
                                std::to_string(held_out));
  }
  const std::vector<std::uint8_t> bytes = read_text_bytes(files);
  const auto split = bytes.size() - static_cast<std::size_t>(held_out * static_cast<double>(bytes.size()));
  const std::span<const std::uint8_t> all(bytes);
  return {text_windows(all.first(split), context, shard), text_windows(all.subspan(split), context, shard)};
}

}  // namespace hpf::data

#endif  // HPF_DATA_TEXT_HPP
