#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The performance oracle against measurement: for every configuration of the MLP, CNN, ResNet-20
and ResNet-56 on 1, 2 and 4 ranks (data parallel, pipeline, hybrid; GPipe and 1F1B; M = 2, 4, 8,
and M = 1 for data parallelism), the step time and per-rank memory `hpf-oracle predict` gives
against what hpf_bench_parallel_throughput measures, and per (model, ranks) case whether
`hpf-oracle rank`'s recommendation is the measured fastest strategy (or within 5 % of it) and how
well its ranking agrees with the measured one (Kendall tau-b). Prints the tables, writes the
`oracle` section of benchmarks/RESULTS.md (`oracle-LABEL` for --label LABEL) and every row to
benchmarks/oracle/results/oracle_LABEL.csv.

  /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py                  # everything (~20 min here)
  /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py --quick --no-write
  # on another machine (the runner refuses a profile measured elsewhere): its communication, then
  # its compute calibrated before each round of the run (the median kept)
  /usr/bin/python3 benchmarks/comm/run_comm_benchmark.py
  /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py --calibrate
  /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py --models resnet20 --ranks 2,4 --repeats 1
  # an oracle changed, the measurements not: predict again against an earlier run's CSV
  /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py --from-csv benchmarks/oracle/results/oracle_local.csv
  # on 2 emulated hosts, one rank each (as root), with the fabric's own profile (its comm fits from
  # scripts/fabric/run_fabrics.py --comm-bench, its compute from hpf-oracle calibrate)
  scripts/fabric/emulate.sh with 2 10gbit -- /usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py \\
      --label 10gbit --ranks 2 --profile benchmarks/comm/profiles/10gbit.json \\
      --launcher-prefix scripts/fabric/emulate.sh --mpiexec-flags ''

