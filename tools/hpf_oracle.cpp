// SPDX-License-Identifier: MIT
// hpf-oracle: predicted step time and per-rank memory of every parallel strategy of a model, the
// ranked table and the recommendation, and the compute calibration the predictions read.
//
//   hpf-oracle calibrate --model resnet56 --profile benchmarks/comm/profiles/local.json
//   hpf-oracle rank --model resnet56 --ranks 4 --batch 64 [--profile FILE] [--cluster FILE]
//   hpf-oracle predict --model cnn --ranks 4 --batch 128 --stages 2 --micro-batches 4 --schedule gpipe
//   hpf-oracle partition --model resnet56 --ranks 4 --batch 64 --stages 4 --micro-batches 8
//
// Models: the zoo's (hpf::zoo). A user's model gets the same from hpf::oracle::calibrate<Model>
// and hpf::oracle::rank_strategies(view_of<Model>(...), ...) in their own program.
#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/synthetic.hpp>
#include <hpf/data/text.hpp>
#include <hpf/model/spatial_split.hpp>
#include <hpf/oracle/best_cuts.hpp>
#include <hpf/oracle/calibrate.hpp>
#include <hpf/oracle/canary.hpp>
#include <hpf/oracle/closed_form.hpp>
#include <hpf/oracle/recommend.hpp>
#include <hpf/system/blas.hpp>
#include <hpf/system/runtime.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/gpt.hpp>
#include <hpf/zoo/models.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <dlfcn.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace hpf::oracle;

const char* const usage_text =
    "usage: hpf-oracle calibrate --model NAME [--profile FILE] [--batches 1,2,4,...]\n"
    "                            [--data fashion-mnist|synthetic|random] [--precision P]\n"
    "                            [--split filter:G|channel:G|spatial:G]\n"
    "       hpf-oracle rank      --model NAME --ranks P --batch B [--profile FILE] [--cluster FILE]\n"
    "                            [--memory-budget MIB] [--max-stages S] [--top N] [--recompute] [--precision P]\n"
    "                            [--exchange-precision full|bf16] [--stage-precision full|bf16]\n"
    "                            [--layer-splits] [--search-cuts] [--json] [--repeat N]\n"
    "                            [--process-mib X] [--data-mib X] [--without TERM]\n"
    "                            [--canary S | --compute-scale X]\n"
    "       hpf-oracle predict   --model NAME --ranks P --batch B --stages S --micro-batches M\n"
    "                            [--schedule 1f1b|gpipe] [--cuts L1,L2,...] [--profile FILE] [--cluster FILE]\n"
    "                            [--recompute] [--precision P] [--exchange-precision full|bf16]\n"
    "                            [--stage-precision full|bf16]\n"
    "                            [--split filter:G|channel:G|spatial:G] [--canary S | --compute-scale X]\n"
    "                            [--closed-form] [--without TERM] [--process-mib X] [--data-mib X]\n"
    "                            [--json]\n"
    "       hpf-oracle partition --model NAME --ranks P --batch B --stages S --micro-batches M\n"
    "                            [predict's options but --cuts]\n"
    "  --cuts: the leaves where stages 2..S begin (hpf::Cuts<...>; default: hpf::Balanced<S>'s)\n"
    "  partition: the cuts of S stages that minimise the predicted step (within --memory-budget), the\n"
    "             hpf::Cuts<...> to name in hpf::Pipeline, against hpf::Balanced<S>'s\n"
    "  --recompute: training re-materializes Repeat blocks (NetworkOptions::recompute)\n"
    "  --precision: float (default), or bf16: the products of dense, convolution and attention layers read\n"
    "             bf16 inputs (hpf::Mixed<hpf::bf16>); calibrated and predicted apart from float\n"
    "  --exchange-precision: what gradients travel as between replicas (StepOptions::exchange_precision)\n"
    "  --stage-precision: what activations and their gradients travel as between pipeline stages\n"
    "                     (StepOptions::stage_precision)\n"
    "  --layer-splits: rank filter and channel splits of the Dense and convolution layers too\n"
    "                  (hpf::Filter<G>, hpf::Channel<G>), and samples split into slabs (hpf::Spatial<G>)\n"
    "                  where their slabs are calibrated\n"
    "  --search-cuts: each pipeline at the cuts partition finds, not only at hpf::Balanced<S>'s\n"
    "  --canary: first time the model's layers for about S seconds and rescale the profile's compute by\n"
    "           their time now over their calibrated time (a host that drifted since calibration), at\n"
    "           the micro-batch the plan computes (rank, recommend: each rank's share of the batch)\n"
    "  --compute-scale: multiply the profile's compute by X (a ratio --canary printed earlier)\n"
    "  --closed-form: ParaDL's closed form on the same calibration instead of the played step\n"
    "  --without TERM: the oracle without that term (its ablation; repeat to leave out several):\n"
    "             tapes-in-flight: passes take their calibrated time however many micro-batches'\n"
    "             tapes a schedule keeps alive;\n"
    "             exchange-compute: a replica's copies and sums of its gradient exchange take none\n"
    "             of its core's time\n"
    "  --repeat: ask the query N times in this process (the first runs cold: caches, threads); --json\n"
    "            adds warm_query_us, the median of the others\n"
    "  --threads: predict the strategies on up to N threads (default: the host's cores), one per 50,000\n"
    "             stage x micro-batch passes to play (SearchOptions::passes_per_thread)\n"
    "  --process-mib, --data-mib: what a rank's process holds beside its data and the engine's memory\n"
    "             once it has trained (code, libraries, MPI, Kokkos; hpf_bench_parallel_throughput\n"
    "             --describe-memory measures it), and the whole data set in memory (a first stage's\n"
    "             ranks keep 1/R of it):\n"
    "             with them, the predicted peak resident set of each stage's ranks (predict prints it;\n"
    "             --json: stage_resident_bytes, peak_resident_bytes)\n"
    "  --split: the plan's Dense and convolution layers split over groups of G ranks, or its samples\n"
    "           into G slabs (P = replicas x stages x G); calibrate --split times one member's part\n"
    "           of each layer, which plans of that split predict from: spatial:G needs it (a slab\n"
    "           rank's layers; resnet20 and cosmoflow, G = 2 or 4), filter:G and channel:G use it where\n"
    "           the profile has it (else the whole layers' time at the split's share of the FLOPs)\n"
    "  models: mlp mlp-pairs cnn resnet20 resnet56 resnet164 resnet1001 (hpf::zoo), gpt (examples/03_language_model's\n"
    "          Gpt<4, 64, 4, 64, 256>), cosmoflow (CosmoFlow<32>)\n"
    "  --profile: a machine profile (benchmarks/comm/run_comm_benchmark.py writes its communication\n"
    "             part, calibrate adds the compute part); default $HPF_ORACLE_PROFILE, else the\n"
    "             repository's benchmarks/comm/profiles/local.json\n"
    "  --cluster: a cluster profile (ranks per node, intra- and inter-node alpha/beta, compute speed) to\n"
    "             extrapolate to; compute rates come from --profile\n"
    "  --data:    the samples calibrate runs the layers on (pooling and ReLU take time that depends on\n"
    "             them); default: what the model trains on in hpf's examples and benchmarks,\n"
    "             fashion-mnist for mlp and cnn, synthetic (N(0, 1) values; bytes as tokens for\n"
    "             the GPT) for the others;\n"
    "             random: values uniform in [-1, 1)\n";

