#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strong scaling where data parallelism runs out of samples, in one run: a global batch of 2 on
1 rank, on 2 ranks data parallel (one sample per replica), and on 2 ranks as one replica that
splits every Dense and convolution layer by filters (hpf::Filter<2>) or every sample into 2 slabs
of rows (hpf::Spatial<2>); and where each step's time went, from a traced run of each layout
(`scripts/hpf-trace summary`), with the oracle's prediction of each beside it. Prints the table
and writes the `spatial-splits` section of benchmarks/RESULTS.md.

  cmake --build build --target hpf_bench_parallel_throughput hpf-oracle
  /usr/bin/python3 benchmarks/compare_spatial.py --calibrate  # ~12 min
  /usr/bin/python3 benchmarks/compare_spatial.py --models resnet20 --rounds 1 --no-write

Every configuration runs in its own job, alternately with the others, at least --rounds times;
each figure is its best run (noise only slows a run down). The oracle predicts from --profile, or
with --calibrate from a copy calibrated first (the models, and one slab rank's layers of
spatial:2), before any measurement. Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

HPF_TRACE = os.path.join(ROOT, "scripts", "hpf-trace")
# name: (description, steps per block, warm-up steps, blocks): the models whose samples the
# benchmark splits into slabs (hpf_bench_parallel_throughput --split spatial:G).
MODELS = {
    "resnet20": ("ResNet-20 (option A, zoo::ResNet20), synthetic 3x32x32, SGD", 200, 20, 3),
    "cosmoflow": ("CosmoFlow 3-D CNN (zoo::CosmoFlow<32>), synthetic 4x32x32x32 volumes, 4 regression targets, SGD",
                  60, 6, 3),
}
SECTION = "spatial-splits"
BATCH = 2
# (label, ranks, --split value or None)
LAYOUTS = (("1 rank", 1, None), ("data parallel 2", 2, None), ("filter split 2", 2, "filter:2"),
           ("spatial split 2", 2, "spatial:2"))
TRACED_STEPS = "3-5"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_oracle_binary_options(p, ROOT)
    p.add_argument("--calibrate", action="store_true",
                   help="first calibrate the models and their slabs into a copy of --profile, "
                        "benchmarks/results/spatial_splits_profile.json (before any measurement, as a user would), "
                        "and predict from that copy")
    h.add_mpiexec_options(p)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    h.add_alternation_options(p, max_rounds=4)
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    h.check_models(p, args.models, MODELS)
    h.check_oracle_binaries(p, args)
    return args


def command(args, model, ranks, split):
    _, steps, warmup, repeats = MODELS[model]
    cmd = [args.mpiexec] + args.mpiexec_flags.split() + ["-n", str(ranks), args.hpf, "--model", model,
                                                          "--batch", str(BATCH), "--steps", str(steps),
                                                          "--warmup", str(warmup), "--repeats", str(repeats)]
    return cmd + (["--split", split] if split else [])


def env_of():
    return h.bench_env(h.BLAS_SETTINGS["haswell"][0], 1)


def measure(args):
    """{model: {layout label: [Run]}}."""
    groups = {}
    for model in args.models:
        env, overrides = env_of()
        groups[model] = [(label, command(args, model, ranks, split), env, overrides) for label, ranks, split in LAYOUTS]
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def where_it_went(args):
    """{(model, label): `hpf-trace summary --json`'s overall (per-rank mean, us per step) or None}."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            for label, ranks, split in LAYOUTS:
                path = os.path.join(tmp, f"{model}-{ranks}-{split or 'none'}.json".replace(":", "-"))
                env, overrides = env_of()
                more = {"HPF_TRACE": path, "HPF_TRACE_STEPS": TRACED_STEPS}
                run = h.launch(f"{model} {label} traced", command(args, model, ranks, split), {**env, **more},
                               {**overrides, **more}, max_busy=args.max_busy, max_wait=args.max_wait)
                summary = None
                if run.ok and os.path.exists(path):
                    done = subprocess.run([sys.executable, HPF_TRACE, "summary", path, "--json"], capture_output=True,
                                          text=True)
                    if done.returncode == 0:
                        summary = json.loads(done.stdout)["overall"]
                out[(model, label)] = summary
                h.log(f"traced {model} {label}: exit {run.returncode}")
    return out


def predicted_ms(args, model, ranks, split):
    """The oracle's step time for one layout (None where it has no calibration of it)."""
    p = h.oracle_json(args, "predict", ["--model", model, "--ranks", ranks, "--batch", BATCH, "--stages", 1,
                                        "--micro-batches", 1] + (["--split", split] if split else []))
    return p and 1e3 * p["time_s"]


