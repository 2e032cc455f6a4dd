#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Mixed precision, in one run: hpf's bf16 products (NetworkOptions::matmul_precision, what
hpf::Mixed<hpf::bf16> sets) against hpf in float, and against PyTorch 1.13 in float and under
torch.autocast("cpu", dtype=torch.bfloat16), on one thread and on two cores: training throughput,
the ISA oneDNN ran, and peak memory. Prints the tables and writes the `precision` section of
benchmarks/RESULTS.md.

  cmake --build build --target hpf_bench_train_throughput hpf_bench_parallel_throughput
  cmake -S . -B build-openmp -G Ninja -DKokkos_ROOT=$(scripts/kokkos/build.sh openmp --print-prefix)
  cmake --build build-openmp --target hpf_bench_train_throughput
  /usr/bin/python3 benchmarks/compare_precision.py                      # everything (~15 min)
  /usr/bin/python3 benchmarks/compare_precision.py --models cnn --rounds 2 --no-write
  /usr/bin/python3 benchmarks/compare_precision.py --label avx512-bf16   # another kind of CPU, beside it

hpf runs three ways on two cores: its default build (Kokkos Serial) as one rank on two threads,
where oneDNN's and OpenBLAS' kernels use both (OMP_NUM_THREADS=2) and hpf's own elementwise kernels
one; its Kokkos OpenMP build as one rank on two threads, where every kernel uses both (with
OpenBLAS' OpenMP build, one pool of threads); and its default build as two ranks of one thread,
data parallel with half the batch each (as compare_two_cores.py).
PyTorch runs 2 intra-op threads. Every configuration runs in its own process, alternately with
the others, at least --rounds times; each figure is its best run (noise only slows a run down).
Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

# compare_two_cores.py's models and settings: name: (description, batch, steps per block, warm-up steps,
# blocks); the batch is hpf_bench_train_throughput's default, given to the 2-rank runs as their global batch.
MODELS = {
    "mlp": ("MLP 784-512-512-10, batch 128, Fashion-MNIST", 128, 100, 20, 5),
    "cnn": ("CNN conv32-pool-conv64-pool-fc128-fc10, batch 64, Fashion-MNIST", 64, 20, 5, 5),
    "resnet20": ("ResNet-20 (option A), batch 64, synthetic 3x32x32", 64, 5, 2, 3),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), batch 32, Adam", 32, 10, 2, 3),
    "cosmoflow": ("CosmoFlow<32>: 3-D CNN on 4 x 32^3 volumes, 4 targets, batch 8, SGD", 8, 3, 1, 3),
}
SECTION = "precision"
THREADS = (1, 2)  # hpf_bench_train_throughput and PyTorch; hpf also with Kokkos OpenMP and as 2 ranks x 1 thread
# hpf's layouts on two cores, as the configurations name them: Kokkos Serial on 2 library threads, Kokkos OpenMP
# on 2 threads, 2 ranks of one thread.
TWO_CORE_LAYOUTS = ("2", "2omp", "2x1")
# Thread placement of the Kokkos OpenMP process (docs/process-setup.md, "Placing threads"), as compare_two_cores.py.
PLACEMENT = h.THREAD_PLACEMENT
PRECISIONS = ("float", "bf16")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_train_throughput"),
                   help="the hpf_bench_train_throughput executable (default: build/benchmarks/...)")
    p.add_argument("--hpf-openmp", default=os.path.join(ROOT, "build-openmp", "benchmarks", "hpf_bench_train_throughput"),
                   help="hpf_bench_train_throughput built with Kokkos OpenMP, for 1 rank x 2 threads (default: "
                        "build-openmp/benchmarks/...)")
    p.add_argument("--hpf-parallel", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_parallel_throughput"),
                   help="the hpf_bench_parallel_throughput executable of the 2-rank runs (default: build/benchmarks/...)")
    h.add_mpiexec_options(p, h.ONE_RANK_PER_CORE)
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--setting", default="skylakex", choices=sorted(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting (default skylakex: float GEMMs on AVX-512 as oneDNN's bf16 "
                        "kernels are, and what hpf picks itself when the variable is unset)")
    p.add_argument("--label", default="",
                   help="write the section `precision-LABEL` instead of `precision` (a CPU of another kind, whose "
                        "figures stand beside the first's: each label's block needs its entry in provenance.BLOCK_DATA)")
    h.add_alternation_options(p, max_rounds=4)
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    h.check_models(p, args.models, MODELS)
    h.check_executables(p, (args.hpf, args.hpf_openmp, args.hpf_parallel), args.mpiexec)
    return args


