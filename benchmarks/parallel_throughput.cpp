// SPDX-License-Identifier: MIT
// Data-parallel and pipeline training throughput and per-rank memory of a zoo model under MPI,
// measured the way benchmarks/pytorch_ddp.py and benchmarks/pytorch_pipeline.py measure PyTorch
// (benchmarks/compare_parallel.py runs all of them):
//
//   mpiexec -n 2 hpf_bench_parallel_throughput --model resnet20 --batch 128          # 2 replicas
//   mpiexec -n 2 hpf_bench_parallel_throughput --model resnet56 --stages 2 --micro-batches 8 --stage-times
//   mpiexec -n 1 hpf_bench_parallel_throughput --model resnet20 --micro-batches 4     # one process
//
// One StageEngine per rank (what hpf::fit builds: ProcessGrid, the partition, this rank's data
// shard), driven step by step so that warm-up and timed blocks can be told apart: fit() only
// reports whole epochs. The partition is one stage (data parallelism), Balanced<2>, Balanced<4>, or
// with --cuts one of a few compiled Cuts<...> (stage balance around Balanced<S>'s choice, and the
// oracle's searched cuts).
// images/s (global samples) is the best of `repeats` blocks of `steps` steps after `warmup` steps
// (block_images_per_s and block_ms_per_step list every block); every block starts at a barrier and
// every step ends in the engine's loss allgather, so rank 0's clock times the whole job. Rank 0
// prints one `RESULT key=value ...` line; `rank_*` values list every rank in rank order (rank r is
// stage r % S of replica r / S).
//
// Memory per rank: peak RSS (ru_maxrss, the whole process), the RSS before the engine is built
// (data in RAM) and the peak from there on (clear_refs 5 resets VmHWM), and from Kokkos' allocation
// callbacks the bytes of the engine's views by kind: activation tapes (every micro-batch slot the
// schedule keeps, with the gradient buffers between stages), parameters/gradients/optimizer state,
// and workspace. The callbacks are removed again before timing: while any Kokkos tool callback is
// set, every kernel launch builds its name string. With --side-by-side the engine is built before
// they are set (it makes its shards' networks on its threads, which it does not while a Kokkos tool
// is loaded), so the view figures are not measured and print as -1.
// --stage-times adds one more block with region callbacks: per rank, the time per step spent in
// layer, optimizer and batch-loading regions (busy) against the rest (waiting for activations,
// gradients, the gradient reduction and the loss allgather).
// Set OPENBLAS_CORETYPE explicitly when comparing (hpf::system::RuntimeOptions).
#include <hpf/comm/environment.hpp>
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/data/text.hpp>
#include <hpf/parallel/grid.hpp>
#include <hpf/parallel/mpi_layer_group.hpp>
#include <hpf/parallel/partition.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/parallel/stage_engine.hpp>
#include <hpf/parallel/strategy.hpp>
#include <hpf/parallel/timeline.hpp>
#include <hpf/system/blas.hpp>
#include <hpf/system/resident_memory.hpp>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/gpt.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <common/measure.hpp>


#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using namespace hpf_bench;