/// The oracle's terms `--without` leaves out, each with what takes it out of a profile.
struct AblatedTerm {
  const char* name;
  void (*drop)(MachineProfile&);
};
constexpr AblatedTerm ablated_terms[] = {{"tapes-in-flight", drop_tapes_in_flight},
                                         {"exchange-compute", drop_exchange_compute}};

struct Args {
  std::string command, model, profile, cluster, schedule = "1f1b", data, precision = "float", exchange_precision = "full",
              stage_precision = "full";
  std::size_t ranks = 0, batch = 0, stages = 0, micro_batches = 0, top = 0, max_stages = 0, repeat = 1, threads = 0;
  std::size_t ready_fd = 0;  ///< load: where to tell the calibration it computes (0: nowhere)
  double memory_budget_mib = 0;
  double process_mib = 0, data_mib = 0;  ///< the base of the predicted resident set
  bool json = false, recompute = false, layer_splits = false, search_cuts = false, closed_form = false;
  std::vector<const AblatedTerm*> without;  ///< the oracle's terms left out (its ablation)
  double canary_seconds = 0;  ///< 0: no canary
  double compute_scale = 1;
  hpf::LayerSplit split{};
  std::vector<std::size_t> batches, cuts;
};

hpf::MatmulPrecision matmul_precision(const Args& a) {
  return a.precision == "bf16" ? hpf::MatmulPrecision::bf16 : hpf::MatmulPrecision::full;
}

hpf::ExchangePrecision exchange_precision(const Args& a) {
  return a.exchange_precision == "bf16" ? hpf::ExchangePrecision::bf16 : hpf::ExchangePrecision::full;
}
hpf::ExchangePrecision stage_precision(const Args& a) {
  return a.stage_precision == "bf16" ? hpf::ExchangePrecision::bf16 : hpf::ExchangePrecision::full;
}

std::size_t mib_bytes(double mib) { return static_cast<std::size_t>(mib * (1 << 20)); }

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "hpf-oracle: %s\n%s", what.c_str(), usage_text);
  std::exit(2);
}

std::size_t count(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v == 0) fail(flag + " needs a positive integer, not '" + value + "'");
  return static_cast<std::size_t>(v);
}

