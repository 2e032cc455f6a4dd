// SPDX-License-Identifier: MIT
// Single-process training throughput of a zoo model with hpf::Trainer, measured the way
// benchmarks/pytorch_train.py measures PyTorch (benchmarks/compare_single_process.py runs both):
//
//   hpf_bench_train_throughput --model resnet20 --steps 5 --warmup 2 --repeats 3
//   hpf_bench_train_throughput --model cnn --profile 20      # ms/step per kernel and region
//   hpf_bench_train_throughput --sgemm                       # single-core SGEMM of the same BLAS
//   hpf_bench_train_throughput --model resnet20 --shards 2 --side-by-side  # one shard per thread
//
// images/s is the best of `repeats` timed blocks of `steps` steps after `warmup` steps. Peak RSS
// is getrusage's ru_maxrss of this process (one model per process); base_rss_mib is the RSS with
// the data in RAM just before the model is built and train_peak_rss_mib the peak from there on.
// GFLOP/s counts 6 x forward MACs x images (the reference's convention). Every result is one
// `RESULT key=value ...` line.
// Set OPENBLAS_CORETYPE explicitly when comparing: left unset, hpf re-executes the program with
// the widest kernels the CPU has (hpf::system::RuntimeOptions).
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/data/text.hpp>
#include <hpf/layers/detail/gemm.hpp>
#include <hpf/system/blas.hpp>
#include <hpf/system/runtime.hpp>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/gpt.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#include <common/measure.hpp>


#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace hpf_bench;

struct Settings {
  std::string model = "mlp";
  std::size_t batch = 0, steps = 0, warmup = 0, repeats = 0, profile_steps = 0, shards = 1;
  bool sgemm = false, profile_layers = false, side_by_side = false, recompute = false, bf16 = false;
  std::uint64_t seed = 0;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "%s%susage: hpf_bench_train_throughput [--model mlp|cnn|resnet20|resnet56|gpt|gpt8|cosmoflow] [--batch B] [--steps N]\n"
               "                                  [--warmup W] [--repeats R] [--profile P [--profile-layers]] [--seed S]\n"
               "                                  [--shards K [--side-by-side]] [--recompute] [--precision float|bf16]\n"
               "       hpf_bench_train_throughput --sgemm [--repeats R]\n"
               "  --batch     images (windows) per step (default: mlp 128, gpt 32, others 64)\n"
               "  --steps     steps per timed block (default: mlp 100, cnn 20, resnet20 5, resnet56 3)\n"
               "  --warmup    untimed steps first (default: mlp 20, cnn 5, resnet20 2, resnet56 1)\n"
               "  --repeats   timed blocks; images/s is the best block (default 5; --sgemm: 5)\n"
               "  --profile   then P more steps with Kokkos tool callbacks: ms/step per kernel and region\n"
               "  --profile-layers  with --profile: also each layer's (region instance's) time, in execution order\n"
               "  --shards    data shards per step (TrainOptions::data_shards; default 1): the batch in K pieces\n"
               "              as K ranks would train it, BatchNorm statistics per piece\n"
               "  --side-by-side  with --shards: the shards side by side, one per OpenMP thread\n"
               "  --recompute re-materialize Repeat blocks in backward (NetworkOptions::recompute)\n"
               "  --precision bf16: the products of Dense, convolutions and attention read bf16 inputs\n"
               "              (NetworkOptions::matmul_precision, what hpf::Mixed<hpf::bf16> sets; default float)\n"
               "  gpt: examples/03_language_model's byte-level GPT (4 blocks, D 64, 4 heads, context 64), Adam\n"
               "  lr 3e-3, one fixed batch of text windows; gpt8: the same with 8 blocks; cosmoflow: CosmoFlow<32>\n"
               "  (4 x 32^3 volumes, 4 targets, mean squared error), batch 8, SGD lr 0.01 momentum 0.9\n",
               problem.c_str(), problem.empty() ? "" : "\n");
  std::exit(problem.empty() ? 0 : 2);
}

