// SPDX-License-Identifier: MIT
// The hpf half of the per-layer comparison with PyTorch (compare_layers.py is the other): runs one
// forward and one backward of each case, a single layer in double, from random parameters and
// inputs, and writes what PyTorch needs to repeat it and what it must reproduce:
//
//   layer_reference --out DIR
//
//   DIR/<case>.safetensors  "x" (the input), "y" (the output), "dy" (the gradient fed to backward;
//                           none for a loss), "dx" (the input's gradient; none after an Embedding),
//                           every parameter and buffer by its PyTorch name after the pass ("0.weight";
//                           buffers after the training forward) and each parameter's gradient
//                           ("grad.0.weight"); a loss adds "labels" and "loss" (the mean loss).
//                           Activations keep hpf's layout, `[C][N][spatial]` (a sequence
//                           `[D][N][T]`): compare_layers.py permutes them into PyTorch's.
//                           Metadata: the layer's description, N, and for Dropout the seed, the
//                           step key and the samples' global indices its mask is a function of.
#include <hpf/io/safetensors.hpp>
#include <hpf/layers/avg_pool3d.hpp>
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/dropout.hpp>
#include <hpf/layers/embedding.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/layers/multi_head_attention.hpp>
#include <hpf/layers/position_embedding.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/tensor/random.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t batch = 3;

/// How a case draws its input values.
enum class Inputs { uniform, tokens };

template <class View>
std::vector<double> host_values(const View& v) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return {host.data(), host.data() + host.size()};
}

template <class View>
void set_values(const View& v, const std::vector<double>& values) {
  auto host = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < values.size(); ++i) host.data()[i] = values[i];
  Kokkos::deep_copy(v, host);
}

/// `[C, N, spatial...]`: the shape of an activation buffer of `Shape` for `batch` samples.
template <class Shape>
std::vector<std::size_t> activation_dims() {
  if constexpr (Shape::rank == 1) {
    return {Shape::channels, batch};
  } else if constexpr (Shape::rank == 2) {
    return {Shape::channels, batch, Shape::positions};
  } else if constexpr (Shape::rank == 3) {
    return {Shape::channels, batch, Shape::height, Shape::width};
  } else {
    return {Shape::channels, batch, Shape::depth, Shape::height, Shape::width};
  }
}

/// One forward and backward of `Model` (an Input and one layer, or a loss) in double.
template <class Model>
void run_case(const std::filesystem::path& out, std::string_view name, Inputs inputs = Inputs::uniform,
              std::size_t vocabulary = 0) {
  using Net = hpf::Network<Model, double>;
  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  using Layer = hpf::at_t<typename Model::bound_layers, Model::size - 1>;
  constexpr std::uint64_t seed = 20261202;
  Net net(hpf::NetworkOptions{.seed = seed});
  hpf::Rng rng(seed, name);
  hpf::io::Safetensors file;

  // Random parameters: non-trivial scales and shifts everywhere (not the ones and zeros of a
  // fresh LayerNorm or BatchNorm).
  for (const auto& info : net.tensors()) {
    if (info.kind != hpf::TensorKind::parameter) continue;
    std::vector<double> v(info.size);
    for (double& value : v) value = rng.uniform(-0.8, 0.8);
    net.write(info, v);
  }

  auto tape = net.make_tape(batch);
  std::vector<double> x(In::size * batch);
  for (double& value : x)
    value = inputs == Inputs::tokens ? static_cast<double>(rng.below(vocabulary)) : rng.uniform(-1.5, 1.5);
  set_values(net.input(tape, batch), x);
  // Dropout's mask follows the samples' global indices and the step: any will do.
  const std::vector<std::size_t> samples{17, 4, 1001};
  constexpr std::uint64_t step_key = (std::uint64_t{2} << 32) | 9;
  net.set_samples(tape, samples);
  net.set_step(step_key);
  std::vector<std::int64_t> labels;
  if constexpr (Net::classifier) {
    std::vector<double> label_values(batch * Net::label_size);
    for (double& label : label_values) {
      label = static_cast<double>(rng.below(Out::channels));
      labels.push_back(static_cast<std::int64_t>(label));
    }
    set_values(net.labels(tape, batch), label_values);
  }

  net.forward(tape, batch);
  hpf::Buffer<double, typename Net::memory_space> dx_buffer("dx", In::size * batch);
  const auto dx = hpf::activation_view(dx_buffer, In::channels, batch, In::spatial);
  const bool input_gradient = inputs != Inputs::tokens;
  net.zero_grad();
  if constexpr (Model::trainable) {
    // The gradient of the mean loss over the batch, as PyTorch's loss.backward().
    net.backward(tape, 1.0 / batch, {}, input_gradient ? dx : hpf::Activation<double, typename Net::execution_space>{});
    file.add("loss", {1}, std::vector<double>{net.loss_sum(tape) / batch});
    file.add("labels", {batch, Net::label_size}, labels);
  } else {
    hpf::Buffer<double, typename Net::memory_space> dy_buffer("dy", Out::size * batch);
    std::vector<double> dy(Out::size * batch);
    for (double& value : dy) value = rng.uniform(-1.0, 1.0);
    set_values(dy_buffer, dy);
    net.backward(tape, 1.0, hpf::activation_view(dy_buffer, Out::channels, batch, Out::spatial),
                 input_gradient ? dx : hpf::Activation<double, typename Net::execution_space>{});
    file.add("dy", activation_dims<Out>(), dy);
  }

  file.add("x", activation_dims<In>(), x);
  file.add("y", activation_dims<Out>(), host_values(net.output(tape)));
  if (input_gradient) file.add("dx", activation_dims<In>(), host_values(dx_buffer));
  for (const auto& info : net.tensors()) {
    file.add(info.name, info.dims, net.read(info));
    if (info.kind == hpf::TensorKind::parameter) file.add("grad." + info.name, info.dims, net.read(info, true));
  }
  auto& meta = file.metadata();
  meta["layer"] = Layer::describe();
  meta["batch"] = std::to_string(batch);
  meta["seed"] = std::to_string(seed);
  meta["step"] = std::to_string(step_key);
  std::string indices;
  for (std::size_t s : samples) indices += (indices.empty() ? "" : ",") + std::to_string(s);
  meta["samples"] = indices;
  file.save(out / (std::string(name) + ".safetensors"));
  std::printf("%-28s %s\n", std::string(name).c_str(), Layer::describe().c_str());
}

