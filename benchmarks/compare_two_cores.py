#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hpf against PyTorch on the whole 2-core machine, in one run: hpf as 1 rank x 2 threads (Kokkos
OpenMP, with OpenBLAS' OpenMP build that hpf's CMake package links there; its kernels on both
threads, or 2 data shards side by side, one per thread) and as 2 ranks x 1 thread
(data parallelism, Kokkos Serial, the same global batch), PyTorch
with 2 threads in its stock setting and in the two settings docs/reference.md found best
(OMP_WAIT_POLICY=PASSIVE for the MLP, one OpenBLAS thread for the CNN), and both frameworks on
1 thread as the baseline of the speed-ups. Prints the tables and writes the `two-cores` section of
benchmarks/RESULTS.md (MLP, CNN, ResNets), or with `--section two-cores-models` the
`two-cores-models` section (the GPT and CosmoFlow of compare_single_process.py's
`single-process-models`, with its batches, optimizers and step counts).

  cmake -S . -B build-openmp -G Ninja -DKokkos_ROOT=$(scripts/kokkos/build.sh openmp --print-prefix)
  cmake --build build-openmp --target hpf_bench_train_throughput
  cmake --build build --target hpf_bench_train_throughput hpf_bench_parallel_throughput
  /usr/bin/python3 benchmarks/compare_two_cores.py                    # everything (~25 min)
  /usr/bin/python3 benchmarks/compare_two_cores.py --models mlp --rounds 2 --no-write
  /usr/bin/python3 benchmarks/compare_two_cores.py --section two-cores-models  # gpt, cosmoflow (~10 min)

Every configuration runs in its own process(es), alternately with the others, at least --rounds
times; each figure is the configuration's best run (noise only slows a run down). Before each run
the runner waits until the machine is quiet (both cores are used). OPENBLAS_CORETYPE is set
explicitly and identically for everything. Nothing here asserts a speed: benchmarks are not tests.
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

# name: (description, global batch, steps per block, warm-up steps, blocks)
MODELS = {
    "mlp": ("MLP 784-512-512-10, batch 128, Fashion-MNIST", 128, 100, 20, 5),
    "cnn": ("CNN conv32-pool-conv64-pool-fc128-fc10, batch 64, Fashion-MNIST", 64, 20, 5, 5),
    "resnet20": ("ResNet-20 (option A), batch 64, synthetic 3x32x32", 64, 5, 2, 3),
    "resnet56": ("ResNet-56 (option A), batch 64, synthetic 3x32x32", 64, 3, 1, 3),
    # compare_single_process.py's settings, so that the 1-thread figures compare with its section.
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), batch 32, Adam", 32, 10, 2, 3),
    "cosmoflow": ("CosmoFlow<32>: 3-D CNN on 4 x 32^3 volumes, 4 targets, batch 8, SGD", 8, 3, 1, 3),
}
# The classic section (MLP, CNN, ResNets) and the one of the transformer and volume models: (title, models).
SECTIONS = {"two-cores": ("Two cores: hpf (1 rank x 2 threads, 2 ranks x 1 thread) vs PyTorch (2 threads)",
                          ["mlp", "cnn", "resnet20", "resnet56"]),
            "two-cores-models": ("Two cores: hpf (1 rank x 2 threads, 2 ranks x 1 thread) vs PyTorch (2 threads) on "
                                 "a GPT and a 3-D CNN", ["gpt", "cosmoflow"])}
SECTION = "two-cores"
# hpf's settings of one rank with 2 threads, and how the ratios name them: the fastest is compared
# with 2 ranks and with PyTorch.
ONE_RANK_TWO_THREADS = {"hpf 1x2": "kernels on 2 threads", "hpf 1x2 passive": "passive wait",
                        "hpf 1x2 shards": "shards side by side"}