std::size_t to_size(const std::string& flag, const std::string& text) {
  const auto value = hpf_bench::whole_number(text);
  if (!value) usage(flag + " expects a whole number, got '" + text + "'");
  return *value;
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind("--kokkos-", 0) == 0) continue;  // Kokkos' own (it reads them at initialisation)
    if (flag == "--help" || flag == "-h") usage("");
    if (flag == "--sgemm" || flag == "--profile-layers" || flag == "--side-by-side" || flag == "--recompute") {
      (flag == "--sgemm"          ? s.sgemm
       : flag == "--side-by-side" ? s.side_by_side
       : flag == "--recompute"    ? s.recompute
                                  : s.profile_layers) = true;
      continue;
    }
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") {
      if (value != "mlp" && value != "cnn" && value != "resnet20" && value != "resnet56" && value != "gpt" &&
          value != "gpt8" && value != "cosmoflow") {
        usage("--model must be mlp, cnn, resnet20, resnet56, gpt, gpt8 or cosmoflow (got '" + value + "')");
      }
      s.model = value;
    } else if (flag == "--precision") {
      if (value != "float" && value != "bf16") usage("--precision must be float or bf16 (got '" + value + "')");
      s.bf16 = value == "bf16";
    } else if (flag == "--batch") {
      s.batch = to_size(flag, value);
      if (s.batch == 0) usage("--batch must be at least 1");
    } else if (flag == "--steps") {
      s.steps = to_size(flag, value);
    } else if (flag == "--warmup") {
      s.warmup = to_size(flag, value);
    } else if (flag == "--repeats") {
      s.repeats = to_size(flag, value);
    } else if (flag == "--profile") {
      s.profile_steps = to_size(flag, value);
    } else if (flag == "--seed") {
      s.seed = to_size(flag, value);
    } else if (flag == "--shards") {
      s.shards = to_size(flag, value);
      if (s.shards == 0) usage("--shards must be at least 1");
    } else {
      usage("unknown option " + flag);
    }
  }
  if (s.side_by_side && s.shards < 2) usage("--side-by-side needs --shards of at least 2");
  return s;
}

