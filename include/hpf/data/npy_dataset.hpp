// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_NPY_DATASET_HPP
#define HPF_DATA_NPY_DATASET_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/error.hpp>
#include <hpf/data/npy.hpp>
#include <hpf/data/shard.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace hpf::data {

namespace detail {

// The sample shape of an inputs file of n x features, n x H x W, n x C x H x W or
// n x C x D x H x W values, as a model's Input names it: features are channels of one position
// (Input<F> is Shape<F>: F channels), an H x W image has one channel. Every rank reads the same
// header, so every rank throws the same error.
inline SampleDims npy_sample_dims(const NpyHeader& h, const std::filesystem::path& file) {
  const auto& s = h.shape;
  if (s.size() < 2 || s.size() > 5) {
    throw DataError(file, "expected inputs of shape (n, features), (n, height, width) or (n, channels, height, width), "
                          "found " + npy_shape_text(s) + "; volumes are (n, channels, depth, height, width)");
  }
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == 0) {
      throw DataError(file, k == 0 ? "holds no samples (shape " + npy_shape_text(s) + ")"
                                   : "dimension " + std::to_string(k) + " of shape " + npy_shape_text(s) + " is zero");
    }
  }
  if (s.size() == 2) return {s[1], 1, 1};
  if (s.size() == 3) return {1, s[1], s[2]};
  if (s.size() == 4) return {s[1], s[2], s[3]};
  return {.channels = s[1], .height = s[3], .width = s[4], .depth = s[2]};
}

inline void check_npy_rows(const NpyHeader& inputs, const std::filesystem::path& inputs_file, const NpyHeader& targets,
                           const std::filesystem::path& targets_file, const char* what) {
  if (targets.shape.empty()) {
    throw DataError(targets_file, std::string("expected one ") + what + " per sample, found a 0-d array");
  }
  if (inputs.rows() != targets.rows()) {
    throw DataError(std::string("input/") + what + " count mismatch: " + DataError::full_path(inputs_file) + " holds " +
                    std::to_string(inputs.rows()) + " samples but " + DataError::full_path(targets_file) + " holds " +
                    std::to_string(targets.rows()) + " " + what);
  }
}

inline std::vector<float> npy_inputs(const std::filesystem::path& file, const Shard& shard) {
  return shard.images ? read_npy<float>(file, shard.count, shard.index).values : std::vector<float>{};
}

}  // namespace detail

/// \brief Loads a pair of .npy files, inputs (shape (n, features), (n, H, W), (n, C, H, W) or,
/// volumes, (n, C, D, H, W), any dtype read_npy reads, taken as they are: no scaling) and class
/// labels (shape (n,) or (n, 1), an integer or bool dtype, each in [0, classes)), as this
/// process's Shard of a Dataset.
/// Only the rows of the shard are read, and only the headers of the files the shard does not keep
/// (see Shard). Throws DataError naming the file(s) for a missing or malformed file (read_npy),
/// inputs of another rank, float labels, files that disagree on the sample count, or a label out
/// of range; the first three are found from the headers, so on every rank alike.
inline Dataset load_npy_dataset(const std::filesystem::path& inputs_file, const std::filesystem::path& labels_file,
                                std::size_t classes, Shard shard = {}) {
  shard.validate("hpf::data::load_npy_dataset");
  const NpyHeader inputs = read_npy_header(inputs_file);
  const SampleDims dims = detail::npy_sample_dims(inputs, inputs_file);
  const NpyHeader labels = read_npy_header(labels_file);
  if (labels.is_float()) {
    throw DataError(labels_file, std::string("class labels must be integers, found ") + detail::npy_type_name(labels.type) +
                                     " (for real-valued targets use hpf::data::load_npy_regression)");
  }
  if (labels.shape.size() > 2 || (labels.shape.size() == 2 && labels.shape[1] != 1)) {
    throw DataError(labels_file, "expected n labels, shape (n,) or (n, 1), found " + detail::npy_shape_text(labels.shape));
  }
  detail::check_npy_rows(inputs, inputs_file, labels, labels_file, "labels");
  std::vector<std::int32_t> label_values;
  if (shard.labels) {
    // Read wide and checked before narrowing, so that a label of 2^32 + 1 is not taken for 1.
    const auto wide = read_npy<std::int64_t>(labels_file, shard.count, shard.index).values;
    if (auto problem = detail::label_range_problem(wide, classes, shard); !problem.empty()) {
      throw DataError(labels_file, problem);
    }
    label_values.assign(wide.begin(), wide.end());
  }
  return Dataset::from_values(inputs.rows(), dims, classes, shard, detail::npy_inputs(inputs_file, shard),
                              std::move(label_values));
}

/// \brief As load_npy_dataset, for regression: targets of shape (n,) (one value per sample) or
/// (n, k, ...) (the product of the rest per sample), any dtype, converted to float.
inline Dataset load_npy_regression(const std::filesystem::path& inputs_file, const std::filesystem::path& targets_file,
                                   Shard shard = {}) {
  shard.validate("hpf::data::load_npy_regression");
  const NpyHeader inputs = read_npy_header(inputs_file);
  const SampleDims dims = detail::npy_sample_dims(inputs, inputs_file);
  const NpyHeader targets = read_npy_header(targets_file);
  detail::check_npy_rows(inputs, inputs_file, targets, targets_file, "targets");
  const std::size_t target_size = targets.row_elements();
  if (target_size == 0) {
    throw DataError(targets_file, "shape " + detail::npy_shape_text(targets.shape) + " gives each sample no target values");
  }
  std::vector<float> target_values;
  if (shard.labels) target_values = read_npy<float>(targets_file, shard.count, shard.index).values;
  return Dataset::regression(inputs.rows(), dims, target_size, shard, detail::npy_inputs(inputs_file, shard),
                             std::move(target_values));
}

}  // namespace hpf::data

#endif  // HPF_DATA_NPY_DATASET_HPP
