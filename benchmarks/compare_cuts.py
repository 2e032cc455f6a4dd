#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cuts chosen by time against hpf::Balanced<S>'s, measured in one run: each model as an S-stage
pipeline on S ranks (2 and 4 stages) at Balanced<S>'s cuts and at every partition compiled into
hpf_bench_parallel_throughput (--cuts), with the oracle's prediction of each, and the cuts
`hpf-oracle partition` chooses. Prints the table and writes the `cuts` section of
benchmarks/RESULTS.md.

  cmake --build build --target hpf_bench_parallel_throughput hpf-oracle
  /usr/bin/python3 benchmarks/compare_cuts.py --calibrate      # ~15 min
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

# name: (description, global batch, micro-batches, steps per block, warm-up steps, blocks, per
# stage count the partitions compiled into hpf_bench_parallel_throughput besides Balanced<S>'s:
# block boundaries around Balanced<2>'s, and what `hpf-oracle partition` chose from the
# calibrations of 2026-12-03 where it differed from Balanced<S>: the cuts are types, so a choice
# is measured only once it is compiled in)
MODELS = {
    "resnet20": ("ResNet-20 (option A), synthetic 3x32x32", 64, 4, 5, 2, 3, {2: ((21,), (28,))}),
    "resnet56": ("ResNet-56 (option A), synthetic 3x32x32", 64, 4, 3, 1, 3,
                 {2: ((64,), (70,), (76,), (82,)), 4: ((45, 88, 125),)}),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), Adam", 32, 4, 10, 2, 3,
            {2: ((8,), (14,), (20,)), 4: ((2, 8, 20),)}),
    "resnet164": ("PreActResNet-164 (bottleneck), synthetic 3x32x32", 64, 4, 2, 1, 3,
                  {2: ((174,),), 4: ((65, 192, 300), (110, 246, 364))}),
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


def cases(models):
    """(model, stages) in the order they run."""
    return [(model, stages) for model in models for stages in sorted(MODELS[model][6])]


def leaves_text(cuts):
    return ",".join(str(leaf) for leaf in cuts)


def command(args, model, stages, cuts):
    _, batch, micro, steps, warmup, repeats, _ = MODELS[model]
    cmd = [args.mpiexec] + args.mpiexec_flags.split() + ["-n", str(stages), args.hpf, "--model", model, "--stages",
                                                          str(stages),
                                                          "--batch", str(batch), "--micro-batches", str(micro),
                                                          "--steps", str(steps), "--warmup", str(warmup),
                                                          "--repeats", str(repeats)]
    return cmd + (["--cuts", leaves_text(cuts)] if cuts else [])


def oracle_options(model, stages):
    _, batch, micro, *_ = MODELS[model]
    return ["--model", model, "--ranks", stages, "--batch", batch, "--stages", stages, "--micro-batches", micro]


def balanced_cuts(args, model, stages):
    """Balanced<S>'s cut leaves, as the oracle computes them (the same search as the compile-time one)."""
    p = h.oracle_json(args, "predict", oracle_options(model, stages))
    return p and tuple(p["bounds"][1:-1])


def measure(args, cuts):
    """{(model, stages): {cuts: [Run]}}; the balanced cuts run without --cuts."""
    groups = {}
    for case in cases(args.models):
        env, overrides = h.bench_env(h.BLAS_SETTINGS["haswell"][0], 1)
        balanced = cuts[case]["balanced"]
        groups[case] = [(leaves, command(args, *case, None if leaves == balanced else leaves), env, overrides)
                        for leaves in cuts[case]["measured"]]
    return h.alternate(groups, rounds=args.rounds, max_rounds=args.max_rounds, quiet=args.quiet,
                       min_quiet=args.min_quiet, max_busy=args.max_busy, max_wait=args.max_wait)