// ---------------------------------------------------------------------------------------------
// --profile: self time per (enclosing region, kernel or region) through Kokkos tool callbacks.
// Kernels of the Serial space run synchronously, so the time between a kernel's begin and end
// callbacks is its run time; a region's self time is its time outside nested kernels/regions
// (a KokkosBlas::gemm region's self time is the BLAS call).
namespace profile {

struct Frame {
  std::string name;
  bool region;
  Clock::time_point start;
  double child_seconds = 0;
  double gemm_seconds = 0;  // BLAS time of GEMM regions directly inside
  std::string instance;     // regions: "name#k", the k-th region of that name in the step
};
struct Totals {
  double self_seconds = 0;
  double inclusive_seconds = 0;
  double gemm_seconds = 0;
  std::size_t calls = 0;
};

std::vector<Frame> stack;
std::map<std::string, Totals> self_by_site;       // "parent region > name"
std::map<std::string, Totals> inclusive_regions;  // hpf layer regions, outermost occurrence
// Per region instance (the k-th Conv2D::forward of a step is the k-th convolution of the model):
std::map<std::string, std::size_t> occurrences;   // this step's count per region name
std::map<std::string, Totals> by_instance;
std::vector<std::string> instance_order;          // first-seen (execution) order

/// Called before every profiled step: region instances are numbered per step.
void next_step() { occurrences.clear(); }

bool is_gemm(const std::string& name) { return name.find("KokkosBlas::gemm") != std::string::npos; }

std::string parent_region() {
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if (it->region) return it->name;
  return "(top)";
}

void open(const char* name, bool region) {
  Frame frame{name, region, Clock::now(), 0, 0, {}};
  if (region && !is_gemm(frame.name)) {
    frame.instance = frame.name + "#" + std::to_string(occurrences[frame.name]++);
    if (!by_instance.count(frame.instance)) instance_order.push_back(frame.instance);
  }
  stack.push_back(std::move(frame));
}

void close() {
  if (stack.empty()) return;
  Frame frame = std::move(stack.back());
  stack.pop_back();
  const double elapsed = seconds_since(frame.start);
  Totals& site = self_by_site[parent_region() + " > " + frame.name];
  site.self_seconds += elapsed - frame.child_seconds;
  site.inclusive_seconds += elapsed;
  ++site.calls;
  if (frame.region) {
    const bool nested_in_same =
        std::any_of(stack.begin(), stack.end(), [&](const Frame& f) { return f.name == frame.name; });
    if (!nested_in_same) {
      Totals& r = inclusive_regions[frame.name];
      r.inclusive_seconds += elapsed;
      ++r.calls;
    }
  }
  if (!frame.instance.empty()) {
    Totals& t = by_instance[frame.instance];
    t.inclusive_seconds += elapsed;
    t.gemm_seconds += frame.gemm_seconds;
    ++t.calls;
  }
  if (!stack.empty()) {
    stack.back().child_seconds += elapsed;
    if (is_gemm(frame.name)) stack.back().gemm_seconds += elapsed - frame.child_seconds;
  }
}

void begin_kernel(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = stack.size();
  open(name, false);
}
void end_kernel(std::uint64_t) { close(); }
void push_region(const char* name) { open(name, true); }
void pop_region() { close(); }
void begin_copy(Kokkos::Tools::SpaceHandle, const char* dst, const void*, Kokkos::Tools::SpaceHandle, const char* src,
                const void*, std::uint64_t) {
  open(("deep_copy " + std::string(dst) + " <- " + src).c_str(), false);
}
void end_copy() { close(); }

/// Installs (on) or removes (off) the callbacks above.
void install(bool on) {
  namespace tools = Kokkos::Tools::Experimental;
  tools::set_begin_parallel_for_callback(on ? begin_kernel : nullptr);
  tools::set_end_parallel_for_callback(on ? end_kernel : nullptr);
  tools::set_begin_parallel_reduce_callback(on ? begin_kernel : nullptr);
  tools::set_end_parallel_reduce_callback(on ? end_kernel : nullptr);
  tools::set_begin_parallel_scan_callback(on ? begin_kernel : nullptr);
  tools::set_end_parallel_scan_callback(on ? end_kernel : nullptr);
  tools::set_push_region_callback(on ? push_region : nullptr);
  tools::set_pop_region_callback(on ? pop_region : nullptr);
  tools::set_begin_deep_copy_callback(on ? begin_copy : nullptr);
  tools::set_end_deep_copy_callback(on ? end_copy : nullptr);
}

/// Prints the tables, in ms per step: per site (self time), per region name (inclusive) and, with
/// `layers`, per region instance in execution order.
void report(const std::string& model, std::size_t steps, double wall_seconds, double gflop_per_step, bool layers) {
  const double per_step = 1e3 / static_cast<double>(steps);
  const double step_ms = wall_seconds * per_step;
  double tracked = 0, gemm = 0;
  std::vector<std::pair<std::string, Totals>> sites(self_by_site.begin(), self_by_site.end());
  for (const auto& [site, t] : sites) {
    tracked += t.self_seconds;
    if (is_gemm(site)) gemm += t.self_seconds;
  }
  std::sort(sites.begin(), sites.end(),
            [](const auto& a, const auto& b) { return a.second.self_seconds > b.second.self_seconds; });
  std::printf("\nPROFILE model=%s steps=%zu step_ms=%.3f (profiled run; callbacks add a little)\n", model.c_str(),
              steps, step_ms);
  std::printf("%10s %7s %9s  %s\n", "self ms", "% step", "calls", "enclosing region > kernel or region");
  double rest = 0;
  std::size_t rest_sites = 0;
  for (const auto& [site, t] : sites) {
    if (t.self_seconds < 0.001 * wall_seconds) {  // under 0.1 %: summed below
      rest += t.self_seconds;
      ++rest_sites;
      continue;
    }
    std::printf("%10.3f %6.1f%% %9.1f  %s\n", t.self_seconds * per_step, 100.0 * t.self_seconds / wall_seconds,
                static_cast<double>(t.calls) / static_cast<double>(steps), site.c_str());
  }
  std::printf("%10.3f %6.1f%% %9s  (%zu more sites under 0.1%% each)\n", rest * per_step, 100.0 * rest / wall_seconds,
              "", rest_sites);
  const double outside = wall_seconds - tracked;
  std::printf("%10.3f %6.1f%% %9s  (outside any kernel or region: sampler, loss read-back, loops)\n",
              outside * per_step, 100.0 * outside / wall_seconds, "");
  // The GEMM rate only means something when GEMMs carry all the counted FLOPs (not with oneDNN
  // convolutions, which run outside KokkosBlas).
  std::printf("GEMM (all KokkosBlas::gemm calls): %.3f ms/step = %.1f%% of the step", gemm * per_step,
              100.0 * gemm / wall_seconds);
  if (gemm > 0.5 * tracked) std::printf("; %.1f GFLOP/s on the counted 6 x MACs FLOPs", gflop_per_step * steps / gemm);
  std::printf("\n");
  std::printf("\nPROFILE_REGIONS model=%s (inclusive ms/step of each region name, outermost occurrence)\n",
              model.c_str());
  std::vector<std::pair<std::string, Totals>> regions(inclusive_regions.begin(), inclusive_regions.end());
  const auto print_layers = [&] {
    std::printf("\nPROFILE_LAYERS model=%s (each region instance in execution order: inclusive ms/step, of which "
                "GEMM)\n%6s %10s %10s  %s\n",
                model.c_str(), "order", "ms", "GEMM ms", "region#k (k-th of its name in a step)");
    for (std::size_t i = 0; i < instance_order.size(); ++i) {
      const Totals& t = by_instance[instance_order[i]];
      std::printf("%6zu %10.3f %10.3f  %s\n", i, t.inclusive_seconds * per_step, t.gemm_seconds * per_step,
                  instance_order[i].c_str());
    }
  };
  std::sort(regions.begin(), regions.end(),
            [](const auto& a, const auto& b) { return a.second.inclusive_seconds > b.second.inclusive_seconds; });
  for (const auto& [name, t] : regions) {
    std::printf("%10.3f %6.1f%% %9.1f  %s\n", t.inclusive_seconds * per_step,
                100.0 * t.inclusive_seconds / wall_seconds, static_cast<double>(t.calls) / static_cast<double>(steps),
                name.c_str());
  }
  if (layers) print_layers();
}

}  // namespace profile

