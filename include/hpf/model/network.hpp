// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_NETWORK_HPP
#define HPF_MODEL_NETWORK_HPP

#include <hpf/layers/context.hpp>
#include <hpf/layers/kernel_options.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/layers/loss.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/meta/type_name.hpp>
#include <hpf/tensor/finite.hpp>
#include <hpf/tensor/random.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hpf {

/// How `InitRule::weight` tensors start. Biases and BatchNorm always follow PyTorch.
enum class InitScheme {
  /// PyTorch's default for Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  pytorch_default,
  /// Convolution weights N(0, 2/fan_out) (kaiming_normal_, mode='fan_out', as CIFAR ResNets);
  /// dense weights keep PyTorch's default.
  kaiming_normal_fan_out,
};

struct NetworkOptions {
  /// Seeds every tensor's own stream together with its name: the same seed gives the same
  /// weights however the model is split across processes.
  std::uint64_t seed = 0;
  InitScheme init = InitScheme::pytorch_default;
  /// How host float convolutions run (the vendor library, or im2col + GEMM as on devices).
  ConvolutionAlgorithm convolution = ConvolutionAlgorithm::automatic;
  /// Re-materialization (GPipe's): every Repeat keeps only its blocks' inputs from forward to
  /// backward, one block's activations at a time, and runs each block's forward again inside
  /// backward. The same bits; activation memory of N blocks down to N block inputs and one block,
  /// for about one more forward pass of the blocks.
  bool recompute = false;
  /// The inputs of the products of Dense, convolutions and attention in a float network: float,
  /// or rounded to bfloat16 with float sums (what hpf::Mixed<hpf::bf16> training sets; see
  /// docs/precision.md). Other scalar types take `full` only.
  MatmulPrecision matmul_precision = MatmulPrecision::full;
  /// Dense and convolution layers' work divided among a group (filter or channel parallelism; see
  /// docs/strategies.md). hpf::fit sets it from its strategy (Pipeline<..., Filter<G>>); a
  /// Trainer given a split computes every member's part and gets the bits of G processes.
  LayerSplit split{};
  /// Under a spatial split (hpf::Spatial<G>), each convolution computes its slab's interior rows
  /// (those whose windows stay inside it) while its halos travel, and the rows next to them once
  /// they are in (docs/strategies.md). It costs kernel calls and copies, and hides only halo time a
  /// rank would otherwise spend idle: where ranks share cores (every run measured here) it was
  /// slower. Other bits than without, the same in every layout.
  bool interior_first = false;
  /// The split's collectives across processes (hpf::fit sets them); null: this process computes
  /// every member's part.
  std::shared_ptr<LayerGroupBase> split_group{};
};

/// Training (batch statistics, running statistics updated) or evaluation.
enum class Mode { train, eval };

/// The last layer of a model: its loss, if it ends with one.
template <class Model>
using model_loss_layer_t = at_t<typename Model::bound_layers, size_v<typename Model::bound_layers> - 1>;
/// Whether a model ends with a loss against class labels.
template <class Model>
inline constexpr bool model_classifies_v = ClassificationLoss<model_loss_layer_t<Model>>;
/// Class labels per sample of a model ending with a classification loss: 1, or one per position
/// of a sequence (a language model's next tokens); 0 for other models.
template <class Model>
inline constexpr std::size_t model_label_size_v = loss_label_size_v<model_loss_layer_t<Model>>;
/// Token ids a model's first layer reads (an Embedding's vocabulary); 0 when its input is not tokens.
template <class Model>
inline constexpr std::size_t model_input_vocabulary_v = [] {
  using First = at_t<typename Model::bound_layers, 0>;
  if constexpr (requires { First::vocabulary; }) {
    return std::size_t{First::vocabulary};
  } else {
    return std::size_t{0};
  }
}();
/// Real targets per sample of a model ending with a regression loss (0 otherwise).
template <class Model>
inline constexpr std::size_t model_target_size_v = [] {
  using Loss = model_loss_layer_t<Model>;
  if constexpr (LossLayer<Loss> && !ClassificationLoss<Loss>) {
    return Loss::target_size;
  } else {
    return std::size_t{0};
  }
}();

/// The positions of each channel of a whole input sample that a network's input holds:
/// [first, first + count) of `whole` (all of them unless samples are split into slabs).
struct InputPositions {
  std::size_t first = 0, count = 0, whole = 0;
  bool all() const { return count == whole; }
};

/// A layer whose output held a value that is not finite: its index and kind
/// (Network::first_non_finite_layer).
struct NonFiniteLayer {
  std::size_t layer = 0;
  std::string kind;
};