def report(args, cuts, data, predicted):
    out = ["## Pipeline cuts: chosen by predicted time against Balanced<S>", ""]
    out.append("Measured by `benchmarks/compare_cuts.py` (when, at which commit and where: its provenance line). "
               "Each model trains as an S-stage pipeline on S ranks at `hpf::Balanced<S>`'s cuts (FLOPs balanced) "
               "and at each partition compiled into `hpf_bench_parallel_throughput --cuts` (leaves: "
               "`hpf::Cuts<L...>`). Ranks share the machine's 2 cores under mpiexec (Kokkos Serial, Open MPI over "
               "shared memory): 4 stages are oversubscribed, which slows every partition alike. "
               "Chosen: the cuts `hpf-oracle partition` prints; predicted: `hpf-oracle predict --cuts L,...`, both "
               "from the profile named below, calibrated before the measurements (`--calibrate`). The cut "
               "search was written before this run and not tuned on it.")
    out.append("")
    out.append(f"Every cut ran alternately with the others, at least {args.rounds} times per model; each figure is its "
               "best run, within a run its best timed block after warm-up.")
    out.append("")
    rows, verdicts = [], []
    for case in cases(args.models):
        model, stages = case
        c = cuts[case]
        measured = {leaves: (h.best(runs)[1] or {}).get("ms_per_step") for leaves, runs in data[case].items()}
        best = min((leaves for leaves in measured if measured[leaves]), key=lambda leaves: measured[leaves], default=None)
        for leaves in c["measured"]:
            ms, p = measured.get(leaves), predicted.get((case, leaves))
            roles = [r for r, on in ((f"Balanced<{stages}>", leaves == c["balanced"]), ("chosen", leaves == c["chosen"]),
                                     ("measured best", leaves == best)) if on]
            rows.append([model, stages, f"`hpf::Cuts<{', '.join(map(str, leaves))}>`", ", ".join(roles) or "-",
                         h.fmt(ms, 1), h.fmt(p, 1), f"{100 * min(p, ms) / max(p, ms):.0f} %" if p and ms else "-"])
        chosen_ms, balanced_ms, best_ms = measured.get(c["chosen"]), measured.get(c["balanced"]), measured.get(best)
        if c["chosen"] not in c["measured"]:
            verdicts.append(f"- {model}, {stages} stages: the chosen cuts {leaves_text(c['chosen'])} are not compiled into "
                            "the benchmark; not measured.")
        elif chosen_ms and best_ms and balanced_ms:
            verdicts.append(f"- {model}, {stages} stages: the chosen cuts {leaves_text(c['chosen'])} measured "
                            f"{100 * (chosen_ms / best_ms - 1):.1f} % slower than the measured best ({leaves_text(best)}); "
                            f"Balanced<{stages}>'s ({leaves_text(c['balanced'])}) {100 * (balanced_ms / best_ms - 1):.1f} %; "
                            f"chosen against Balanced<{stages}>: {100 * (chosen_ms / balanced_ms - 1):+.1f} %.")
    out.append(h.markdown_table(["model", "stages", "cuts", "which", "ms per step", "predicted ms", "prediction accuracy"],
                                rows, "lrllrrr"))
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
    last = cases(args.models)[-1]
    commands = [[args.oracle, "partition"] + oracle_options(*last)]
    commands += [command(args, *last, None if leaves == cuts[last]["balanced"] else leaves)
                 for leaves in cuts[last]["measured"]]
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
    for case in cases(args.models):  # the oracle chooses before anything is measured
        model, stages = case
        found = h.oracle_json(args, "partition", oracle_options(*case))
        balanced = balanced_cuts(args, *case)
        if not found or balanced is None:
            return 1
        chosen = tuple(found["best"]["bounds"][1:-1])
        cuts[case] = {"balanced": balanced, "chosen": chosen,
                      "measured": sorted(set(MODELS[model][6][stages]) | {balanced})}
        h.log(f"{model}, {stages} stages: Balanced<{stages}> cuts at {leaves_text(balanced)}, partition chooses "
              f"{leaves_text(chosen)}")
    predicted = {}
    for case in cases(args.models):
        for leaves in cuts[case]["measured"]:
            p = h.oracle_json(args, "predict", oracle_options(*case) + ["--cuts", leaves_text(leaves)])
            predicted[(case, leaves)] = p and 1e3 * p["time_s"]
    data = measure(args, cuts)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{s}/{leaves_text(leaves)}" for (m, s) in data for leaves, runs in data[(m, s)].items()
              if not any(r.ok for r in runs)]
    return provenance.publish(args, SECTION, report(args, cuts, data, predicted), failed, record)


if __name__ == "__main__":
    sys.exit(main())
