// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_HDF5_DATASET_HPP
#define HPF_DATA_HDF5_DATASET_HPP

// HPF_HAVE_HDF5 comes with hpf::hpf's HDF5 include directory and library (CMakeLists.txt).
#if !defined(HPF_HAVE_HDF5)
#error "hpf/data/hdf5_dataset.hpp needs HDF5: link hpf::hpf of an hpf configured with HPF_ENABLE_HDF5=ON \
(found by default; Debian: libhdf5-openmpi-dev, libhdf5-mpich-dev for MPICH, libhdf5-dev without MPI)"
#endif

#include <hpf/data/dataset.hpp>
#include <hpf/data/detail/hdf5_file.hpp>
#include <hpf/data/error.hpp>
#include <hpf/data/shard.hpp>

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace hpf::data {

namespace detail {

// The sample shape of inputs of n x features, n x H x W, n x C x H x W or n x C x D x H x W
// values, as npy_sample_dims reads it. Every rank reads the same header, so every rank throws the
// same error.
inline SampleDims hdf5_sample_dims(const Hdf5Dataset& d, const std::filesystem::path& file) {
  if (!d.is_float() && !d.is_integer()) {
    throw DataError(file, d.described() + " holds " + d.type_name + " values; hpf reads integer and float datasets" +
                              (d.type_class == H5T_ENUM ? " (h5py writes bool as an enum: save it as uint8)" : ""));
  }
  const auto& s = d.shape;
  if (s.size() < 2 || s.size() > 5) {
    throw DataError(file, d.described() + ": expected inputs of shape (n, features), (n, height, width) or " +
                              "(n, channels, height, width), found " + hdf5_shape_text(s) +
                              "; volumes are (n, channels, depth, height, width)");
  }
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == 0) {
      const std::string shape = hdf5_shape_text(s);
      if (k == 0) throw DataError(file, d.described() + " holds no samples (shape " + shape + ")");
      throw DataError(file, d.described() + ": dimension " + std::to_string(k) + " of shape " + shape + " is zero");
    }
  }
  if (s.size() == 2) return {s[1], 1, 1};
  if (s.size() == 3) return {1, s[1], s[2]};
  if (s.size() == 4) return {s[1], s[2], s[3]};
  return {.channels = s[1], .height = s[3], .width = s[4], .depth = s[2]};
}

inline void check_hdf5_rows(const Hdf5Dataset& inputs, const Hdf5Dataset& targets, const std::filesystem::path& file,
                            const char* what) {
  if (targets.shape.empty()) {
    throw DataError(file, targets.described() + " is a scalar; expected " + what + " per sample, shape (n, ...)");
  }
  if (inputs.rows() != targets.rows()) {
    throw DataError(file, std::string("input/") + what + " count mismatch: " + inputs.described() + " holds " +
                              std::to_string(inputs.rows()) + " samples but " + targets.described() + " holds " +
                              std::to_string(targets.rows()) + " " + what);
  }
}

inline std::vector<float> hdf5_inputs(const Hdf5File& file, const Hdf5Dataset& inputs, const Shard& shard) {
  return shard.images ? file.read_rows<float>(inputs, H5T_NATIVE_FLOAT, shard) : std::vector<float>{};
}

}  // namespace detail