/// \brief A model instantiated for scalar T on execution space Space: parameters, gradients and
/// buffers in three flat arrays of Space's memory, and the layers' kernels.
///
/// Activations live in tapes, one per micro-batch in flight, so a pipeline schedule can keep
/// several micro-batches between their forward and backward passes.
/// \tparam Model an hpf::Sequential (or a pipeline stage of one)
/// \tparam T float (default) or double (gradient checks, reference comparisons)
/// \tparam Space a Kokkos execution space
template <class Model, class T = float, class Space = Kokkos::DefaultExecutionSpace>
class Network {
  static_assert(Model::valid, "hpf::Network: the model is invalid; the first error above names the layer");

 public:
  using model_type = Model;
  using scalar_type = T;
  using execution_space = Space;
  using memory_space = memory_space_t<Space>;
  using input_shape = typename Model::input_shape;
  using output_shape = typename Model::output_shape;
  using layers_type = typename Model::bound::template impl<T, Space>;
  using label_buffer = Kokkos::View<std::int32_t*, memory_space>;
  /// The model's loss layer, if it ends with one.
  using loss_layer = model_loss_layer_t<Model>;
  /// True when the model ends with a loss against class labels (accuracy is defined); a model
  /// ending with a regression loss reads `target_size` real targets per sample instead.
  static constexpr bool classifier = model_classifies_v<Model>;
  static constexpr std::size_t target_size = model_target_size_v<Model>;
  /// Class labels per sample (classifiers; one per position for a per-position loss).
  static constexpr std::size_t label_size = model_label_size_v<Model>;
  /// Samples split into slabs (hpf::SpatialSplit): this network holds some of each sample's.
  static constexpr bool takes_slabs = is_spatial_part_v<input_shape>;

  /// Activations and saved state of one micro-batch between its forward and backward passes.
  struct Tape {
    std::size_t capacity = 0;  ///< largest batch this tape holds
    std::size_t batch = 0;     ///< samples of the last forward
    Buffer<T, Space> input, output;
    label_buffer labels;       ///< class labels, label_size per sample (classifiers)
    Buffer<T, Space> targets;  ///< real targets, target_size per sample (regression)
    /// Global dataset index of each sample (what Dropout's masks follow); 0, 1, ... until set.
    Kokkos::View<std::uint64_t*, memory_space> samples;
    typename Kokkos::View<std::uint64_t*, memory_space>::HostMirror host_samples;  // what set_samples fills
    typename layers_type::tape_type layers;
  };

  explicit Network(const NetworkOptions& options = {}, Space space = Space{}) : space_(space), seed_(options.seed) {
    if (!std::is_same_v<T, float> && options.matmul_precision != MatmulPrecision::full)
      throw std::invalid_argument("hpf::Network: MatmulPrecision::bf16 is for float networks; this one is " +
                                  std::string(type_name<T>()));
    kernels_.convolution = options.convolution;
    kernels_.recompute_blocks = options.recompute;
    kernels_.matmul_precision = options.matmul_precision;
    options.split.check();
    kernels_.split = options.split;
    kernels_.split_group = options.split_group;
    kernels_.interior_first = options.interior_first;
    if constexpr (takes_slabs) {
      constexpr LayerSplit slabs = LayerSplit::spatial(spatial_group_v<input_shape>);
      if (options.split.splits() && options.split != slabs) {
        throw std::invalid_argument("hpf::Network: the model splits samples into slabs (" + slabs.describe() +
                                    ") but NetworkOptions::split asks for a " + options.split.describe());
      }
      kernels_.split = slabs;
    }
    bind_layers(nullptr);
    check_slab_group();
    initialize(options);
  }

  /// Selects the constructor that shares another network's parameters.
  struct SharedParameters {};

  /// \brief A network on `owner`'s parameters, with gradients, buffers (starting as owner's),
  /// workspace and vendor kernels of its own: a data shard that trains beside others on its own
  /// thread (StageEngine). It only reads the parameters; whoever owns them updates them.
  Network(SharedParameters, const Network& owner, Space space = Space{})
      : space_(space), seed_(owner.seed_), step_(owner.step_) {
    kernels_.convolution = owner.kernels_.convolution;  // not its oneDNN device: streams are per thread
    kernels_.recompute_blocks = owner.kernels_.recompute_blocks;
    kernels_.matmul_precision = owner.kernels_.matmul_precision;
    kernels_.split = owner.kernels_.split;
    kernels_.split_group = owner.kernels_.split_group;
    kernels_.interior_first = owner.kernels_.interior_first;
    bind_layers(&owner.parameters_);
    Kokkos::deep_copy(space_, buffers_, owner.buffers_);
    zero_grad();
  }