// ---------------------------------------------------------------------------------------------
// Bytes of live Kokkos allocations by kind, through the allocation callbacks.
namespace views {

enum Kind { tape, state, workspace, other, kinds };
const char* const kind_names[kinds] = {"tape", "state", "workspace", "other"};

/// The engine's views by label: the model's flat arrays and the optimizer's state, the layers'
/// shared workspace, the gradient-reduction and staging buffers; everything else is allocated per
/// micro-batch slot (Network::make_tape, StageEngine's input/output gradients).
Kind kind_of(const char* label) {
  const std::string l(label);
  for (const char* s : {"hpf::parameters", "hpf::gradients", "hpf::buffers", "hpf::Sgd::", "hpf::Adam::"})
    if (l.rfind(s, 0) == 0) return state;
  if (l.rfind("hpf::Network::workspace", 0) == 0 || l.rfind("hpf::Network::scratch", 0) == 0) return workspace;
  if (l.rfind("hpf::GradientBuckets::", 0) == 0 || l.rfind("hpf::comm::", 0) == 0 || l.rfind("hpf::", 0) != 0)
    return other;
  return tape;
}

struct Live {
  std::uint64_t size;
  Kind kind;
};
std::unordered_map<const void*, Live> live;
std::uint64_t now[kinds] = {}, total = 0, peak_total = 0;

void allocate(Kokkos::Tools::SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  const Kind k = kind_of(label);
  live[ptr] = {size, k};
  now[k] += size;
  total += size;
  peak_total = std::max(peak_total, total);
}
void deallocate(Kokkos::Tools::SpaceHandle, const char*, const void* ptr, std::uint64_t) {
  const auto it = live.find(ptr);
  if (it == live.end()) return;  // allocated before the callbacks were installed
  now[it->second.kind] -= it->second.size;
  total -= it->second.size;
  live.erase(it);
}
void install(bool on) {
  Kokkos::Tools::Experimental::set_allocate_data_callback(on ? allocate : nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on ? deallocate : nullptr);
}
double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace views

// ---------------------------------------------------------------------------------------------
// --stage-times: seconds spent in the regions directly inside StageEngine::step, except the
// communication ones (posting sends/receives, waiting for the gradient buckets, the loss
// allreduce). MPI waits (recv, Request::wait) sit outside any region, so step time minus busy
// time is this rank's waiting.
namespace busy {

int depth = 0, step_depth = 0;
std::vector<Clock::time_point> started;  // per depth; time_point{} when not counted
double seconds = 0;

bool is_compute(const char* name) {
  return std::strncmp(name, "hpf::comm::", 11) != 0 && std::strcmp(name, "hpf::GradientBuckets::finish") != 0;
}
void push_region(const char* name) {
  ++depth;
  if (started.size() <= static_cast<std::size_t>(depth)) started.resize(depth + 1);
  started[depth] = {};
  if (std::strcmp(name, "hpf::StageEngine::step") == 0) {
    step_depth = depth;
  } else if (step_depth > 0 && depth == step_depth + 1 && is_compute(name)) {
    started[depth] = Clock::now();
  }
}
void pop_region() {
  if (depth <= 0) return;
  if (started[depth] != Clock::time_point{}) seconds += seconds_since(started[depth]);
  if (depth == step_depth) step_depth = 0;
  --depth;
}
void install(bool on) {
  Kokkos::Tools::Experimental::set_push_region_callback(on ? push_region : nullptr);
  Kokkos::Tools::Experimental::set_pop_region_callback(on ? pop_region : nullptr);
}

}  // namespace busy

// ---------------------------------------------------------------------------------------------

struct Settings {
  std::string model = "resnet20";
  std::size_t stages = 1, micro_batches = 1, batch = 0, steps = 0, warmup = 0, repeats = 0, bucket_bytes = 0, shards = 1;
  std::vector<std::size_t> cuts;  ///< --cuts: the leaves of a compiled hpf::Cuts<...>
  std::optional<std::size_t> piece_bytes;
  std::string profile;
  hpf::Schedule schedule = hpf::Schedule::one_f_one_b;
  hpf::GradientReduction reduction = hpf::GradientReduction::automatic;
  hpf::HostHierarchy hierarchy = hpf::HostHierarchy::automatic;
  hpf::ExchangePrecision exchange_precision = hpf::ExchangePrecision::full;
  hpf::ExchangePrecision stage_precision = hpf::ExchangePrecision::full;
  hpf::ExchangeProgress exchange_progress = hpf::ExchangeProgress::between_layers;
  std::size_t progress_interval_us = 1000;
  hpf::LayerSplit split{};
  bool stage_times = false, side_by_side = false, interior_first = false, bf16_products = false, help = false;
  bool describe_memory = false;
  std::uint64_t seed = 0;
};

const char* const usage_text =
    "usage: mpiexec -n P hpf_bench_parallel_throughput [--model mlp|mlp-pairs|cnn|resnet20|resnet56|resnet164|gpt|cosmoflow] [--stages 1|2|4]\n"
    "         [--batch B] [--micro-batches M] [--schedule gpipe|1f1b] [--reduction automatic|ordered|allreduce]\n"
    "         [--bucket-bytes N] [--piece-bytes N] [--cuts L1,L2,...] [--steps N] [--warmup W] [--repeats R] [--stage-times] [--seed S]\n"
    "         [--shards C] [--side-by-side] [--profile FILE] [--hierarchy automatic|on|off]\n"
    "         [--exchange-precision full|bf16] [--stage-precision full|bf16] [--precision float|bf16]\n"
    "         [--split filter:G|channel:G]\n"
    "         [--exchange-progress between-layers|thread] [--progress-interval US] [--describe-memory]\n"
    "  P processes form P / stages replicas (P / (stages x G) with --split); --batch is the global mini-batch (default: mlp 128, cnn and\n"
    "  resnets 64, gpt 32, cosmoflow 8 per replica), split into M micro-batches per replica (pipelined over the\n"
    "  stages, accumulated on one).\n"
    "  --stages 2 or 4 places the cuts with hpf::Balanced<S>, or with --cuts at compiled leaves\n"
    "  (hpf::Cuts<L1,...>; --cut L is --cuts L): 2 stages resnet20 21 28 (after 3 or 4 blocks), resnet56 64 70\n"
    "  76 82 (after 10 to 13 blocks), resnet164 174, gpt 8 14 20 (after 1 to 3 transformer blocks), cosmoflow 6\n"
    "  (after 2 convolution blocks); 4 stages resnet56 45,88,125, resnet164 65,192,300 and 110,246,364, gpt\n"
    "  2,8,20 (hpf-oracle partition's choices from two calibrations of 2026-12-03).\n"
    "  Defaults: 1f1b, hpf's gradient reduction and buckets; steps/warm-up per block mlp 100/20,\n"
    "  cnn 20/5, resnet20 5/2, resnet56 3/1, resnet164 2/1, gpt 10/2, cosmoflow 3/1; 3 blocks.\n"
    "  resnet164: PreActResNet-164 (bottleneck blocks), trained as the ResNets.\n"
    "  gpt: examples/03_language_model's byte-level GPT (4 blocks, D 64, 4 heads, context 64), Adam lr 3e-3,\n"
    "  one fixed batch of text windows; cosmoflow: CosmoFlow<32> (4 x 32^3 volumes, 4 targets), SGD lr 0.01\n"
    "  momentum 0.9, one fixed batch (as hpf_bench_train_throughput).\n"
    "  --stage-times  one more block with region callbacks: per-rank busy time per step\n"
    "  --shards C     data shards per replica (TrainOptions::shards_per_replica; default 1): each replica's\n"
    "                 batch in C pieces; --side-by-side trains them at once, one per thread (Kokkos OpenMP)\n"
    "  --profile FILE the machine profile the automatic bucket size weighs (TrainOptions::oracle_profile;\n"
    "                 without it and without --bucket-bytes, buckets of an eighth of a stage's gradient)\n"
    "  --hierarchy    whether replicas on one host sum gradients there first (StepOptions::hierarchy)\n"
    "  --exchange-precision  what gradients travel as between replicas (StepOptions::exchange_precision)\n"
    "  --stage-precision  what activations and their gradients travel as between stages (StepOptions::stage_precision)\n"
    "  --precision bf16  the products of Dense, convolutions and attention read bf16 inputs\n"
    "                 (NetworkOptions::matmul_precision, what hpf::Mixed<hpf::bf16> sets; default float)\n"
    "  --exchange-progress  what moves messages in flight while layers compute (StepOptions::exchange_progress;\n"
    "                 thread asks MPI for MPI_THREAD_MULTIPLE), --progress-interval its sleep in microseconds\n"
    "  --piece-bytes N  messages between ranks on different hosts (gradient buckets, between stages)\n"
    "                 of at most N bytes (StepOptions::exchange_piece_bytes; 0: whole messages)\n"
    "  --split K:G    Dense and convolution layers split over groups of G ranks, by filters or by\n"
    "                 channels (hpf::Filter<G>, hpf::Channel<G>), or samples split into G slabs of rows\n"
    "                 (spatial:G, hpf::Spatial<G>; resnet20 and cosmoflow, G = 2 or 4, one stage); --batch\n"
    "                 stays the global batch\n"
    "  --interior-first  under spatial:G, convolutions compute their slabs' interior rows while the\n"
    "                 halos travel (NetworkOptions::interior_first)\n"
    "  --describe-memory  on one rank: train 2 steps and print `MEMORY process_mib=... data_mib=...`\n"
    "                 (the resident set less the data and the pages the engine's views wrote, the data\n"
    "                 set's bytes): what hpf-oracle's --process-mib and --data-mib take\n";

std::size_t to_size(const std::string& flag, const std::string& text) {
  const auto value = hpf_bench::whole_number(text);
  if (!value) throw hpf::comm::UsageError(flag + " expects a whole number, got '" + text + "'");
  return *value;
}

/// Throws UsageError (every rank sees the same arguments, so every rank exits with code 2).
Settings parse(int argc, char** argv) {
  Settings s;
  auto fail = [](const std::string& what) { throw hpf::comm::UsageError(what + "\n" + usage_text); };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind("--kokkos-", 0) == 0) continue;  // Kokkos' own
    if (flag == "--help" || flag == "-h") {
      s.help = true;
      continue;
    }
    if (flag == "--stage-times") {
      s.stage_times = true;
      continue;
    }
    if (flag == "--side-by-side") {
      s.side_by_side = true;
      continue;
    }
    if (flag == "--interior-first") {
      s.interior_first = true;
      continue;
    }
    if (flag == "--describe-memory") {
      s.describe_memory = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") {
      if (value != "mlp" && value != "mlp-pairs" && value != "cnn" && value != "resnet20" && value != "resnet56" &&
          value != "resnet164" && value != "gpt" && value != "cosmoflow")
        fail("--model must be mlp, mlp-pairs, cnn, resnet20, resnet56, resnet164, gpt or cosmoflow");
      s.model = value;
    } else if (flag == "--schedule") {
      if (value != "gpipe" && value != "1f1b") fail("--schedule must be gpipe or 1f1b");
      s.schedule = value == "gpipe" ? hpf::Schedule::gpipe : hpf::Schedule::one_f_one_b;
    } else if (flag == "--reduction") {
      if (value != "automatic" && value != "ordered" && value != "allreduce")
        fail("--reduction must be automatic, ordered or allreduce");
      s.reduction = value == "ordered"     ? hpf::GradientReduction::ordered
                    : value == "allreduce" ? hpf::GradientReduction::allreduce
                                           : hpf::GradientReduction::automatic;
    } else if (flag == "--hierarchy") {
      if (value != "automatic" && value != "on" && value != "off") fail("--hierarchy must be automatic, on or off");
      s.hierarchy = value == "on" ? hpf::HostHierarchy::on : value == "off" ? hpf::HostHierarchy::off : hpf::HostHierarchy::automatic;
    } else if (flag == "--exchange-precision") {
      if (value != "full" && value != "bf16") fail("--exchange-precision must be full or bf16");
      s.exchange_precision = value == "bf16" ? hpf::ExchangePrecision::bf16 : hpf::ExchangePrecision::full;
    } else if (flag == "--precision") {
      if (value != "float" && value != "bf16") fail("--precision must be float or bf16");
      s.bf16_products = value == "bf16";
    } else if (flag == "--stage-precision") {
      if (value != "full" && value != "bf16") fail("--stage-precision must be full or bf16");
      s.stage_precision = value == "bf16" ? hpf::ExchangePrecision::bf16 : hpf::ExchangePrecision::full;
    } else if (flag == "--exchange-progress") {
      if (value != "between-layers" && value != "thread") fail("--exchange-progress must be between-layers or thread");
      s.exchange_progress = value == "thread" ? hpf::ExchangeProgress::thread : hpf::ExchangeProgress::between_layers;
    } else if (flag == "--progress-interval") {
      s.progress_interval_us = to_size(flag, value);
    } else if (flag == "--stages") {
      s.stages = to_size(flag, value);
      if (s.stages != 1 && s.stages != 2 && s.stages != 4) fail("--stages must be 1, 2 or 4");
    } else if (flag == "--micro-batches") {
      s.micro_batches = to_size(flag, value);
    } else if (flag == "--batch") {
      s.batch = to_size(flag, value);
    } else if (flag == "--cut" || flag == "--cuts") {
      std::istringstream list(value);
      for (std::string leaf; std::getline(list, leaf, ',');) s.cuts.push_back(to_size(flag, leaf));
    } else if (flag == "--bucket-bytes") {
      s.bucket_bytes = to_size(flag, value);
    } else if (flag == "--profile") {
      s.profile = value;
    } else if (flag == "--piece-bytes") {
      s.piece_bytes = to_size(flag, value);
    } else if (flag == "--steps") {
      s.steps = to_size(flag, value);
    } else if (flag == "--warmup") {
      s.warmup = to_size(flag, value);
    } else if (flag == "--repeats") {
      s.repeats = to_size(flag, value);
    } else if (flag == "--seed") {
      s.seed = to_size(flag, value);
    } else if (flag == "--shards") {
      s.shards = to_size(flag, value);
    } else if (flag == "--split") {
      try {
        s.split = hpf::LayerSplit::parse(value);
      } catch (const std::invalid_argument& e) {
        fail(std::string("--split: ") + e.what());
      }
    } else {
      fail("unknown option " + flag);
    }
  }
  return s;
}

