// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_PARAMETERS_HPP
#define HPF_LAYERS_PARAMETERS_HPP

#include <hpf/layers/kernel_options.hpp>
#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hpf {

/// Trainable parameters get gradients and optimizer state; buffers (running statistics) do not.
enum class TensorKind { parameter, buffer };

/// \brief How a tensor starts. `weight` defers to the network's InitScheme (PyTorch's default
/// U(±1/sqrt(fan_in)) or Kaiming-normal by fan-out), the others are fixed.
struct InitRule {
  enum class Kind { zeros, ones, uniform_fan_in, weight, normal, xavier_uniform };
  Kind kind = Kind::zeros;
  std::size_t fan_in = 0;
  std::size_t fan_out = 0;
  /// A convolution weight (InitScheme::kaiming_normal_fan_out applies to these only).
  bool convolution = false;

  static constexpr InitRule zeros() { return {Kind::zeros}; }
  static constexpr InitRule ones() { return {Kind::ones}; }
  /// U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's Linear/Conv bias and default weight init.
  static constexpr InitRule uniform_fan_in(std::size_t fan_in) {
    return {Kind::uniform_fan_in, fan_in, 0, false};
  }
  static constexpr InitRule weight(std::size_t fan_in, std::size_t fan_out, bool convolution = false) {
    return {Kind::weight, fan_in, fan_out, convolution};
  }
  /// N(0, 1): PyTorch's nn.Embedding weight.
  static constexpr InitRule normal() { return {Kind::normal}; }
  /// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)): PyTorch's xavier_uniform_ (the in-projection
  /// of nn.MultiheadAttention).
  static constexpr InitRule xavier_uniform(std::size_t fan_in, std::size_t fan_out) {
    return {Kind::xavier_uniform, fan_in, fan_out, false};
  }
};

/// \brief One named tensor of a network: where it lives in the flat storage and how it starts.
/// Names are PyTorch state_dict names of the equivalent nn.Sequential ("3.0.body.1.weight"),
/// derived from the layer's position in the whole model, never from the rank that holds it.
struct TensorInfo {
  std::string name;
  TensorKind kind = TensorKind::parameter;
  /// Offset in elements into the flat parameter (or buffer) storage.
  std::size_t offset = 0;
  /// PyTorch's logical extents (e.g. OIHW for a convolution weight).
  std::vector<std::size_t> dims;
  std::size_t size = 0;
  InitRule init;
};

/// \brief Hands each layer its slices of the network's flat parameter, gradient and buffer
/// storage, and records their names. Flat storage lets one optimizer kernel update everything,
/// and gradient buckets be plain ranges of one array (no packing before an allreduce).
/// A binder constructed without storage only measures: the views it hands out have no data.
template <class T, class Space>
class ParameterBinder {
 public:
  /// Each tensor starts on a multiple of this many elements (64 bytes for float).
  static constexpr std::size_t alignment = 16;

  struct Parameter {
    Vector<T, Space> value;
    Vector<T, Space> grad;
  };

  explicit ParameterBinder(const KernelResources& kernels = default_kernels()) : kernels_(&kernels) {}
  ParameterBinder(Buffer<T, Space> values, Buffer<T, Space> grads, Buffer<T, Space> buffers,
                  const KernelResources& kernels = default_kernels())
      : values_(values), grads_(grads), buffers_(buffers), measuring_(false), kernels_(&kernels) {}

  /// The network's kernel choices and shared resources (a layer picks its algorithm from them).
  const KernelResources& kernels() const { return *kernels_; }

  /// A trainable tensor of `dims` (row-major) named `<scope>.<name>`.
  Parameter parameter(std::string_view name, std::initializer_list<std::size_t> dims,
                      InitRule init) {
    return parameter(name, std::span<const std::size_t>(dims.begin(), dims.size()), init);
  }
  /// The same with extents known at run time.
  Parameter parameter(std::string_view name, std::span<const std::size_t> dims, InitRule init) {
    const TensorInfo& info = record(name, TensorKind::parameter, dims, init, parameter_end_);
    if (measuring_) return {};
    return {Vector<T, Space>(values_.data() + info.offset, info.size),
            Vector<T, Space>(grads_.data() + info.offset, info.size)};
  }