/// `value` as a number within [low, high] (above `low` when `low_open`), else fail naming `expected`.
double number(const std::string& flag, const std::string& value, double low, double high, bool low_open,
              const std::string& expected) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !(low_open ? v > low : v >= low) || !(v <= high)) {
    fail(flag + " needs " + expected + ", not '" + value + "'");
  }
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) fail("no command");
  a.command = argv[1];
  if (a.command == "--help" || a.command == "-h") {
    std::fputs(usage_text, stdout);
    std::exit(0);
  }
  if (a.command != "calibrate" && a.command != "rank" && a.command != "predict" && a.command != "partition" &&
      a.command != "load") {
    fail("unknown command '" + a.command + "'");
  }
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind("--kokkos-", 0) == 0) continue;
    if (flag == "--json" || flag == "--recompute") {
      (flag == "--json" ? a.json : a.recompute) = true;
      continue;
    }
    if (flag == "--closed-form" && a.command == "predict") {
      a.closed_form = true;
      continue;
    }
    if ((flag == "--layer-splits" || flag == "--search-cuts") && a.command == "rank") {
      (flag == "--layer-splits" ? a.layer_splits : a.search_cuts) = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") a.model = value;
    else if (flag == "--profile") a.profile = value;
    else if (flag == "--cluster") a.cluster = value;
    else if (flag == "--schedule") a.schedule = value;
    else if (flag == "--data") a.data = value;
    else if (flag == "--precision") a.precision = value;
    else if (flag == "--without" && (a.command == "predict" || a.command == "rank")) {
      const auto known = std::find_if(std::begin(ablated_terms), std::end(ablated_terms),
                                      [&](const AblatedTerm& t) { return value == t.name; });
      if (known == std::end(ablated_terms)) {
        std::string names;
        for (const AblatedTerm& t : ablated_terms) names += std::string(names.empty() ? "" : ", ") + t.name;
        fail("--without: the oracle's terms that can be left out: " + names);
      }
      a.without.push_back(known);
    }
    else if (flag == "--exchange-precision" && a.command != "calibrate") a.exchange_precision = value;
    else if (flag == "--stage-precision" && a.command != "calibrate") a.stage_precision = value;
    else if (flag == "--ranks") a.ranks = count(flag, value);
    else if (flag == "--batch") a.batch = count(flag, value);
    else if (flag == "--stages") a.stages = count(flag, value);
    else if (flag == "--micro-batches") a.micro_batches = count(flag, value);
    else if (flag == "--top") a.top = count(flag, value);
    else if (flag == "--repeat" && a.command == "rank") a.repeat = count(flag, value);
    else if (flag == "--threads" && a.command == "rank") a.threads = count(flag, value);
    else if (flag == "--max-stages") a.max_stages = count(flag, value);
    else if (flag == "--ready-fd" && a.command == "load") a.ready_fd = count(flag, value);
    else if (flag == "--split" && (a.command == "predict" || a.command == "partition" || a.command == "calibrate")) {
      try {
        a.split = hpf::LayerSplit::parse(value);
      } catch (const std::invalid_argument& e) {
        fail(std::string("--split: ") + e.what());
      }
    }
    else if ((flag == "--canary" || flag == "--compute-scale") && a.command != "calibrate" && a.command != "load") {
      (flag == "--canary" ? a.canary_seconds : a.compute_scale) = number(flag, value, 0, 600, true, "a number above 0, at most 600");
    }
    else if (flag == "--memory-budget") a.memory_budget_mib = static_cast<double>(count(flag, value));
    else if ((flag == "--process-mib" || flag == "--data-mib") && a.command != "calibrate" && a.command != "load") {
      (flag == "--process-mib" ? a.process_mib : a.data_mib) = number(flag, value, 0, 1e9, false, "a number of MiB, at least 0");
    }
    else if (flag == "--batches" || (flag == "--cuts" && a.command != "partition")) {
      auto& list = flag == "--batches" ? a.batches : a.cuts;
      std::stringstream items(value);
      for (std::string item; std::getline(items, item, ',');) list.push_back(count(flag, item));
      if (list.empty() || std::adjacent_find(list.begin(), list.end(), std::greater_equal<>()) != list.end()) {
        fail(flag + " needs increasing numbers");
      }
    } else {
      fail("unknown option '" + flag + "'");
    }
  }
  if (a.model.empty()) fail("--model is required");
  if (a.schedule != "1f1b" && a.schedule != "gpipe") fail("--schedule must be 1f1b or gpipe, not '" + a.schedule + "'");
  if (a.precision != "float" && a.precision != "bf16") fail("--precision must be float or bf16, not '" + a.precision + "'");
  if (a.exchange_precision != "full" && a.exchange_precision != "bf16") {
    fail("--exchange-precision must be full or bf16, not '" + a.exchange_precision + "'");
  }
  if (a.stage_precision != "full" && a.stage_precision != "bf16") {
    fail("--stage-precision must be full or bf16, not '" + a.stage_precision + "'");
  }
  if (a.data.empty()) a.data = a.model == "mlp" || a.model == "cnn" ? "fashion-mnist" : "synthetic";
  if (a.data != "fashion-mnist" && a.data != "synthetic" && a.data != "random") {
    fail("--data must be fashion-mnist, synthetic or random, not '" + a.data + "'");
  }
  if (a.command != "calibrate" && a.command != "load" && (a.ranks == 0 || a.batch == 0)) fail(a.command + " needs --ranks and --batch");
  if ((a.command == "predict" || a.command == "partition") && (a.stages == 0 || a.micro_batches == 0)) {
    fail(a.command + " needs --stages and --micro-batches");
  }
  if (a.profile.empty()) {
    const char* env = std::getenv("HPF_ORACLE_PROFILE");
    a.profile = env && *env ? env : HPF_ORACLE_DEFAULT_PROFILE;
  }
  return a;
}