  Network(const Network&) = delete;  // layers hold views into this network's storage
  Network& operator=(const Network&) = delete;

  /// Re-initialises every parameter and buffer as a fresh network with `options` would.
  void initialize(const NetworkOptions& options) {
    seed_ = options.seed;
    auto values = Kokkos::create_mirror_view(parameters_);
    auto state = Kokkos::create_mirror_view(buffers_);
    Kokkos::deep_copy(values, T(0));
    Kokkos::deep_copy(state, T(0));
    for (const TensorInfo& info : tensors_) {
      T* data = (info.kind == TensorKind::parameter ? values.data() : state.data()) + info.offset;
      fill(data, info, options);
    }
    Kokkos::deep_copy(parameters_, values);
    Kokkos::deep_copy(buffers_, state);
    zero_grad();
  }

  /// A tape for batches of up to `capacity` samples.
  Tape make_tape(std::size_t capacity) {
    Tape tape;
    tape.capacity = capacity;
    tape.input = Buffer<T, Space>("hpf::Network::input", input_shape::size * capacity);
    tape.output = Buffer<T, Space>("hpf::Network::output", output_shape::size * capacity);
    if constexpr (classifier) tape.labels = label_buffer("hpf::Network::labels", label_size * capacity);
    if constexpr (target_size > 0) tape.targets = Buffer<T, Space>("hpf::Network::targets", target_size * capacity);
    tape.samples = Kokkos::View<std::uint64_t*, memory_space>("hpf::Network::samples", capacity);
    tape.host_samples = Kokkos::create_mirror_view(tape.samples);  // the same view on host spaces
    const auto samples = tape.samples;
    Kokkos::parallel_for("hpf::Network::samples", Kokkos::RangePolicy<Space>(space_, 0, capacity),
                         KOKKOS_LAMBDA(const std::size_t j) { samples(j) = j; });
    layers_.reserve(tape.layers, capacity);
    ensure_capacity(workspace_, layers_.workspace(capacity), "hpf::Network::workspace");
    ensure_capacity(scratch_, scratch_of(layers_, capacity), "hpf::Network::scratch");
    return tape;
  }

  /// Which positions of each channel of a whole input sample the input holds (what to load).
  InputPositions input_positions() const {
    using Whole = whole_shape_t<input_shape>;
    if constexpr (takes_slabs) {
      const std::size_t first = kernels_.template layer_group<T, Space>().first_member() * input_shape::slab_spatial;
      return {first, input_shape::spatial, Whole::spatial};
    } else {
      return {0, Whole::spatial, Whole::spatial};
    }
  }

  /// The `[C][n][S]` input of a tape, to be filled before forward.
  Activation<T, Space> input(const Tape& tape, std::size_t n) const {
    check_batch(tape, n);
    return activation_view(tape.input, input_shape::channels, n, input_shape::spatial);
  }
  /// The `[C][n][S]` output of the last forward.
  Activation<T, Space> output(const Tape& tape) const {
    return activation_view(tape.output, output_shape::channels, tape.batch, output_shape::spatial);
  }
  /// The labels of the first n samples of a tape (`[n][label_size]`), to be filled before forward
  /// of a classifier.
  Kokkos::View<std::int32_t*, memory_space> labels(const Tape& tape, std::size_t n) const
    requires classifier
  {
    check_batch(tape, n);
    return Kokkos::subview(tape.labels, Kokkos::make_pair(std::size_t{0}, n * label_size));
  }
  /// The targets of the first n samples of a tape (`[n][target_size]`), to be filled before
  /// forward of a regression model.
  Buffer<T, Space> targets(const Tape& tape, std::size_t n) const
    requires(target_size > 0)
  {
    check_batch(tape, n);
    return Kokkos::subview(tape.targets, Kokkos::make_pair(std::size_t{0}, n * target_size));
  }

  /// Sets the global dataset indices of the tape's next samples (Dropout's masks follow them).
  void set_samples(Tape& tape, std::span<const std::size_t> indices) const {
    check_batch(tape, indices.size());
    for (std::size_t j = 0; j < indices.size(); ++j) tape.host_samples(j) = indices[j];
    Kokkos::deep_copy(space_, tape.samples, tape.host_samples);
  }
  /// Sets the key of the optimizer step the next passes belong to (Dropout's masks follow it).
  void set_step(std::uint64_t key) { step_ = key; }