// ---------------------------------------------------------------------------------------------

struct ModelSetup {
  hpf::TrainOptions options;
  std::size_t steps, warmup;
};

/// The reference's settings: SGD lr 0.05 momentum 0.9 on Fashion-MNIST; ResNets lr 0.1,
/// momentum 0.9, weight decay 5e-4, kaiming_normal(fan_out) convolutions, one synthetic batch.
ModelSetup setup_for(const std::string& model, std::uint64_t seed) {
  ModelSetup m;
  m.options.evaluate = false;
  m.options.log = nullptr;
  m.options.network.seed = seed;
  m.options.data_seed = seed;
  if (model == "mlp") {
    m.options.batch = 128;
    m.options.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
    m.steps = 100;
    m.warmup = 20;
  } else if (model == "cnn") {
    m.options.batch = 64;
    m.options.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
    m.steps = 20;
    m.warmup = 5;
  } else if (model == "cosmoflow") {
    m.options.batch = 8;
    m.options.optimizer = hpf::SgdOptions{.learning_rate = 0.01, .momentum = 0.9};
    m.steps = 3;
    m.warmup = 1;
  } else if (model == "gpt" || model == "gpt8") {
    m.options.batch = 32;
    m.options.optimizer = hpf::AdamOptions{.learning_rate = 3e-3};
    m.steps = model == "gpt" ? 10 : 5;
    m.warmup = 2;
  } else {
    m.options.batch = 64;
    m.options.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
    m.options.network.init = hpf::InitScheme::kaiming_normal_fan_out;
    m.steps = model == "resnet56" ? 3 : 5;
    m.warmup = model == "resnet56" ? 1 : 2;
  }
  return m;
}

