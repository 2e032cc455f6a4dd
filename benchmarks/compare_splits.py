#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strong scaling past data parallelism, in one run: the same global batch on 1 rank, on 2 ranks
data parallel, and on 2 ranks that split every Dense and convolution layer by filters or by
channels (hpf::Filter<2>, hpf::Channel<2>), with the oracle's prediction of each beside the
measurement.
Prints the table and writes the `layer-splits` section of benchmarks/RESULTS.md.

  cmake --build build --target hpf_bench_parallel_throughput hpf-oracle
  /usr/bin/python3 benchmarks/compare_splits.py --calibrate     # ~10 min
  /usr/bin/python3 benchmarks/compare_splits.py --models mlp --batches 2 --no-write

Every configuration runs in its own job, alternately with the others, at least --rounds times;
each figure is its best run (noise only slows a run down). The oracle predicts from --profile, or
with --calibrate from a copy calibrated first, before any measurement. Nothing here asserts a
speed: benchmarks are not tests.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

# name: (description, steps per block at a batch of 64 or more, warm-up steps, blocks)
MODELS = {
    "mlp": ("MLP 784-512-512-10 (zoo::Mlp), Fashion-MNIST, SGD", 100, 20, 3),
    "mlp-pairs": ("the same MLP, its hidden layers a DensePair (zoo::MlpPairs): Megatron's column- and row-parallel pair "
                  "under a split", 100, 20, 3),
    "cnn": ("CNN conv32-pool-conv64-pool-fc128-fc10 (zoo::Cnn), Fashion-MNIST, SGD", 20, 5, 3),
    "resnet20": ("ResNet-20 (option A, zoo::ResNet20), synthetic 3x32x32, SGD", 5, 2, 3),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), Adam", 10, 2, 3),
}
SECTION = "layer-splits"
# (label, ranks, --split value or None)
LAYOUTS = (("1 rank", 1, None), ("data parallel 2", 2, None), ("filter split 2", 2, "filter:2"),
           ("channel split 2", 2, "channel:2"))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_oracle_binary_options(p, ROOT)
    p.add_argument("--calibrate", action="store_true",
                   help="first calibrate the models into a copy of --profile, benchmarks/results/layer_splits_profile.json "
                        "(before any measurement, as a user would), and predict from that copy")
    h.add_mpiexec_options(p)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--batches", default="2,32", help="global batches (default 2: one sample per replica, and 32)")
    h.add_alternation_options(p, max_rounds=4)
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.batches = [int(b) for b in args.batches.split(",") if b]
    h.check_models(p, args.models, MODELS)
    if any(b < 2 or b % 2 for b in args.batches):
        p.error("every batch must be even (2 replicas)")
    h.check_oracle_binaries(p, args)
    return args


def command(args, model, batch, ranks, split):
    _, steps, warmup, repeats = MODELS[model]
    steps *= max(1, 64 // batch)  # small batches take short steps: blocks of about a second or more
    cmd = [args.mpiexec] + args.mpiexec_flags.split() + ["-n", str(ranks), args.hpf, "--model", model,
                                                          "--batch", str(batch), "--steps", str(steps),
                                                          "--warmup", str(warmup), "--repeats", str(repeats)]
    return cmd + (["--split", split] if split else [])


def measure(args):
    """{(model, batch): {layout label: [Run]}}."""
    groups = {}
    for model in args.models:
        for batch in args.batches:
            jobs = []
            for label, ranks, split in LAYOUTS:
                env, overrides = h.bench_env(h.BLAS_SETTINGS["haswell"][0], 1)
                jobs.append((label, command(args, model, batch, ranks, split), env, overrides))
            groups[(model, batch)] = jobs
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def calibrate(args):
    """Calibrates every model into benchmarks/results/layer_splits_profile.json, a copy of --profile."""
    h.calibrate_copy(args, args.models, os.path.join(HERE, "results", "layer_splits_profile.json"))


def predicted_ms(args, model, batch, ranks, split):
    """The oracle's step time for one layout (None where it has no calibration of the model)."""
    p = h.oracle_json(args, "predict", ["--model", model, "--ranks", ranks, "--batch", batch, "--stages", 1,
                                        "--micro-batches", 1] + (["--split", split] if split else []))
    return p and 1e3 * p["time_s"]


def report(args, data, predictions):
    out = ["## Layer splits: filter and channel parallelism against data parallelism", ""]
    out.append("Measured by `benchmarks/compare_splits.py` (when, at which commit and where: its provenance line). "
               "The same global batch trains on 1 rank, on 2 ranks as 2 replicas, and on 2 ranks as one replica "
               "whose `Dense` and convolution layers split by filters (`hpf::Filter<2>`) or by channels "
               "(`hpf::Channel<2>`); a filter split's member runs oneDNN's convolution of its output channels, a "
               "channel split's member im2col GEMMs; "
               "`hpf_bench_parallel_throughput --split`. Ranks share the machine's cores under mpiexec (Kokkos "
               "Serial, Open MPI over shared memory). Predicted: `hpf-oracle predict` from the profile named "
               "below, calibrated before the measurements (`--calibrate`); the oracle's split terms were written "
               "before this run and not tuned on it, but these models are in its development set.")
    out.append("")
    out.append(f"Every layout ran alternately with the others, at least {args.rounds} times per model and batch; "
               "each figure is its best run, within a run its best timed block after warm-up.")
    out.append("")
    rows = []
    for model in args.models:
        for batch in args.batches:
            runs = data[(model, batch)]
            one = h.best(runs["1 rank"])[1]
            for label, ranks, split in LAYOUTS:
                r = h.best(runs[label])[1]
                ms = r and r["ms_per_step"]
                speedup = f"{one['ms_per_step'] / ms:.2f}x" if one and ms else "-"
                p = predictions.get((model, batch, label))
                rows.append([model, str(batch), label, h.fmt(ms, 2), speedup, h.fmt(p, 2),
                             f"{100 * min(p, ms) / max(p, ms):.0f} %" if p and ms else "-"])
    out.append(h.markdown_table(["model", "global batch", "layout", "ms per step", "speed-up over 1 rank",
                                 "predicted ms", "prediction accuracy"], rows, "lllrrrr"))
    out.append("")
    with open(args.profile) as f:
        label = json.load(f).get("label", os.path.basename(args.profile))
    out.append(f"Profile: `{h.repo_relative(args.profile, ROOT)}` ({label}). Accuracy is min/max of predicted and "
               "measured.")
    out.append("")
    out.append("- " + "\n- ".join(f"{m}: {MODELS[m][0]}." for m in args.models))
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these; "
               f"{args.models[-1]}, batch {args.batches[-1]} shown):")
    out.append("")
    out.extend(h.commands_block("benchmarks/compare_splits.py", sys.argv[1:],
                                [command(args, args.models[-1], args.batches[-1], ranks, split)
                                 for _, ranks, split in LAYOUTS], ROOT))
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    record = provenance.start("benchmarks/compare_splits.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    if args.calibrate:
        calibrate(args)
    data = measure(args)
    predictions = {(m, b, label): predicted_ms(args, m, b, ranks, split)
                   for m in args.models for b in args.batches for label, ranks, split in LAYOUTS}
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{b}/{n}" for (m, b) in data for n, runs in data[(m, b)].items() if not any(r.ok for r in runs)]
    return provenance.publish(args, SECTION, report(args, data, predictions), failed, record)


if __name__ == "__main__":
    sys.exit(main())