std::string json_of(const Prediction& p, const std::string& model) {
  std::ostringstream o;
  o.precision(9);
  o << "{\"model\": \"" << model << "\", \"ranks\": " << p.plan.ranks() << ", \"stages\": " << p.plan.stages
    << ", \"replicas\": " << p.plan.replicas << ", \"batch\": " << p.plan.batch << ", \"micro_batches\": " << p.plan.micro_batches
    << ", \"schedule\": \"" << hpf::to_string(p.plan.schedule) << "\", \"split\": \"" << p.plan.split.describe()
    << "\", \"group\": " << p.plan.split.ranks() << ", \"bounds\": [";
  const auto list = [&](const auto& values, const auto& of) {  // a JSON array's items
    for (std::size_t i = 0; i < values.size(); ++i) o << (i ? ", " : "") << of(values[i]);
  };
  const auto same = [](std::size_t v) { return v; };
  list(p.plan.bounds, same);
  o << "], \"time_s\": " << p.time_s << ", \"compute_s\": " << p.compute_s << ", \"bubble_s\": " << p.bubble_s
    << ", \"transfer_s\": " << p.transfer_s << ", \"reduction_s\": " << p.reduction_s
    << ", \"other_s\": " << p.other_s
    << ", \"stage_memory_bytes\": [";
  list(p.stage_memory, [](const MemoryBreakdown& m) { return m.total(); });
  o << "], \"peak_memory_bytes\": " << p.peak_memory_bytes << ", \"stage_resident_bytes\": [";
  list(p.stage_resident_bytes, same);
  o << "], \"peak_resident_bytes\": " << p.peak_resident_bytes << ", \"fits\": " << (p.fits ? "true" : "false")
    << ", \"reason\": \"" << p.reason << "\"}";
  return o.str();
}

void print_table(const std::vector<Prediction>& ranked, const Args& a, const MachineProfile& profile, double query_us) {
  std::printf("hpf-oracle: %s on %zu ranks, global batch %zu, profile '%s'", a.model.c_str(), a.ranks, a.batch,
              profile.label.c_str());
  if (profile.cluster) {
    const std::size_t per_node = profile.cluster->ranks_per_node;
    std::printf(" (cluster: %zu nodes x %zu ranks)", (a.ranks + per_node - 1) / per_node, per_node);
  }
  if (a.recompute) std::printf(", Repeat blocks re-materialized");
  if (a.precision != "float") std::printf(", %s products", a.precision.c_str());
  if (a.exchange_precision != "full") std::printf(", gradients exchanged as %s", a.exchange_precision.c_str());
  if (a.stage_precision != "full") std::printf(", stages exchange %s", a.stage_precision.c_str());
  std::printf("\n%-4s %-44s %10s %9s %9s %9s %9s %9s %11s  %s\n", "#", "strategy", "step ms", "compute", "bubble",
              "transfer", "reduce", "other", "peak MiB", "why");
  const std::size_t shown = a.top ? std::min(a.top, ranked.size()) : ranked.size();
  for (std::size_t i = 0; i < shown; ++i) {
    const Prediction& p = ranked[i];
    std::printf("%-4zu %-44s %10.2f %9.2f %9.2f %9.2f %9.2f %9.2f %11.1f  %s\n", i + 1, p.plan.describe().c_str(),
                p.time_s * 1e3, p.compute_s * 1e3, p.bubble_s * 1e3, p.transfer_s * 1e3, p.reduction_s * 1e3,
                p.other_s * 1e3, static_cast<double>(p.peak_memory_bytes) / (1 << 20), p.reason.c_str());
  }
  if (shown < ranked.size()) std::printf("(%zu more: --top to see them)\n", ranked.size() - shown);
  std::printf("recommended: %s, %.2f ms per step (%.0f samples/s); %zu strategies ranked in %.0f us\n",
              ranked.front().plan.describe().c_str(), ranked.front().time_s * 1e3,
              static_cast<double>(a.batch) / ranked.front().time_s, ranked.size(), query_us);
}

/// partition's answer: the best cuts found against Balanced<S>'s, as text or JSON.
int print_partition(const CutSearch& search, const Args& a) {
  const Prediction &best = search.best, &balanced = search.balanced;
  if (a.json) {
    std::printf("{\"cuts\": \"%s\", \"predictions\": %zu, \"best\": %s, \"balanced\": %s}\n",
                cuts_type(best.plan.bounds).c_str(), search.predictions, json_of(best, a.model).c_str(),
                json_of(balanced, a.model).c_str());
    return 0;
  }
  std::printf("hpf-oracle: cuts of %s: %s\n", a.model.c_str(), best.plan.describe().c_str());
  const auto row = [](const char* name, const Prediction& p) {
    std::printf("  %-14s %-26s %10.2f ms per step, compute %8.2f ms, imbalance %.2f, peak %.1f MiB%s\n", name,
                cuts_type(p.plan.bounds).c_str(), p.time_s * 1e3, p.compute_s * 1e3, p.imbalance,
                static_cast<double>(p.peak_memory_bytes) / (1 << 20), p.fits ? "" : " (over the budget)");
  };
  row("Balanced<S>", balanced);
  row("best", best);
  std::printf("use: hpf::Pipeline<%s> (%.1f %% faster than Balanced<%zu>; %zu plans predicted)\n",
              cuts_type(best.plan.bounds).c_str(), 100 * (balanced.time_s - best.time_s) / balanced.time_s,
              best.plan.stages, search.predictions);
  std::printf("or let the oracle choose when training starts: hpf::AutoAmong<hpf::Balanced<%zu>, %s>\n", best.plan.stages,
              cuts_type(best.plan.bounds).c_str());
  return 0;
}

