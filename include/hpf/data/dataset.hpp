// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_DATASET_HPP
#define HPF_DATA_DATASET_HPP

#include <hpf/data/shard.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hpf::data {

/// Shape of one sample: channels x height x width, or channels x depth x height x width for a
/// volume. Depth comes last so that `SampleDims{c, h, w}` keeps meaning an image.
struct SampleDims {
  std::size_t channels = 1, height = 1, width = 1, depth = 1;

  /// Positions per channel (depth * height * width).
  constexpr std::size_t spatial() const noexcept { return depth * height * width; }
  /// Values per sample (channels * spatial()).
  constexpr std::size_t size() const noexcept { return channels * spatial(); }
  friend constexpr bool operator==(const SampleDims&, const SampleDims&) = default;
};

namespace detail {

// Empty if every label lies in [0, classes); else what is wrong, naming the global sample (and
// the position, with several labels per sample). Any signed integer type: a reader checks labels
// as wide as its file holds them, before narrowing. `what` names the values ("label", "token").
template <class Label>
std::string label_range_problem(const std::vector<Label>& labels, std::size_t classes, const Shard& shard,
                                std::size_t per_sample = 1, const char* what = "label") {
  for (std::size_t k = 0; k < labels.size(); ++k) {
    if (labels[k] < 0 || static_cast<std::uint64_t>(labels[k]) >= classes) {
      const std::size_t local = k / per_sample;
      return std::string(what) + " " + std::to_string(labels[k]) + " of sample " +
             std::to_string(shard.index + local * shard.count) +
             (per_sample > 1 ? " at position " + std::to_string(k % per_sample) : std::string()) +
             " is out of range [0, " + std::to_string(classes) + ")";
    }
  }
  return {};
}

}  // namespace detail

/// \brief An in-memory dataset of fixed-shape samples with a target each (a class label, or
/// `target_size` real values for regression), of which this process holds one Shard: the samples
/// i with `i % shard.count == shard.index`, and of those only the images and/or targets its
/// pipeline stage needs. Samples are stored either as bytes (images; value = byte /
/// divisor) or as floats (synthetic data). Samples are addressed by global index everywhere, so
/// code that picks samples (see Sampler) never depends on how the data was sharded.
class Dataset {
 public:
  /// A dataset of `size` byte-valued samples; this shard's are `pixels` (local sample k = global
  /// sample `shard.index + k * shard.count`, each `[C][H*W]`; empty unless shard.images) and
  /// `labels` (empty unless shard.labels). Values read as `pixel / divisor`: 255 gives [0, 1],
  /// bit-identical to PyTorch's ToTensor.
  static Dataset from_pixels(std::size_t size, SampleDims dims, std::size_t classes, Shard shard,
                             std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels,
                             double divisor = 255) {
    require_classes(classes);
    if (!(divisor > 0)) throw std::invalid_argument("hpf::data::Dataset: divisor must be positive");
    Dataset d(size, dims, classes, shard, std::move(labels));
    d.check_storage(pixels.size());
    d.pixels_ = std::move(pixels);
    d.bytes_ = true;
    d.divisor_ = divisor;
    return d;
  }
  /// As from_pixels, with float-valued samples stored as given.
  static Dataset from_values(std::size_t size, SampleDims dims, std::size_t classes, Shard shard,
                             std::vector<float> values, std::vector<std::int32_t> labels) {
    require_classes(classes);
    Dataset d(size, dims, classes, shard, std::move(labels));
    d.check_storage(values.size());
    d.values_ = std::move(values);
    return d;
  }
  /// \brief Token sequences for a model with a per-position loss (a language model): sample i is
  /// `positions` input tokens and `positions` labels (the tokens that follow each), both in
  /// [0, vocabulary). `tokens` and `labels` hold this shard's samples, `positions` values each
  /// (empty unless shard.images, resp. shard.labels). Tokens are the model's input values
  /// (an Embedding reads them): stored as bytes for vocabularies up to 256, else as floats, which
  /// hold every integer below 2^24 exactly.
  static Dataset token_sequences(std::size_t size, std::size_t positions, std::size_t vocabulary, Shard shard,
                                 const std::vector<std::int32_t>& tokens, std::vector<std::int32_t> labels) {
    require_classes(vocabulary);
    if (vocabulary > (std::size_t{1} << 24)) {
      throw std::invalid_argument("hpf::data::Dataset: a vocabulary of " + std::to_string(vocabulary) +
                                  " tokens is larger than float holds exactly (2^24)");
    }
    Dataset d(size, SampleDims{positions, 1, 1}, vocabulary, shard, std::move(labels), positions);
    d.check_storage(tokens.size());
    if (auto problem = detail::label_range_problem(tokens, vocabulary, d.shard_, positions, "token"); !problem.empty()) {
      throw std::invalid_argument("hpf::data::Dataset: " + problem);
    }
    if (vocabulary <= 256) {
      d.pixels_.assign(tokens.begin(), tokens.end());
      d.bytes_ = true;
    } else {
      d.values_.assign(tokens.begin(), tokens.end());
    }
    return d;
  }
  /// A regression dataset: float-valued samples and `target_size` float targets per sample
  /// (`targets[k * target_size + t]` for local sample k; empty unless shard.labels).
  static Dataset regression(std::size_t size, SampleDims dims, std::size_t target_size, Shard shard,
                            std::vector<float> values, std::vector<float> targets) {
    if (target_size == 0) throw std::invalid_argument("hpf::data::Dataset: target_size must be non-zero");
    Dataset d(size, dims, 0, shard, {});
    d.check_storage(values.size());
    check_count("targets", targets.size(), shard.labels ? d.local_size() * target_size : 0);
    d.values_ = std::move(values);
    d.targets_ = std::move(targets);
    d.target_size_ = target_size;
    return d;
  }

