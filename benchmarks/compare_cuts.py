#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cuts chosen by time against hpf::Balanced<2>'s, measured in one run: each model as a 2-stage
pipeline on 2 ranks at Balanced<2>'s cut and at every cut compiled into
hpf_bench_parallel_throughput (--cut), with the oracle's prediction of each, and the cut
`hpf-oracle partition` chooses. Prints the table and writes the `cuts` section of
benchmarks/RESULTS.md.

  cmake --build build --target hpf_bench_parallel_throughput hpf-oracle
  /usr/bin/python3 benchmarks/compare_cuts.py --calibrate      # ~5 min
  /usr/bin/python3 benchmarks/compare_cuts.py --models resnet20 --no-write

Every cut runs in its own job, alternately with the others, at least --rounds times; each figure
is its best run. The oracle chooses and predicts from --profile, or with --calibrate from a copy
calibrated first, before any measurement. Nothing here asserts a speed: benchmarks are not tests.
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

# name: (description, global batch, micro-batches, steps per block, warm-up steps, blocks, the
# cuts compiled into hpf_bench_parallel_throughput besides Balanced<2>'s)
MODELS = {
    "resnet20": ("ResNet-20 (option A), synthetic 3x32x32", 64, 4, 5, 2, 3, (21, 28)),
    "resnet56": ("ResNet-56 (option A), synthetic 3x32x32", 64, 4, 3, 1, 3, (64, 70, 76, 82)),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), Adam", 32, 4, 10, 2, 3,
            (8, 14, 20)),
}
SECTION = "cuts"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_oracle_binary_options(p, ROOT)
    p.add_argument("--calibrate", action="store_true",
                   help="first calibrate the models into a copy of --profile, benchmarks/results/cuts_profile.json "
                        "(before any measurement, as a user would), and choose and predict from that copy")
    h.add_mpiexec_options(p)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    h.add_alternation_options(p, max_rounds=4)
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    h.check_models(p, args.models, MODELS)
    h.check_oracle_binaries(p, args)
    return args


def command(args, model, cut):
    _, batch, micro, steps, warmup, repeats, _ = MODELS[model]
    cmd = [args.mpiexec] + args.mpiexec_flags.split() + ["-n", "2", args.hpf, "--model", model, "--stages", "2",
                                                          "--batch", str(batch), "--micro-batches", str(micro),
                                                          "--steps", str(steps), "--warmup", str(warmup),
                                                          "--repeats", str(repeats)]
    return cmd + (["--cut", str(cut)] if cut else [])


def oracle_options(model):
    _, batch, micro, *_ = MODELS[model]
    return ["--model", model, "--ranks", 2, "--batch", batch, "--stages", 2, "--micro-batches", micro]


def balanced_cut(args, model):
    """Balanced<2>'s cut leaf, as the oracle computes it (the same search as the compile-time one)."""
    p = h.oracle_json(args, "predict", oracle_options(model))
    return p and p["bounds"][1]


