// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_KERNEL_OPTIONS_HPP
#define HPF_LAYERS_KERNEL_OPTIONS_HPP

#include <hpf/config.hpp>
#include <hpf/layers/layer_split.hpp>

#include <memory>
#include <stdexcept>
#include <typeinfo>

#if HPF_ENABLE_ONEDNN
#include <dnnl.hpp>
#endif

namespace hpf {

/// How host float convolutions run.
enum class ConvolutionAlgorithm {
  /// The vendor convolution (oneDNN, as PyTorch's CPU convolutions) when hpf is built with it and
  /// the layer runs in float on the host, with Winograd's algorithm (forward and both gradients)
  /// for 3x3 stride-1 layers of 32 or more channels where oneDNN has it for the CPU (AVX-512):
  /// fewer multiplications, the same bits for any batch size and thread count, rounding errors a
  /// few times the direct convolution's; im2col + GEMM otherwise.
  automatic,
  /// The vendor's direct convolution only (PyTorch's choice on the CPU): as `automatic`, without
  /// Winograd's algorithm.
  direct,
  /// Always im2col (vol2col for Conv3D) + GEMM (the path of devices and of double precision).
  gemm,
};

/// What the products of float layers (Dense, convolutions, attention) take as their inputs
/// (torch.set_float32_matmul_precision's choice, and what autocast gives these layers).
enum class MatmulPrecision {
  /// The layer's own scalar type.
  full,
  /// Both inputs of each product rounded to bfloat16, products and sums in float: oneDNN's bf16
  /// kernels on CPUs that have them (AVX512-BF16, AMX), the same arithmetic emulated in float
  /// elsewhere. Activations, weights, gradients and every other layer stay in float.
  bf16,
};

/// Under MatmulPrecision::bf16, convolutions over fewer input channels than this compute in float.
/// bf16 kernels reduce over input channels in blocks (16 with AVX512-BF16, 32 with AMX tiles),
/// which a first layer's grey or RGB input hardly fills: on a Xeon with AMX, oneDNN's 3x3 layers
/// over 1-3 channels (forward and weight gradient, as a first layer runs) took 1.35-1.85x as long
/// in bf16 as in float, over 4 channels 0.81x.
inline constexpr std::size_t bf16_convolution_min_channels = 4;

/// The inputs a convolution over `channels` input channels gives its products in a network of
/// MatmulPrecision `network` (see bf16_convolution_min_channels).
constexpr MatmulPrecision convolution_precision(MatmulPrecision network, std::size_t channels) {
  return channels < bf16_convolution_min_channels ? MatmulPrecision::full : network;
}

namespace detail {
#if HPF_ENABLE_ONEDNN
/// The oneDNN engine and stream a network's vendor kernels run on (one per network, made when
/// its first vendor layer binds).
struct OneDnnDevice {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
#endif
}  // namespace detail

/// \brief The choices and shared resources of a network's layer kernels: set from NetworkOptions
/// when the network is made and handed to each layer as it binds, instead of process-wide state
/// a layer would read by itself.
struct KernelResources {
  ConvolutionAlgorithm convolution = ConvolutionAlgorithm::automatic;
  /// Re-materialization (NetworkOptions::recompute): Repeat keeps only its blocks' inputs from
  /// forward to backward and runs each block's forward again inside backward.
  bool recompute_blocks = false;
  /// The inputs of float layers' products (NetworkOptions::matmul_precision).
  MatmulPrecision matmul_precision = MatmulPrecision::full;
  /// How Dense and convolution layers divide their work (NetworkOptions::split).
  LayerSplit split{};
  /// A spatial split's convolutions compute their slabs' interior rows while the halos travel
  /// (NetworkOptions::interior_first).
  bool interior_first = false;
  /// The split's collectives (NetworkOptions::split_group); null: this process computes every
  /// member's part.
  mutable std::shared_ptr<LayerGroupBase> split_group;

  /// The collectives split layers of scalar T on Space call: split_group, or a LocalLayerGroup
  /// made on first use.
  template <class T, class Space>
  const LayerGroup<T, Space>& layer_group() const {
    if (!split_group) split_group = std::make_shared<LocalLayerGroup<T, Space>>(split.group);
    const auto* group = dynamic_cast<const LayerGroup<T, Space>*>(split_group.get());
    if (!group) throw std::logic_error("hpf::KernelResources: the split group is for another scalar type or space");
    return *group;
  }

  /// The network's one `State` (staging memory its layers share, as they run one after another),
  /// made on first use. A network asks for one type only.
  template <class State>
  std::shared_ptr<State> shared_state() const {
    if (!state_) state_ = std::make_shared<State>(*this);
    if (typeid(*state_) != typeid(State)) throw std::logic_error("hpf::KernelResources: one shared state type per network");
    return std::static_pointer_cast<State>(state_);
  }
  /// Base of shared states (deleted through it).
  struct SharedState {
    virtual ~SharedState() = default;
  };

#if HPF_ENABLE_ONEDNN
  /// The oneDNN device of the network's vendor layers (null until one needs it).
  std::shared_ptr<detail::OneDnnDevice> onednn() const {
    if (!onednn_) onednn_ = std::make_shared<detail::OneDnnDevice>();
    return onednn_;
  }
#endif

 private:
  mutable std::shared_ptr<SharedState> state_;
#if HPF_ENABLE_ONEDNN
  mutable std::shared_ptr<detail::OneDnnDevice> onednn_;
#endif
};

}  // namespace hpf

#endif  // HPF_LAYERS_KERNEL_OPTIONS_HPP