/// Comma-separated values of every rank, gathered to rank 0 (empty elsewhere).
std::string gather(const hpf::comm::Communicator& world, double value, int digits = 1) {
  std::vector<double> all(static_cast<std::size_t>(world.size()));
  hpf::comm::check(MPI_Gather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, world.get()), "MPI_Gather");
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  for (std::size_t r = 0; r < all.size(); ++r) out << (r ? "," : "") << all[r];
  return out.str();
}

/// Batch per replica, steps per block and warm-up steps of each model: hpf_bench_train_throughput's
/// (and pytorch_train.py's), so that one replica trains as one process does there.
struct ModelDefaults {
  std::size_t batch, steps, warmup;
};
ModelDefaults defaults_for(const std::string& model) {
  if (model == "mlp" || model == "mlp-pairs") return {128, 100, 20};
  if (model == "cnn") return {64, 20, 5};
  if (model == "resnet20") return {64, 5, 2};
  if (model == "gpt") return {32, 10, 2};
  if (model == "cosmoflow") return {8, 3, 1};
  if (model == "resnet164") return {64, 2, 1};
  return {64, 3, 1};  // resnet56
}

/// The reference's settings (docs/reference.md): SGD lr 0.05 momentum 0.9 for the MLP and the CNN
/// on Fashion-MNIST; ResNets lr 0.1, momentum 0.9, weight decay 5e-4, kaiming_normal(fan_out), one
/// fixed synthetic batch. The GPT and CosmoFlow as hpf_bench_train_throughput trains them: Adam lr
/// 3e-3 (the language-model example's), SGD lr 0.01 momentum 0.9, default initialization.
hpf::TrainOptions options_for(const Settings& s, std::size_t replicas) {
  hpf::TrainOptions o;
  const bool fashion = s.model == "mlp" || s.model == "mlp-pairs" || s.model == "cnn";
  o.batch = s.batch ? s.batch : defaults_for(s.model).batch * replicas;
  o.micro_batches = s.micro_batches;
  o.schedule = s.schedule;
  o.reduction = s.reduction;
  o.hierarchy = s.hierarchy;
  o.exchange_precision = s.exchange_precision;
  o.stage_precision = s.stage_precision;
  o.exchange_progress = s.exchange_progress;
  o.exchange_progress_interval = std::chrono::microseconds(s.progress_interval_us);
  o.network.split = s.split;
  o.shards_per_replica = s.shards;
  o.shards_side_by_side = s.side_by_side;
  o.network.interior_first = s.interior_first;
  if (s.bf16_products) o.network.matmul_precision = hpf::MatmulPrecision::bf16;
  if (s.bucket_bytes) o.bucket_bytes = s.bucket_bytes;
  if (s.piece_bytes) o.exchange_piece_bytes = *s.piece_bytes;
  o.oracle_profile = s.profile;
  o.evaluate = false;
  o.log = nullptr;
  o.progress = hpf::ProgressMode::none;
  o.network.seed = s.seed;
  o.data_seed = s.seed;
  if (fashion) {
    o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  } else if (s.model == "gpt") {
    o.optimizer = hpf::AdamOptions{.learning_rate = 3e-3};
  } else if (s.model == "cosmoflow") {
    o.optimizer = hpf::SgdOptions{.learning_rate = 0.01, .momentum = 0.9};
  } else {
    o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
    o.network.init = hpf::InitScheme::kaiming_normal_fan_out;
  }
  return o;
}

