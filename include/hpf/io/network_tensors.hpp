// SPDX-License-Identifier: MIT
#ifndef HPF_IO_NETWORK_TENSORS_HPP
#define HPF_IO_NETWORK_TENSORS_HPP

#include <hpf/io/safetensors.hpp>
#include <hpf/layers/parameters.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

/// A network's tensors by their PyTorch state_dict names, to and from safetensors files: what
/// hpf saves loads into PyTorch with `load_state_dict(..., strict=True)`, and the other way round.
namespace hpf::io {

/// True for tensors PyTorch keeps as integers: BatchNorm's `num_batches_tracked` (int64). hpf
/// stores them as T and saves them as I64.
inline bool is_integer_tensor(const TensorInfo& info) {
  constexpr std::string_view counter = "num_batches_tracked";
  const std::string_view name = info.name;
  return info.kind == TensorKind::buffer && name.size() >= counter.size() &&
         name.substr(name.size() - counter.size()) == counter &&
         (name.size() == counter.size() || name[name.size() - counter.size() - 1] == '.');
}

/// \brief Every parameter and buffer of a network (an hpf::Network or anything with its
/// tensors() and read()), named as tensors() names them, with PyTorch's shapes: floating tensors
/// in the network's scalar type (F32/F64), integer ones (is_integer_tensor) as I64.
template <class Net>
Safetensors network_tensors(const Net& net) {
  using T = typename Net::scalar_type;
  Safetensors file;
  for (const TensorInfo& info : net.tensors()) {
    const std::vector<T> values = net.read(info);
    if (is_integer_tensor(info)) {
      std::vector<std::int64_t> counts(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) counts[i] = static_cast<std::int64_t>(std::llround(values[i]));
      file.add(info.name, info.dims, counts);
    } else {
      file.add(info.name, info.dims, values);
    }
  }
  return file;
}

/// Saves network_tensors(net), with `metadata`, to `file` (see Safetensors::save).
template <class Net>
void save_network_tensors(const Net& net, const std::filesystem::path& file,
                          const std::map<std::string, std::string>& metadata = {}) {
  Safetensors contents = network_tensors(net);
  contents.metadata() = metadata;
  contents.save(file);
}

struct LoadOptions {
  /// Accept tensors the network does not have (e.g. a pipeline stage loading the whole model's
  /// file). Tensors the network has but the file lacks are always an error.
  bool ignore_unexpected = false;
};

/// \brief Overwrites every parameter and buffer of `net` with the file's tensor of the same name,
/// like PyTorch's `load_state_dict(strict=True)`: every tensor must be present with the same
/// shape, and (unless options say otherwise) the file must hold no others. Values are converted
/// to the network's scalar type (an F64 file into a float network rounds). Throws FormatError,
/// naming the file, before changing anything if a tensor is missing, unexpected or misshapen.
template <class Net>
void load_network_tensors(Net& net, const Safetensors& file, const LoadOptions& options = {}) {
  using T = typename Net::scalar_type;
  std::vector<std::string> missing;
  std::set<std::string, std::less<>> known;
  for (const TensorInfo& info : net.tensors()) {
    known.insert(info.name);
    if (!file.contains(info.name)) {
      missing.push_back(info.name);
      continue;
    }
    const TensorData& t = file.at(info.name);
    if (t.shape != info.dims) {
      throw FormatError(file.source(), "tensor '" + info.name + "' has shape " + shape_text(t.shape) +
                                           " but the network's is " + shape_text(info.dims));
    }
    if (t.dtype == Dtype::F16 || t.dtype == Dtype::BF16) {
      throw FormatError(file.source(), "tensor '" + info.name + "' is " + std::string(dtype_name(t.dtype)) +
                                           ", which hpf does not convert");
    }
  }
  auto listed = [](const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t k = 0; k < names.size() && k < 5; ++k) s += (k ? ", '" : "'") + names[k] + "'";
    if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
    return s;
  };
  if (!missing.empty()) {
    throw FormatError(file.source(), "lacks " + std::to_string(missing.size()) + " of the network's tensors: " + listed(missing));
  }
  if (!options.ignore_unexpected) {
    std::vector<std::string> unexpected;
    for (const std::string& name : file.names()) {
      if (!known.count(name)) unexpected.push_back(name);
    }
    if (!unexpected.empty()) {
      throw FormatError(file.source(), "holds " + std::to_string(unexpected.size()) +
                                           " tensor(s) the network does not have: " + listed(unexpected));
    }
  }
  for (const TensorInfo& info : net.tensors()) net.write(info, file.get_converted<T>(info.name));
}

/// Loads `file` into `net` (see the overload taking Safetensors).
template <class Net>
void load_network_tensors(Net& net, const std::filesystem::path& file, const LoadOptions& options = {}) {
  load_network_tensors(net, Safetensors::load(file), options);
}

}  // namespace hpf::io

#endif  // HPF_IO_NETWORK_TENSORS_HPP