template <class Model>
int run_model(const Settings& s) {
  ModelSetup m = setup_for(s.model, s.seed);
  if (s.batch) m.options.batch = s.batch;
  m.options.data_shards = s.shards;
  m.options.shards_side_by_side = s.side_by_side;
  m.options.network.recompute = s.recompute;
  if (s.bf16) m.options.network.matmul_precision = hpf::MatmulPrecision::bf16;
  const std::size_t steps = s.steps ? s.steps : m.steps;
  const std::size_t warmup = s.warmup ? s.warmup : m.warmup;
  const std::size_t repeats = s.repeats ? s.repeats : 5;
  const bool fashion = s.model == "mlp" || s.model == "cnn";

  // Real Fashion-MNIST batches in RAM (bytes, scaled to x/255 as they are gathered), or one fixed
  // synthetic batch: a dataset exactly one batch large gives the same samples every step.
  const auto data = [&] {
    if (fashion) return hpf::data::load_fashion_mnist().train;
    if constexpr (Model::input_shape::rank == 1) {  // token windows of a text (the GPT)
      constexpr std::size_t context = Model::input_shape::size;
      std::vector<std::uint8_t> text(m.options.batch * context + 1);
      for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>("the quick brown fox jumps "[i % 26]);
      return hpf::data::text_windows(text, context, {});
    } else if constexpr (Model::input_shape::rank == 4) {  // volumes (CosmoFlow): real-valued targets
      using In = typename Model::input_shape;
      return hpf::data::synthetic_regression(
          m.options.batch, hpf::data::SampleDims{In::channels, In::height, In::width, In::depth},
          Model::output_shape::size, s.seed);
    } else {
      return hpf::data::synthetic_dataset(m.options.batch, 3, 32, 32, 10, s.seed);
    }
  }();
  const MemoryMarks memory;
  hpf::Trainer<Model, float> trainer(m.options, data);
  // Full batches only (Fashion-MNIST's last partial batch is skipped), cycled over epochs.
  const std::size_t full_steps = std::max<std::size_t>(1, data.size() / m.options.batch);
  std::size_t next = 0;
  auto train_steps = [&](std::size_t count) {
    std::size_t samples = 0;
    double loss = 0;
    for (std::size_t i = 0; i < count; ++i, ++next) {
      const hpf::StepResult r = trainer.step(next / full_steps, next % full_steps);
      samples += r.samples;
      loss = r.loss_sum / static_cast<double>(r.samples);
    }
    Kokkos::fence();
    return std::pair{samples, loss};
  };

  const double first_loss = train_steps(1).second;
  if (warmup > 1) train_steps(warmup - 1);
  double best_rate = 0, last_loss = first_loss;
  std::ostringstream blocks;
  for (std::size_t r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    const auto [samples, loss] = train_steps(steps);
    const double rate = static_cast<double>(samples) / seconds_since(start);
    best_rate = std::max(best_rate, rate);
    last_loss = loss;
    blocks << (r ? "," : "") << static_cast<long long>(rate + 0.5);
  }
  const double gflop_per_image = 6.0 * static_cast<double>(Model::cost.macs) * 1e-9;
  const double gflop_per_step = gflop_per_image * static_cast<double>(m.options.batch);
  std::printf(
      "RESULT framework=hpf model=%s batch=%zu steps=%zu warmup=%zu repeats=%zu images_per_s=%.2f "
      "ms_per_step=%.4f gflop_per_step=%.5f gflops=%.2f peak_rss_mib=%.1f base_rss_mib=%.1f train_peak_rss_mib=%.1f "
      "blas=%s blas_lib=%s blas_threads=%d blas_threading=%s kokkos_space=%s kokkos_concurrency=%d loss_first=%.5f "
      "loss_last=%.5f block_images_per_s=%s onednn_isa=%s shards=%zu shard_threads=%zu recompute=%d precision=%s\n",
      s.model.c_str(), m.options.batch, steps, warmup, repeats, best_rate,
      1e3 * static_cast<double>(m.options.batch) / best_rate, gflop_per_step, best_rate * gflop_per_image,
      memory.process_peak(), memory.base, memory.train_peak(), blas_token().c_str(), blas_library().c_str(),
      hpf::system::blas_threads(), hpf::system::blas_threading().c_str(), Kokkos::DefaultExecutionSpace::name(), Kokkos::DefaultExecutionSpace().concurrency(), first_loss,
      last_loss, blocks.str().c_str(), onednn_isa().c_str(), s.shards, trainer.shard_threads(), s.recompute ? 1 : 0,
      s.bf16 ? "bf16" : "float");
  std::fflush(stdout);

  if (s.profile_steps > 0) {
    profile::install(true);
    if (!Kokkos::Profiling::profileLibraryLoaded())
      std::fprintf(stderr, "warning: Kokkos does not report the callbacks\n");
    const auto start = Clock::now();
    for (std::size_t i = 0; i < s.profile_steps; ++i) {
      profile::next_step();
      train_steps(1);
    }
    const double wall = seconds_since(start);
    profile::install(false);
    profile::report(s.model, s.profile_steps, wall, gflop_per_step, s.profile_layers);
  }
  return 0;
}