  /// Number of samples in the whole dataset (all shards).
  std::size_t size() const noexcept { return size_; }
  /// Number of samples in this shard.
  std::size_t local_size() const noexcept { return shard_.size_of(size_); }
  /// Shape of one sample.
  const SampleDims& dims() const noexcept { return dims_; }
  /// Channels per sample.
  std::size_t channels() const noexcept { return dims_.channels; }
  /// "CxHxW", e.g. "1x28x28", or "CxDxHxW" for volumes (as hpf::shape_string writes a model's
  /// input shape).
  std::string shape_text() const {
    return std::to_string(dims_.channels) + "x" + (dims_.depth > 1 ? std::to_string(dims_.depth) + "x" : "") +
           std::to_string(dims_.height) + "x" + std::to_string(dims_.width);
  }
  /// Values per sample (C*H*W, C*D*H*W).
  std::size_t sample_size() const noexcept { return dims_.size(); }
  /// Number of classes; labels lie in [0, classes). 0 for a regression dataset.
  std::size_t classes() const noexcept { return classes_; }
  /// Class labels per sample: 1, or one per position for token sequences (0 for regression).
  std::size_t labels_per_sample() const noexcept { return is_regression() ? 0 : labels_per_sample_; }
  /// True for real-valued targets (see regression()), false for class labels.
  bool is_regression() const noexcept { return target_size_ > 0; }
  /// Real values per sample's target (0 for class labels).
  std::size_t target_size() const noexcept { return target_size_; }
  /// Which samples, and which parts of them, this process holds.
  const Shard& shard() const noexcept { return shard_; }
  /// True if global sample i exists and belongs to this shard.
  bool holds(std::size_t i) const noexcept { return i < size_ && shard_.holds(i); }
  /// True if this shard keeps sample values (gather works).
  bool has_images() const noexcept { return shard_.images; }
  /// True if this shard keeps targets: labels (label, gather_labels work) or regression targets
  /// (gather_targets works).
  bool has_labels() const noexcept { return shard_.labels; }
  /// Bytes of sample and label storage held.
  std::size_t memory_bytes() const noexcept {
    return pixels_.size() + (values_.size() + targets_.size()) * sizeof(float) + labels_.size() * sizeof(std::int32_t);
  }

