// Trains a character-level GPT on English text (the fortune cookies Debian's `fortunes` package
// ships, or any text files) with any layout, then reports bits per byte on the held-out tail of
// the text and writes a sample from a prompt:
//
//   hpf_language_model --steps 300                          # one process
//   mpiexec -n 2 hpf_language_model --stages 2              # a pipeline of 2 stages
//   mpiexec -n 4 hpf_language_model --stages 2              # 2 stages x 2 replicas (hybrid)
//   hpf_language_model --recompute yes                      # re-materialize the blocks in backward
//   hpf_language_model --precision bf16                     # bf16 products, float elsewhere (docs/precision.md)
//   hpf_language_model --text my.txt --prompt "Once upon"   # your own text
//
// Rank 0 prints the model's summary, progress, the held-out bits per byte, the trained model's
// file (PyTorch state_dict names; its metadata records the held-out bits per byte) and the
// generated text.
#include <hpf/comm/environment.hpp>
#include <hpf/data/text.hpp>
#include <hpf/io/network_tensors.hpp>
#include <hpf/model/summary.hpp>
#include <hpf/tensor/random.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/gpt.hpp>

#include <common/arguments.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// 4 pre-LayerNorm blocks of 4 heads, 64 features, 64 bytes of context: about 230k parameters.
using Model = hpf::zoo::Gpt<4, 64, 4, 64, hpf::data::byte_vocabulary>;
constexpr std::size_t context = Model::input_shape::size;

struct Settings {
  std::string stages;
  hpf::TrainOptions train;
  std::vector<std::filesystem::path> text;
  double held_out = 0.05;
  std::filesystem::path out;
  std::string prompt;
  std::size_t generate = 0;
  double temperature = 0;
  double max_bits_per_byte = 0;  // for tests: fail unless the held-out bits per byte reach it
};

std::vector<std::filesystem::path> split_paths(const std::string& list) {
  std::vector<std::filesystem::path> paths;
  std::stringstream in(list);
  for (std::string path; std::getline(in, path, ',');) {
    if (!path.empty()) paths.emplace_back(path);
  }
  return paths;
}

/// The next `count` bytes after `prompt`: the model's next-byte distribution at the last position
/// of the (at most `context`) bytes so far, sampled at `temperature` (0: the most probable byte).
std::string generate(hpf::Network<Model>& net, const std::string& prompt, std::size_t count, double temperature,
                     std::uint64_t seed) {
  std::string text = prompt.empty() ? std::string("\n") : prompt;
  auto tape = net.make_tape(1);
  hpf::Rng rng(seed, "generate");
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t length = std::min(text.size(), context), first = text.size() - length;
    auto input = Kokkos::create_mirror_view(net.input(tape, 1));
    for (std::size_t t = 0; t < context; ++t) {  // causal: what follows the last byte does not matter
      input(t, 0, 0) = static_cast<float>(static_cast<unsigned char>(t < length ? text[first + t] : ' '));
    }
    Kokkos::deep_copy(net.input(tape, 1), input);
    net.forward(tape, 1, hpf::Mode::eval);
    const auto probabilities = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
    std::size_t next = 0;
    if (temperature <= 0) {
      for (std::size_t v = 1; v < hpf::data::byte_vocabulary; ++v) {
        if (probabilities(v, 0, length - 1) > probabilities(next, 0, length - 1)) next = v;
      }
    } else {
      std::vector<double> weights(hpf::data::byte_vocabulary);
      double total = 0;
      for (std::size_t v = 0; v < weights.size(); ++v) {
        total += weights[v] = std::pow(static_cast<double>(probabilities(v, 0, length - 1)), 1.0 / temperature);
      }
      double pick = rng.uniform(0.0, total);
      while (next + 1 < weights.size() && pick >= weights[next]) pick -= weights[next++];
    }
    text.push_back(static_cast<char>(next));
  }
  return text;
}