/// The samples calibrate and load run the model on (--data); none for `random`.
template <class Model>
std::optional<hpf::data::Dataset> samples(const Args& a, std::size_t count) {
  using In = hpf::whole_shape_t<typename Model::input_shape>;  // a slab rank's model reads whole samples
  if (a.data == "fashion-mnist") return hpf::data::load_fashion_mnist().train;
  if (a.data == "synthetic") {
    if constexpr (hpf::model_label_size_v<Model> > 1) {  // a language model: bytes as tokens
      std::vector<std::uint8_t> text(count * In::size + 1);
      for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>(i * 2654435761u >> 24);
      return hpf::data::text_windows(text, In::size, {});
    } else {
      return hpf::data::synthetic_dataset(count, hpf::data::SampleDims{In::channels, In::height, In::width, In::depth}, 10, 0);
    }
  }
  return std::nullopt;
}

/// Prints the threads the layers are timed with: Kokkos' host space, and the pools of the libraries
/// hpf calls outside Kokkos (OpenBLAS; oneDNN through OpenMP), which training sizes to it ("-":
/// the library is not loaded).
void print_threads() {
  const int blas = hpf::system::blas_threads();
  const auto openmp = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  const std::string kernels = hpf::system::blas_kernels();
  std::printf("  threads: Kokkos %s %d, OpenBLAS %s (%s kernels), OpenMP %s\n", Kokkos::DefaultHostExecutionSpace::name(),
              Kokkos::DefaultHostExecutionSpace().concurrency(), blas < 0 ? "-" : std::to_string(blas).c_str(),
              kernels.empty() ? "-" : kernels.c_str(), openmp ? std::to_string(openmp()).c_str() : "-");
}

/// File descriptor on which a load process tells the calibration that it computes.
constexpr int load_ready_fd = 3;

/// `hpf-oracle load`: trains the model's forward and backward on 32 samples until stopped, the
/// work other cores do while calibrate measures a busy host; writes a byte to --ready-fd after its
/// first pass.
template <class Model>
[[noreturn]] void load_forever(const Args& a) {
  // Dies with the calibration that started it, also one killed while this process is paused.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1) std::_Exit(1);
  hpf::Network<Model, float, Kokkos::DefaultExecutionSpace> net(hpf::NetworkOptions{.matmul_precision = matmul_precision(a)});
  auto tape = net.make_tape(32);
  const std::optional<hpf::data::Dataset> data = samples<Model>(a, 32);
  hpf::oracle::detail::load_calibration_input(net, tape, data ? &*data : nullptr, 32);
  if constexpr (decltype(net)::classifier) Kokkos::deep_copy(tape.labels, 1);
  for (bool first = true;; first = false) {
    net.forward(tape, 32, hpf::Mode::train);
    net.backward(tape, 1.0f / 32);
    Kokkos::fence();
    const int ready = static_cast<int>(a.ready_fd);
    if (first && ready > 0 && write(ready, "r", 1) == 1) close(ready);
  }
}

/// Starts `count` copies of this program running `load` for the model and returns once each has
/// computed a pass; pause() and resume() stop and continue them (SIGSTOP, SIGCONT), so that
/// calibration times passes alone and beside them in turn; kills them on destruction.
class Load {
 public:
  Load(std::size_t count, const Args& a) {
    int ready[2];
    if (pipe(ready) != 0) throw std::runtime_error("cannot make a pipe for the load processes of the busy calibration");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, ready[0]);  // before the dup2: it may be load_ready_fd
    posix_spawn_file_actions_adddup2(&actions, ready[1], load_ready_fd);
    if (ready[1] != load_ready_fd) posix_spawn_file_actions_addclose(&actions, ready[1]);
    const std::string self = "/proc/self/exe";
    bool spawned = true;
    for (std::size_t i = 0; i < count && spawned; ++i) {
      const std::string fd = std::to_string(load_ready_fd);
      const char* args[] = {"hpf-oracle", "load", "--model", a.model.c_str(), "--data", a.data.c_str(),
                            "--precision", a.precision.c_str(), "--ready-fd", fd.c_str(), nullptr};
      pid_t pid = 0;
      spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, const_cast<char* const*>(args), environ) == 0;
      if (spawned) pids_.push_back(pid);
    }
    posix_spawn_file_actions_destroy(&actions);
    close(ready[1]);
    std::size_t started = 0;
    for (char byte = 0; spawned && started < count; ++started) {
      pollfd wait_for{ready[0], POLLIN, 0};
      if (poll(&wait_for, 1, 120'000) != 1 || read(ready[0], &byte, 1) != 1) break;
    }
    close(ready[0]);
    if (started < count) {
      stop();
      throw std::runtime_error("the load processes of the busy calibration did not start ('hpf-oracle load --model " +
                               a.model + " --data " + a.data + "')");
    }
  }
  ~Load() { stop(); }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void pause() const { signal_all(SIGSTOP); }
  void resume() const { signal_all(SIGCONT); }

 private:
  void signal_all(int signal) const {
    for (const pid_t pid : pids_) {
      if (kill(pid, signal) != 0) throw std::runtime_error("a load process of the busy calibration is gone (pid " + std::to_string(pid) + ")");
    }
  }
  void stop() {
    for (const pid_t pid : pids_) kill(pid, SIGKILL);
    for (const pid_t pid : pids_) waitpid(pid, nullptr, 0);
    pids_.clear();
  }
  std::vector<pid_t> pids_;
};

