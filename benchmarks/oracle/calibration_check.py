#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Calibration against training, interleaved in time. For one model on one process, every round
trains at each micro-batch count M (the accuracy runner's command, run_oracle_accuracy.py) and then
calibrates a copy of the profile (`hpf-oracle calibrate`) and predicts those M from it. The
accuracy runner calibrates once and measures for an hour; on a host whose speed drifts, an error
that stays when calibration and training are minutes apart lies in the model or the calibration, and
one that moves with the round lies in the host. Prints one line per round and M, then the mean
accuracy per M and how much slower the largest M is than the smallest, measured and predicted.

  /usr/bin/python3 benchmarks/oracle/calibration_check.py --model resnet20 --micro-batches 1,8 --rounds 4

Nothing is written: the lines are the report. No page quotes them now: docs/oracle.md quoted the run of
2026-11-27 until 4d64607, which left it out of docs/oracle-changelog.md; 9cd0aee's message keeps it.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import bench_harness as h  # noqa: E402
import run_oracle_accuracy as accuracy  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.path.join(accuracy.ROOT, "build")
    p.add_argument("--hpf", default=os.path.join(build, "benchmarks", "hpf_bench_parallel_throughput"))
    p.add_argument("--oracle", default=os.path.join(build, "tools", "hpf-oracle"))
    p.add_argument("--profile", default=os.path.join(accuracy.BENCHMARKS, "comm", "profiles", "local.json"),
                   help="profile whose communication part is kept; its compute part is calibrated afresh per round "
                        "in a copy (the file itself is not changed)")
    p.add_argument("--model", default="resnet20", choices=list(accuracy.MODELS))
    p.add_argument("--micro-batches", default="1,8", help="micro-batch counts M (default 1,8)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--setting", default="haswell", choices=list(h.BLAS_SETTINGS))
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--mpiexec-flags", default="--allow-run-as-root --oversubscribe --bind-to none")
    args = p.parse_args()
    try:
        args.micro = sorted({int(m) for m in args.micro_batches.split(",") if m.strip()})
    except ValueError:
        p.error("--micro-batches expects comma-separated whole numbers")
    if not args.micro or min(args.micro) < 1 or args.rounds < 1:
        p.error("--micro-batches and --rounds must be at least 1")
    for exe in (args.hpf, args.oracle):
        if not os.access(exe, os.X_OK):
            p.error(f"{exe} is not an executable: build it first (cmake --build build)")
    args.launcher_prefix = ""
    return args


def main():
    args = parse_args()
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], 1)
    configs = [accuracy.make_config(args.model, 1, 1, m, "-") for m in args.micro]
    work = tempfile.mkdtemp(prefix="hpf-calibration-check.")
    acc = {m: [] for m in args.micro}
    slowdown = {"measured": [], "predicted": []}
    try:
        for r in range(1, args.rounds + 1):
            measured = {}
            for c in configs:
                run = h.launch(accuracy.name(c), accuracy.bench_cmd(args, c), env, overrides)
                if not run.ok:
                    return 1
                measured[c.micro] = statistics.median(accuracy.floats(run.results[0]["block_ms_per_step"]))
            copy = accuracy.calibrated_copy(args, [args.model], work)  # exits naming the command if it fails
            predicted = {}
            for c in configs:
                result, error, _ = accuracy.oracle_call(copy, accuracy.predict_words(c))
                if result is None:
                    sys.exit(f"calibration_check.py: hpf-oracle predict failed: {error}")
                predicted[c.micro] = 1e3 * float(result["time_s"])
                a = 1 - abs(predicted[c.micro] - measured[c.micro]) / measured[c.micro]
                acc[c.micro].append(a)
                print(f"round {r}: {args.model} M={c.micro}: measured {measured[c.micro]:.1f} ms (median of its "
                      f"blocks), predicted {predicted[c.micro]:.1f} ms, accuracy {100 * a:.1f} %", flush=True)
            for what, times in (("measured", measured), ("predicted", predicted)):
                slowdown[what].append(times[args.micro[-1]] / times[args.micro[0]] - 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for m in args.micro:
        print(f"M={m}: accuracy mean {100 * statistics.mean(acc[m]):.1f} %, "
              f"range {100 * min(acc[m]):.1f}-{100 * max(acc[m]):.1f} % over {args.rounds} rounds")
    if len(args.micro) > 1:
        for what, values in slowdown.items():
            print(f"M={args.micro[-1]} against M={args.micro[0]}, {what}: "
                  + ", ".join(f"{100 * v:+.1f} %" for v in values) + " per round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