  /// A non-trainable tensor (kept in sync across replicas, saved in checkpoints).
  Vector<T, Space> buffer(std::string_view name, std::initializer_list<std::size_t> dims,
                          InitRule init) {
    const TensorInfo& info =
        record(name, TensorKind::buffer, std::span<const std::size_t>(dims.begin(), dims.size()), init, buffer_end_);
    if (measuring_) return {};
    return Vector<T, Space>(buffers_.data() + info.offset, info.size);
  }

  /// Names bound inside the returned guard's lifetime get "<part>." prefixed.
  class [[nodiscard]] Scope {
   public:
    Scope(ParameterBinder& binder, std::string_view part) : binder_(binder), restore_(binder.prefix_.size()) {
      binder.prefix_.append(part);
      binder.prefix_.push_back('.');
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { binder_.prefix_.resize(restore_); }

   private:
    ParameterBinder& binder_;
    std::size_t restore_;
  };
  Scope scope(std::string_view part) { return Scope(*this, part); }
  Scope scope(std::size_t index) { return Scope(*this, std::to_string(index)); }

  /// Where the layer bound now sits in an hpf::DensePair (PairRole::none outside one).
  PairRole pair_role() const { return pair_role_; }
  /// The layers bound inside the returned guard's lifetime sit at `role` in a DensePair.
  class [[nodiscard]] RoleScope {
   public:
    RoleScope(ParameterBinder& binder, PairRole role) : binder_(binder), restore_(binder.pair_role_) { binder.pair_role_ = role; }
    RoleScope(const RoleScope&) = delete;
    RoleScope& operator=(const RoleScope&) = delete;
    ~RoleScope() { binder_.pair_role_ = restore_; }

   private:
    ParameterBinder& binder_;
    PairRole restore_;
  };
  RoleScope pair_role(PairRole role) { return RoleScope(*this, role); }

  /// The scope names are bound in now ("3.0.body.1."): a layer's position in the whole model,
  /// the same on every rank that holds it.
  std::string_view scope() const { return prefix_; }

  /// Where the next parameter will start (the gradient-readiness watermark of a layer).
  std::size_t parameter_offset() const { return align(parameter_end_); }
  /// Elements of flat parameter storage needed so far (with alignment padding).
  std::size_t parameter_storage() const { return align(parameter_end_); }
  std::size_t buffer_storage() const { return align(buffer_end_); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

 private:
  static const KernelResources& default_kernels() {
    static const KernelResources defaults;  // binders outside a Network: automatic choices
    return defaults;
  }
  static constexpr std::size_t align(std::size_t n) {
    return (n + alignment - 1) / alignment * alignment;
  }
  const TensorInfo& record(std::string_view name, TensorKind kind,
                           std::span<const std::size_t> dims, InitRule init,
                           std::size_t& end) {
    TensorInfo info;
    info.name = prefix_ + std::string(name);
    info.kind = kind;
    info.offset = align(end);
    info.dims.assign(dims.begin(), dims.end());
    info.size = 1;
    for (std::size_t d : dims) info.size *= d;
    info.init = init;
    end = info.offset + info.size;
    tensors_.push_back(std::move(info));
    return tensors_.back();
  }

  Buffer<T, Space> values_, grads_, buffers_;
  bool measuring_ = true;
  const KernelResources* kernels_;
  std::string prefix_;
  PairRole pair_role_ = PairRole::none;
  std::size_t parameter_end_ = 0;
  std::size_t buffer_end_ = 0;
  std::vector<TensorInfo> tensors_;
};

}  // namespace hpf

#endif  // HPF_LAYERS_PARAMETERS_HPP
