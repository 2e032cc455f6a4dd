// SPDX-License-Identifier: MIT
#ifndef HPF_MODEL_ANY_NETWORK_HPP
#define HPF_MODEL_ANY_NETWORK_HPP

#include <hpf/layers/parameters.hpp>
#include <hpf/model/network.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpf {

/// What the code around a network needs to know of its model, as values. (Not its type_name:
/// computing the name of a long model's type costs the compiler seconds per stage.)
struct NetworkFacts {
  std::string input_shape;  ///< shape_string of its whole input sample, for messages
  /// Channels and positions per channel of its input (of the slabs it holds, when hpf::Spatial<G>
  /// splits samples), and positions per channel of a whole input sample.
  std::size_t input_channels = 0, input_spatial = 0, input_whole_spatial = 0;
  std::size_t output_channels = 0, output_spatial = 0;
  bool classifier = false;      ///< ends with a loss against class labels
  std::size_t target_size = 0;  ///< real targets per sample (regression losses)
  std::size_t label_size = 0;   ///< class labels per sample (classifiers: 1, or one per position)
  std::size_t input_vocabulary = 0;  ///< token ids its first layer reads (an Embedding's rows), else 0

  std::size_t input_size() const { return input_channels * input_spatial; }
  std::size_t input_whole_size() const { return input_channels * input_whole_spatial; }
  std::size_t output_size() const { return output_channels * output_spatial; }
};

/// The NetworkFacts of Model (a whole model or a pipeline stage of one).
template <class Model>
NetworkFacts network_facts() {
  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  return {shape_string<whole_shape_t<In>>(), In::channels, In::spatial, whole_shape_t<In>::spatial, Out::channels, Out::spatial,
          model_classifies_v<Model>, model_target_size_v<Model>, model_label_size_v<Model>, model_input_vocabulary_v<Model>};
}

/// \brief Any hpf::Network<Model, T, Space> behind one interface: what StageEngine, the
/// checkpoints and the epoch loop run, so that they are compiled once per scalar type, execution
/// space and transport, not once per model and pipeline stage. The layers' own code stays
/// model-specific; a virtual call per micro-batch and pass is all the erasure costs.
template <class T, class Space>
class AnyNetwork {
 public:
  using scalar_type = T;
  using execution_space = Space;
  using memory_space = memory_space_t<Space>;
  using label_buffer = Kokkos::View<std::int32_t*, memory_space>;

  /// A micro-batch's tape, made by make_tape and read only by the network that made it.
  class Tape {
   public:
    virtual ~Tape() = default;
    virtual std::size_t capacity() const = 0;
    virtual std::size_t batch() const = 0;  ///< samples of the last forward
  };

  explicit AnyNetwork(NetworkFacts facts) : facts_(std::move(facts)) {}
  virtual ~AnyNetwork() = default;
  AnyNetwork(const AnyNetwork&) = delete;
  AnyNetwork& operator=(const AnyNetwork&) = delete;

  const NetworkFacts& facts() const { return facts_; }

  /// A network on this one's parameters, with gradients, buffers and workspace of its own (see
  /// Network's SharedParameters constructor), made on the calling thread.
  virtual std::unique_ptr<AnyNetwork> sharing_parameters() const = 0;

  virtual std::unique_ptr<Tape> make_tape(std::size_t capacity) = 0;
  virtual Activation<T, Space> input(const Tape& tape, std::size_t n) const = 0;
  /// The positions of a whole input sample's channels that input() holds (Network::input_positions).
  virtual InputPositions input_positions() const = 0;
  virtual Activation<T, Space> output(const Tape& tape) const = 0;
  /// The class labels of the first n samples of a tape (classifiers only; label_size each).
  virtual label_buffer labels(const Tape& tape, std::size_t n) const = 0;
  /// The first n samples' real targets of a tape (regression models only).
  virtual Buffer<T, Space> targets(const Tape& tape, std::size_t n) const = 0;

  /// The global dataset indices of the tape's next samples, and the key of the step (Dropout).
  virtual void set_samples(Tape& tape, std::span<const std::size_t> indices) const = 0;
  virtual void set_step(std::uint64_t key) = 0;
  virtual void forward(Tape& tape, std::size_t n, Mode mode, std::function<void()> between_layers) = 0;
  virtual std::optional<NonFiniteLayer> first_non_finite_layer(Tape& tape, std::size_t n) = 0;
  virtual void backward(Tape& tape, T loss_scale, ConstActivation<T, Space> output_grad, Activation<T, Space> input_grad,
                        std::function<void(std::size_t)> gradients_ready) = 0;
  /// Sum of the per-sample losses of the tape's last forward (networks ending with their loss).
  virtual T loss_sum(const Tape& tape) const = 0;
  /// Correctly classified samples of the tape's last forward (classifiers only).
  virtual std::size_t correct(const Tape& tape) const = 0;

  virtual void zero_grad() = 0;
  virtual const Buffer<T, Space>& parameters() const = 0;
  virtual const Buffer<T, Space>& gradients() const = 0;
  virtual const Buffer<T, Space>& buffers() const = 0;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  virtual std::vector<T> read(const TensorInfo& info, bool gradient = false) const = 0;
  virtual void write(const TensorInfo& info, const std::vector<T>& values) = 0;
  virtual Space space() const = 0;