/// `hpf-oracle calibrate`: times Model's layers (a slab rank's under --split spatial:G, one
/// member's part under filter:G or channel:G) into the profile.
template <class Model>
void calibrate_model(const Args& a) {
  MachineProfile profile = load_profile(a.profile);
  CalibrationOptions o;
  o.matmul_precision = matmul_precision(a);
  if (a.split.divides_layers()) o.split = a.split;
  if (!a.batches.empty()) o.batches = a.batches;
  const std::optional<hpf::data::Dataset> data = samples<Model>(a, o.batches.back());
  o.samples = data ? &*data : nullptr;
  print_threads();
  const auto start = std::chrono::steady_clock::now();
  // Every other core busy with the same model in turn with idle ones: the busy rates.
  const auto threads = static_cast<std::size_t>(std::max(Kokkos::DefaultExecutionSpace().concurrency(), 1));
  const std::size_t slots = profile.cores / threads;
  std::optional<Load> load;
  if (slots > 1) {
    std::printf("  alone, and in turn with %zu more process%s running the model (a busy host)\n", slots - 1,
                slots == 2 ? "" : "es");
    load.emplace(slots - 1, a);  // the whole model: any model keeps a core busy
    o.set_host_load = [&load](HostLoad l) { l == HostLoad::busy ? load->resume() : load->pause(); };
  }
  calibrate<Model>(profile, o, [](const std::string& key, const UnitTiming& t) {
    std::printf("  %-70s fwd %8.3f ms  bwd %8.3f ms at %g samples", key.c_str(), t.forward_s.back() * 1e3,
                t.backward_s.back() * 1e3, t.batch.back());
    if (!t.busy_forward_s.empty())
      std::printf(" (busy %8.3f, %8.3f ms)", t.busy_forward_s.back() * 1e3, t.busy_backward_s.back() * 1e3);
    if (!t.in_flight_bytes.empty())
      std::printf(" (x %.2f, %.2f with %.0f MiB of tapes in flight)", t.in_flight_forward_ratio.back(),
                  t.in_flight_backward_ratio.back(), t.in_flight_bytes.back() / (1 << 20));
    std::printf("\n");
  });
  load.reset();
  std::printf("  optimizer %.3f ns per parameter, batch loading %.3f ns per element, exchange sums %.3f ns per element\n",
              profile.optimizer_s_per_parameter * 1e9, profile.load_s_per_element * 1e9,
              profile.exchange_sum_s_per_element * 1e9);
  save_compute(profile, a.profile);
  const std::string slabs = !a.split.splits()         ? ""
                            : a.split.divides_layers() ? " (one member's part of a " + a.split.describe() + ")"
                                                       : " (one rank's slabs of " + a.split.describe() + ")";
  std::printf("hpf-oracle: calibrated %s%s on %s samples in %.1f s into %s\n", a.model.c_str(), slabs.c_str(),
              a.data.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              a.profile.c_str());
}

/// Calls f.template operator()<M>() with the model one rank runs under --split: one slab rank's,
/// SpatialSplit<Model, G, 1>, under spatial:G (compiled for the G in Groups only), else Model.
template <class Model, std::size_t... Groups, class F>
void with_rank_model(const Args& a, F&& f) {
  if (a.split.kind != hpf::SplitKind::spatial || !a.split.splits()) return f.template operator()<Model>();
  const bool compiled = ((a.split.group == Groups && (f.template operator()<hpf::SpatialSplit<Model, Groups, 1>>(), true)) || ...);
  if (!compiled) {
    std::string groups;
    ((groups += (groups.empty() ? "" : " or ") + std::to_string(Groups)), ...);
    fail("--split spatial:" + std::to_string(a.split.group) + ": hpf-oracle splits the samples of " + a.model +
         (groups.empty() ? std::string(" into no slabs") : " into G = " + groups + " slabs only") +
         " (in a program of your own: calibrate<SpatialSplit<Model, G, 1>> and view_of of it)");
  }
}