  /// Label of global sample i (of its first position); throws std::out_of_range if this shard does
  /// not hold it.
  std::int32_t label(std::size_t i) const {
    require_labels("label");
    return labels_[local_index(i, "label") * labels_per_sample_];
  }

  /// \brief Writes samples `indices` (global) into `out` in hpf's activation layout `[C][n][S]`
  /// (S = dims().spatial()): `out[(c * n + j) * S + s]` = value of sample `indices[j]` at channel
  /// c, position s, with n = indices.size(). Throws std::out_of_range for a sample this shard does
  /// not hold.
  template <class T>
  void gather(std::span<const std::size_t> indices, T* out) const {
    if (!shard_.images) {
      throw std::logic_error("hpf::data::Dataset::gather: this process's shard holds no images (it serves a pipeline "
                             "stage other than the first)");
    }
    if (bytes_) {
      // A division, not a multiplication by 1/divisor: bit-identical to PyTorch's x/255, and it
      // vectorises.
      const T divisor = static_cast<T>(divisor_);
      copy_samples(indices, pixels_.data(), out, [divisor](std::uint8_t b) { return static_cast<T>(b) / divisor; });
    } else {
      copy_samples(indices, values_.data(), out, [](float v) { return static_cast<T>(v); });
    }
  }

  /// Empty if every input value of this shard is a token id in [0, vocabulary) (what a model that
  /// starts with an Embedding reads); else what is wrong, naming the first value that is not.
  std::string token_problem(std::size_t vocabulary) const {
    if (!shard_.images) return {};
    const std::size_t per_sample = sample_size(), values = local_size() * per_sample;
    for (std::size_t k = 0; k < values; ++k) {
      const double v = bytes_ ? pixels_[k] / divisor_ : static_cast<double>(values_[k]);
      if (v >= 0 && v < static_cast<double>(vocabulary) && v == static_cast<double>(static_cast<std::size_t>(v))) continue;
      std::ostringstream value;
      value << v;
      return "input value " + value.str() + " of sample " + std::to_string(shard_.index + k / per_sample * shard_.count) +
             " at position " + std::to_string(k % per_sample) + " is not a token id in [0, " +
             std::to_string(vocabulary) + ")";
    }
    return {};
  }

  /// Writes the labels of samples `indices` (global) to out: sample j's p-th label at
  /// out[j * labels_per_sample() + p].
  void gather_labels(std::span<const std::size_t> indices, std::int32_t* out) const {
    require_labels("gather_labels");
    if (is_regression()) throw std::logic_error("hpf::data::Dataset::gather_labels: a regression dataset has no labels");
    const std::size_t k = labels_per_sample_;
    for (std::size_t j = 0; j < indices.size(); ++j) {
      const std::int32_t* from = labels_.data() + local_index(indices[j], "gather_labels") * k;
      for (std::size_t p = 0; p < k; ++p) out[j * k + p] = from[p];
    }
  }

  /// Writes the regression targets of samples `indices` (global) to out: sample j's t-th value at
  /// out[j * target_size() + t].
  template <class T>
  void gather_targets(std::span<const std::size_t> indices, T* out) const {
    require_labels("gather_targets");
    if (!is_regression()) throw std::logic_error("hpf::data::Dataset::gather_targets: a labelled dataset has no real targets");
    const std::size_t k = target_size_;
    for (std::size_t j = 0; j < indices.size(); ++j) {
      const float* from = targets_.data() + local_index(indices[j], "gather_targets") * k;
      for (std::size_t t = 0; t < k; ++t) out[j * k + t] = static_cast<T>(from[t]);
    }
  }

