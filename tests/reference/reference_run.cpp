// SPDX-License-Identifier: MIT
// The hpf half of the comparison with PyTorch (compare_pytorch.py is the other): trains a zoo
// model for a few steps with hpf::Trainer, exactly as single-process training does, and writes
// what PyTorch needs to repeat the run and what it must reproduce:
//
//   reference_run --model mlp|norm_mlp|cnn|resnet20|preact20|regression|gpt|cosmoflow --dtype float|double --steps N
//                 --batch B --out DIR
//
//   DIR/initial.safetensors  every parameter and buffer before the first step (state_dict names)
//   DIR/batches.safetensors  per step s: "inputs.<s>" (B x C x H x W, the network's scalar type,
//                            NCHW; B x C x D x H x W for volumes) and "labels.<s>" (B, int64)
//                            or, for the regression models, "targets.<s>" (B x K, the
//                            network's scalar type); for the GPT
//                            both are B x T int64 tokens (the labels: each input's next byte)
//   DIR/final.safetensors    every parameter and buffer after the last step
//   DIR/losses.json          settings and the mean loss of every step
//
// Settings are reference.md's: MLP and CNN train on Fashion-MNIST through
// hpf::data::load_fashion_mnist and Sampler (the pipeline training uses) with batches of 128 and
// 64, SGD lr 0.05, momentum 0.9; ResNet-20 (Kaiming-normal fan-out init, BatchNorm in training
// mode) on one fixed batch of 16 hpf::data::synthetic_dataset images of 3x32x32, as the ResNet
// benchmarks, SGD lr 0.1, momentum 0.9, weight decay 5e-4; the pre-activation bottleneck
// ResNet-20 (preact20: hpf::zoo::PreActResNet<20>, the smallest of the family of ResNet-164 and
// -1001) the same way. Batch 16 keeps the double-precision run within CI time and still gives each
// BatchNorm 16 x H x W values per channel. The regression
// model (a small convolutional regressor in the shape of CosmoFlow: convolution, pooling, dense
// layers, 3 real outputs, mean squared error) trains on hpf::data::synthetic_regression samples of
// 2x8x8 with batches of 16, SGD lr 0.05, momentum 0.9. The GPT (hpf::zoo::Gpt: 2 pre-LayerNorm
// blocks of causal 4-head attention, D = 32, context 16, bytes as tokens) trains on windows of the
// text of docs/models.md (hpf::data::text_windows) with batches of 8, SGD lr 0.1, momentum 0.9.
// The CosmoFlow 3-D CNN (hpf::zoo::CosmoFlow<16>: three Conv3D-ReLU-MaxPool3D blocks, dense
// layers, 4 real outputs, mean squared error) trains on hpf::data::synthetic_regression volumes of
// 4x16x16x16 with batches of 8, SGD lr 0.05, momentum 0.9.
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/sampler.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/data/text.hpp>
#include <hpf/io/network_tensors.hpp>
#include <hpf/io/safetensors.hpp>
#include <hpf/layers/avg_pool.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/gpt.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Settings {
  std::string model = "mlp";
  std::string dtype = "double";
  std::size_t steps = 50;
  std::size_t batch = 0;  // 0: the model's default
  double lr = 0;          // 0: the model's default
  std::size_t pool = 0;   // ResNet: synthetic images to draw batches from (0: one fixed batch)
  std::size_t states = 0;  // save the full training state before each of the first `states` steps
  hpf::ConvolutionAlgorithm convolution = hpf::ConvolutionAlgorithm::automatic;
  std::filesystem::path out;
};

// The regression model: compare_pytorch.py builds the same nn.Sequential.
using Regressor = hpf::Sequential<hpf::Input<2, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::AvgPool<2>,
                                  hpf::Flatten, hpf::Dense<16>, hpf::ReLU, hpf::Dense<3>, hpf::MeanSquaredError>;

// An MLP with the transformer's normalisation and activations: compare_pytorch.py builds the same.
using NormMlp = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<256>, hpf::LayerNorm, hpf::GELU,
                                hpf::Dense<128>, hpf::LayerNorm, hpf::GELUTanh, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