template <class Model, class Partition, std::size_t StageIndex>
void run_stage(const hpf::comm::Communicator& world, const hpf::ProcessGrid& grid, const Settings& s,
               const hpf::TrainOptions& o) {
  using StageModel = hpf::detail::fit_stage_t<Model, Partition, StageIndex>;
  using Links = hpf::MpiLinks<float, Kokkos::DefaultExecutionSpace>;
  constexpr std::size_t stages = hpf::stage_count_v<Model, Partition>;
  const bool fashion = s.model == "mlp" || s.model == "mlp-pairs" || s.model == "cnn";
  const std::size_t steps = s.steps ? s.steps : defaults_for(s.model).steps;
  const std::size_t warmup = s.warmup ? s.warmup : defaults_for(s.model).warmup;
  const std::size_t repeats = s.repeats ? s.repeats : 3;

  // This rank's shard, as fit() loads it. The ResNets', the GPT's and CosmoFlow's datasets are
  // exactly one global batch (hpf_bench_train_throughput's): every step trains on the same samples
  // (reshuffled per epoch, which changes only who gets which).
  const auto shard = hpf::data::pipeline_shard(grid.replica(), grid.replicas(), grid.stage(), grid.stages());
  const std::size_t process_bytes = hpf::system::resident_set_bytes();
  const hpf::data::TrainTest data = [&]() -> hpf::data::TrainTest {
    if (fashion) return hpf::data::load_fashion_mnist(shard);
    if constexpr (Model::input_shape::rank == 1) {  // token windows of a repeated phrase (the GPT)
      constexpr std::size_t context = Model::input_shape::size;
      std::vector<std::uint8_t> text(o.batch * context + 1);
      for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>("the quick brown fox jumps "[i % 26]);
      return {hpf::data::text_windows(text, context, shard), hpf::data::text_windows({}, context, shard)};
    } else if constexpr (Model::input_shape::rank == 4) {  // volumes (CosmoFlow): real-valued targets
      using In = hpf::whole_shape_t<typename Model::input_shape>;  // whole samples, also under --split spatial:G
      const hpf::data::SampleDims dims{In::channels, In::height, In::width, In::depth};
      return {hpf::data::synthetic_regression(o.batch, dims, Model::output_shape::size, s.seed, shard),
              hpf::data::synthetic_regression(0, dims, Model::output_shape::size, s.seed + 1, shard)};
    } else {
      return {hpf::data::synthetic_dataset(o.batch, 3, 32, 32, 10, s.seed, shard),
              hpf::data::synthetic_dataset(0, 3, 32, 32, 10, s.seed + 1, shard)};
    }
  }();
  if (s.describe_memory && world.size() != 1) {
    throw hpf::comm::UsageError("--describe-memory runs on one rank, not " + std::to_string(world.size()));
  }
  if (s.describe_memory && o.shards_side_by_side) {  // their views are not counted
    throw hpf::comm::UsageError("--describe-memory reads the engine's views, which --side-by-side does not count");
  }
  world.barrier();
  const MemoryMarks memory;
  const bool count_views = !o.shards_side_by_side;
  if (count_views) views::install(true);
  hpf::TrainOptions stage_options = o;  // as hpf::fit makes them
  if (o.network.split.splits())  // as hpf::fit makes it
    stage_options.network.split_group = std::make_shared<hpf::MpiLayerGroup<float, Kokkos::DefaultExecutionSpace>>(grid.group());
  auto engine = hpf::make_stage_engine<StageModel, float, Kokkos::DefaultExecutionSpace, Links>(
      {grid, o.shards_per_replica, o.shards_side_by_side}, stage_options, data.train, nullptr);
  // Messages one replica's gradient exchange takes per step (pieces of buckets; 0 alone).
  const std::vector<std::size_t> pieces = engine.links().bucket_pieces();
  const std::size_t exchange_messages =
      grid.replicas() > 1 ? std::accumulate(pieces.begin(), pieces.end(), std::size_t{0}) * o.shards_per_replica : 0;
  // HPF_TRACE=FILE (HPF_TRACE_STEPS, HPF_TRACE_LAYERS): the timeline of the steps asked for,
  // counted from the first step; off, it costs what tracing compiled in but unused costs.
  hpf::Timeline<Links> timeline(hpf::trace::TraceOptions::from_environment(), o, engine.links());
  // Full global batches only (Fashion-MNIST's last partial batch is skipped), cycled over epochs.
  const std::size_t full_steps = std::max<std::size_t>(1, data.train.size() / o.batch);
  std::size_t next = 0;
  auto train_steps = [&](std::size_t count) {
    double loss = 0;
    for (std::size_t i = 0; i < count; ++i, ++next) {
      timeline.at_step(next);
      const hpf::StepResult r = engine.step(next / full_steps, next % full_steps);
      loss = r.loss_sum / static_cast<double>(r.samples);
    }
    Kokkos::fence();
    return loss;
  };

  const double first_loss = train_steps(1);  // allocations of the first step are still counted
  if (s.describe_memory) {
    // What the process holds beside its data and the engine's views once it has trained: the code
    // of the kernels that ran, the libraries' buffers and objects (oneDNN's primitives, OpenBLAS'),
    // the heap the freed views left. The views count by the pages they wrote (as the oracle
    // predicts them), the data whole.
    train_steps(1);
#ifdef __GLIBC__
    malloc_trim(0);  // pages of views freed into the heap are the views', not the process's
#endif
    std::size_t views_resident = 0;
    for (const auto& [address, view] : views::live) views_resident += hpf::system::resident_bytes(address, view.size);
    const std::size_t data_bytes = data.train.memory_bytes() + data.test.memory_bytes();
    const std::size_t resident = hpf::system::resident_set_bytes();
    const std::size_t trained = resident > views_resident + data_bytes ? resident - views_resident - data_bytes : 0;
    constexpr double mib = 1 << 20;
    std::printf("MEMORY model=%s process_mib=%.2f data_mib=%.2f process_before_training_mib=%.2f\n", s.model.c_str(),
                static_cast<double>(trained) / mib, static_cast<double>(data_bytes) / mib,
                static_cast<double>(process_bytes) / mib);
    views::install(false);
    return;
  }
  views::install(false);
  const bool tool_left = Kokkos::Profiling::profileLibraryLoaded();  // must be false while timing
  if (warmup > 1) train_steps(warmup - 1);
  double best_rate = 0, last_loss = first_loss;
  std::ostringstream blocks, block_ms;
  block_ms.setf(std::ios::fixed);
  block_ms.precision(3);
  for (std::size_t r = 0; r < repeats; ++r) {
    world.barrier();
    const auto start = Clock::now();
    last_loss = train_steps(steps);
    const double seconds = seconds_since(start);
    const double rate = static_cast<double>(steps * o.batch) / seconds;
    best_rate = std::max(best_rate, rate);
    blocks << (r ? "," : "") << static_cast<long long>(rate + 0.5);
    block_ms << (r ? "," : "") << 1e3 * seconds / static_cast<double>(steps);
  }
  double busy_ms = -1, profiled_step_ms = -1;
  if (s.stage_times) {
    busy::install(true);
    world.barrier();
    const auto start = Clock::now();
    train_steps(steps);
    profiled_step_ms = 1e3 * seconds_since(start) / static_cast<double>(steps);
    busy::install(false);
    busy_ms = 1e3 * busy::seconds / static_cast<double>(steps);
  }
  timeline.finish();

  const double stage_gflop = 6.0 * static_cast<double>(StageModel::cost.macs) * 1e-9;  // per sample
  const std::string rank_peak = gather(world, memory.process_peak());
  const std::string rank_base = gather(world, memory.base);
  const std::string rank_train_peak = gather(world, memory.train_peak());
  const auto counted = [&](double mib) { return count_views ? mib : -1.0; };
  const std::string rank_tape = gather(world, counted(views::mib(views::now[views::tape])));
  const std::string rank_state = gather(world, counted(views::mib(views::now[views::state])));
  const std::string rank_workspace = gather(world, counted(views::mib(views::now[views::workspace])));
  const std::string rank_views_peak = gather(world, counted(views::mib(views::peak_total)), 4);  // to ~100 bytes
  const std::string rank_slots = gather(world, static_cast<double>(engine.slots()), 0);
  const std::string rank_busy = gather(world, busy_ms, 2);
  const std::string rank_stage_gflop = gather(world, stage_gflop, 5);
  const std::string rank_stage_flops = gather(world, static_cast<double>(StageModel::cost.training_flops()) * 1e-6, 3);
  const std::string rank_first_leaf = gather(world, static_cast<double>(hpf::stage_bounds_v<Model, Partition>[StageIndex]), 0);
  const std::string tool = gather(world, tool_left ? 1.0 : 0.0, 0);
  if (world.rank() != 0) return;

  // What moved messages: "between-layers", "thread" or, where the thread was asked for and MPI
  // granted less, "between-layers(no-thread)".
  const std::string progress = engine.links().has_progress_thread()          ? "thread"
                               : engine.links().describe_progress().empty() ? "between-layers"
                                                                            : "between-layers(no-thread)";
  const double gflop_per_image = 6.0 * static_cast<double>(Model::cost.macs) * 1e-9;
  const std::size_t local = o.batch / grid.replicas();
  std::printf(
      "RESULT framework=hpf model=%s world=%d stages=%zu replicas=%zu batch=%zu batch_per_replica=%zu "
      "micro_batches=%zu micro_batch=%zu schedule=%s reduction=%s bucket_bytes=%zu steps=%zu warmup=%zu repeats=%zu "
      "images_per_s=%.2f ms_per_step=%.4f gflop_per_step=%.5f gflops=%.2f "
      "rank_peak_rss_mib=%s rank_base_rss_mib=%s rank_train_peak_rss_mib=%s rank_tape_mib=%s rank_state_mib=%s "
      "rank_workspace_mib=%s rank_views_peak_mib=%s rank_slots=%s rank_busy_ms=%s profiled_step_ms=%.3f "
      "cut=%s rank_stage_gflop_per_sample=%s rank_stage_train_mflop_per_sample=%s rank_first_leaf=%s model_leaves=%zu "
      "tool_loaded_while_timing=%s blas=%s blas_threads=%d kokkos_space=%s loss_first=%.5f loss_last=%.5f "
      "block_images_per_s=%s block_ms_per_step=%s shards_per_replica=%zu shard_threads=%zu "
      "exchange_piece_bytes=%zu exchange_messages=%zu summed_per_host=%s parameters=%zu exchange_precision=%s stage_precision=%s products=%s "
      "split=%s group=%zu exchange_progress=%s interior_first=%d\n",
      s.model.c_str(), world.size(), stages, grid.replicas(), o.batch, local, o.micro_batches,
      (local + o.micro_batches - 1) / o.micro_batches, hpf::to_string(o.schedule),
      hpf::to_string(hpf::resolve(o.reduction, grid.replicas() * o.shards_per_replica)), engine.links().bucket_bytes(), steps, warmup, repeats, best_rate,
      1e3 * static_cast<double>(o.batch) / best_rate, gflop_per_image * static_cast<double>(o.batch),
      best_rate * gflop_per_image, rank_peak.c_str(), rank_base.c_str(), rank_train_peak.c_str(), rank_tape.c_str(),
      rank_state.c_str(), rank_workspace.c_str(), rank_views_peak.c_str(), rank_slots.c_str(), rank_busy.c_str(),
      profiled_step_ms, stages == 1 ? "none" : s.cuts.empty() ? "balanced" : "explicit", rank_stage_gflop.c_str(), rank_stage_flops.c_str(), rank_first_leaf.c_str(),
      static_cast<std::size_t>(Model::leaves), tool.c_str(), blas_token().c_str(), hpf::system::blas_threads(),
      Kokkos::DefaultExecutionSpace::name(), first_loss, last_loss, blocks.str().c_str(), block_ms.str().c_str(),
      o.shards_per_replica, engine.shard_threads(), o.exchange_piece_bytes, exchange_messages,
      engine.links().summed_per_host() ? "yes" : "no", static_cast<std::size_t>(Model::cost.parameters),
      hpf::to_string(o.exchange_precision), hpf::to_string(o.stage_precision),
      o.network.matmul_precision == hpf::MatmulPrecision::bf16 ? "bf16" : "float", o.network.split.kind_name(), grid.group_size(), progress.c_str(),
      o.network.interior_first ? 1 : 0);
  std::fflush(stdout);
}