template <class Strategy>
void train(const hpf::comm::Communicator& world, const Settings& s) {
  if (world.rank() == 0) {
    std::cout << hpf::summary<Model>(s.train.batch) << "\n" << world.size() << " process(es), " << s.stages
              << " stage(s)" << (s.train.network.recompute ? ", blocks re-materialized in backward" : "") << "\n\n";
  }
  const auto files = s.text;
  const double held_out = s.held_out;
  std::filesystem::create_directories(s.out);
  // Each stage's first replica saves its layers; rank 0 joins them into the whole model.
  const auto report = hpf::fit<Model, Strategy>(
      world, s.train,
      [files, held_out](const hpf::data::Shard& shard) { return hpf::data::load_text(files, context, held_out, shard); },
      [&](const auto& net, const hpf::ProcessGrid& grid) {
        if (grid.replica() == 0) {
          hpf::io::save_network_tensors(net, s.out / ("stage-" + std::to_string(grid.stage()) + ".safetensors"));
        }
      });
  world.barrier();
  const double bits_per_byte = report.final_test_loss() / std::log(2.0);
  if (world.rank() == 0) {
    hpf::Network<Model> whole;
    hpf::io::Safetensors tensors;
    std::size_t stages = 0;
    for (; std::filesystem::exists(s.out / ("stage-" + std::to_string(stages) + ".safetensors")); ++stages) {
      const auto stage_file = s.out / ("stage-" + std::to_string(stages) + ".safetensors");
      const auto part = hpf::io::Safetensors::load(stage_file);
      for (const std::string& name : part.names()) tensors.add(name, part.at(name));
      std::filesystem::remove(stage_file);
    }
    hpf::io::load_network_tensors(whole, tensors);
    char bits[32];
    std::snprintf(bits, sizeof bits, "%.9g", bits_per_byte);
    hpf::io::save_network_tensors(whole, s.out / "gpt.safetensors", {{"held_out_bits_per_byte", bits}});
    std::printf("held-out bits per byte: %.4f (loss %.4f nats per byte, perplexity %.2f)\n", bits_per_byte,
                report.final_test_loss(), std::exp(report.final_test_loss()));
    std::cout << "model: " << (s.out / "gpt.safetensors").string() << "\n";
    if (s.generate > 0) {
      std::cout << "--- sample (" << (s.temperature > 0 ? "temperature " + std::to_string(s.temperature) : "greedy")
                << ") ---\n"
                << generate(whole, s.prompt, s.generate, s.temperature, s.train.network.seed) << "\n---\n";
    }
  }
  if (s.max_bits_per_byte > 0 && !(bits_per_byte <= s.max_bits_per_byte)) {
    throw hpf::comm::UsageError("held-out bits per byte " + std::to_string(bits_per_byte) + " are above the expected " +
                                std::to_string(s.max_bits_per_byte));
  }
}

std::string default_text() {
  const std::filesystem::path dir = "/usr/share/games/fortunes";
  std::string list;
  for (const char* name : {"fortunes", "literature", "wisdom", "people", "science", "songs-poems"}) {
    list += (list.empty() ? "" : ",") + (dir / name).string();
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  return hpf::comm::run_main(argc, argv, [&](const hpf::comm::Communicator& world) {
    hpf_examples::Arguments args(argc, argv, "A character-level GPT trained with hpf (data, pipeline or hybrid parallel)");
    Settings s;
    s.stages = args.get<std::string>("stages", "1", "pipeline stages: 1, 2 or 4 (replicas = processes / stages)");
    s.text = split_paths(args.get<std::string>("text", default_text(), "comma-separated text files (Debian: apt install fortunes)"));
    s.held_out = args.get<double>("held-out", 0.05, "fraction of the text, at its end, kept for the held-out bits per byte");
    s.train.epochs = args.get<std::size_t>("epochs", 1, "passes over the training windows");
    s.train.steps_per_epoch = args.get<std::size_t>("steps", 300, "stop each epoch after this many steps (0: whole epochs)");
    s.train.batch = args.get<std::size_t>("batch", 32, "global mini-batch of 64-byte windows");
    s.train.micro_batches = args.get<std::size_t>("micro-batches", 2, "micro-batches per replica batch");
    const double lr = args.get<double>("lr", 3e-3, "Adam learning rate");
    s.train.network.seed = args.get<std::uint64_t>("seed", 0, "seed of the initial weights, the data order and the sampling");
    const auto precision = args.get<std::string>("precision", "float", "float, or bf16: the products of Dense and attention read bf16 inputs (as hpf::Mixed<hpf::bf16>)");
    const auto recompute = args.get<std::string>("recompute", "no", "yes: keep only the blocks' inputs and run their forward again in backward (the same bits, less memory)");
    s.out = args.get<std::string>("out", "language-model", "directory for the trained model (gpt.safetensors)");
    s.prompt = args.get<std::string>("prompt", "The ", "text the sample starts from");
    s.generate = args.get<std::size_t>("generate", 200, "bytes to generate after the prompt (0: none)");
    s.temperature = args.get<double>("temperature", 0.8, "sampling temperature (0: always the most probable byte)");
    s.max_bits_per_byte = args.get<double>("expect-bits-per-byte", 0.0, "exit with an error unless the held-out bits per byte are at most this");
    if (!args.finish(world.rank() == 0)) return;
    if (recompute != "yes" && recompute != "no") throw hpf::comm::UsageError("--recompute must be yes or no (got '" + recompute + "')");
    s.train.network.recompute = recompute == "yes";
    if (precision != "float" && precision != "bf16") throw hpf::comm::UsageError("--precision must be float or bf16 (got '" + precision + "')");
    if (precision == "bf16") s.train.network.matmul_precision = hpf::MatmulPrecision::bf16;
    s.train.data_seed = s.train.network.seed;
    s.train.optimizer = hpf::AdamOptions{.learning_rate = lr};
    if (s.stages == "1") {
      train<hpf::DataParallel>(world, s);
    } else if (s.stages == "2") {
      train<hpf::Pipeline<hpf::Balanced<2>>>(world, s);
    } else if (s.stages == "4") {
      train<hpf::Pipeline<hpf::Balanced<4>>>(world, s);
    } else {
      throw hpf::comm::UsageError("--stages must be 1, 2 or 4 (got '" + s.stages + "')");
    }
  });
}