def configurations(args, model):
    """[(name, command, environment overrides)] for one model: each framework, precision and thread count,
    hpf's Kokkos OpenMP build on 2 threads ("hpf PRECISION 2omp") and 2 ranks of one thread ("hpf PRECISION 2x1")."""
    _, batch, steps, warmup, repeats = MODELS[model]
    common = ["--model", model, "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)]
    found = []
    for threads in THREADS:
        env = {v: str(threads) for v in h.THREAD_VARIABLES}
        for precision in PRECISIONS:
            found.append((f"hpf {precision} {threads}", [args.hpf] + common + ["--precision", precision], env))
            found.append((f"pytorch {precision} {threads}", [args.python, os.path.join(HERE, "pytorch_train.py")] + common
                          + ["--precision", precision, "--threads", str(threads)], env))
    for precision in PRECISIONS:
        found.append((f"hpf {precision} 2omp", [args.hpf_openmp] + common + ["--precision", precision],
                      {**{v: "2" for v in h.THREAD_VARIABLES}, **PLACEMENT}))
    for precision in PRECISIONS:
        found.append((f"hpf {precision} 2x1", [args.mpiexec] + args.mpiexec_flags.split()
                      + ["-n", "2", args.hpf_parallel, "--batch", str(batch)] + common + ["--precision", precision], {}))
    return found


def measure(args):
    """{model: {configuration name: [Run]}}."""
    coretype = h.BLAS_SETTINGS[args.setting][0]
    groups = {}
    for model in args.models:
        jobs = []
        for name, cmd, extra in configurations(args, model):
            env, overrides = h.bench_env(coretype, 1, extra)
            jobs.append((name, cmd, env, overrides))
        groups[model] = jobs
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def best(runs):
    return h.best(runs)[1]


def rate(runs):
    r = best(runs)
    return r["images_per_s"] if r else None


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def throughput_rows(args, data, threads):
    rows = []
    for model in args.models:
        rates = {f"{fw} {p}": rate(data[model][f"{fw} {p} {threads}"]) for fw in ("hpf", "pytorch") for p in PRECISIONS}
        rows.append([model, h.fmt(rates["hpf float"]), h.fmt(rates["hpf bf16"]),
                     f"**{ratio(rates['hpf bf16'], rates['hpf float'])}**",
                     h.fmt(rates["pytorch float"]), h.fmt(rates["pytorch bf16"]),
                     ratio(rates["pytorch bf16"], rates["pytorch float"]),
                     f"**{ratio(rates['hpf bf16'], rates['pytorch bf16'])}**"])
    return rows


def two_core_rows(args, data):
    """Per model on two cores: hpf's three layouts (TWO_CORE_LAYOUTS) in each precision, and hpf's fastest against
    PyTorch on 2 threads."""
    rows = []
    for model in args.models:
        runs = data[model]
        hpf = {(p, layout): rate(runs[f"hpf {p} {layout}"]) for p in PRECISIONS for layout in TWO_CORE_LAYOUTS}
        fastest = {p: max((v for (q, _), v in hpf.items() if q == p and v), default=None) for p in PRECISIONS}
        torch = {p: rate(runs[f"pytorch {p} 2"]) for p in PRECISIONS}
        rows.append([model] + [h.fmt(hpf[p, layout]) for layout in TWO_CORE_LAYOUTS for p in PRECISIONS]
                    + [f"**{ratio(fastest['bf16'], fastest['float'])}**", h.fmt(torch["float"]), h.fmt(torch["bf16"]),
                       ratio(torch["bf16"], torch["float"]), f"**{ratio(fastest['bf16'], torch['bf16'])}**"])
    return rows


def one_thread_rows(args, data, cell):
    """Per model: cell(best 1-thread result or None) for hpf float, hpf bf16, PyTorch float, PyTorch bf16."""
    return [[model] + [cell(best(data[model][f"{fw} {p} 1"])) for fw in ("hpf", "pytorch") for p in PRECISIONS]
            for model in args.models]


def memory_cell(r):
    return h.fmt(r and r.get("train_peak_rss_mib"), 0)


def loss_cell(r):
    return f"{r['loss_first']:.3f} -> {r['loss_last']:.3f}" if r else "-"


def kernels_line(data, args):
    """Which ISA oneDNN ran for hpf and which convolution kernel PyTorch's oneDNN chose."""
    hpf_isa, torch_conv = set(), set()
    for model in args.models:
        for name, runs in data[model].items():
            r = best(runs)
            if not r:
                continue
            # (hpf_bench_parallel_throughput does not report oneDNN's ISA: its ranks run the same library)
            found, key = (hpf_isa, "onednn_isa") if name.startswith("hpf") else (torch_conv, "onednn_conv")
            if r.get(key) is not None:
                found.add(str(r[key]))
    return (f"oneDNN's ISA in hpf: {', '.join(sorted(hpf_isa))}; PyTorch's oneDNN float convolution kernel: "
            f"{', '.join(sorted(torch_conv))}.")


def cpu_bf16_line():
    """What the CPU offers bf16 products (its /proc/cpuinfo flags): AMX tiles, AVX512-BF16 dot products, or neither."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    amx, avx512_bf16 = "amx_bf16" in flags, "avx512_bf16" in flags
    if amx:
        return "The CPU has AMX (`amx_bf16`): bf16 products run on its tile units."
    if avx512_bf16:
        return ("The CPU has AVX512-BF16 (`avx512_bf16`) and no AMX: bf16 products run as AVX-512 dot products of "
                "bf16 pairs, at most twice float's multiply-adds per instruction.")
    return "The CPU has neither AMX nor AVX512-BF16: oneDNN emulates bf16 products on AVX-512, or hpf in float."


def report(args, data):
    out = ["## Mixed precision: bf16 products against float, hpf and PyTorch"
           + (f" ({args.label})" if args.label else ""), ""]
    out.append(f"Measured by `benchmarks/compare_precision.py` (when, at which commit and where: its provenance line), "
               f"{h.BLAS_SETTINGS[args.setting][1]}. hpf: `--precision bf16` is `NetworkOptions::matmul_precision = "
               "bf16`, what `hpf::Mixed<hpf::bf16>` sets (docs/precision.md); PyTorch 1.13: the forward pass under "
               "`torch.autocast(\"cpu\", dtype=torch.bfloat16)`, the loss in float. Float GEMMs run on OpenBLAS "
               "(both frameworks) with that setting's kernels, float convolutions on oneDNN; bf16 products on "
               "oneDNN's bf16 kernels, whatever OPENBLAS_CORETYPE says. hpf's convolutions over fewer than 4 input "
               "channels (the CNN's and the ResNets' first layers) stay in float under bf16; autocast runs them in "
               "bf16.")
    out.append("")
    out.append(kernels_line(data, args) + " " + cpu_bf16_line())
    out.append("")
    out.append(f"Every configuration ran alternately with the others, at least {args.rounds} times per model (up to "
               f"{args.max_rounds} until it had {args.min_quiet} runs with other processes under "
               f"{100 * args.quiet:.0f} % of the machine); each figure is its best run, within a run the best timed "
               "block after warm-up. Two cores: hpf's default build (Kokkos Serial) as one rank with oneDNN and "
               "OpenBLAS on both threads (its elementwise kernels on one); its Kokkos OpenMP build as one rank with "
               "every kernel on both threads (OpenBLAS' OpenMP build, one pool); and its default build as 2 ranks "
               "of one thread, data parallel with half the batch each (`hpf_bench_parallel_throughput`, one rank "
               "per core); PyTorch with 2 intra-op threads.")
    out.append("")
    headers = ["model", "hpf float", "hpf bf16", "hpf bf16 / float", "PyTorch float", "PyTorch bf16 (autocast)",
               "PyTorch bf16 / float", "hpf bf16 / PyTorch bf16"]
    out.append("images/s, 1 thread:")
    out.append("")
    out.append(h.markdown_table(headers, throughput_rows(args, data, 1), "l" + "r" * (len(headers) - 1)))
    out.append("")
    out.append("images/s, 2 cores (the ratios take hpf's fastest layout in each precision):")
    out.append("")
    headers = ["model", "hpf float, 1 rank x 2 threads", "hpf bf16, 1 rank x 2 threads",
               "hpf float, 1 rank x 2 threads, Kokkos OpenMP", "hpf bf16, 1 rank x 2 threads, Kokkos OpenMP",
               "hpf float, 2 ranks x 1 thread",
               "hpf bf16, 2 ranks x 1 thread", "hpf bf16 / float (2 cores)", "PyTorch float, 2 threads",
               "PyTorch bf16 (autocast), 2 threads", "PyTorch bf16 / float (2 threads)",
               "hpf bf16 / PyTorch bf16 (2 cores)"]
    out.append(h.markdown_table(headers, two_core_rows(args, data), "l" + "r" * (len(headers) - 1)))
    out.append("")
    out.append("Memory: the peak resident set from building the model on (MiB, 1 thread, `train_peak_rss_mib`). hpf "
               "keeps activations in float in both precisions and adds bf16 copies of each product's inputs; autocast "
               "keeps the outputs of convolutions and linear layers in bf16.")
    out.append("")
    out.append(h.markdown_table(["model", "hpf float", "hpf bf16", "PyTorch float", "PyTorch bf16"],
                                one_thread_rows(args, data, memory_cell), "lrrrr"))
    out.append("")
    out.append("Loss of the first step -> of the last timed step (1 thread; the same data per framework and "
               "precision, from the same initial weights within a framework):")
    out.append("")
    out.append(h.markdown_table(["model", "hpf float", "hpf bf16", "PyTorch float", "PyTorch bf16"],
                                one_thread_rows(args, data, loss_cell), "lrrrr"))
    out.append("")
    out.append("- " + "\n- ".join(f"{m}: {MODELS[m][0]}." for m in args.models))
    out.append("")
    out.append(f"Commands (run from the repository root; the runner launches exactly these; {args.models[-1]} shown):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--hpf-openmp", "--hpf-parallel", "--results", "--python",
                                              "--mpiexec"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/compare_precision.py"] + options))
    coretype = h.BLAS_SETTINGS[args.setting][0]
    for _, cmd, extra in configurations(args, args.models[-1]):
        _, overrides = h.bench_env(coretype, 1, extra)
        out.append(h.command_text([h.repo_relative(c, ROOT) for c in cmd], overrides))
    out.append("```")
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    args.provenance = provenance.start("benchmarks/compare_precision.py")
    h.log(f"machine: {h.machine_description()}")
    h.log(f"load now: {100 * h.busy_fraction(1.0):.0f}% of all CPUs busy")
    start = time.monotonic()
    data = measure(args)
    text = report(args, data)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{n}" for m in data for n, runs in data[m].items() if not any(r.ok for r in runs)]
    return provenance.publish(args, f"{SECTION}-{args.label}" if args.label else SECTION, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