def measure(args, cuts):
    """{model: {cut leaf: [Run]}}; the balanced cut runs without --cut."""
    groups = {}
    for model in args.models:
        env, overrides = h.bench_env(h.BLAS_SETTINGS["haswell"][0], 1)
        balanced = cuts[model]["balanced"]
        groups[model] = [(leaf, command(args, model, None if leaf == balanced else leaf), env, overrides)
                         for leaf in cuts[model]["measured"]]
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def report(args, cuts, data, predicted):
    out = ["## Pipeline cuts: chosen by predicted time against Balanced<2>", ""]
    out.append("Measured by `benchmarks/compare_cuts.py` (when, at which commit and where: its provenance line). "
               "Each model trains as a 2-stage pipeline on 2 ranks at `hpf::Balanced<2>`'s cut (FLOPs balanced) "
               "and at each cut compiled into `hpf_bench_parallel_throughput --cut` (leaves: `hpf::Cuts<L>`). "
               "Ranks share the machine's cores under mpiexec (Kokkos Serial, Open MPI over shared memory). "
               "Chosen: the cut `hpf-oracle partition` prints; predicted: `hpf-oracle predict --cuts L`, both "
               "from the profile named below, calibrated before the measurements (`--calibrate`). The cut "
               "search was written before this run and not tuned on it.")
    out.append("")
    out.append(f"Every cut ran alternately with the others, at least {args.rounds} times per model; each figure is its "
               "best run, within a run its best timed block after warm-up.")
    out.append("")
    rows, verdicts = [], []
    for model in args.models:
        c = cuts[model]
        measured = {leaf: (h.best(runs)[1] or {}).get("ms_per_step") for leaf, runs in data[model].items()}
        best_leaf = min((leaf for leaf in measured if measured[leaf]), key=lambda leaf: measured[leaf], default=None)
        for leaf in c["measured"]:
            ms, p = measured.get(leaf), predicted.get((model, leaf))
            roles = [r for r, on in (("Balanced<2>", leaf == c["balanced"]), ("chosen", leaf == c["chosen"]),
                                     ("measured best", leaf == best_leaf)) if on]
            rows.append([model, f"`hpf::Cuts<{leaf}>`", ", ".join(roles) or "-", h.fmt(ms, 1), h.fmt(p, 1),
                         f"{100 * min(p, ms) / max(p, ms):.0f} %" if p and ms else "-"])
        chosen_ms, balanced_ms = measured.get(c["chosen"]), measured.get(c["balanced"])
        best_ms = measured.get(best_leaf)
        if c["chosen"] not in c["measured"]:
            verdicts.append(f"- {model}: the chosen cut {c['chosen']} is not compiled into the benchmark; not measured.")
        elif chosen_ms and best_ms and balanced_ms:
            verdicts.append(f"- {model}: the chosen cut {c['chosen']} measured {100 * (chosen_ms / best_ms - 1):.1f} % "
                            f"slower than the measured best ({best_leaf}); Balanced<2>'s ({c['balanced']}) "
                            f"{100 * (balanced_ms / best_ms - 1):.1f} %.")
    out.append(h.markdown_table(["model", "cut", "which", "ms per step", "predicted ms", "prediction accuracy"],
                                rows, "lllrrr"))
    out.append("")
    out.extend(verdicts)
    out.append("")
    with open(args.profile) as f:
        label = json.load(f).get("label", os.path.basename(args.profile))
    out.append(f"Profile: `{h.repo_relative(args.profile, ROOT)}` ({label}). Accuracy is min/max of predicted and "
               "measured.")
    out.append("")
    out.append("- " + "\n- ".join(f"{m}: {MODELS[m][0]}, global batch {MODELS[m][1]} in {MODELS[m][2]} "
                                  "micro-batches, 1F1B." for m in args.models))
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these; "
               f"{args.models[-1]} shown):")
    out.append("")
    last = args.models[-1]
    commands = [[args.oracle, "partition"] + oracle_options(last)]
    commands += [command(args, last, None if leaf == cuts[last]["balanced"] else leaf) for leaf in cuts[last]["measured"]]
    out.extend(h.commands_block("benchmarks/compare_cuts.py", sys.argv[1:], commands, ROOT))
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    record = provenance.start("benchmarks/compare_cuts.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    if args.calibrate:
        h.calibrate_copy(args, args.models, os.path.join(HERE, "results", "cuts_profile.json"))
    cuts = {}
    for model in args.models:  # the oracle chooses before anything is measured
        found = h.oracle_json(args, "partition", oracle_options(model))
        balanced = balanced_cut(args, model)
        if not found or balanced is None:
            return 1
        chosen = found["best"]["bounds"][1]
        cuts[model] = {"balanced": balanced, "chosen": chosen,
                       "measured": sorted(set(MODELS[model][6]) | {balanced})}
        h.log(f"{model}: Balanced<2> cuts at {balanced}, partition chooses {chosen}")
    predicted = {}
    for model in args.models:
        for leaf in cuts[model]["measured"]:
            p = h.oracle_json(args, "predict", oracle_options(model) + ["--cuts", leaf])
            predicted[(model, leaf)] = p and 1e3 * p["time_s"]
    data = measure(args, cuts)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{leaf}" for m in data for leaf, runs in data[m].items() if not any(r.ok for r in runs)]
    return provenance.publish(args, SECTION, report(args, cuts, data, predicted), failed, record)


if __name__ == "__main__":
    sys.exit(main())