def report(args, data, traces, predictions):
    out = ["## Spatial splits: samples split into slabs against data parallelism", ""]
    out.append("Measured by `benchmarks/compare_spatial.py` (when, at which commit and where: its provenance line). "
               f"A global batch of {BATCH} trains on 1 rank; on 2 ranks as 2 replicas of one sample each, as far as "
               "data parallelism goes; and on 2 ranks as one replica whose `Dense` and convolution layers split by "
               "filters (`hpf::Filter<2>`) or whose samples split into 2 slabs of rows, of planes for the volumes "
               "(`hpf::Spatial<2>`: each rank convolves half of every sample and exchanges halos, BatchNorm "
               "and the weight gradients add over the pair); `hpf_bench_parallel_throughput --split`. Ranks share "
               "the machine's cores under mpiexec (Kokkos Serial, Open MPI over shared memory). Predicted: "
               "`hpf-oracle predict` from the profile named below, calibrated before the measurements "
               "(`--calibrate`: the models, and one slab rank's layers under `--split spatial:2`); the spatial "
               "split's terms were written before this run and not tuned on it.")
    out.append("")
    out.append(f"Every layout ran alternately with the others, at least {args.rounds} times per model; each figure "
               "is its best run, within a run its best timed block after warm-up. Where the step went: the mean "
               f"over ranks and steps {TRACED_STEPS} of a separate traced run of each layout (`HPF_TRACE`, "
               "`scripts/hpf-trace summary --json`): compute, communication (messages, collectives and the "
               "group's halo exchanges and sums, from post to completion) and the part of it the rank waited "
               "for (exposed).")
    out.append("")
    rows = []
    for model in args.models:
        runs = data[model]
        one = h.best(runs["1 rank"])[1]
        for label, _, _ in LAYOUTS:
            r = h.best(runs[label])[1]
            ms = r and r["ms_per_step"]
            speedup = f"{one['ms_per_step'] / ms:.2f}x" if one and ms else "-"
            t = traces.get((model, label))
            ms_of = (lambda key: h.fmt(t[key] / 1e3, 1)) if t else (lambda key: "-")
            p = predictions.get((model, label))
            rows.append([model, label, h.fmt(ms, 1), speedup, h.fmt(p, 1),
                         f"{100 * min(p, ms) / max(p, ms):.0f} %" if p and ms else "-", ms_of("compute"),
                         ms_of("communication"), ms_of("exposed")])
    out.append(h.markdown_table(["model", "layout", "ms per step", "speed-up over 1 rank", "predicted ms",
                                 "prediction accuracy", "traced: compute ms", "communication ms", "exposed ms"], rows,
                                "llrrrrrrr"))
    out.append("")
    with open(args.profile) as f:
        label = json.load(f).get("label", os.path.basename(args.profile))
    out.append(f"Profile: `{h.repo_relative(args.profile, ROOT)}` ({label}). Accuracy is min/max of predicted and "
               "measured.")
    out.append("")
    out.append("- " + "\n- ".join(f"{m}: {MODELS[m][0]}." for m in args.models))
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these, and each once more "
               f"with `HPF_TRACE=... HPF_TRACE_STEPS={TRACED_STEPS}`; {args.models[-1]} shown):")
    out.append("")
    out.extend(h.commands_block("benchmarks/compare_spatial.py", sys.argv[1:],
                                [command(args, args.models[-1], ranks, split) for _, ranks, split in LAYOUTS], ROOT))
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    record = provenance.start("benchmarks/compare_spatial.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    if args.calibrate:
        h.calibrate_copy(args, args.models, os.path.join(HERE, "results", "spatial_splits_profile.json"),
                         splits=sorted({split for _, _, split in LAYOUTS if split and split.startswith("spatial")}))
    data = measure(args)
    traces = where_it_went(args)
    predictions = {(m, label): predicted_ms(args, m, ranks, split) for m in args.models for label, ranks, split in LAYOUTS}
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{n}" for m in data for n, runs in data[m].items() if not any(r.ok for r in runs)]
    failed += [f"{m}/{n} traced" for (m, n), t in traces.items() if t is None]
    return provenance.publish(args, SECTION, report(args, data, traces, predictions), failed, record)


if __name__ == "__main__":
    sys.exit(main())