/// This rank's stage: one run_stage per stage index (stage types differ).
template <class Model, class Partition, std::size_t... StageIndex>
void run_stages(const hpf::comm::Communicator& world, const hpf::ProcessGrid& grid, const Settings& s,
                const hpf::TrainOptions& o, std::index_sequence<StageIndex...>) {
  ((grid.stage() == StageIndex ? (run_stage<Model, Partition, StageIndex>(world, grid, s, o), true) : false) || ...);
}

template <class Model, class Partition>
void run(const hpf::comm::Communicator& world, const Settings& s) {
  constexpr std::size_t stages = hpf::stage_count_v<Model, Partition>;
  hpf::ProcessGrid grid(world, stages, s.split.ranks());
  // The exchange cost from --profile, as hpf::fit reads it.
  const hpf::TrainOptions o = hpf::detail::with_profile_exchange_cost(world, options_for(s, grid.replicas()), stages);
  hpf::detail::check_layout<float>(o, grid);  // the checks hpf::fit makes before it builds a float engine
  run_stages<Model, Partition>(world, grid, s, o, std::make_index_sequence<stages>{});
}

/// The leaves of a compiled partition hpf::Cuts<L...>.
template <class Partition>
struct CutLeaves;
template <std::size_t... Leaves>
struct CutLeaves<hpf::Cuts<Leaves...>> {
  static std::vector<std::size_t> get() { return {Leaves...}; }
};

