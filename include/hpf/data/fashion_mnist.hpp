// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_FASHION_MNIST_HPP
#define HPF_DATA_FASHION_MNIST_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/error.hpp>
#include <hpf/data/idx.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/data/train_test.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace hpf::data {

/// \brief Loads an image/label pair of IDX files (MNIST layout: images n x H x W or
/// n x C x H x W bytes, labels n bytes in [0, classes)) as this process's Shard of a Dataset
/// whose values are byte / 255. Only the files' headers are read for the parts the shard does not
/// keep. Throws DataError naming the file(s) if they disagree on the sample count, have
/// unexpected ranks, hold an out-of-range label, or are unreadable (see read_idx).
inline Dataset load_idx_dataset(const std::filesystem::path& images_file, const std::filesystem::path& labels_file,
                                std::size_t classes, Shard shard = {}) {
  shard.validate("hpf::data::load_idx_dataset");
  const IdxArray labels =
      shard.labels ? read_idx(labels_file, shard.count, shard.index) : read_idx_header(labels_file);
  const IdxArray header = read_idx_header(images_file);
  if (header.dims.size() != 3 && header.dims.size() != 4) {
    throw DataError(images_file, "expected images of n x height x width or n x channels x height x width "
                                 "bytes, found " + detail::dims_text(header.dims));
  }
  if (labels.dims.size() != 1) {
    throw DataError(labels_file, "expected n labels (rank 1), found " + detail::dims_text(labels.dims));
  }
  if (header.items() != labels.items()) {
    throw DataError("image/label count mismatch: " + DataError::full_path(images_file) + " holds " +
                    std::to_string(header.items()) + " images but " + DataError::full_path(labels_file) +
                    " holds " + std::to_string(labels.items()) + " labels");
  }
  const std::vector<std::int32_t> label_values(labels.bytes.begin(), labels.bytes.end());
  if (auto problem = detail::label_range_problem(label_values, classes, shard); !problem.empty()) {
    throw DataError(labels_file, problem);
  }
  const std::size_t rank = header.dims.size();
  const SampleDims dims{rank == 4 ? header.dims[1] : 1, header.dims[rank - 2], header.dims[rank - 1]};
  std::vector<std::uint8_t> pixels;
  if (shard.images) pixels = read_idx(images_file, shard.count, shard.index).bytes;
  return Dataset::from_pixels(header.items(), dims, classes, shard, std::move(pixels), label_values);
}

/// Where load_fashion_mnist looks by default: `$HPF_FASHION_MNIST_DIR` if set and non-empty, else
/// `/usr/share/datasets/fashion-mnist` (Debian's package dataset-fashion-mnist).
inline std::filesystem::path fashion_mnist_directory() {
  const char* env = std::getenv("HPF_FASHION_MNIST_DIR");
  return (env != nullptr && *env != '\0') ? env : "/usr/share/datasets/fashion-mnist";
}

/// \brief Loads this process's Shard of Fashion-MNIST (60000 training and 10000 test images of
/// 1 x 28 x 28, 10 classes, values x/255 without normalisation, as the PyTorch reference) from
/// `directory`'s train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz
/// and t10k-labels-idx1-ubyte.gz. Both splits are sharded alike.
inline TrainTest load_fashion_mnist(Shard shard = {}, const std::filesystem::path& directory = fashion_mnist_directory()) {
  constexpr std::size_t classes = 10;
  const char* names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                         "t10k-labels-idx1-ubyte.gz"};
  for (const char* name : names) {
    std::error_code ec;
    if (!std::filesystem::exists(directory / name, ec)) {
      throw DataError(directory / name,
                      std::string("cannot open: ") + std::strerror(ec ? ec.value() : ENOENT) +
                          ". Fashion-MNIST comes with the Debian package dataset-fashion-mnist "
                          "(apt install dataset-fashion-mnist); or set HPF_FASHION_MNIST_DIR to a directory "
                          "holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                          "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz");
    }
  }
  return {load_idx_dataset(directory / names[0], directory / names[1], classes, shard),
          load_idx_dataset(directory / names[2], directory / names[3], classes, shard)};
}

}  // namespace hpf::data

#endif  // HPF_DATA_FASHION_MNIST_HPP