  /// Runs all layers on the first n samples of the tape's input; `between_layers`, if given,
  /// after each layer (a pipeline stage lets its messages in flight progress there).
  void forward(Tape& tape, std::size_t n, Mode mode = Mode::train, std::function<void()> between_layers = {}) {
    check_batch(tape, n);
    tape.batch = n;
    Context<T, Space> ctx = context(tape, mode);
    ctx.between_layers = std::move(between_layers);
    layers_.forward(ctx, input(tape, n), output(tape), tape.layers);
  }

  /// Runs forward again on the tape's first n inputs (in training mode: BatchNorm statistics
  /// move) and returns the first layer whose output holds a NaN or infinity, if any. For a
  /// diagnosis on the way to stopping, not for training.
  std::optional<NonFiniteLayer> first_non_finite_layer(Tape& tape, std::size_t n) {
    check_batch(tape, n);
    tape.batch = n;
    Context<T, Space> ctx = context(tape, Mode::train);
    std::optional<NonFiniteLayer> found;
    ctx.after_forward = [&found](std::size_t layer, std::string_view kind, ConstActivation<T, Space> out) {
      if (!found && count_non_finite(out) > 0) found = NonFiniteLayer{layer, std::string(kind)};
    };
    layers_.forward(ctx, input(tape, n), output(tape), tape.layers);
    return found;
  }

  /// Back-propagates the tape's last forward, adding parameter gradients into gradients().
  /// \param loss_scale gradient of the reported loss per sample's loss (1 / global batch size)
  /// \param output_grad gradient w.r.t. the output; empty when the model ends with its loss
  /// \param input_grad where to put the gradient w.r.t. the input; empty if not needed
  /// \param gradients_ready called with a flat offset once all gradients above it are final
  void backward(Tape& tape, T loss_scale, ConstActivation<T, Space> output_grad = {},
                Activation<T, Space> input_grad = {},
                std::function<void(std::size_t)> gradients_ready = {}) {
    Context<T, Space> ctx = context(tape, Mode::train);
    ctx.loss_scale = loss_scale;
    ctx.gradients_ready = std::move(gradients_ready);
    layers_.backward(ctx, input(tape, tape.batch), output(tape), output_grad, input_grad, tape.layers);
  }

  /// Sum of per-sample losses of the tape's last forward (blocks).
  T loss_sum(const Tape& tape) const
    requires Model::trainable
  {
    constexpr std::size_t last = size_v<typename Model::bound_layers> - 1;
    return layers_.template child<last>().loss_sum(context(tape, Mode::eval),
                                                    layers_type::template child_tape<last>(tape.layers), tape.batch);
  }
  /// Correctly classified labels of the tape's last forward (samples, or positions; blocks).
  std::size_t correct(const Tape& tape) const
    requires classifier
  {
    constexpr std::size_t last = size_v<typename Model::bound_layers> - 1;
    return layers_.template child<last>().correct(context(tape, Mode::eval), output(tape));
  }

  void zero_grad() { Kokkos::deep_copy(space_, gradients_, T(0)); }