Each run is `[PREFIX] MPIEXEC FLAGS -n P hpf_bench_parallel_throughput --model M --batch B --stages S
--micro-batches MB --schedule X --steps N --warmup W --repeats 3` with one thread per process
(OMP/OpenBLAS/MKL pools pinned to 1) and OPENBLAS_CORETYPE=Haswell. The global batch is fixed per
model (MLP and CNN 128, ResNets 64), so that every strategy of one (model, P) trains the same batch
per step. Every configuration runs --repeats times, round-robin with all the others (the order
reversed every other round, so slow drifts of the machine hit all alike). Before each run the
runner waits (at most --max-wait s) until the machine is nearly idle, and it records how busy
other processes kept the machine during the run: a run is quiet below --quiet. Configurations
with fewer than --repeats quiet runs run again in more rounds (up to --max-rounds). The measured
time of a configuration is the median over all timed blocks (3 per run) of its quiet runs (of
all its runs if none was quiet: on this 2-core machine one other busy process doubles a 4-rank
step), its memory the Kokkos views' peak of each rank (`rank_views_peak_mib`, the first training
step, where every buffer exists), median over the same runs. Configurations the benchmark
rejects (a replica's batch smaller than M, ...) are skipped and listed.

Definitions: accuracy = 1 - |predicted - measured| / measured (step time); memory error = |predicted
- measured| / measured of stage_memory_bytes[stage of rank r] against rank r's views peak, the
worst rank; a case's recommendation is a hit when its measured time is at most 5 % above the
fastest measured configuration of the case (a recommended configuration outside the list is
measured too); Kendall tau-b over the predicted and measured times of the measured configurations
of a case, and again with the measured order of two configurations counted as a tie where the
ranges of their per-run medians overlap (the runs disagree on it). Every missed recommendation
gets its cause from the measurements (`miss_cause`): a measured tie (the two configurations' runs
overlap), or a misprediction, blamed on the one that ran further from its prediction. The noise
floor (`exact_oracle`): the same figures for an oracle that knew every configuration's time exactly,
against the measurements drawn again from their own runs (docs/oracle.md). Nothing here asserts a
target: the runner reports.
"""
import argparse
import csv
import itertools
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, BENCHMARKS)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402
from compare_single_process import snapshot  # noqa: E402

SECTION = "oracle"
# Global batch (the same for every strategy of a model), steps per timed block and warm-up steps:
# one run (3 blocks) takes about 1-3 s on this machine, start-up included.
MODELS = {"mlp": (128, 40, 10), "cnn": (128, 12, 3), "resnet20": (64, 4, 1), "resnet56": (64, 2, 1)}
BLOCKS = 3
RANKS = (1, 2, 4)
MICRO = (2, 4, 8)
SCHEDULES = ("gpipe", "1f1b")
BENCH_STAGES = (1, 2, 4)  # what hpf_bench_parallel_throughput compiles (Balanced<S>)
WITHIN = 0.05  # a recommendation within 5 % of the measured fastest is a hit
CSV_FIELDS = ["label", "model", "ranks", "stages", "replicas", "batch", "micro_batches", "schedule", "kind",
              "recommended_only", "steps", "warmup", "runs", "runs_left_out", "all_runs_loud", "blocks", "measured_ms",
              "measured_min_ms", "measured_max_ms", "block_ms", "rank_views_peak_mib", "rank_peak_rss_mib",
              "rank_first_leaf", "foreign_busy_max",
              "predicted_ms", "compute_ms", "bubble_ms", "transfer_ms", "reduction_ms", "other_ms",
              "predicted_stage_memory_mib", "fits", "accuracy", "memory_error", "memory_error_rank", "status"]

# schedule is "-" for one stage (no pipeline; the benchmark and the oracle are given 1f1b, ignored)
Config = namedtuple("Config", "model ranks stages micro schedule")


def replicas(c):
    return c.ranks // c.stages


def batch(c):
    return MODELS[c.model][0]


def kind(c):
    return "data" if c.stages == 1 else "pipeline" if replicas(c) == 1 else "hybrid"


def name(c):
    sched = "" if c.stages == 1 else f" {c.schedule}"
    return f"{c.model} P={c.ranks} {c.stages}x{replicas(c)}{sched} M={c.micro}"


def make_config(model, ranks, stages, micro, schedule):
    return Config(model, ranks, stages, micro, "-" if stages == 1 else schedule)


def runnable(c):
    """What the benchmark can run: its compiled stage counts, whole replicas, a sample per micro-batch."""
    return (c.stages in BENCH_STAGES and c.ranks % c.stages == 0 and c.micro >= 1
            and batch(c) % replicas(c) == 0 and batch(c) // replicas(c) >= c.micro)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_oracle_binary_options(p, ROOT)
    p.add_argument("--label", default="local",
                   help="name of this machine/fabric: section oracle-LABEL (oracle for local) and the CSV's name")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--precision", default="float", choices=("float", "bf16"),
                   help="the products' precision in every run, calibration and query: bf16 is hpf::Mixed<hpf::bf16> "
                        "(NetworkOptions::matmul_precision; the profile's bf16 calibration)")
    p.add_argument("--ranks", default=",".join(map(str, RANKS)), help="rank counts P (default 1,2,4)")
    p.add_argument("--micro-batches", default=",".join(map(str, MICRO)),
                   help="micro-batch counts M (default 2,4,8; data parallelism also M = 1)")
    p.add_argument("--quick", action="store_true",
                   help="a small subset for trying the runner (~1 min): the MLP (unless --models), M = 4 (unless "
                        "--micro-batches), one run each (unless --repeats)")
    p.add_argument("--repeats", type=int, default=None,
                   help="runs per configuration, round-robin with the others (default 3; --quick 1)")
    p.add_argument("--calibrate", action="store_true",
                   help="calibrate the profile's compute part on this host for the measured models before each "
                        "of the --repeats rounds (hpf-oracle calibrate, with the runs' BLAS setting and one "
                        "thread; about 45 s here) and keep the median of the rounds' calibrations, and once more "
                        "after measuring, into a copy, to report how far the host drifted meanwhile")
    p.add_argument("--mpiexec", default="mpiexec", help="MPI launcher (default: mpiexec on PATH)")
    p.add_argument("--mpiexec-flags", default="--allow-run-as-root --oversubscribe --bind-to none",
                   help="launcher flags before -n (default: %(default)s)")
    p.add_argument("--launcher-prefix", default="",
                   help="command words before the launcher, e.g. scripts/fabric/emulate.sh (default none)")
    p.add_argument("--setting", default="haswell", choices=list(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting of every process (default haswell: the machine's own)")
    p.add_argument("--max-busy", type=float, default=0.2,
                   help="wait before each run until less than this fraction of all CPUs is busy (default 0.2)")
    p.add_argument("--max-wait", type=float, default=15.0, help="give up waiting after this many seconds (then run)")
    p.add_argument("--quiet", type=float, default=None,
                   help="a run is quiet if other processes kept less than this fraction of the machine busy "
                        "(default 0.15; with --launcher-prefix 2, every run: ranks started by a launch agent are "
                        "not this runner's children and count as other processes); only quiet runs are counted where a "
                        "configuration has one")
    p.add_argument("--max-rounds", type=int, default=None,
                   help="more rounds, up to this many, of the configurations with fewer than --repeats quiet runs "
                        "(default 2 x --repeats)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one launch may take (default 300)")
    p.add_argument("--csv", default="", help="CSV path (default benchmarks/oracle/results/oracle_LABEL.csv; "
                                             "with --no-write only if given)")
    p.add_argument("--from-csv", default="",
                   help="no measuring: the measurements of an earlier run's CSV against the oracle's predictions now")
    h.add_results_options(p, os.path.join(BENCHMARKS, "RESULTS.md"))
    args = p.parse_args()
    if not all(c.isalnum() or c in "._-" for c in args.label) or not args.label:
        p.error("--label may hold letters, digits, '.', '_' and '-' only (it names a file and a section)")
    args.section = SECTION if args.label == "local" else f"{SECTION}-{args.label}"
    explicit_models = any(a == "--models" or a.startswith("--models=") for a in sys.argv[1:])
    args.models = [m for m in args.models.split(",") if m]
    if args.quick and not explicit_models:
        args.models = ["mlp"]
    h.check_models(p, args.models, MODELS)
    try:
        args.rank_counts = sorted({int(r) for r in args.ranks.split(",") if r.strip()})
        args.micro = sorted({int(m) for m in args.micro_batches.split(",") if m.strip()})
    except ValueError:
        p.error("--ranks and --micro-batches expect comma-separated whole numbers")
    if args.quick and not any(a.startswith("--micro-batches") for a in sys.argv[1:]):
        args.micro = [4]
    if any(r < 1 for r in args.rank_counts) or any(m < 1 for m in args.micro):
        p.error("rank and micro-batch counts must be at least 1")
    args.repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    args.max_rounds = max(args.repeats, args.max_rounds if args.max_rounds is not None else 2 * args.repeats)
    if args.quiet is None:
        args.quiet = 2.0 if args.launcher_prefix else 0.15  # 2: more than the whole machine, every run
    if not os.access(args.oracle, os.X_OK):
        p.error(f"{args.oracle} is not an executable: build it first (build/tools/hpf-oracle), or name one with "
                "--oracle")
    if not os.path.exists(args.profile):
        p.error(f"--profile {args.profile}: no such file")
    if args.from_csv:
        if not os.path.exists(args.from_csv):
            p.error(f"--from-csv {args.from_csv}: no such file")
        if args.calibrate:
            p.error("--calibrate measures this host, --from-csv predicts against earlier measurements: not both")
    else:
        other = h.profile_of_other_machine(args.profile, ROOT)
        if other:
            p.error(f"--profile {other}. Measure its communication here (benchmarks/comm/run_comm_benchmark.py) "
                    "and run this with --calibrate")
        if not os.access(args.hpf, os.X_OK):
            p.error(f"{args.hpf} is not an executable: build it first (ninja -C build hpf_bench_parallel_throughput)")
        prefix = shlex.split(args.launcher_prefix)
        if not shutil.which(prefix[0] if prefix else args.mpiexec):
            p.error(f"no launcher '{prefix[0] if prefix else args.mpiexec}'")
    args.csv_given = bool(args.csv)
    args.csv = args.csv or os.path.join(HERE, "results", f"oracle_{args.label}.csv")
    return args


def calibrate(args):
    """Calibrates args.profile's compute part for every model measured, in the runs' environment
    (BLAS setting, one thread): {model: seconds}."""
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], 1)
    seconds = {}
    for model in args.models:
        cmd = [args.oracle, "calibrate", "--model", model, "--profile", args.profile] + h.precision_words(args)
        start = time.monotonic()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.exit(f"run_oracle_accuracy.py: calibration failed (exit {proc.returncode}): "
                     f"{h.command_text(cmd, overrides)}\n{proc.stdout[-2000:]}")
        seconds[model] = time.monotonic() - start
        h.log(f"calibrated {model} in {seconds[model]:.1f} s")
    return seconds


def configurations(args):
    """Every configuration the runner measures: data parallel on every P, pipelines (P stages) and,
    on 4 ranks, 2 stages x 2 replicas, with each schedule; only what the benchmark can run."""
    out = []
    for model in args.models:
        for p in args.rank_counts:
            for m in sorted(set([1] + args.micro)):
                out.append(make_config(model, p, 1, m, "-"))
            stage_counts = [s for s in (p, 2) if 1 < s <= p and p % s == 0 and (s == p or s * 2 == p)]
            for s in sorted(set(stage_counts)):
                for sched in SCHEDULES:
                    for m in args.micro:
                        out.append(make_config(model, p, s, m, sched))
    return [c for c in dict.fromkeys(out) if runnable(c)]


# --- the oracle ------------------------------------------------------------------------------------
def oracle_call(args, words):
    """(parsed JSON or None, error text, seconds) of one hpf-oracle query."""
    cmd = [args.oracle] + words + ["--profile", args.profile, "--json"] + h.precision_words(args)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e), time.monotonic() - start
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}", seconds
    try:
        return json.loads(proc.stdout), "", seconds
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e}): {proc.stdout.strip()[:200]}", seconds


def predict_words(c):
    return ["predict", "--model", c.model, "--ranks", str(c.ranks), "--batch", str(batch(c)), "--stages",
            str(c.stages), "--micro-batches", str(c.micro), "--schedule", "1f1b" if c.stages == 1 else c.schedule]


def rank_words(model, ranks):
    return ["rank", "--model", model, "--ranks", str(ranks), "--batch", str(MODELS[model][0])]


def config_of_strategy(model, ranks, s):
    """The Config an oracle strategy object names (None if it lacks the fields)."""
    try:
        return make_config(model, ranks, int(s["stages"]), int(s["micro_batches"]), str(s.get("schedule", "1f1b")))
    except (KeyError, TypeError, ValueError):
        return None


def ask_oracle(args, configs):
    """Predictions of every configuration and the ranking of every (model, P) case; a recommended
    configuration missing from `configs` is appended (to be measured too). Returns
    (predictions {config: dict or error str}, cases {(model, P): dict}, seconds per query)."""
    cases, times = {}, []
    for model in args.models:
        for p in args.rank_counts:
            if not any(c.model == model and c.ranks == p for c in configs):
                continue
            data, error, seconds = oracle_call(args, rank_words(model, p))
            times.append(seconds)
            if data is not None and isinstance(data.get("query_us"), (int, float)):
                args.query_us.append(data["query_us"])
            case = {"error": error, "strategies": [], "recommended": None, "reason": ""}
            if data is not None:
                strategies = data.get("strategies") or []
                index = data.get("recommended")
                case["strategies"] = strategies
                if isinstance(index, int) and 0 <= index < len(strategies):
                    case["recommended"] = config_of_strategy(model, p, strategies[index])
                    case["reason"] = strategies[index].get("reason", "")
                    case["recommended_strategy"] = strategies[index]
                else:
                    case["error"] = f"no recommended strategy (recommended={index!r})"
            rec = case["recommended"]
            if rec is not None and rec not in configs:
                if runnable(rec):
                    configs.append(rec)
                    case["added"] = True
                else:
                    case["unmeasurable"] = True
            cases[(model, p)] = case
    predictions = {}
    for c in configs:
        data, error, seconds = oracle_call(args, predict_words(c))
        times.append(seconds)
        predictions[c] = data if data is not None else error
    return predictions, cases, times


# --- measuring -----------------------------------------------------------------------------------
def median_calibration(profiles, target):
    """Writes into `target` (one of `profiles`) the median of the profiles' compute parts, value by
    value (of an even count, the lower middle one: a measured value, not a mean): each unit's
    seconds at each size, the optimizer's and loading's per-value seconds.
    With the host's speed drifting 5-10 % within minutes (this VM), one calibration before a 20-minute
    run stands for one moment of it; calibrated before each round, the median stands for the run."""
    loaded = []
    for path in profiles:
        with open(path) as f:
            loaded.append(json.load(f))
    merged = loaded[profiles.index(target)]
    computes = [p["compute"] for p in loaded]
    for key in ("optimizer_s_per_parameter", "load_s_per_element"):
        merged["compute"][key] = statistics.median_low(c[key] for c in computes)
    for key, unit in merged["compute"]["units"].items():
        others = [c["units"].get(key) for c in computes]
        if any(o is None or o["batch"] != unit["batch"] for o in others):
            continue  # timed at other sizes in some round: this round's own stays
        for field in ("forward_s", "backward_s", "busy_forward_s", "busy_backward_s"):
            if field in unit and all(field in o for o in others):
                unit[field] = [statistics.median_low(values) for values in zip(*(o[field] for o in others))]
    text = json.dumps(merged, indent=1)
    # Lists of numbers on one line each, as hpf-oracle writes them.
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    with open(target, "w") as f:
        f.write(text + "\n")


def calibrate_in_rounds(args, rounds):
    """rounds() measures, calling its argument before each round: with --calibrate, the compute part
    calibrated before each round, args.profile getting the median (median_calibration)."""
    if not args.calibrate:
        return rounds(lambda r: None)
    work = tempfile.mkdtemp(prefix="hpf-oracle-rounds.")
    copies = [args.profile]

    def before_round(r):
        if r == 0 or r >= args.repeats:
            return  # round 1 runs on the calibration made before the oracle was asked what to measure
        copy = calibrated_copy(args, args.models, work, name=f"round{r + 1}.json")
        copies.append(copy.profile)
        for model, seconds in copy.seconds.items():
            args.calibrated.setdefault(model, []).append(seconds)

    try:
        result = rounds(before_round)
        median_calibration(copies, args.profile)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def calibrated_copy(args, models, directory, name="profile.json"):
    """A copy of args.profile in `directory` whose compute part for `models` is calibrated afresh
    (args.profile stays as it is), as the arguments oracle_call() takes."""
    copy = types.SimpleNamespace(oracle=args.oracle, profile=os.path.join(directory, name), models=models,
                                 setting=args.setting, precision=getattr(args, "precision", "float"))
    shutil.copyfile(args.profile, copy.profile)
    copy.seconds = calibrate(copy)
    return copy


def recalibrate(args, configs, predictions):
    """With --calibrate, after the measurements: calibrates a copy of the profile again and predicts
    each model's first configuration from it, to show how far the host drifted while the run
    measured. {model: (config, predicted s before, predicted s after)}."""
    work = tempfile.mkdtemp(prefix="hpf-oracle-recalibration.")
    try:
        again = calibrated_copy(args, args.models, work)
        drift = {}
        for model in args.models:
            c = next((c for c in configs if c.model == model and isinstance(predictions.get(c), dict)), None)
            result = oracle_call(again, predict_words(c))[0] if c else None
            if result and isinstance(result.get("time_s"), (int, float)):
                drift[model] = (c, predictions[c]["time_s"], result["time_s"])
        return drift
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_cmd(args, c, exe=None):
    _, steps, warmup = MODELS[c.model]
    return (shlex.split(args.launcher_prefix) + [args.mpiexec] + shlex.split(args.mpiexec_flags)
            + ["-n", str(c.ranks), exe or args.hpf, "--model", c.model, "--batch", str(batch(c)),
               "--stages", str(c.stages), "--micro-batches", str(c.micro), "--schedule",
               "1f1b" if c.stages == 1 else c.schedule, "--steps", str(steps), "--warmup", str(warmup),
               "--repeats", str(BLOCKS)] + h.precision_words(args))


def floats(value):
    """A RESULT list value ("1.5,2,3" or a single number) as floats."""
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(x) for x in str(value).split(",") if x]


def quiet_runs(args, rs):
    return [run for run in rs if run.ok and run.foreign_busy < args.quiet]


def measure(args, configs, before_round=lambda r: None):
    """{config: [Run, ...]} from --repeats rounds over all configurations, then more rounds (up to
    --max-rounds) of those with fewer than --repeats quiet runs; a configuration the benchmark
    rejects (exit 2, a usage error) is dropped after its first run. before_round(r) runs before
    round r (from 0)."""
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], 1)
    runs = {c: [] for c in configs}
    rejected = {}
    total = len(configs) * args.repeats
    done = 0
    for r in range(args.max_rounds):
        pending = [c for c in configs if c not in rejected
                   and (r < args.repeats or len(quiet_runs(args, runs[c])) < args.repeats)]
        if not pending:
            break
        before_round(r)
        if r >= args.repeats:
            total = done + len(pending)
            h.log(f"round {r + 1}: again, for fewer than {args.repeats} quiet runs: "
                  + ", ".join(name(c) for c in pending))
        for c in pending if r % 2 == 0 else list(reversed(pending)):
            run = h.launch(name(c), bench_cmd(args, c), env, overrides, max_busy=args.max_busy,
                           max_wait=args.max_wait, timeout=args.timeout)
            done += 1
            if run.returncode == 2 and not run.ok:
                rejected[c] = (run.stderr.strip().splitlines() or ["rejected"])[-1]
                h.log(f"  {name(c)}: rejected by the benchmark: {rejected[c]}")
                continue
            runs[c].append(run)
            res = run.results[0] if run.ok else {}
            h.log(f"[{done}/{total}] round {r + 1} {name(c)}: block ms {res.get('block_ms_per_step', '-')} "
                  f"wall={run.wall:.1f}s foreign_during={100 * run.foreign_busy:.0f}%")
    return runs, rejected, overrides


def measured_rows(args, runs):
    """{config: measurement dict} from its quiet runs, or all its runs if none was quiet
    (configurations without a successful run left out)."""
    out = {}
    for c, rs in runs.items():
        ok = [run for run in rs if run.ok]
        quiet = quiet_runs(args, rs)
        results = [(run, run.results[0]) for run in (quiet or ok)]
        if not results:
            continue
        blocks = [ms for _, r in results for ms in floats(r.get("block_ms_per_step", ""))]
        if not blocks:  # an executable from before block_ms_per_step: one figure per run
            blocks = [float(r["ms_per_step"]) for _, r in results]
        per_rank = list(zip(*[floats(r["rank_views_peak_mib"]) for _, r in results]))
        rss = list(zip(*[floats(r["rank_peak_rss_mib"]) for _, r in results]))
        out[c] = {"runs": len(results), "left_out": len(ok) - len(results), "all_loud": not quiet, "blocks": blocks,
                  "views_mib": [statistics.median(v) for v in per_rank],
                  "rss_mib": [statistics.median(v) for v in rss],
                  "foreign": max(run.foreign_busy for run, _ in results),
                  "steps": results[0][1].get("steps"), "warmup": results[0][1].get("warmup"),
                  "first_leaves": [int(x) for x in floats(results[0][1].get("rank_first_leaf", ""))]}
    return out


def read_csv(path):
    """(configs, measurements, rejected) from an earlier run's CSV."""
    configs, meas, rejected = [], {}, {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            c = make_config(row["model"], int(row["ranks"]), int(row["stages"]), int(row["micro_batches"]),
                            row["schedule"])
            if c.model not in MODELS:
                continue
            configs.append(c)
            if row["status"].startswith("rejected"):
                rejected[c] = row["status"][len("rejected: "):]
            elif row["block_ms"]:
                meas[c] = {"runs": int(row["runs"]), "left_out": int(row.get("runs_left_out") or 0),
                           "all_loud": row.get("all_runs_loud") == "1",
                           "blocks": [float(x) for x in row["block_ms"].split(";")],
                           "views_mib": [float(x) for x in row["rank_views_peak_mib"].split(";")],
                           "rss_mib": [float(x) for x in row["rank_peak_rss_mib"].split(";") if x],
                           "foreign": float(row["foreign_busy_max"] or 0), "steps": row["steps"],
                           "warmup": row["warmup"],
                           "first_leaves": [int(x) for x in row.get("rank_first_leaf", "").split(";") if x]}
    return configs, meas, rejected


# --- comparing -------------------------------------------------------------------------------------
def accuracy_of(predicted, measured):
    """1 - |predicted - measured| / measured: the table's accuracy of a step time."""
    return 1 - abs(predicted - measured) / measured


def compare(c, pred, m):
    """One row of facts: the prediction against the measurement (either may be missing)."""
    row = {"config": c, "pred": pred if isinstance(pred, dict) else None,
           "pred_error": pred if isinstance(pred, str) else "", "meas": m}
    if m:
        row["measured_s"] = statistics.median(m["blocks"]) / 1e3
        row["spread"] = (max(m["blocks"]) - min(m["blocks"])) / statistics.median(m["blocks"])
    p = row["pred"]
    if p and m and isinstance(p.get("bounds"), list) and m["first_leaves"]:
        # the oracle's stage boundaries against the benchmark's (Balanced<S>): like for like?
        measured = [m["first_leaves"][s] for s in range(min(c.stages, len(m["first_leaves"])))]
        row["cut_mismatch"] = list(p["bounds"][:-1]) != measured and f"oracle {p['bounds'][:-1]}, measured {measured}"
    if p and m and isinstance(p.get("time_s"), (int, float)):
        row["accuracy"] = accuracy_of(p["time_s"], row["measured_s"])
    if p and m and isinstance(p.get("stage_memory_bytes"), list) and len(p["stage_memory_bytes"]) == c.stages:
        worst, worst_rank = None, None
        for r, mib in enumerate(m["views_mib"]):
            measured = mib * 2**20
            predicted = p["stage_memory_bytes"][r % c.stages]
            err = abs(predicted - measured) / measured if measured > 0 else (0.0 if predicted == 0 else math.inf)
            if worst is None or err > worst:
                worst, worst_rank = err, r
        row["memory_error"], row["memory_error_rank"] = worst, worst_rank
    return row


def run_blocks(m):
    """Each run's blocks (the blocks are in run order, BLOCKS per run)."""
    per_run = len(m["blocks"]) // m["runs"] if m["runs"] else 0
    if per_run < 1:
        return []
    return [m["blocks"][i:i + per_run] for i in range(0, per_run * m["runs"], per_run)]


def run_medians(m):
    """The medians of each run's blocks."""
    return [statistics.median(blocks) for blocks in run_blocks(m)]


def run_spread(m):
    """(max - min) / median of the per-run medians."""
    medians = run_medians(m)
    return (max(medians) - min(medians)) / statistics.median(medians) if medians else 0.0


def order(a, b):
    """-1, 0 or 1 as a < b, a == b or a > b."""
    return (a > b) - (a < b)


def run_order(a, b):
    """The measured order of two configurations where their runs agree on it: 0 (a tie) when the
    ranges of their per-run medians overlap, so that another run could have ordered them either way."""
    ra, rb = run_medians(a["meas"]), run_medians(b["meas"])
    if not ra or not rb or (min(ra) <= max(rb) and min(rb) <= max(ra)):
        return 0
    return order(a["measured_s"], b["measured_s"])


def kendall_tau_b(x, y, compare_y=None):
    """Kendall's tau-b of two equally long sequences (None below 2 items or without variation),
    and the number of discordant pairs. compare_y(i, j) orders y's items in place of y[i] vs y[j]."""
    n, concordant, discordant, tied_x, tied_y = len(x), 0, 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = order(x[i], x[j])
            dy = compare_y(i, j) if compare_y else order(y[i], y[j])
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator > 0 else None, discordant


def miss_cause(rec, fast):
    """Why a recommendation missed, from the measurements: the runs did not order the two (a tie
    within the host's noise), or the oracle's error on one of them exceeded the margin it saw
    between them; an error where ranks outnumber the cores is time slicing (docs/oracle.md)."""
    ranks = rec["config"].ranks
    shared = (f" ({ranks} ranks on {h.CPUS} cores: the kernel's time slicing, which the play's processor sharing "
              "does not model; docs/oracle.md)") if ranks > h.CPUS else ""
    if run_order(rec, fast) == 0:
        runs_rec, runs_fast = run_medians(rec["meas"]), run_medians(fast["meas"])
        return (f"a measured tie: the two configurations' runs overlap (per-run medians {min(runs_rec):.2f}-"
                f"{max(runs_rec):.2f} ms against {min(runs_fast):.2f}-{max(runs_fast):.2f} ms), so another "
                "run could order them either way.")
    if not fast["pred"]:
        return f"the measured fastest has no prediction{shared}."
    rec_error = rec["measured_s"] / rec["pred"]["time_s"] - 1
    fast_error = fast["measured_s"] / fast["pred"]["time_s"] - 1
    margin = fast["pred"]["time_s"] / rec["pred"]["time_s"] - 1
    worse = "the recommended" if rec_error >= fast_error else "the measured fastest"
    return (f"a misprediction, not a measured tie (every run ordered them): the oracle saw the recommended "
            f"{100 * margin:.1f} % ahead, and {worse} ran further from its prediction (the recommended "
            f"{100 * rec_error:+.0f} %, the fastest {100 * fast_error:+.0f} %){shared}.")


def same_strategy(a, b):
    """Equal stages, micro-batches and (with more than one stage) schedule."""
    return a.stages == b.stages and a.micro == b.micro and (a.stages == 1 or a.schedule == b.schedule)


def judge_cases(cases, rows):
    """Per (model, P): the recommendation against the measured fastest, Kendall tau-b."""
    out = []
    for (model, p), case in cases.items():
        members = [r for r in rows if r["config"].model == model and r["config"].ranks == p and r["meas"]]
        verdict = {"model": model, "ranks": p, "case": case, "members": len(members), "tau": None,
                   "discordant": None, "pairs": 0, "hit": None, "fastest": None, "rec_row": None,
                   "tau_runs": None, "ordered_pairs": 0}
        if members:
            verdict["fastest"] = min(members, key=lambda r: r["measured_s"])
        rec = case.get("recommended")
        if rec is not None and members:
            rec_row = next((r for r in members if same_strategy(r["config"], rec)), None)
            verdict["rec_row"] = rec_row
            if rec_row:
                verdict["hit"] = rec_row["measured_s"] <= (1 + WITHIN) * verdict["fastest"]["measured_s"]
        ranked = [r for r in members if r["pred"] and isinstance(r["pred"].get("time_s"), (int, float))]
        if len(ranked) >= 2:
            predicted, measured = [r["pred"]["time_s"] for r in ranked], [r["measured_s"] for r in ranked]
            verdict["tau"], verdict["discordant"] = kendall_tau_b(predicted, measured)
            verdict["pairs"] = len(ranked) * (len(ranked) - 1) // 2
            orders = {(i, j): run_order(ranked[i], ranked[j])
                      for i in range(len(ranked)) for j in range(i + 1, len(ranked))}
            verdict["tau_runs"], _ = kendall_tau_b(predicted, measured, lambda i, j: orders[i, j])
            verdict["ordered_pairs"] = sum(o != 0 for o in orders.values())
        out.append(verdict)
    return out


# --- the noise floor ---------------------------------------------------------------------------------
# What an exact oracle would score against measurements as noisy as these. In a bootstrap world the
# truth of a configuration is its measured median and a measurement is that median over its runs drawn
# again with replacement (a run's blocks stay together: they share the host's moment). An oracle that
# predicts every truth exactly still misses each new measurement by the measurement's own error, so a
# figure it cannot reach is beyond what any oracle can be expected to reach here with this many runs.
# Only each configuration's run-to-run noise is drawn, not the host's drift between calibration and
# measurement (a common shift the exact oracle would not see either): the floor is an optimistic one.
FLOOR_DRAWS = 2000  # joint draws per case for the ranking figures (fixed seed: the report repeats)


def redrawn_medians(m):
    """Every way to draw a configuration's k runs again (k draws with replacement), as
    (probability, median of the drawn runs' blocks); one run or none: just its median."""
    runs = run_blocks(m)
    k = len(runs)
    if k < 2:
        return [(1.0, statistics.median(m["blocks"]))]
    out = []
    for draw in itertools.combinations_with_replacement(range(k), k):
        ways = math.factorial(k)
        for i in set(draw):
            ways //= math.factorial(draw.count(i))
        out.append((ways / k ** k, statistics.median([x for i in draw for x in runs[i]])))
    return out


def exact_oracle(rows, verdicts, draws=FLOOR_DRAWS, seed=1):
    """The figures of summary_lines for an oracle that knows every measured configuration's time
    (the bootstrap world above): per-configuration accuracy and chance of falling below 90 %
    enumerated exactly; per case the recommendation (the truly fastest) and Kendall tau-b against
    `draws` joint redraws of the case's measurements."""
    measured = [r for r in rows if r["meas"]]
    truth = [statistics.median(r["meas"]["blocks"]) for r in measured]
    outcomes = [redrawn_medians(r["meas"]) for r in measured]
    accuracy = [sum(p * accuracy_of(t, x) for p, x in o) for t, o in zip(truth, outcomes)]
    below = [sum(p for p, x in o if accuracy_of(t, x) < 0.9) for t, o in zip(truth, outcomes)]
    none_below = math.prod(1 - p for p in below)
    rng = random.Random(seed)
    hits, taus, cases = 0.0, [], 0
    for v in verdicts:
        members = [i for i, r in enumerate(measured)
                   if r["config"].model == v["model"] and r["config"].ranks == v["ranks"]]
        if len(members) < 2:
            continue
        cases += 1
        case_truth = [truth[i] for i in members]
        fastest = min(range(len(members)), key=lambda j: case_truth[j])
        case_outcomes = [outcomes[i] for i in members]
        case_hits, case_taus = 0, []
        for _ in range(draws):
            again = [rng.choices([x for _, x in o], weights=[p for p, _ in o])[0] for o in case_outcomes]
            case_hits += again[fastest] <= (1 + WITHIN) * min(again)
            tau, _ = kendall_tau_b(case_truth, again)
            if tau is not None:
                case_taus.append(tau)
        hits += case_hits / draws
        if case_taus:
            taus.append((v, statistics.mean(case_taus)))
    by_kind = {}
    for r, a in zip(measured, accuracy):
        by_kind.setdefault(kind(r["config"]), []).append(a)
    return {"configurations": len(measured), "mean": statistics.mean(accuracy) if accuracy else None,
            "by_kind": {k: statistics.mean(v) for k, v in by_kind.items()},
            "below": sum(below), "none_below": none_below, "hits": hits, "cases": cases,
            "tau": statistics.mean(t for _, t in taus) if taus else None, "case_taus": taus}


def floor_line(floor):
    """The noise floor as one bullet of the summary."""
    kinds = ", ".join(f"{k} {pct(floor['by_kind'][k])}" for k in ("data", "pipeline", "hybrid")
                      if k in floor["by_kind"])
    tau = "-" if floor["tau"] is None else f"{floor['tau']:.2f} (per case " + ", ".join(
        f"{v['model']} P={v['ranks']} {t:.2f}" for v, t in floor["case_taus"]) + ")"
    none = "< 0.1 %" if floor["none_below"] < 0.001 else pct(floor["none_below"])
    return (f"- **noise floor** (`exact_oracle`): an oracle that knew every configuration's time exactly would score, "
            f"against measurements as noisy as these (each configuration's runs drawn again with replacement), "
            f"mean accuracy {pct(floor['mean'])} ({kinds}); {floor['below']:.1f} configurations below 90 % expected, "
            f"none below in {none} of draws; recommendation {floor['hits']:.1f} of {floor['cases']} cases; Kendall "
            f"tau-b mean {tau}. Only the runs' own noise is drawn, not the host's drift between calibration and "
            "measurement, so no oracle can be expected to do better against measurements of this host with this "
            "many runs.")


# --- report ------------------------------------------------------------------------------------------
def ms(seconds, digits=1):
    return "-" if seconds is None else f"{1e3 * seconds:,.{digits}f}"


def size_text(nbytes):
    return f"{nbytes / 2**20:.2f} MiB" if nbytes >= 2**20 else f"{nbytes / 1024:.1f} KiB"


def pct(x, digits=1):
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{100 * x:.{digits}f} %"


def strategy_text(c):
    return f"{kind(c)} {c.stages}x{replicas(c)}" + ("" if c.stages == 1 else f" {c.schedule}") + f" M={c.micro}"


def mean(values):
    values = [v for v in values if v is not None and not math.isinf(v)]
    return statistics.mean(values) if values else None


def config_table(rows, added):
    out = []
    for r in rows:
        c, p = r["config"], r["pred"] or {}
        digits = 2 if c.model in ("mlp", "cnn") else 1
        part = (lambda key: ms(p.get(key), digits) if isinstance(p.get(key), (int, float)) else "-")
        pred_mem = max(p["stage_memory_bytes"]) / 2**20 if p.get("stage_memory_bytes") else None
        meas_mem = max(r["meas"]["views_mib"]) if r["meas"] else None
        acc = r.get("accuracy")
        out.append([c.model, c.ranks, f"{c.stages} x {replicas(c)}", c.schedule,
                    f"{c.micro} †" if c in added else c.micro, part("time_s"),
                    part("compute_s"), part("bubble_s"), part("transfer_s"), part("reduction_s"), part("other_s"),
                    ms(r.get("measured_s"), digits) + (" ‡" if r["meas"] and r["meas"]["all_loud"] else ""),
                    pct(r.get("spread"), 0),
                    ("**" + pct(acc) + "**") if acc is not None and acc < 0.9 else pct(acc),
                    f"{h.fmt(pred_mem, 1)} / {h.fmt(meas_mem, 1)}", pct(r.get("memory_error"))])
    return h.markdown_table(["model", "P", "S x R", "schedule", "M", "predicted ms", "compute", "bubble", "transfer",
                             "reduction", "other", "measured ms (median)", "block spread", "accuracy",
                             "peak MiB predicted / measured", "memory error"], out, "lrllrrrrrrrrrrrr")


def case_table(verdicts):
    out = []
    for v in verdicts:
        case, rec = v["case"], v["case"].get("recommended")
        rec_row, fastest = v["rec_row"], v["fastest"]
        if case.get("error"):
            rec_text = f"(oracle: {case['error']})"
        elif rec is None:
            rec_text = "-"
        else:
            rec_text = strategy_text(rec) + (" (not measurable here)" if case.get("unmeasurable") else "") + \
                (" (added)" if case.get("added") else "")
        hit = "-" if v["hit"] is None else ("yes" if v["hit"] else "**no**")
        out.append([v["model"], v["ranks"], MODELS[v["model"]][0], v["members"], rec_text,
                    ms(rec_row["pred"]["time_s"] if rec_row and rec_row["pred"] else None),
                    ms(rec_row["measured_s"] if rec_row else None),
                    strategy_text(fastest["config"]) if fastest else "-",
                    ms(fastest["measured_s"] if fastest else None),
                    hit, "-" if v["tau"] is None else f"{v['tau']:.2f}",
                    f"{v['discordant']} / {v['pairs']}" if v["pairs"] else "-", case.get("reason", "") or "-"])
    return h.markdown_table(["model", "P", "batch", "measured configs", "recommended", "its predicted ms",
                             "its measured ms", "measured fastest", "fastest ms", "within 5 %", "Kendall tau-b",
                             "discordant pairs", "oracle's reason"], out, "lrrrlrrlrlrrl")


def summary_lines(args, rows, verdicts, rejected, oracle_times):
    out = []
    acc = [r for r in rows if r.get("accuracy") is not None]

    def mean_of(which):
        values = [r["accuracy"] for r in acc if which in (None, kind(r["config"]))]
        return f"{pct(statistics.mean(values))} ({len(values)})" if values else "- (0)"

    out.append(f"- **mean accuracy {mean_of(None)}** (configurations in parentheses); data parallel "
               f"**{mean_of('data')}**, pipeline {mean_of('pipeline')}, hybrid {mean_of('hybrid')}.")
    if acc:
        low = min(acc, key=lambda r: r["accuracy"])
        below = [r for r in acc if r["accuracy"] < 0.9]
        out.append(f"- minimum accuracy {pct(low['accuracy'])} ({name(low['config'])}: predicted "
                   f"{ms(low['pred']['time_s'], 2)} ms, measured {ms(low['measured_s'], 2)} ms); "
                   f"**{len(below)} below 90 %**" + (": " + ", ".join(
                       f"{name(r['config'])} ({pct(r['accuracy'], 0)})" for r in below) if below else "") + ".")
        over = [r for r in acc if r["accuracy"] < 0.95]
        out.append(f"- {len(over)} of {len(acc)} configurations below 95 %.")
        cores = h.CPUS
        crowded = [r for r in acc if r["config"].ranks > cores]
        fitting = [r for r in acc if r["config"].ranks <= cores]
        if crowded and fitting:
            out.append(f"- by whether the ranks fit the machine's {cores} cores: mean accuracy "
                       f"{pct(statistics.mean(r['accuracy'] for r in fitting))} over {len(fitting)} configurations "
                       f"with at most {cores} ranks ({sum(r['accuracy'] < 0.9 for r in fitting)} below 90 %), "
                       f"{pct(statistics.mean(r['accuracy'] for r in crowded))} over {len(crowded)} with more "
                       f"({sum(r['accuracy'] < 0.9 for r in crowded)} below 90 %): the kernel time-slices ranks that "
                       "outnumber the cores (turns of milliseconds, cold caches, collectives waiting for the rank "
                       "with the last turn), which the oracle's processor sharing does not model (docs/oracle.md).")
    mem = [r for r in rows if r.get("memory_error") is not None]
    if mem:
        worst = max(mem, key=lambda r: r["memory_error"])
        rank = worst["memory_error_rank"]
        wc = worst["config"]
        over = [r for r in mem if r["memory_error"] > 0.10]
        out.append(f"- memory: **worst error {pct(worst['memory_error'])}** ({name(wc)}, rank {rank}: predicted "
                   f"{size_text(worst['pred']['stage_memory_bytes'][rank % wc.stages])}, measured "
                   f"{size_text(worst['meas']['views_mib'][rank] * 2**20)}); mean of the worst-rank errors "
                   f"{pct(mean([r['memory_error'] for r in mem]))}; {len(over)} of {len(mem)} configurations over "
                   "10 %" + (": " + ", ".join(f"{name(r['config'])} ({pct(r['memory_error'], 0)})" for r in over)
                             if over else "") + ".")
        if over:
            gaps = [abs(r["meas"]["views_mib"][r["memory_error_rank"]] * 2**20 -
                        r["pred"]["stage_memory_bytes"][r["memory_error_rank"] % r["config"].stages]) for r in over]
            out.append(f"  - those are stages of a few KiB; the largest gap among them is {size_text(max(gaps))}: small "
                       "fixed buffers (empty views' bookkeeping, per-tensor padding) the model does not count.")
    judged = [v for v in verdicts if v["hit"] is not None]
    hits = sum(v["hit"] for v in judged)
    tied = sum(1 for v in judged if not v["hit"] and run_order(v["rec_row"], v["fastest"]) == 0)
    out.append(f"- recommendation: **{hits} of {len(judged)} cases** the measured fastest or within 5 % of it"
               + (f" ({len(verdicts) - len(judged)} cases without a verdict)" if len(judged) < len(verdicts) else "")
               + (f"; {hits + tied} of {len(judged)} counting the misses whose runs overlap the fastest's (measured "
                  "ties, below)" if tied else "") + ".")
    taus = [v["tau"] for v in verdicts if v["tau"] is not None]
    out.append("- ranking: Kendall tau-b per case " + ", ".join(
        f"{v['model']} P={v['ranks']} {v['tau']:.2f}" for v in verdicts if v["tau"] is not None)
        + (f"; **mean {statistics.mean(taus):.2f}**, minimum {min(taus):.2f}." if taus else " -"))
    resolved = [v for v in verdicts if v["tau_runs"] is not None]
    if resolved:
        pairs, ordered = sum(v["pairs"] for v in verdicts), sum(v["ordered_pairs"] for v in verdicts)
        out.append("  - counting as measured ties the pairs whose runs disagree (the ranges of their per-run medians "
                   f"overlap: {pairs - ordered} of {pairs} pairs, whose order the next run could reverse): tau-b per "
                   "case " + ", ".join(f"{v['model']} P={v['ranks']} {v['tau_runs']:.2f}" for v in resolved)
                   + f"; mean {statistics.mean(v['tau_runs'] for v in resolved):.2f}, minimum "
                   f"{min(v['tau_runs'] for v in resolved):.2f}" + (
                       f" ({len(verdicts) - len(resolved)} case(s) without a pair the runs order)"
                       if len(resolved) < len([v for v in verdicts if v["tau"] is not None]) else "") + ".")
    misses = [v for v in verdicts if v["hit"] is False]
    for v in misses:
        rec, fast = v["rec_row"], v["fastest"]
        out.append(f"  - miss {v['model']} P={v['ranks']}: recommended {strategy_text(rec['config'])} predicted "
                   f"{ms(rec['pred']['time_s'], 2)} ms, measured {ms(rec['measured_s'], 2)} ms "
                   f"({100 * (rec['measured_s'] / fast['measured_s'] - 1):.0f} % slower); measured fastest "
                   f"{strategy_text(fast['config'])} predicted "
                   f"{ms(fast['pred']['time_s'], 2) if fast['pred'] else '-'} ms, measured "
                   f"{ms(fast['measured_s'], 2)} ms; oracle's reason: {v['case'].get('reason') or '-'}. "
                   f"Cause: {miss_cause(rec, fast)}")
    out.append(floor_line(exact_oracle(rows, verdicts)))
    failed = [r for r in rows if not r["pred"]]
    if failed:
        out.append("- no prediction: " + "; ".join(f"{name(r['config'])} ({r['pred_error']})" for r in failed) + ".")
    unmeasured = [r for r in rows if not r["meas"] and r["config"] not in rejected]
    if unmeasured:
        what = "- not measured (not in the CSV): " if args.from_csv else "- no successful run: "
        out.append(what + ", ".join(name(r["config"]) for r in unmeasured) + ".")
    if rejected:
        out.append("- rejected by the benchmark (skipped): " + "; ".join(
            f"{name(c)} ({why})" for c, why in rejected.items()) + ".")
    spreads = sorted(r["spread"] for r in rows if r.get("spread") is not None)
    if spreads:
        noisiest = max((r for r in rows if r.get("spread") is not None), key=lambda r: r["spread"])
        text = (f"- noise: block spread ((max - min) / median of a configuration's timed blocks) median "
                f"{pct(statistics.median(spreads), 0)}, at most {pct(spreads[-1], 0)} ({name(noisiest['config'])})")
        between = sorted(run_spread(r["meas"]) for r in rows if r["meas"] and r["meas"]["runs"] > 1)
        if between:
            text += (f"; between runs ((max - min) / median of the runs' own medians) median "
                     f"{pct(statistics.median(between), 0)}, at most {pct(between[-1], 0)}")
        out.append(text + ".")
    mismatched = [r for r in rows if r.get("cut_mismatch")]
    if mismatched:
        out.append("- **stage boundaries differ** (oracle's `bounds` against the benchmark's first leaf per stage): "
                   + "; ".join(f"{name(r['config'])}: {r['cut_mismatch']}" for r in mismatched) + ".")
    if args.query_us:
        out.append(f"- oracle's own time per `rank` query (`query_us`): median {statistics.median(args.query_us):.0f} "
                   f"us, at most {max(args.query_us):.0f} us.")
    if oracle_times:
        out.append(f"- oracle queries: {len(oracle_times)}, {1e3 * statistics.median(oracle_times):.1f} ms median each "
                   "including the process start.")
    return out


def profile_text(path):
    profile = h.read_profile(path)
    if not profile:
        return f"`{h.repo_relative(path, ROOT)}`"
    host = h.profile_host(profile)
    return (f"`{h.repo_relative(path, ROOT)}` (label `{profile.get('label', '?')}`, created "
            f"{profile.get('created', '?')}" + (f", measured on: {host}" if host else "") + ")")


def report(args, rows, verdicts, rejected, overrides, runs, oracle_times):
    title = "Performance oracle: predicted against measured step time and memory, recommendation"
    out = [f"## {title}" + ("" if args.label == "local" else f" ({args.label})"), ""]
    # When, where and at which commit: from the CSV's record, never from the section this replaces.
    out += [provenance.line(args.data, args.provenance), ""]
    if args.from_csv:
        out.append(f"Predictions against the measurements in `{h.repo_relative(args.from_csv, ROOT)}` (`--from-csv`; "
                   "nothing was measured again: the provenance line's 'priced again').")
    else:
        out.append(f"Measured by `benchmarks/oracle/run_oracle_accuracy.py` with "
                   f"`{h.repo_relative(args.hpf_shown, ROOT)}` built {args.built}. Wall time of the run: "
                   f"{args.minutes:.0f} min.")
    out.append("")
    out.append(f"Oracle: `{h.repo_relative(args.oracle_shown, ROOT)}` built {args.oracle_built}, machine profile "
               f"{profile_text(args.profile)}.")
    if args.precision != "float":
        out.append(f"Every run, calibration and query with {args.precision} products (`--precision {args.precision}`: "
                   "hpf::Mixed<hpf::bf16>'s NetworkOptions::matmul_precision).")
    calibrated = args.calibrated
    if calibrated:
        rounds = len(next(iter(calibrated.values())))
        out.append(f"Its compute part was calibrated by this run before each of its {rounds} rounds of measurements, "
                   "and the profile holds the median of those calibrations, value by value "
                   "(`--calibrate`: "
                   "`hpf-oracle calibrate --model M`, with the runs' BLAS setting and one thread); one calibration "
                   "took " + ", ".join(f"{m} {'/'.join(f'{t:.1f}' for t in ts)} s" for m, ts in calibrated.items())
                   + f" ({sum(max(ts) for ts in calibrated.values()):.0f} s at most).")
    if args.drift:
        out.append("Calibrated again after the measurements, into a copy (how far the host drifted during the run): "
                   + ", ".join(f"{name(c)} {ms(before, 2)} ms before, {ms(after, 2)} ms after "
                               f"({100 * (after / before - 1):+.1f} %)" for c, before, after in args.drift.values())
                   + ".")
    out.append("")
    counts = sorted({r["meas"]["runs"] for r in rows if r["meas"]})
    used = "-".join(str(n) for n in sorted({counts[0], counts[-1]})) if counts else "0"
    times = f"{args.repeats} time{'s' if args.repeats > 1 else ''}"
    if args.from_csv:
        rounds = "The CSV's runs: round-robin over all configurations, order reversed every other round"
    elif args.quiet >= 1:
        rounds = (f"Every configuration ran {times}, round-robin with all the others, order reversed every other "
                  "round (every run counts: --quiet >= 1)")
    else:
        rounds = (f"Every configuration ran {times}, round-robin with all the others, order reversed every other "
                  f"round, and again in up to {args.max_rounds - args.repeats} more rounds while it had "
                  f"fewer than {args.repeats} quiet runs (other processes under {100 * args.quiet:.0f} % of the "
                  "machine during the run)")
    out.append(f"{rounds}; each run {BLOCKS} timed blocks after warm-up steps. **Measured = median over all timed "
               f"blocks of a configuration's quiet runs** ({used} runs each; of all its runs where none was quiet, "
               "marked ‡); block spread = (max - min) / median of those "
               f"blocks. Every process runs one thread, {h.BLAS_SETTINGS[args.setting][1]}, ranks under mpiexec "
               "(Kokkos Serial, Open MPI); "
               f"{max(args.rank_counts)} ranks on {h.CPUS} cores share them. Global batch per model (every "
               "strategy of a model trains the same samples per step): " + ", ".join(
                   f"{m} {MODELS[m][0]}" for m in args.models) + ". S x R = stages x replicas (stages by "
               "`Balanced<S>`); data parallelism with M > 1 accumulates M micro-batches. Predicted peak = the "
               "largest of `stage_memory_bytes`; measured peak = the largest rank's Kokkos views peak "
               "(`rank_views_peak_mib`); memory error = the worst rank's |predicted - measured| / measured of "
               "its own stage.")
    out.append("")
    if not args.from_csv:
        all_runs = [run for rs in runs.values() for run in rs]
        if all_runs:
            foreign = [r.foreign_busy for r in all_runs]
            quiet = sum(r.foreign_busy < args.quiet for r in all_runs)
            left_out = sum(m["left_out"] for m in (r["meas"] for r in rows) if m)
            out.append(f"**Machine load**: {len(all_runs)} runs, {quiet} quiet, {left_out} loud runs left out; other "
                       "processes used a median "
                       f"{100 * statistics.median(foreign):.0f} % and at most {100 * max(foreign):.0f} % during a run. "
                       f"Load average at the start {args.load_start}, at the end {args.load_end}.")
            out.append("")
    out.append(config_table(rows, args.added))
    out.append("")
    if any(r["config"] in args.added for r in rows):
        out.append("† not in the list: `hpf-oracle rank` recommends it, so it was measured too"
                   + (" (not with --from-csv: the CSV has no measurement of it)." if args.from_csv else "."))
        out.append("")
    out.append(f"Recommendation and ranking per (model, P) case (`hpf-oracle rank`; a hit = measured at most "
               f"{100 * WITHIN:.0f} % above the measured fastest of the case; tau-b over the case's measured "
               "configurations):")
    out.append("")
    out.append(case_table(verdicts))
    out.append("")
    out += summary_lines(args, rows, verdicts, rejected, oracle_times)
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these, with these variables "
               "set):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--oracle", "--results", "--csv"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/oracle/run_oracle_accuracy.py"]
                        + [shlex.quote(o) for o in options]))
    oracle = h.repo_relative(args.oracle_shown, ROOT)
    profile = h.repo_relative(args.profile, ROOT)
    for model in calibrated:
        out.append(h.command_text([oracle, "calibrate", "--model", model, "--profile", profile] + h.precision_words(args),
                                  overrides))
    out.append(f"{oracle} predict --model M --ranks P --batch B --stages S --micro-batches M --schedule X "
               f"--profile {profile} --json{' '.join([''] + h.precision_words(args))}   # per configuration")
    for v in verdicts:
        out.append(h.command_text([oracle] + rank_words(v["model"], v["ranks"]) + ["--profile", profile, "--json"]
                                  + h.precision_words(args)))
    out.append("```")
    out.append("")
    if not args.from_csv:
        out.append(f"<details><summary>the {sum(1 for r in rows if runs.get(r['config']))} benchmark "
                   "commands</summary>")
        out.append("")
        out.append("```sh")
        for r in rows:
            c = r["config"]
            if runs.get(c):
                out.append(h.command_text([h.repo_relative(x, ROOT) for x in bench_cmd(args, c, args.hpf_shown)],
                                          overrides))
        out.append("```")
        out.append("")
        out.append("</details>")
        out.append("")
    out.append(f"Every row: `{h.repo_relative(args.csv, ROOT)}`.")
    return "\n".join(out) + "\n"