using Gpt = hpf::zoo::Gpt<2, 32, 4, 16, hpf::data::byte_vocabulary>;

using CosmoFlow = hpf::zoo::CosmoFlow<16>;

enum class Data { fashion_mnist, synthetic_images, synthetic_regression, synthetic_volumes, text };

// Training settings of reference.md, per model.
struct ModelSettings {
  std::size_t default_batch;
  hpf::SgdOptions sgd;
  hpf::InitScheme init;
  Data data;
};

ModelSettings model_settings(const std::string& model) {
  const hpf::SgdOptions sgd{.learning_rate = 0.05, .momentum = 0.9};
  if (model == "mlp" || model == "norm_mlp") return {128, sgd, hpf::InitScheme::pytorch_default, Data::fashion_mnist};
  if (model == "cnn") return {64, sgd, hpf::InitScheme::pytorch_default, Data::fashion_mnist};
  if (model == "resnet20" || model == "preact20") {
    return {16, {.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4}, hpf::InitScheme::kaiming_normal_fan_out,
            Data::synthetic_images};
  }
  if (model == "regression") return {16, sgd, hpf::InitScheme::pytorch_default, Data::synthetic_regression};
  if (model == "gpt") return {8, {.learning_rate = 0.1, .momentum = 0.9}, hpf::InitScheme::pytorch_default, Data::text};
  if (model == "cosmoflow") return {8, sgd, hpf::InitScheme::pytorch_default, Data::synthetic_volumes};
  throw std::invalid_argument("--model must be mlp, norm_mlp, cnn, resnet20, preact20, regression, gpt or cosmoflow (got '" +
                              model + "')");
}

constexpr std::uint64_t weight_seed = 1;
constexpr std::uint64_t data_seed = 2;
constexpr std::uint64_t synthetic_seed = 3;

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key.rfind("--kokkos", 0) == 0) continue;
    if (i + 1 >= argc) throw std::invalid_argument("option " + key + " needs a value");
    const std::string value = argv[++i];
    if (key == "--model") {
      s.model = value;
    } else if (key == "--dtype") {
      s.dtype = value;
    } else if (key == "--steps") {
      s.steps = std::stoul(value);
    } else if (key == "--batch") {
      s.batch = std::stoul(value);
    } else if (key == "--out") {
      s.out = value;
    } else if (key == "--lr") {
      s.lr = std::stod(value);
    } else if (key == "--pool") {
      s.pool = std::stoul(value);
    } else if (key == "--states") {
      s.states = std::stoul(value);
    } else if (key == "--convolution") {
      if (value != "automatic" && value != "direct") throw std::invalid_argument("--convolution must be automatic or direct");
      s.convolution = value == "direct" ? hpf::ConvolutionAlgorithm::direct : hpf::ConvolutionAlgorithm::automatic;
    } else {
      throw std::invalid_argument("unknown option " + key +
                                  " (usage: --model mlp|norm_mlp|cnn|resnet20|preact20|regression|gpt|cosmoflow --dtype float|double --steps N"
                                  " --batch B"
                                  " [--convolution automatic|direct] --out DIR)");
    }
  }
  if (s.out.empty()) throw std::invalid_argument("--out DIR is required");
  if (s.dtype != "float" && s.dtype != "double") throw std::invalid_argument("--dtype must be float or double");
  if (s.steps == 0) throw std::invalid_argument("--steps must be positive");
  return s;
}

// Samples `indices` as NCHW, or NCDHW (the dataset gathers hpf's [C][n][S]).
template <class T>
std::vector<T> nchw_batch(const hpf::data::Dataset& data, const std::vector<std::size_t>& indices) {
  const std::size_t n = indices.size(), channels = data.channels(), hw = data.dims().spatial();
  std::vector<T> cnhw(n * channels * hw), nchw(cnhw.size());
  data.gather(std::span<const std::size_t>(indices), cnhw.data());
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t s = 0; s < hw; ++s) nchw[(j * channels + c) * hw + s] = cnhw[(c * n + j) * hw + s];
    }
  }
  return nchw;
}