/// Single-core SGEMM rate of the BLAS hpf uses, through the path its layers take
/// (hpf::detail::gemm -> KokkosBlas::gemm on row-major views -> OpenBLAS sgemm).
int run_sgemm(const Settings& s) {
  const std::size_t repeats = s.repeats ? s.repeats : 5;
  using Space = Kokkos::DefaultExecutionSpace;
  for (const std::size_t n : {std::size_t{1024}, std::size_t{2048}}) {
    hpf::Buffer<float, Space> storage("sgemm", 3 * n * n);
    auto host = Kokkos::create_mirror_view(storage);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::size_t i = 0; i < host.extent(0); ++i) host(i) = dist(rng);
    Kokkos::deep_copy(storage, host);
    hpf::Matrix<float, Space> a(storage.data(), n, n), b(storage.data() + n * n, n, n),
        c(storage.data() + 2 * n * n, n, n);
    hpf::detail::gemm("N", "N", 1.0f, a, b, 0.0f, c);  // warm-up (page faults, BLAS buffers)
    Kokkos::fence();
    const std::size_t calls = n <= 1024 ? 8 : 2;  // ~60-120 ms per timed sample
    double best = 0;
    std::ostringstream all;
    for (std::size_t r = 0; r < repeats; ++r) {
      const auto start = Clock::now();
      for (std::size_t k = 0; k < calls; ++k) hpf::detail::gemm("N", "N", 1.0f, a, b, 0.0f, c);
      Kokkos::fence();
      const double gflops =
          2.0 * static_cast<double>(n * n * n) * static_cast<double>(calls) * 1e-9 / seconds_since(start);
      best = std::max(best, gflops);
      all << (r ? "," : "") << static_cast<long long>(gflops + 0.5);
    }
    std::printf(
        "RESULT framework=hpf mode=sgemm n=%zu gflops=%.2f blas=%s blas_lib=%s blas_threads=%d samples_gflops=%s\n", n,
        best, blas_token().c_str(), blas_library().c_str(), hpf::system::blas_threads(), all.str().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto runtime = hpf::system::RuntimeOptions::from_environment();
  hpf::system::configure_before_start(runtime, argv);  // no-op when OPENBLAS_CORETYPE is set (benchmarks set it)
  const Settings s = parse(argc, argv);  // before Kokkos: usage errors exit without it
  Kokkos::ScopeGuard kokkos(argc, argv);
  hpf::system::configure_after_start(runtime, Kokkos::DefaultHostExecutionSpace().concurrency());
  std::printf("# %s; OPENBLAS_CORETYPE=%s; Kokkos %s\n", hpf::system::blas_description().c_str(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
              Kokkos::DefaultExecutionSpace::name());
  try {
    if (s.sgemm) return run_sgemm(s);
    if (s.model == "mlp") return run_model<hpf::zoo::Mlp>(s);
    if (s.model == "cnn") return run_model<hpf::zoo::Cnn>(s);
    if (s.model == "resnet20") return run_model<hpf::zoo::ResNet20>(s);
    if (s.model == "gpt") return run_model<hpf::zoo::Gpt<4, 64, 4, 64, hpf::data::byte_vocabulary>>(s);
    if (s.model == "gpt8") return run_model<hpf::zoo::Gpt<8, 64, 4, 64, hpf::data::byte_vocabulary>>(s);
    if (s.model == "cosmoflow") return run_model<hpf::zoo::CosmoFlow<32>>(s);
    return run_model<hpf::zoo::ResNet56>(s);  // parse() accepts no other name
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