/// With --layer-splits: one slab rank's view per G in Groups whose slabs the profile has calibrated
/// (those it has not are named on stderr, with the command that calibrates them).
template <class Model, std::size_t... Groups>
std::vector<ModelView> spatial_views(const Args& a, const MachineProfile& profile) {
  std::vector<ModelView> views;
  [[maybe_unused]] const auto add = [&](auto group) {  // unused where no G is compiled in
    ModelView v = view_of<hpf::SpatialSplit<Model, decltype(group)::value, 1>>(a.model, 1, matmul_precision(a));
    const bool calibrated = std::all_of(v.layer_keys.begin(), v.layer_keys.end(),
                                        [&](const std::string& key) { return profile.unit(key) != nullptr; });
    if (calibrated) {
      views.push_back(std::move(v));
    } else {
      std::fprintf(stderr, "hpf-oracle: spatial:%zu not ranked: the profile has no calibration of its slabs "
                   "(hpf-oracle calibrate --model %s --split spatial:%zu)\n", v.spatial_group, a.model.c_str(), v.spatial_group);
    }
  };
  if (a.layer_splits) (add(std::integral_constant<std::size_t, Groups>{}), ...);
  return views;
}

/// The micro-batch a rank of the asked run computes, the canary's largest: predict's and partition's
/// plan, or each rank's share of the batch where the command ranks many plans.
double canary_batch(const Args& a) {
  const std::size_t replicas = std::max<std::size_t>(1, a.ranks / (std::max<std::size_t>(1, a.stages) * a.split.ranks()));
  return std::max(1.0, static_cast<double>(a.batch) / static_cast<double>(replicas * std::max<std::size_t>(1, a.micro_batches)));
}