  /// Flat storage: every parameter, every parameter gradient, every buffer (see tensors()).
  const Buffer<T, Space>& parameters() const { return parameters_; }
  const Buffer<T, Space>& gradients() const { return gradients_; }
  const Buffer<T, Space>& buffers() const { return buffers_; }
  /// Name, kind, offset and PyTorch extents of every tensor, in binding order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& tensor(std::string_view name) const {
    for (const TensorInfo& info : tensors_)
      if (info.name == name) return info;
    throw std::out_of_range("hpf::Network: no tensor named '" + std::string(name) + "'");
  }
  /// Trainable scalars (without alignment padding).
  std::size_t parameter_count() const {
    std::size_t n = 0;
    for (const TensorInfo& info : tensors_)
      if (info.kind == TensorKind::parameter) n += info.size;
    return n;
  }

  /// Host copy of one tensor's values (or of its gradient).
  std::vector<T> read(const TensorInfo& info, bool gradient = false) const {
    return read_range(info.kind == TensorKind::buffer ? buffers_ : (gradient ? gradients_ : parameters_), info.offset, info.size);
  }
  /// Overwrites one tensor's values from host memory.
  void write(const TensorInfo& info, const std::vector<T>& values) {
    if (values.size() != info.size) {
      throw std::invalid_argument("hpf::Network::write: tensor '" + info.name + "' has " +
                                  std::to_string(info.size) + " elements, got " + std::to_string(values.size()));
    }
    write_range(info.kind == TensorKind::buffer ? buffers_ : parameters_, info.offset, values);
  }

  const layers_type& layers() const { return layers_; }
  Space space() const { return space_; }

 private:
  /// Measures the storage the layers ask for, makes it (the parameters: `shared` when given) and
  /// binds the layers to it.
  void bind_layers(const Buffer<T, Space>* shared) {
    ParameterBinder<T, Space> measure(kernels_);
    layers_.bind(measure);
    parameters_ = shared ? *shared : Buffer<T, Space>("hpf::parameters", measure.parameter_storage());
    gradients_ = Buffer<T, Space>("hpf::gradients", measure.parameter_storage());
    buffers_ = Buffer<T, Space>("hpf::buffers", measure.buffer_storage());
    ParameterBinder<T, Space> binder(parameters_, gradients_, buffers_, kernels_);
    layers_.bind(binder);
    tensors_ = binder.tensors();
  }

  /// A network on slabs holds as many members' slabs as its group's process computes: all of
  /// them in one process, one on each rank of an hpf::fit group.
  void check_slab_group() const {
    if constexpr (takes_slabs) {
      const LayerGroup<T, Space>& group = kernels_.template layer_group<T, Space>();
      if (group.size() != input_shape::group || group.local_members() != input_shape::held) {
        throw std::invalid_argument("hpf::Network: the model holds " + std::to_string(input_shape::held) + " of " +
                                    std::to_string(input_shape::group) + " slabs of each sample, but its group's process computes " +
                                    std::to_string(group.local_members()) + " of " + std::to_string(group.size()) +
                                    " members' parts (hpf::fit makes the group of a Spatial<G> split)");
      }
    }
  }

  Context<T, Space> context(const Tape& tape, Mode mode) const {
    Context<T, Space> ctx;
    ctx.space = space_;
    ctx.training = mode == Mode::train;
    if constexpr (classifier) {
      ctx.labels = Kokkos::subview(tape.labels, Kokkos::make_pair(std::size_t{0}, tape.batch * label_size));
    }
    if constexpr (target_size > 0) {
      ctx.targets = Kokkos::subview(tape.targets, Kokkos::make_pair(std::size_t{0}, tape.batch * target_size));
    }
    ctx.workspace = workspace_;
    ctx.scratch = scratch_;
    ctx.seed = seed_;
    ctx.step = step_;
    ctx.samples = Kokkos::subview(tape.samples, Kokkos::make_pair(std::size_t{0}, tape.batch));
    return ctx;
  }
  static void check_batch(const Tape& tape, std::size_t n) {
    if (n == 0 || n > tape.capacity) {
      throw std::invalid_argument("hpf::Network: batch of " + std::to_string(n) +
                                  " samples for a tape of capacity " + std::to_string(tape.capacity));
    }
  }
  static void fill(T* data, const TensorInfo& info, const NetworkOptions& options) {
    Rng rng(options.seed, info.name);
    switch (info.init.kind) {
      case InitRule::Kind::zeros:
        for (std::size_t i = 0; i < info.size; ++i) data[i] = T(0);
        return;
      case InitRule::Kind::ones:
        for (std::size_t i = 0; i < info.size; ++i) data[i] = T(1);
        return;
      case InitRule::Kind::weight:
        if (options.init == InitScheme::kaiming_normal_fan_out && info.init.convolution) {
          const double std_dev = std::sqrt(2.0 / static_cast<double>(info.init.fan_out));
          for (std::size_t i = 0; i < info.size; ++i) data[i] = static_cast<T>(std_dev * rng.normal());
          return;
        }
        [[fallthrough]];
      case InitRule::Kind::uniform_fan_in: {
        const double bound = 1.0 / std::sqrt(static_cast<double>(info.init.fan_in));
        for (std::size_t i = 0; i < info.size; ++i) data[i] = static_cast<T>(rng.uniform(-bound, bound));
        return;
      }
      case InitRule::Kind::normal:
        for (std::size_t i = 0; i < info.size; ++i) data[i] = static_cast<T>(rng.normal());
        return;
      case InitRule::Kind::xavier_uniform: {
        const double bound = std::sqrt(6.0 / static_cast<double>(info.init.fan_in + info.init.fan_out));
        for (std::size_t i = 0; i < info.size; ++i) data[i] = static_cast<T>(rng.uniform(-bound, bound));
        return;
      }
    }
  }

  Space space_;
  KernelResources kernels_;  // before layers_: they keep its oneDNN device
  layers_type layers_;
  Buffer<T, Space> parameters_, gradients_, buffers_, workspace_, scratch_;
  std::vector<TensorInfo> tensors_;
  std::uint64_t seed_ = 0, step_ = 0;
};

}  // namespace hpf

#endif  // HPF_MODEL_NETWORK_HPP