# Thread placement of the 2-thread hpf process and of the 2 ranks (docs/process-setup.md, "Placing threads").
PLACEMENT = h.THREAD_PLACEMENT


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_train_binary_options(p, ROOT)
    p.add_argument("--hpf-parallel", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_parallel_throughput"),
                   help="hpf_bench_parallel_throughput, Kokkos Serial (default: build/benchmarks/...)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    h.add_mpiexec_options(p, h.ONE_RANK_PER_CORE)
    p.add_argument("--models", default="",
                   help="comma-separated subset of " + ",".join(MODELS) + " (default: the --section's models)")
    p.add_argument("--section", default=SECTION, choices=sorted(SECTIONS),
                   help="the section of RESULTS.md to write: " + "; ".join(
                       f"{k}: {','.join(v[1])}" for k, v in SECTIONS.items()))
    p.add_argument("--setting", default="haswell", choices=sorted(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting (default haswell, the machines' default)")
    h.add_alternation_options(p, max_rounds=5)
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m] or SECTIONS[args.section][1]
    h.check_models(p, args.models, MODELS)
    # A section holds its own models only: gpt in `two-cores` would replace the classic table.
    others = [m for m in args.models if m not in SECTIONS[args.section][1]]
    if others and not args.no_write:
        p.error(f"--models {','.join(others)} do not belong in section '{args.section}' "
                f"(choose the --section that lists them, or --no-write)")
    h.check_executables(p, (args.hpf_openmp, args.hpf_serial, args.hpf_parallel), args.mpiexec)
    return args


def configurations(args, model):
    """[(name, label, command, environment overrides)] for one model: every configuration measured."""
    _, batch, steps, warmup, repeats = MODELS[model]
    common = ["--model", model, "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)]
    torch_script = [args.python, os.path.join(HERE, "pytorch_train.py")] + common
    parallel = ([args.mpiexec] + args.mpiexec_flags.split() + ["-n", "2", args.hpf_parallel, "--batch", str(batch)]
                + common)
    return [
        ("hpf 1x1", "hpf, 1 thread (Serial)", [args.hpf_serial] + common, {}),
        ("hpf 1x2", "hpf, 1 rank x 2 threads (OpenMP)", [args.hpf_openmp] + common,
         {**threads(2), **PLACEMENT}),
        ("hpf 1x2 passive", "hpf, 1 rank x 2 threads, OMP_WAIT_POLICY=passive", [args.hpf_openmp] + common,
         {**threads(2), **PLACEMENT, "OMP_WAIT_POLICY": "passive"}),
        ("hpf 1x2 shards", "hpf, 1 rank x 2 threads, 2 data shards side by side",
         [args.hpf_openmp] + common + ["--shards", "2", "--side-by-side"], {**threads(2), **PLACEMENT}),
        ("hpf 2x1", "hpf, 2 ranks x 1 thread (data parallel, half the batch per rank)", parallel, {}),
        ("pytorch 1x1", "PyTorch, 1 thread", torch_script, {}),
        ("pytorch 2", "PyTorch, 2 threads (stock)", torch_script + ["--threads", "2"], threads(2)),
        ("pytorch 2 passive", "PyTorch, 2 threads, OMP_WAIT_POLICY=PASSIVE", torch_script + ["--threads", "2"],
         {**threads(2), "OMP_WAIT_POLICY": "PASSIVE"}),
        ("pytorch 2 blas1", "PyTorch, 2 threads, 1 OpenBLAS thread", torch_script + ["--threads", "2", "--blas-threads", "1"],
         {**threads(2), "OPENBLAS_NUM_THREADS": "1"}),
    ]


def threads(n):
    return {v: str(n) for v in h.THREAD_VARIABLES}


def measure(args):
    """{model: {configuration name: [Run]}}."""
    coretype = h.BLAS_SETTINGS[args.setting][0]
    groups = {}
    for model in args.models:
        jobs = []
        for name, _, cmd, extra in configurations(args, model):
            env, overrides = h.bench_env(coretype, 1, extra)
            jobs.append((name, cmd, env, overrides))
        groups[model] = jobs
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def rate(runs):
    _, r = h.best(runs)
    return r["images_per_s"] if r else None


def report(args, data):
    out = ["## " + SECTIONS[args.section][0], ""]
    out.append(f"Measured by `benchmarks/compare_two_cores.py` (when, at which commit and where: its provenance line), "
               f"{h.BLAS_SETTINGS[args.setting][1]}.")
    out.append("")
    out.append(f"Every configuration ran alternately with the others, at least {args.rounds} times per model (up to "
               f"{args.max_rounds} until it had {args.min_quiet} runs with other processes under "
               f"{100 * args.quiet:.0f} % of the machine); each figure is its best run, within a run the best timed "
               "block after warm-up. hpf 2 x 1 trains with the same global batch as everything else (half per "
               "rank, gradients averaged), like one process. Speed-up = against the same framework on 1 thread.")
    out.append("")
    rows, memory_rows = [], []
    for model in args.models:
        runs = data[model]
        names = [c[0] for c in configurations(args, model)]
        rates = {n: rate(runs[n]) for n in names}
        hpf_best = max((n for n in names if n.startswith("hpf ") and n != "hpf 1x1" and rates[n]),
                       key=lambda n: rates[n], default=None)
        torch_best = max((n for n in names if n.startswith("pytorch 2") and rates[n]),
                         key=lambda n: rates[n], default=None)

        def cell(n, base):
            if not rates[n]:
                return "failed"
            bold = n in (hpf_best, torch_best)
            text = f"{rates[n]:,.0f} ({rates[n] / rates[base]:.2f}x)" if rates[base] else f"{rates[n]:,.0f}"
            return f"**{text}**" if bold else text

        ratio = (rates[hpf_best] / rates[torch_best]) if hpf_best and torch_best else None
        one_rank = fastest_one_rank(runs)
        threads_vs_ranks = rates[one_rank] / rates["hpf 2x1"] if one_rank and rates["hpf 2x1"] else None
        threads_vs_torch = rates[one_rank] / rates[torch_best] if one_rank and torch_best else None
        quiet = sum(h.quiet_count(runs[n], args.quiet) for n in names)
        total = sum(len(runs[n]) for n in names)
        rows.append([model] + [cell(n, "hpf 1x1" if n.startswith("hpf") else "pytorch 1x1") for n in names]
                    + [f"{r:.2f}x ({ONE_RANK_TWO_THREADS[one_rank]})" if r else "-" for r in (threads_vs_ranks, threads_vs_torch)]
                    + [f"**{ratio:.2f}x**" if ratio else "-", f"{quiet} / {total}"])
        memory_rows.append(memory_row(model, runs, torch_best))
    headers = (["model"] + [label for _, label, _, _ in configurations(args, args.models[0])]
               + ["fastest hpf 1 x 2 / hpf 2 x 1", "fastest hpf 1 x 2 / best PyTorch (2 threads)",
                  "best hpf / best PyTorch (2 cores)",
                  "quiet runs / runs"])
    out.append("images/s (speed-up over the same framework's 1-thread run); bold: each framework's best 2-core "
               "configuration. The ratios take hpf's fastest setting of 1 rank x 2 threads (named in brackets). "
               "With 2 data shards side by side (`TrainOptions::shards_side_by_side`) one rank trains the batch "
               "as the 2 ranks do, in two halves with BatchNorm statistics per half, each half on one thread with "
               "single-threaded kernels.")
    out.append("")
    out.append(h.markdown_table(headers, rows, "l" + "r" * (len(headers) - 1)))
    out.append("")
    if args.section == "two-cores-models":
        out.append("The models, batches, optimizers and step counts of `single-process-models` "
                   "(`compare_single_process.py`); images/s counts samples: windows of 64 bytes for the GPT, "
                   "volumes for CosmoFlow. The GPT trains on one fixed batch of 32 windows of a repeated phrase, "
                   "Adam lr 3e-3; CosmoFlow on one fixed batch of N(0, 1) volumes and targets, SGD lr 0.01 "
                   "momentum 0.9; neither has BatchNorm, so 2 shards or 2 ranks compute the same step as one "
                   "process. Both run oneDNN's direct 3-D convolutions (hpf's float path on the host, PyTorch's "
                   "mkldnn_convolution).")
        out.append("")
    out.append("Peak resident memory (MiB) of the fastest run of each: one process with 2 threads holds one copy "
               "of the model and the whole batch's activations; 2 ranks hold a copy each (parameters, gradients, "
               "optimizer state, buffers) and half the activations each.")
    out.append("")
    out.append(h.markdown_table(["model", "hpf, 1 rank x 2 threads (fastest setting)", "hpf, 2 ranks x 1 thread (sum of ranks)",
                                 "PyTorch, fastest 2-thread setting"], memory_rows, "lrrr"))
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these; "
               f"{args.models[-1]} shown):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf-openmp", "--hpf-serial", "--hpf-parallel", "--results",
                                              "--python", "--mpiexec"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/compare_two_cores.py"] + options))
    coretype = h.BLAS_SETTINGS[args.setting][0]
    for _, _, cmd, extra in configurations(args, args.models[-1]):
        _, overrides = h.bench_env(coretype, 1, extra)
        out.append(h.command_text([h.repo_relative(c, ROOT) for c in cmd], overrides))
    out.append("```")
    return "\n".join(out) + "\n"


def readme_summary(args, data):
    """docs/process-setup.md's paragraph on ranks x threads (section `two-cores`): 1 x 2 against
    2 x 1 and one thread per model, and the memory one process saves on the largest model."""
    def ratio(model, a, b):
        ra, rb = rate(data[model][a]), rate(data[model][b])
        return f"{ra / rb:.2f}x" if ra and rb else "-"

    parts = []
    for m in args.models:
        one_rank = fastest_one_rank(data[m])
        parts.append(f"{m} {ratio(m, one_rank, 'hpf 2x1')} ({ratio(m, one_rank, 'hpf 1x1')}; "
                     f"{ONE_RANK_TWO_THREADS[one_rank]})" if one_rank else f"{m} -")
    largest = args.models[-1]
    one_rank = fastest_one_rank(data[largest])
    one = h.best(data[largest][one_rank])[1] if one_rank else None
    two = h.best(data[largest]["hpf 2x1"])[1]
    ranks = rank_values(two, "rank_peak_rss_mib") if two else []
    memory = (f" On {largest}, one process holds {h.fmt(one and one.get('peak_rss_mib'), 0)} MiB against "
              f"{sum(ranks):.0f} MiB for two ranks." if one and ranks else "")
    return ("On this 2-core machine (`benchmarks/RESULTS.md`, \"Two cores\", measured by "
            "`benchmarks/compare_two_cores.py`, which writes this paragraph), 1 rank x 2 threads trains "
            "this fast in its fastest setting against 2 ranks x 1 thread (and against one thread): "
            + ", ".join(parts) + "." + memory)


def memory_row(model, runs, torch_best):
    """Peak memory (MiB) of the fastest run of hpf 1 x 2 (its fastest setting), hpf 2 x 1 (per rank and
    summed) and PyTorch's fastest 2-thread setting."""
    one_rank = fastest_one_rank(runs)
    one = h.best(runs[one_rank])[1] if one_rank else None
    two = h.best(runs["hpf 2x1"])[1]
    torch = h.best(runs[torch_best])[1] if torch_best else None
    ranks = rank_values(two, "rank_peak_rss_mib") if two else []
    return [model, h.fmt(one and one.get("peak_rss_mib"), 0),
            f"{sum(ranks):.0f} ({' + '.join(f'{v:.0f}' for v in ranks)})" if ranks else "-",
            h.fmt(torch and torch.get("peak_rss_mib"), 0)]


def fastest_one_rank(runs):
    """The fastest of hpf's 1 rank x 2 threads settings that ran, or None."""
    measured = [n for n in ONE_RANK_TWO_THREADS if rate(runs.get(n, []))]
    return max(measured, key=lambda n: rate(runs[n]), default=None)


def rank_values(result, key):
    """A `rank_*` field (one value per rank, comma-separated) as floats."""
    value = result.get(key)
    if value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(v) for v in str(value).split(",") if v]


def main():
    args = parse_args()
    args.provenance = provenance.start("benchmarks/compare_two_cores.py")
    h.log(f"machine: {h.machine_description()}")
    h.log(f"load now: {100 * h.busy_fraction(1.0):.0f}% of all CPUs busy")
    start = time.monotonic()
    data = measure(args)
    text = report(args, data)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{n}" for m in data for n, runs in data[m].items() if not any(r.ok for r in runs)]
    # A shards run that trained them one after another (no OpenMP threads to put them on) measured
    # something else: the run fails rather than publish it.
    failed += [f"{m}/hpf 1x2 shards (shard_threads={r.results[0].get('shard_threads')}, not 2)" for m in data
               for r in data[m].get("hpf 1x2 shards", []) if r.ok and r.results[0].get("shard_threads") != 2]
    status = provenance.publish(args, args.section, text, failed, args.provenance)
    if args.section != SECTION:
        return status  # docs/process-setup.md's paragraph is on the classic models only
    # docs/process-setup.md's paragraph states the same run's provenance.
    summary = provenance.with_lines(readme_summary(args, data), [provenance.block_record(SECTION)], [args.provenance])
    print(summary)
    if not args.no_write:
        h.replace_section(os.path.join(ROOT, "docs", "process-setup.md"), "two-cores", summary)
        h.log("wrote the 'two-cores' section of docs/process-setup.md")
    return status


if __name__ == "__main__":
    sys.exit(main())