/// One model's commands; SpatialGroups: the G its samples split into here (--split spatial:G).
template <class Model, std::size_t... SpatialGroups>
int run(const Args& a) {
  if (a.command == "load") load_forever<Model>(a);
  if (a.command == "calibrate") {
    with_rank_model<Model, SpatialGroups...>(a, [&]<class RankModel>() { calibrate_model<RankModel>(a); });
    return 0;
  }
  MachineProfile profile = load_profile(a.profile);
  for (const AblatedTerm* term : a.without) term->drop(profile);
  if (a.canary_seconds > 0) {
    const std::optional<hpf::data::Dataset> data = samples<Model>(a, 128);
    const Canary c = canary<Model>(profile, a.canary_seconds, matmul_precision(a), data ? &*data : nullptr, canary_batch(a));
    if (c.batch == 0) fail("--canary: the profile has no calibration of " + a.model);
    rescale_compute(profile, c.ratio);
    // On stderr: --json's stdout stays one document.
    std::fprintf(stderr, "hpf-oracle: canary: %s's layers at %g samples took %.3f x their calibrated time (%zu passes, "
                 "%.1f s); compute rescaled by it\n", a.model.c_str(), c.batch, c.ratio, c.repeats, c.seconds);
  }
  if (a.compute_scale != 1) rescale_compute(profile, a.compute_scale);
  if (!a.cluster.empty()) profile = load_cluster(a.cluster, profile);
  ModelView model;  // one slab rank's under --split spatial:G
  with_rank_model<Model, SpatialGroups...>(a, [&]<class RankModel>() { model = view_of<RankModel>(a.model, 1, matmul_precision(a)); });
  if (a.command == "predict" || a.command == "partition") {
    const std::size_t group = a.split.ranks();
    if (a.ranks % (a.stages * group)) {
      fail(group == 1 ? "--stages must divide --ranks" : "--stages times --split's group must divide --ranks");
    }
    if (a.stages > model.cut_places) fail("the model has only " + std::to_string(model.cut_places) + " places to cut");
    const std::size_t replicas = a.ranks / (a.stages * group);
    if (a.batch % replicas || a.micro_batches > a.batch / replicas) fail("the batch does not split into the micro-batches");
    std::vector<std::size_t> bounds = model.balanced_bounds(a.stages);
    if (!a.cuts.empty()) {
      if (a.cuts.size() + 1 != a.stages) fail("--cuts needs stages - 1 positions");
      if (a.cuts.back() >= model.leaves) fail("--cuts must lie below the model's " + std::to_string(model.leaves) + " leaves");
      std::copy(a.cuts.begin(), a.cuts.end(), bounds.begin() + 1);
    }
    const Plan plan{.stages = a.stages, .replicas = replicas, .batch = a.batch, .micro_batches = a.micro_batches,
                    .schedule = a.schedule == "gpipe" ? hpf::Schedule::gpipe : hpf::Schedule::one_f_one_b,
                    .bounds = bounds, .exchange_precision = exchange_precision(a),
                    .stage_precision = stage_precision(a), .recompute = a.recompute, .split = a.split,
                    .process_bytes = mib_bytes(a.process_mib), .data_bytes = mib_bytes(a.data_mib)};
    if (a.command == "partition") {
      return print_partition(search_cuts(model, plan, profile, a.memory_budget_mib * (1 << 20)), a);
    }
    const Prediction p = a.closed_form ? closed_form(model, plan, profile, a.memory_budget_mib * (1 << 20))
                                       : predict(model, plan, profile, a.memory_budget_mib * (1 << 20));
    if (a.json) {
      std::printf("%s\n", json_of(p, a.model).c_str());
    } else {
      print_table({p}, a, profile, 0);
      std::printf("per-rank memory of each stage, MiB: %12s %10s %8s %10s %12s %9s %8s %10s %8s %8s %8s %8s %10s\n",
                  "parameters", "gradients", "buffers", "optimizer", "activations", "boundary", "buckets", "workspace",
                  "scratch", "runtime", "split", "total", "unwritten");
      constexpr double mib = 1 << 20;
      for (std::size_t s = 0; s < p.stage_memory.size(); ++s) {
        const MemoryBreakdown& m = p.stage_memory[s];
        std::printf("  stage %-28zu %12.2f %10.2f %8.2f %10.2f %12.2f %9.2f %8.2f %10.2f %8.2f %8.2f %8.2f %8.2f %10.2f\n", s,
                    m.parameters / mib, m.gradients / mib, m.buffers / mib, m.optimizer_state / mib, m.activations / mib,
                    m.boundary_gradients / mib, m.gradient_buckets / mib, m.workspace / mib, m.scratch / mib,
                    m.runtime / mib, m.split_buffers / mib, m.total() / mib, m.unwritten / mib);
      }
      if (a.process_mib > 0 || a.data_mib > 0) {
        std::printf("peak resident set of each stage's ranks (the process, its data, the above less unwritten), MiB:");
        for (const std::size_t bytes : p.stage_resident_bytes) std::printf(" %.2f", static_cast<double>(bytes) / mib);
        std::printf("\n");
      }
    }
    return 0;
  }
  SearchOptions o;
  o.memory_budget_bytes = a.memory_budget_mib * (1 << 20);
  o.max_stages = a.max_stages;
  o.recompute = a.recompute;
  o.exchange_precision = exchange_precision(a);
  o.stage_precision = stage_precision(a);
  o.layer_splits = a.layer_splits;
  o.spatial_views = spatial_views<Model, SpatialGroups...>(a, profile);
  o.search_cuts = a.search_cuts;
  o.threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  o.process_bytes = mib_bytes(a.process_mib);
  o.data_bytes = mib_bytes(a.data_mib);
  const auto timed_query = [&](std::vector<Prediction>& into) {
    const auto start = std::chrono::steady_clock::now();
    into = rank_strategies(model, a.ranks, a.batch, profile, o);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<Prediction> ranked;
  const double query_us = timed_query(ranked);
  std::vector<double> warm_us;
  for (std::vector<Prediction> again; warm_us.size() + 1 < a.repeat;) warm_us.push_back(timed_query(again));
  std::sort(warm_us.begin(), warm_us.end());
  if (ranked.empty()) {
    std::fprintf(stderr, "hpf-oracle: no strategy splits a batch of %zu over %zu ranks\n", a.batch, a.ranks);
    return 2;
  }
  if (a.json) {
    std::printf("{\"query_us\": %.1f, ", query_us);
    if (!warm_us.empty()) std::printf("\"warm_query_us\": %.1f, ", warm_us[warm_us.size() / 2]);
    std::printf("\"recommended\": 0, \"strategies\": [\n");
    for (std::size_t i = 0; i < ranked.size(); ++i) std::printf("  %s%s\n", json_of(ranked[i], a.model).c_str(), i + 1 < ranked.size() ? "," : "");
    std::printf("]}\n");
  } else {
    print_table(ranked, a, profile, query_us);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const std::map<std::string, int (*)(const Args&)> models{
      {"mlp", &run<hpf::zoo::Mlp>},           {"mlp-pairs", &run<hpf::zoo::MlpPairs>}, {"cnn", &run<hpf::zoo::Cnn>},
      {"resnet20", &run<hpf::zoo::ResNet20, 2, 4>}, {"resnet56", &run<hpf::zoo::ResNet56>},
      {"resnet164", &run<hpf::zoo::PreActResNet164>}, {"resnet1001", &run<hpf::zoo::PreActResNet1001>},
      {"gpt", &run<hpf::zoo::Gpt<4, 64, 4, 64, hpf::data::byte_vocabulary>>}, {"cosmoflow", &run<hpf::zoo::CosmoFlow<32>, 2, 4>}};
  const auto model = models.find(a.model);
  if (model == models.end()) fail("unknown model '" + a.model + "'");
  // Only calibration and the canary run kernels; rank and predict stay free of Kokkos' start-up
  // messages otherwise, which some backends print on stdout (OpenMP's OMP_PROC_BIND warning
  // would corrupt --json).
  std::optional<Kokkos::ScopeGuard> kokkos;
  if (a.command == "calibrate" || a.command == "load" || a.canary_seconds > 0) {
    // Time the layers as training runs them (hpf::comm::Environment does the same): OpenBLAS'
    // widest kernels (may re-execute this program), and OpenBLAS' and oneDNN's threads sized to
    // Kokkos' host space. Without it oneDNN took every core: on 2 cores, the busy calibration's
    // processes spun against each other and ResNet-20 took 453 s instead of 8 s.
    const auto runtime = hpf::system::RuntimeOptions::from_environment();
    hpf::system::configure_before_start(runtime, argv);
    kokkos.emplace(argc, argv);
    hpf::system::configure_after_start(runtime, Kokkos::DefaultHostExecutionSpace().concurrency());
  } else {
    // No BLAS call follows: OpenBLAS' idle pool would spin on a core the query's threads need
    // (ResNet-56's rank at 64 ranks took about half as long again beside it).
    hpf::system::stop_blas_threads();
  }
  try {
    return model->second(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpf-oracle: %s\n", e.what());
    return 1;
  }
}