std::string json_number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

template <class Model, class T>
void run(const Settings& s, const ModelSettings& m, const hpf::data::Dataset& train) {
  hpf::TrainOptions options;
  options.batch = s.batch;
  options.optimizer = m.sgd;
  options.network = hpf::NetworkOptions{.seed = weight_seed, .init = m.init, .convolution = s.convolution};
  options.data_seed = data_seed;
  options.evaluate = false;
  hpf::Trainer<Model, T> trainer(options, train);
  auto& net = trainer.network();
  hpf::io::save_network_tensors(net, s.out / "initial.safetensors");

  // The batches Trainer will draw: its Sampler, rebuilt with the same arguments.
  hpf::data::Sampler sampler(train.size(), s.batch, 1, data_seed);
  const std::size_t per_epoch = sampler.steps_per_epoch();
  hpf::io::Safetensors batches;
  const auto& dims = train.dims();
  for (std::size_t step = 0; step < s.steps; ++step) {
    const std::vector<std::size_t> indices = sampler.batch(step / per_epoch, step % per_epoch);
    if (train.labels_per_sample() > 1) {  // tokens: [B][T] in, [B][T] next tokens out
      const std::vector<T> tokens = nchw_batch<T>(train, indices);
      batches.add("inputs." + std::to_string(step), {indices.size(), dims.channels},
                  std::vector<std::int64_t>(tokens.begin(), tokens.end()));
    } else if (dims.depth > 1) {  // volumes: NCDHW
      batches.add("inputs." + std::to_string(step), {indices.size(), dims.channels, dims.depth, dims.height, dims.width},
                  nchw_batch<T>(train, indices));
    } else {
      batches.add("inputs." + std::to_string(step), {indices.size(), dims.channels, dims.height, dims.width},
                  nchw_batch<T>(train, indices));
    }
    if (train.is_regression()) {
      std::vector<T> targets(indices.size() * train.target_size());
      train.gather_targets(std::span<const std::size_t>(indices), targets.data());
      batches.add("targets." + std::to_string(step), {indices.size(), train.target_size()}, targets);
    } else {
      const std::size_t per_sample = train.labels_per_sample();
      std::vector<std::int32_t> labels32(indices.size() * per_sample);
      train.gather_labels(std::span<const std::size_t>(indices), labels32.data());
      const std::vector<std::int64_t> labels(labels32.begin(), labels32.end());
      if (per_sample > 1) {
        batches.add("labels." + std::to_string(step), {indices.size(), per_sample}, labels);
      } else {
        batches.add("labels." + std::to_string(step), {indices.size()}, labels);
      }
    }
  }
  batches.save(s.out / "batches.safetensors");

  // For the one-step comparison: the whole training state (tensors and SGD momentum) before each
  // of the first s.states steps, and after the last of them.
  hpf::io::Safetensors states;
  auto save_state = [&](std::size_t k) {
    const std::string prefix = "state." + std::to_string(k) + ".";
    const hpf::io::Safetensors tensors = hpf::io::network_tensors(net);
    for (const std::string& name : tensors.names()) states.add(prefix + name, tensors.at(name));
    const auto momentum = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, trainer.optimizer().momentum());
    for (const hpf::TensorInfo& info : net.tensors()) {
      if (info.kind != hpf::TensorKind::parameter || momentum.extent(0) == 0) continue;
      states.add("momentum." + std::to_string(k) + "." + info.name, info.dims,
                 std::span<const T>(momentum.data() + info.offset, info.size));
    }
  };

  std::vector<double> losses;
  double seconds = 0;
  for (std::size_t step = 0; step < s.steps; ++step) {
    if (step < s.states) save_state(step);
    const auto start = std::chrono::steady_clock::now();
    const hpf::StepResult r = trainer.step(step / per_epoch, step % per_epoch);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    losses.push_back(r.loss_sum / static_cast<double>(r.samples));
  }
  if (s.states > 0) {
    save_state(std::min(s.states, s.steps));
    states.save(s.out / "states.safetensors");
  }
  hpf::io::save_network_tensors(net, s.out / "final.safetensors");

  std::ofstream json(s.out / "losses.json");
  json << "{\n  \"model\": \"" << s.model << "\",\n  \"dtype\": \"" << s.dtype << "\",\n  \"batch\": " << s.batch
       << ",\n  \"steps\": " << s.steps << ",\n  \"lr\": " << json_number(m.sgd.learning_rate)
       << ",\n  \"momentum\": " << json_number(m.sgd.momentum)
       << ",\n  \"weight_decay\": " << json_number(m.sgd.weight_decay) << ",\n  \"train_seconds\": " << json_number(seconds)
       << ",\n  \"losses\": [";
  for (std::size_t k = 0; k < losses.size(); ++k) json << (k ? ", " : "") << json_number(losses[k]);
  json << "]\n}\n";
  json.close();
  if (!json) throw std::runtime_error("cannot write " + (s.out / "losses.json").string());
  std::cout << "hpf " << s.model << " " << s.dtype << ": " << s.steps << " steps of batch " << s.batch << " in "
            << seconds << " s; loss " << losses.front() << " -> " << losses.back() << "\n";
}