 private:
  Dataset(std::size_t size, SampleDims dims, std::size_t classes, Shard shard, std::vector<std::int32_t> labels,
          std::size_t labels_per_sample = 1)
      : size_(size), dims_(dims), classes_(classes), shard_(shard), labels_(std::move(labels)),
        labels_per_sample_(labels_per_sample) {
    shard_.validate("hpf::data::Dataset");
    if (dims_.size() == 0) throw std::invalid_argument("hpf::data::Dataset: sample dims must be non-zero");
    check_count("labels", labels_.size(), shard_.labels && classes_ > 0 ? local_size() * labels_per_sample_ : 0);
    if (auto problem = detail::label_range_problem(labels_, classes_, shard_, labels_per_sample_); !problem.empty()) {
      throw std::invalid_argument("hpf::data::Dataset: " + problem);
    }
  }

  static void require_classes(std::size_t classes) {
    if (classes == 0) throw std::invalid_argument("hpf::data::Dataset: class count must be non-zero");
  }
  void check_storage(std::size_t values) const {
    check_count("sample values", values, shard_.images ? local_size() * sample_size() : 0);
  }
  static void check_count(const char* what, std::size_t got, std::size_t expected) {
    if (got != expected) {
      throw std::invalid_argument("hpf::data::Dataset: shard needs " + std::to_string(expected) + " " + what +
                                  ", got " + std::to_string(got));
    }
  }

  void require_labels(const char* who) const {
    if (!shard_.labels) {
      throw std::logic_error("hpf::data::Dataset::" + std::string(who) +
                             ": this process's shard holds no labels (it serves a pipeline stage other than the last)");
    }
  }

  std::size_t local_index(std::size_t i, const char* who) const {
    if (!holds(i)) {
      throw std::out_of_range("hpf::data::Dataset::" + std::string(who) + ": sample " + std::to_string(i) +
                              (i >= size_ ? " is out of range (the dataset has " + std::to_string(size_) + " samples)"
                                          : " is not in this shard (shard " + std::to_string(shard_.index) +
                                                " of " + std::to_string(shard_.count) + " holds i % " +
                                                std::to_string(shard_.count) + " == " +
                                                std::to_string(shard_.index) + ")"));
    }
    return i / shard_.count;
  }

  // Storage kind is chosen once per call by the caller; this loop has no branches per value.
  template <class T, class Source, class Convert>
  void copy_samples(std::span<const std::size_t> indices, const Source* source, T* out, Convert convert) const {
    const std::size_t n = indices.size(), hw = dims_.spatial(), per_sample = dims_.size();
    for (std::size_t j = 0; j < n; ++j) {
      const Source* sample = source + local_index(indices[j], "gather") * per_sample;
      if (j + prefetch_distance < n) prefetch(source, indices[j + prefetch_distance], per_sample);
      for (std::size_t c = 0; c < dims_.channels; ++c) {
        const Source* from = sample + c * hw;
        T* to = out + (c * n + j) * hw;
        for (std::size_t s = 0; s < hw; ++s) to[s] = convert(from[s]);
      }
    }
  }

  // Samples come in random order, so each one is a cache (and TLB) miss: fetching a later sample
  // while copying this one makes a Fashion-MNIST batch of 128 about 3x faster.
  static constexpr std::size_t prefetch_distance = 2;
  template <class Source>
  void prefetch([[maybe_unused]] const Source* source, std::size_t i, [[maybe_unused]] std::size_t per_sample) const {
#if defined(__GNUC__) || defined(__clang__)
    if (!holds(i)) return;  // reported when its turn comes
    const char* bytes = reinterpret_cast<const char*>(source + i / shard_.count * per_sample);
    for (std::size_t at = 0; at < per_sample * sizeof(Source); at += 64) __builtin_prefetch(bytes + at);
#endif
  }

  std::size_t size_;
  SampleDims dims_;
  std::size_t classes_;
  Shard shard_;
  std::vector<std::int32_t> labels_;  // labels_per_sample_ per local sample
  std::size_t labels_per_sample_ = 1;
  std::vector<std::uint8_t> pixels_;
  std::vector<float> values_;
  std::vector<float> targets_;  // regression: target_size_ per local sample
  std::size_t target_size_ = 0;
  bool bytes_ = false;
  double divisor_ = 1;
};

}  // namespace hpf::data

#endif  // HPF_DATA_DATASET_HPP