def write_csv(args, rows, rejected):
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            c, p, m = r["config"], r["pred"] or {}, r["meas"]
            number = (lambda key: f"{1e3 * p[key]:.4f}" if isinstance(p.get(key), (int, float)) else "")
            w.writerow({
                "label": args.label, "model": c.model, "ranks": c.ranks, "stages": c.stages, "replicas": replicas(c),
                "batch": batch(c), "micro_batches": c.micro, "schedule": c.schedule, "kind": kind(c),
                "recommended_only": int(c in args.added), "steps": m["steps"] if m else "",
                "warmup": m["warmup"] if m else "", "runs": m["runs"] if m else 0,
                "runs_left_out": m["left_out"] if m else "", "all_runs_loud": int(m["all_loud"]) if m else "",
                "blocks": len(m["blocks"]) if m else 0,
                "measured_ms": f"{1e3 * r['measured_s']:.4f}" if m else "",
                "measured_min_ms": f"{min(m['blocks']):.4f}" if m else "",
                "measured_max_ms": f"{max(m['blocks']):.4f}" if m else "",
                "block_ms": ";".join(f"{x:.3f}" for x in m["blocks"]) if m else "",
                "rank_views_peak_mib": ";".join(f"{x:.4f}" for x in m["views_mib"]) if m else "",
                "rank_peak_rss_mib": ";".join(f"{x:.1f}" for x in m["rss_mib"]) if m else "",
                "rank_first_leaf": ";".join(map(str, m["first_leaves"])) if m else "",
                "foreign_busy_max": f"{m['foreign']:.3f}" if m else "",
                "predicted_ms": number("time_s"), "compute_ms": number("compute_s"), "bubble_ms": number("bubble_s"),
                "transfer_ms": number("transfer_s"), "reduction_ms": number("reduction_s"),
                "other_ms": number("other_s"),
                "predicted_stage_memory_mib": ";".join(f"{b / 2**20:.4f}" for b in p.get("stage_memory_bytes") or []),
                "fits": "" if "fits" not in p else int(bool(p["fits"])),
                "accuracy": f"{r['accuracy']:.4f}" if r.get("accuracy") is not None else "",
                "memory_error": f"{r['memory_error']:.4f}" if r.get("memory_error") is not None else "",
                "memory_error_rank": r.get("memory_error_rank", ""),
                "status": (f"rejected: {rejected[c]}" if c in rejected else "ok" if m else "failed")
                + ("" if r["pred"] else f"; no prediction: {r['pred_error']}"),
            })
    h.log(f"wrote {args.csv}")