template <class T>
void run_model(const Settings& s, const ModelSettings& m) {
  if (m.data == Data::fashion_mnist) {
    const hpf::data::TrainTest data = hpf::data::load_fashion_mnist();
    if (s.model == "mlp") {
      run<hpf::zoo::Mlp, T>(s, m, data.train);
    } else if (s.model == "norm_mlp") {
      run<NormMlp, T>(s, m, data.train);
    } else {
      run<hpf::zoo::Cnn, T>(s, m, data.train);
    }
  } else if (m.data == Data::text) {
    const std::vector<std::filesystem::path> files{HPF_REFERENCE_TEXT};
    const std::vector<std::uint8_t> text = hpf::data::read_text_bytes(files);
    run<Gpt, T>(s, m, hpf::data::text_windows(text, Gpt::input_shape::size, {}));
  } else if (m.data == Data::synthetic_volumes) {
    // A pool of 256 volumes: 30 steps of 8 see new samples every step.
    using In = CosmoFlow::input_shape;
    const hpf::data::SampleDims dims{.channels = In::channels, .height = In::height, .width = In::width, .depth = In::depth};
    run<CosmoFlow, T>(s, m, hpf::data::synthetic_regression(s.pool ? s.pool : 256, dims, CosmoFlow::output_shape::size,
                                                            synthetic_seed));
  } else if (m.data == Data::synthetic_regression) {
    // A pool of 512 samples: 20 steps of 16 see new samples every step.
    run<Regressor, T>(s, m, hpf::data::synthetic_regression(s.pool ? s.pool : 512, 2, 8, 8, 3, synthetic_seed));
  } else {
    // One fixed batch, as the ResNet benchmarks of reference.md (the Sampler reshuffles it each
    // epoch). With new images every step, training from Kaiming initialisation at lr 0.1 is
    // chaotic: rounding differences grow about 4x per step, in PyTorch against itself too (with
    // real images as well as random ones), see compare_pytorch.py. --pool N draws from N images.
    const auto data = hpf::data::synthetic_dataset(s.pool ? s.pool : s.batch, 3, 32, 32, 10, synthetic_seed);
    if (s.model == "preact20") {
      run<hpf::zoo::PreActResNet<20>, T>(s, m, data);
    } else {
      run<hpf::zoo::ResNet20, T>(s, m, data);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    Settings s = parse(argc, argv);
    ModelSettings m = model_settings(s.model);
    if (s.lr > 0) m.sgd.learning_rate = s.lr;
    if (s.batch == 0) s.batch = m.default_batch;
    std::filesystem::create_directories(s.out);
    if (s.dtype == "double") {
      run_model<double>(s, m);
    } else {
      run_model<float>(s, m);
    }
  } catch (const std::exception& e) {
    std::cerr << "reference_run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