 private:
  NetworkFacts facts_;
};

/// \brief A Network<Model, T, Space> of its own, as an AnyNetwork; network() is the typed one.
template <class Model, class T, class Space>
class NetworkHolder final : public AnyNetwork<T, Space> {
  using Base = AnyNetwork<T, Space>;
  using Net = Network<Model, T, Space>;

 public:
  using typename Base::label_buffer;
  using typename Base::Tape;

  explicit NetworkHolder(const NetworkOptions& options) : Base(network_facts<Model>()), net_(options) {}
  NetworkHolder(typename Net::SharedParameters, const NetworkHolder& owner)
      : Base(owner.facts()), net_(typename Net::SharedParameters{}, owner.net_) {}

  Net& network() { return net_; }
  const Net& network() const { return net_; }

  std::unique_ptr<Base> sharing_parameters() const override {
    return std::make_unique<NetworkHolder>(typename Net::SharedParameters{}, *this);
  }

  std::unique_ptr<Tape> make_tape(std::size_t capacity) override {
    auto made = std::make_unique<HeldTape>();
    made->tape = net_.make_tape(capacity);
    return made;
  }
  Activation<T, Space> input(const Tape& tape, std::size_t n) const override { return net_.input(held(tape), n); }
  InputPositions input_positions() const override { return net_.input_positions(); }
  Activation<T, Space> output(const Tape& tape) const override { return net_.output(held(tape)); }
  label_buffer labels(const Tape& tape, std::size_t n) const override {
    if constexpr (Net::classifier) {
      return net_.labels(held(tape), n);
    } else {
      throw std::logic_error("hpf::AnyNetwork::labels: the model does not end with a classification loss");
    }
  }
  Buffer<T, Space> targets(const Tape& tape, std::size_t n) const override {
    if constexpr (Net::target_size > 0) {
      return net_.targets(held(tape), n);
    } else {
      throw std::logic_error("hpf::AnyNetwork::targets: the model does not end with a regression loss");
    }
  }

  void set_samples(Tape& tape, std::span<const std::size_t> indices) const override {
    net_.set_samples(held(tape), indices);
  }
  void set_step(std::uint64_t key) override { net_.set_step(key); }
  void forward(Tape& tape, std::size_t n, Mode mode, std::function<void()> between_layers) override {
    net_.forward(held(tape), n, mode, std::move(between_layers));
  }
  std::optional<NonFiniteLayer> first_non_finite_layer(Tape& tape, std::size_t n) override {
    return net_.first_non_finite_layer(held(tape), n);
  }
  void backward(Tape& tape, T loss_scale, ConstActivation<T, Space> output_grad, Activation<T, Space> input_grad,
                std::function<void(std::size_t)> gradients_ready) override {
    net_.backward(held(tape), loss_scale, output_grad, input_grad, std::move(gradients_ready));
  }
  T loss_sum(const Tape& tape) const override {
    if constexpr (Model::trainable) {
      return net_.loss_sum(held(tape));
    } else {
      throw std::logic_error("hpf::AnyNetwork::loss_sum: the model does not end with a loss");
    }
  }
  std::size_t correct(const Tape& tape) const override {
    if constexpr (Net::classifier) {
      return net_.correct(held(tape));
    } else {
      throw std::logic_error("hpf::AnyNetwork::correct: the model does not end with a classification loss");
    }
  }

  void zero_grad() override { net_.zero_grad(); }
  const Buffer<T, Space>& parameters() const override { return net_.parameters(); }
  const Buffer<T, Space>& gradients() const override { return net_.gradients(); }
  const Buffer<T, Space>& buffers() const override { return net_.buffers(); }
  const std::vector<TensorInfo>& tensors() const override { return net_.tensors(); }
  std::vector<T> read(const TensorInfo& info, bool gradient = false) const override { return net_.read(info, gradient); }
  void write(const TensorInfo& info, const std::vector<T>& values) override { net_.write(info, values); }
  Space space() const override { return net_.space(); }

 private:
  struct HeldTape final : Tape {
    typename Net::Tape tape;
    std::size_t capacity() const override { return tape.capacity; }
    std::size_t batch() const override { return tape.batch; }
  };
  // Tapes come back only to the network that made them (StageEngine keeps each with its network).
  static typename Net::Tape& held(Tape& tape) { return static_cast<HeldTape&>(tape).tape; }
  static const typename Net::Tape& held(const Tape& tape) { return static_cast<const HeldTape&>(tape).tape; }

  Net net_;
};

/// The Network<Model, T, Space> behind `net`; throws std::bad_cast if `net` runs another model.
template <class Model, class T, class Space>
Network<Model, T, Space>& network_cast(AnyNetwork<T, Space>& net) {
  return dynamic_cast<NetworkHolder<Model, T, Space>&>(net).network();
}

}  // namespace hpf

#endif  // HPF_MODEL_ANY_NETWORK_HPP