INDEX_ROW = ("| performance oracle: predicted vs measured step time and per-rank memory, recommendation and ranking "
             "(`oracle`, `oracle-LABEL` per fabric) | `benchmarks/oracle/run_oracle_accuracy.py` | – |")


def register_index(path):
    """Adds the oracle's row to the index table at the top of RESULTS.md if it is missing."""
    if not os.path.exists(path):
        return
    lines = open(path).read().split("\n")
    if any("benchmarks/oracle/run_oracle_accuracy.py" in line for line in lines[:60]):
        return
    header = next((i for i, line in enumerate(lines) if line.startswith("| section |")), None)
    if header is None:
        return
    end = header
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    lines.insert(end + 1, INDEX_ROW)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # remove the snapshots on `kill` too
    args = parse_args()
    args.provenance = provenance.start("benchmarks/oracle/run_oracle_accuracy.py")  # as the run begins
    args.query_us = []
    args.oracle_built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.oracle)))
    args.oracle_shown, args.oracle = args.oracle, snapshot(args.oracle)
    args.load_start = h.load_average()
    args.calibrated = {}  # {model: [seconds per calibration]} with --calibrate
    args.drift = {}  # with --calibrate: recalibrate()'s
    start = time.monotonic()
    try:
        if args.from_csv:
            configs, meas, rejected = read_csv(args.from_csv)
            configs = [c for c in configs if c.model in args.models and c.ranks in args.rank_counts]
            args.models = [m for m in args.models if any(c.model == m for c in configs)]
            args.rank_counts = sorted({c.ranks for c in configs})
            known = set(configs)
            predictions, cases, oracle_times = ask_oracle(args, configs)
            args.added = set(configs) - known  # recommended, never measured: reported as such
            runs, overrides = {}, {}
        else:
            args.hpf_shown = args.hpf
            args.built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.hpf)))
            args.hpf = snapshot(args.hpf)
            h.log(f"machine: {h.machine_description()}")
            if args.calibrate:
                args.calibrated = {model: [seconds] for model, seconds in calibrate(args).items()}
            configs = configurations(args)
            known = set(configs)
            predictions, cases, oracle_times = ask_oracle(args, configs)
            args.added = set(configs) - known
            if args.added:
                h.log("measured too, as the oracle recommends them: " + ", ".join(name(c) for c in args.added))
            h.log(f"{len(configs)} configurations x {args.repeats} runs")
            try:
                runs, rejected, overrides = calibrate_in_rounds(args, lambda before: measure(args, configs, before))
            finally:
                shutil.rmtree(os.path.dirname(args.hpf), ignore_errors=True)
            meas = measured_rows(args, runs)
            if args.calibrate:
                # Asked again from the rounds' median calibration (what to measure came from the first).
                predictions, cases, oracle_times = ask_oracle(args, list(configs))
                args.drift = recalibrate(args, configs, predictions)
    finally:
        shutil.rmtree(os.path.dirname(args.oracle), ignore_errors=True)
    args.minutes = (time.monotonic() - start) / 60
    args.load_end = h.load_average()
    rows = [compare(c, predictions.get(c, "not asked"), meas.get(c)) for c in configs if c not in rejected]
    rows += [compare(c, predictions.get(c, "not asked"), None) for c in configs if c in rejected]
    order = {m: i for i, m in enumerate(MODELS)}
    rows.sort(key=lambda r: (order[r["config"].model], r["config"].ranks, r["config"].stages,
                             r["config"].schedule, r["config"].micro))
    verdicts = judge_cases(cases, [r for r in rows if r["config"] not in rejected])
    if args.from_csv:
        # The measurements' record, this run as their pricing (the CSV's predicted columns are its).
        args.provenance = dict(provenance.read(args.from_csv),
                               priced=dict(args.provenance, measured_at=provenance.now()))
    else:
        args.provenance["measured_at"] = provenance.now()
    written = not args.no_write or args.csv_given
    args.data = args.csv if written else (args.from_csv or args.csv)  # the file whose record the block states
    text = report(args, [r for r in rows if r["config"] not in rejected], verdicts, rejected, overrides, runs,
                  oracle_times)
    if not args.no_write or args.csv_given:
        write_csv(args, rows, rejected)
        provenance.write(args.csv, args.provenance)
        if args.calibrate:  # the profile's compute part is this run's
            provenance.write(args.profile, args.provenance)
    failed = [name(r["config"]) for r in rows if r["config"] not in rejected and (not r["meas"] or not r["pred"])]
    status = h.publish(args, args.section, text, failed)
    if not args.no_write:
        register_index(args.results)
    return status


if __name__ == "__main__":
    sys.exit(main())