template <class... Layers>
using Model = hpf::Sequential<Layers...>;

void run_all(const std::filesystem::path& out) {
  using hpf::Input;
  // Attention: bidirectional, causal, and causal without biases (PyTorch's bias=False).
  run_case<Model<Input<7, 12>, hpf::MultiHeadAttention<3>>>(out, "mha");
  run_case<Model<Input<7, 12>, hpf::MultiHeadAttention<3, hpf::Causal>>>(out, "mha_causal");
  run_case<Model<Input<5, 8>, hpf::MultiHeadAttention<2, hpf::Causal, hpf::NoBias>>>(out, "mha_causal_nobias");
  // LayerNorm per position of a sequence, over a vector, over an image.
  run_case<Model<Input<6, 10>, hpf::LayerNorm>>(out, "layer_norm_sequence");
  run_case<Model<Input<10>, hpf::LayerNorm>>(out, "layer_norm_vector");
  run_case<Model<Input<3, 4, 5>, hpf::LayerNorm>>(out, "layer_norm_image");
  // Embeddings.
  run_case<Model<Input<9>, hpf::Embedding<20, 6>>>(out, "embedding", Inputs::tokens, 20);
  run_case<Model<Input<9, 6>, hpf::PositionEmbedding>>(out, "position_embedding");
  // Per-position layers on a sequence.
  run_case<Model<Input<5, 8>, hpf::GELU>>(out, "gelu_sequence");
  run_case<Model<Input<5, 8>, hpf::GELUTanh>>(out, "gelu_tanh_sequence");
  run_case<Model<Input<5, 8>, hpf::Dense<6>>>(out, "dense_sequence");
  run_case<Model<Input<6, 8>, hpf::Dropout<25>>>(out, "dropout_sequence");
  run_case<Model<Input<4, 3>, hpf::Flatten>>(out, "flatten_sequence");
  run_case<Model<Input<5, 6>, hpf::GlobalAvgPool>>(out, "global_avg_pool_sequence");
  run_case<Model<Input<5, 7>, hpf::SoftmaxCrossEntropy>>(out, "softmax_cross_entropy_sequence");
  // Volumes.
  run_case<Model<Input<2, 5, 6, 7>, hpf::Conv3D<3, 3, hpf::Stride<2>, hpf::Pad<1>>>>(out, "conv3d_stride2_pad1");
  run_case<Model<Input<2, 4, 5, 3>, hpf::Conv3D<4, 2, hpf::NoBias>>>(out, "conv3d_nobias");
  run_case<Model<Input<2, 6, 6, 6>, hpf::MaxPool3D<2>>>(out, "max_pool3d");
  run_case<Model<Input<2, 5, 6, 7>, hpf::MaxPool3D<3, hpf::Stride<2>, hpf::Pad<1>>>>(out, "max_pool3d_stride2_pad1");
  run_case<Model<Input<2, 6, 6, 6>, hpf::AvgPool3D<2>>>(out, "avg_pool3d");
  run_case<Model<Input<2, 5, 6, 7>, hpf::AvgPool3D<3, hpf::Stride<2>, hpf::Pad<1>>>>(out, "avg_pool3d_stride2_pad1");
  run_case<Model<Input<3, 4, 4, 5>, hpf::BatchNorm>>(out, "batch_norm_volume");
  run_case<Model<Input<3, 2, 3, 4>, hpf::GlobalAvgPool>>(out, "global_avg_pool_volume");
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  if (argc != 3 || std::string_view(argv[1]) != "--out") {
    std::fprintf(stderr, "usage: %s --out DIR\n", argv[0]);
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[2]);
    run_all(argv[2]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "layer_reference: %s\n", error.what());
    return 1;
  }
  return 0;
}