/// \brief Loads two datasets of one HDF5 file, inputs (shape (n, features), (n, H, W),
/// (n, C, H, W) or, volumes, (n, C, D, H, W), any integer or float type, taken as they are: no
/// scaling) and class labels
/// (shape (n,) or (n, 1), an integer type, each in [0, classes)), as this process's Shard of a
/// Dataset: the samples shard.index, shard.index + shard.count, ..., and of those only the
/// inputs and/or labels the shard keeps (see Shard).
///
/// Each dataset the shard keeps is read in one HDF5 read of a strided selection of its rows, with
/// HDF5 converting to float (inputs) or int64 (labels) as it reads; of the others only the headers
/// are read. With a parallel HDF5 (and MPI initialised) the file is opened with the MPI-IO driver
/// on MPI_COMM_SELF: every rank reads by itself, independently of the others.
/// \param inputs, labels dataset names, paths from the file's root group ("train/images")
/// \throws DataError naming the file and what is wrong: a missing or unreadable file, a file that
/// is not HDF5, a missing dataset (with the datasets the file has), inputs of another rank or a
/// type that is not a number, float labels, labels of another shape, datasets that disagree on
/// the sample count, or a label out of range. All but the last come from the headers, so every
/// rank throws alike.
inline Dataset load_hdf5_dataset(const std::filesystem::path& file, const std::string& inputs,
                                 const std::string& labels, std::size_t classes, Shard shard = {}) {
  shard.validate("hpf::data::load_hdf5_dataset");
  const detail::Hdf5Quiet quiet;  // first: HDF5 objects close before it restores the handler
  const detail::Hdf5File h5(file);
  const detail::Hdf5Dataset x = h5.dataset(inputs);
  const SampleDims dims = detail::hdf5_sample_dims(x, file);
  const detail::Hdf5Dataset y = h5.dataset(labels);
  if (y.is_float()) {
    throw DataError(file, y.described() + ": class labels must be integers, found " + y.type_name +
                              " (for real-valued targets use hpf::data::load_hdf5_regression)");
  }
  if (!y.is_integer()) throw DataError(file, y.described() + ": class labels must be integers, found " + y.type_name);
  if (y.shape.size() > 2 || (y.shape.size() == 2 && y.shape[1] != 1)) {
    throw DataError(file, y.described() + ": expected n labels, shape (n,) or (n, 1), found " +
                              detail::hdf5_shape_text(y.shape));
  }
  detail::check_hdf5_rows(x, y, file, "labels");
  std::vector<std::int32_t> label_values;
  if (shard.labels) {
    // Read wide and checked before narrowing, so that a label of 2^32 + 1 is not taken for 1
    // (HDF5 saturates wider values, a uint64 beyond int64 too).
    const auto wide = h5.read_rows<std::int64_t>(y, H5T_NATIVE_INT64, shard);
    if (auto problem = detail::label_range_problem(wide, classes, shard); !problem.empty()) {
      throw DataError(file, y.described() + ": " + problem);
    }
    label_values.assign(wide.begin(), wide.end());
  }
  return Dataset::from_values(x.rows(), dims, classes, shard, detail::hdf5_inputs(h5, x, shard),
                              std::move(label_values));
}

/// \brief As load_hdf5_dataset, for regression: targets of shape (n,) (one value per sample) or
/// (n, k, ...) (the product of the rest per sample), any integer or float type, converted to float.
inline Dataset load_hdf5_regression(const std::filesystem::path& file, const std::string& inputs,
                                    const std::string& targets, Shard shard = {}) {
  shard.validate("hpf::data::load_hdf5_regression");
  const detail::Hdf5Quiet quiet;
  const detail::Hdf5File h5(file);
  const detail::Hdf5Dataset x = h5.dataset(inputs);
  const SampleDims dims = detail::hdf5_sample_dims(x, file);
  const detail::Hdf5Dataset t = h5.dataset(targets);
  if (!t.is_float() && !t.is_integer()) {
    throw DataError(file, t.described() + " holds " + t.type_name + " values; hpf reads integer and float targets");
  }
  detail::check_hdf5_rows(x, t, file, "targets");
  const std::size_t target_size = t.row_elements();
  if (target_size == 0) {
    throw DataError(file, t.described() + ": shape " + detail::hdf5_shape_text(t.shape) +
                              " gives each sample no target values");
  }
  std::vector<float> target_values;
  if (shard.labels) target_values = h5.read_rows<float>(t, H5T_NATIVE_FLOAT, shard);
  return Dataset::regression(x.rows(), dims, target_size, shard, detail::hdf5_inputs(h5, x, shard),
                             std::move(target_values));
}

}  // namespace hpf::data

#endif  // HPF_DATA_HDF5_DATASET_HPP