/// Models whose samples split into 2 and 4 slabs (--split spatial:G): compiled in for them only.
template <class Model>
inline constexpr bool splits_into_slabs = false;
template <>
inline constexpr bool splits_into_slabs<hpf::zoo::ResNet20> = true;
template <>
inline constexpr bool splits_into_slabs<hpf::zoo::CosmoFlow<32>> = true;

/// Balanced<S> for 1, 2 or 4 stages, or one of the compiled partitions (`hpf::Cuts<...>` types) by
/// its leaves: partitions are types, so only these few (block boundaries around the balanced cut,
/// and the oracle's choices) exist in this executable; under --split spatial:G the slabs' model,
/// one stage.
template <class Model, class... Compiled>
void run_model(const hpf::comm::Communicator& world, const Settings& s) {
  if (s.split.kind == hpf::SplitKind::spatial && s.split.splits()) {  // each rank trains its slabs' model, one stage
    if (s.stages != 1) throw hpf::comm::UsageError("--split spatial:G is compiled for one stage (--stages 1) only");
    if constexpr (splits_into_slabs<Model>) {
      if (s.split.group == 2) return run<hpf::SpatialSplit<Model, 2, 1>, hpf::DataParallel::partition>(world, s);
      if (s.split.group == 4) return run<hpf::SpatialSplit<Model, 4, 1>, hpf::DataParallel::partition>(world, s);
    }
    std::ostringstream what;
    what << "--split spatial:G is compiled for G = 2 and 4 on resnet20 and cosmoflow, not --model " << s.model << " with G = "
         << s.split.group;
    throw hpf::comm::UsageError(what.str());
  }
  if (!s.cuts.empty() && s.cuts.size() + 1 != s.stages) {
    throw hpf::comm::UsageError("--cuts gives " + std::to_string(s.cuts.size()) + " cut(s): " +
                                std::to_string(s.cuts.size() + 1) + " stages, not --stages " + std::to_string(s.stages));
  }
  if (s.stages == 1) {
    run<Model, hpf::DataParallel::partition>(world, s);
  } else if (s.cuts.empty()) {
    s.stages == 4 ? run<Model, hpf::Balanced<4>>(world, s) : run<Model, hpf::Balanced<2>>(world, s);
  } else if (!((s.cuts == CutLeaves<Compiled>::get() ? (run<Model, Compiled>(world, s), true) : false) || ...)) {
    std::ostringstream leaves;
    for (std::size_t i = 0; i < s.cuts.size(); ++i) leaves << (i ? "," : "") << s.cuts[i];
    throw hpf::comm::UsageError("--cuts " + leaves.str() + " is not compiled for --model " + s.model + "\n" + usage_text);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A progress thread calls MPI beside the training thread: ask MPI for that before it starts.
  const auto asks_for_thread = [&](hpf::system::RuntimeOptions& runtime) {
    for (int i = 1; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--exchange-progress") == 0 && std::strcmp(argv[i + 1], "thread") == 0) {
        runtime.mpi_thread_multiple = true;
      }
    }
  };
  return hpf::comm::run_main(argc, argv, asks_for_thread, [&](const hpf::comm::Communicator& world) {
    const Settings s = parse(argc, argv);
    if (s.help) {
      if (world.rank() == 0) std::fputs(usage_text, stdout);
      return;
    }
    if (world.rank() == 0) {
      std::printf("# %s; OPENBLAS_CORETYPE=%s; Kokkos %s; %d ranks\n", hpf::system::blas_description().c_str(),
                  std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
                  Kokkos::DefaultExecutionSpace::name(), world.size());
    }
    if (s.model == "mlp") {
      run_model<hpf::zoo::Mlp>(world, s);
    } else if (s.model == "mlp-pairs") {
      run_model<hpf::zoo::MlpPairs>(world, s);
    } else if (s.model == "cnn") {
      run_model<hpf::zoo::Cnn>(world, s);
    } else if (s.model == "resnet20") {
      run_model<hpf::zoo::ResNet20, hpf::Cuts<21>, hpf::Cuts<28>>(world, s);
    } else if (s.model == "gpt") {
      // Leaves 2-25 are the 4 blocks (6 leaves each); Balanced<2> cuts at 14.
      run_model<hpf::zoo::Gpt<4, 64, 4, 64, hpf::data::byte_vocabulary>, hpf::Cuts<8>, hpf::Cuts<14>, hpf::Cuts<20>,
                hpf::Cuts<2, 8, 20>>(world, s);
    } else if (s.model == "cosmoflow") {
      run_model<hpf::zoo::CosmoFlow<32>, hpf::Cuts<6>>(world, s);  // Balanced<2> cuts at 3, after the first block
    } else if (s.model == "resnet164") {
      run_model<hpf::zoo::PreActResNet164, hpf::Cuts<174>, hpf::Cuts<65, 192, 300>, hpf::Cuts<110, 246, 364>>(world, s);
    } else {
      run_model<hpf::zoo::ResNet56, hpf::Cuts<64>, hpf::Cuts<70>, hpf::Cuts<76>, hpf::Cuts<82>, hpf::Cuts<45, 88, 125>>(
          world, s);
    }
  });
}
