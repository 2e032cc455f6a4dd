#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hpf against PyTorch on two ranks of this machine, in the same run: data-parallel scaling
(MLP, ResNet-20; PyTorch DDP over gloo), pipeline efficiency over micro-batch counts (ResNet-20,
ResNet-56 in two stages; PyTorch: a two-process gloo isend/recv pipeline), each stage's balance,
and per-stage peak memory under GPipe and 1F1B. Prints the tables and writes the `parallel`
section of benchmarks/RESULTS.md.

  /usr/bin/python3 benchmarks/compare_parallel.py                       # everything (~20 min)
  /usr/bin/python3 benchmarks/compare_parallel.py --parts dp --rounds 1 --no-write
  # against an earlier revision REV, run as a third side in the same rounds:
  git worktree add --detach ../hpf-REV REV && cmake -S ../hpf-REV -B ../hpf-REV/build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DHPF_ENABLE_TESTS=OFF && cmake --build ../hpf-REV/build --target hpf_bench_parallel_throughput
  /usr/bin/python3 benchmarks/compare_parallel.py --baseline ../hpf-REV/build/benchmarks/hpf_bench_parallel_throughput --baseline-revision REV
  cmake --build build --target hpf_benchmarks_parallel                  # the same, from the build

Every process runs one thread (OMP/OpenBLAS/MKL pools pinned to 1) with OPENBLAS_CORETYPE set
explicitly and identically for both sides (default Haswell: the machine's own setting); PyTorch
gets GLOO_SOCKET_IFNAME=lo. hpf ranks start under mpiexec (not bound to cores, like PyTorch's
processes). Jobs run alternately, each in its own processes, at least --rounds times, and more
(up to --max-rounds) until each had --min-quiet quiet runs; each figure is its job's best run
(the machine is a noisy shared VM, and noise only slows a run down). Before each run the runner
waits until /proc/stat shows the machine nearly idle (both cores are needed) or gives up after
--max-wait; during each run it records how busy other processes kept the machine.

Definitions (same per-rank batch / same global batch on both sides):
  scaling efficiency  = images/s on 2 ranks / (2 x images/s on 1 rank), batch per rank fixed
  pipeline efficiency = images/s of the 2-stage pipeline / (2 x images/s of the whole model in
                        one process at the same global batch, M = 1); ideal M / (M + S - 1)
Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402
from compare_single_process import snapshot  # noqa: E402

SECTION = "parallel"
STAGES = 2
# Per-rank batch and (steps per block, warm-up steps, blocks) of the data-parallel runs.
DP_MODELS = {"mlp": (128, 50, 10, 3), "resnet20": (64, 4, 2, 3)}
# (steps per block, warm-up steps, blocks) of the pipeline and memory runs (global batch --batch).
PIPE_STEPS = {"resnet20": (4, 2, 3), "resnet56": (2, 1, 3)}
# Cut leaves hpf_bench_parallel_throughput compiles (--cut): ResNet block boundaries around the one
# Balanced<2> picks from FLOPs (the last of each list). The runner measures each stage's busy time
# at every candidate and also runs the pipelines at the cut whose slower stage is fastest.
CUTS = {"resnet20": (21, 28), "resnet56": (64, 70, 76, 82)}
PROBE_MICRO = 8
FRAMEWORKS = ("hpf", "pytorch")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_parallel_throughput"),
                   help="the hpf_bench_parallel_throughput executable (default: build/benchmarks/...)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    p.add_argument("--mpiexec", default="mpiexec", help="MPI launcher (default: mpiexec on PATH)")
    p.add_argument("--mpiexec-flags", default="--allow-run-as-root --oversubscribe --bind-to none",
                   help="launcher flags before -n (default: %(default)s)")
    p.add_argument("--parts", default="dp,pipeline,memory", help="comma-separated subset of dp,pipeline,memory")
    p.add_argument("--setting", default="haswell", choices=list(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting for every process (default haswell: the machine's own)")
    p.add_argument("--pipeline-models", default="resnet20,resnet56")
    p.add_argument("--micro-batches", default="1,2,4,8,16", help="pipeline micro-batch counts M")
    p.add_argument("--batch", type=int, default=64, help="global batch of the pipeline runs (default 64)")
    p.add_argument("--no-micro-baselines", action="store_true",
                   help="skip the one-process runs at M > 1 (gradient accumulation) that split the pipeline "
                        "efficiency into micro-batch cost and pipelining")
    p.add_argument("--memory-model", default="resnet56", choices=list(PIPE_STEPS))
    p.add_argument("--memory-micro-batches", default="4,8,16")
    p.add_argument("--rounds", type=int, default=3, help="alternating runs per pipeline job at least (best is kept)")
    p.add_argument("--dp-rounds", type=int, default=3, help="alternating runs per data-parallel job at least")
    p.add_argument("--max-rounds", type=int, default=4,
                   help="more rounds, up to this many, until each job has --min-quiet quiet runs")
    p.add_argument("--quiet", type=float, default=0.15,
                   help="a run is quiet if other processes kept less than this fraction of the machine busy")
    p.add_argument("--min-quiet", type=int, default=1, help="quiet runs wanted per job (default 1)")
    p.add_argument("--max-busy", type=float, default=0.2,
                   help="wait before each run until less than this fraction of all CPUs is busy (default 0.2)")
    p.add_argument("--max-wait", type=float, default=15.0, help="give up waiting after this many seconds (then run)")
    p.add_argument("--baseline", default="",
                   help="an hpf_bench_parallel_throughput built from an earlier revision: its data-parallel and "
                        "pipeline jobs run alternately with the others, and a table compares hpf now against it")
    p.add_argument("--baseline-revision", default="", help="the revision --baseline was built from (shown)")
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.parts = [x for x in args.parts.split(",") if x]
    args.pipeline_models = [x for x in args.pipeline_models.split(",") if x]
    args.micro = [int(x) for x in args.micro_batches.split(",") if x]
    args.memory_micro = [int(x) for x in args.memory_micro_batches.split(",") if x]
    for part in args.parts:
        if part not in ("dp", "pipeline", "memory"):
            p.error(f"unknown part '{part}'")
    for model in args.pipeline_models:
        if model not in PIPE_STEPS:
            p.error(f"unknown pipeline model '{model}' (known: {', '.join(PIPE_STEPS)})")
    if any(m < 1 or args.batch // m < 1 for m in args.micro + args.memory_micro):
        p.error("every micro-batch count must be between 1 and --batch")
    if not os.access(args.hpf, os.X_OK):
        p.error(f"{args.hpf} is not an executable: build it first "
                "(cmake --build build --target hpf_bench_parallel_throughput)")
    if args.baseline and not os.access(args.baseline, os.X_OK):
        p.error(f"--baseline {args.baseline} is not an executable")
    if not shutil.which(args.mpiexec):
        p.error(f"no MPI launcher '{args.mpiexec}'")
    return args


# --- commands ----------------------------------------------------------------------------------
def hpf_cmd(args, ranks, model, stages, batch, micro=1, schedule="1f1b", steps=(1, 1, 1), extra=(), exe=None):
    """mpiexec ... hpf_bench_parallel_throughput (or `exe`, such as the baseline) with these settings."""
    s, w, r = steps
    return ([args.mpiexec] + args.mpiexec_flags.split() + ["-n", str(ranks), exe or args.hpf, "--model", model,
                                                            "--stages", str(stages), "--batch", str(batch),
                                                            "--micro-batches", str(micro), "--schedule", schedule,
                                                            "--steps", str(s), "--warmup", str(w), "--repeats", str(r)]
            + list(extra))


def ddp_cmd(args, procs, model, batch, steps):
    s, w, r = steps
    return [args.python, os.path.join(HERE, "pytorch_ddp.py"), "--model", model, "--nprocs", str(procs),
            "--batch", str(batch), "--steps", str(s), "--warmup", str(w), "--repeats", str(r)]


def pipe_cmd(args, model, stages, micro=1, schedule="gpipe", steps=(1, 1, 1), extra=()):
    s, w, r = steps
    return [args.python, os.path.join(HERE, "pytorch_pipeline.py"), "--model", model, "--stages", str(stages),
            "--batch", str(args.batch), "--micro-batches", str(micro), "--schedule", schedule,
            "--steps", str(s), "--warmup", str(w), "--repeats", str(r)] + list(extra)


def dp_groups(args, env):
    """{"dp model": jobs}: 1 and 2 ranks of each framework, and hpf with MPI_Iallreduce."""
    groups = {}
    for model, (batch, *steps) in DP_MODELS.items():
        groups[f"dp {model}"] = [
            ("hpf 1", hpf_cmd(args, 1, model, 1, batch, steps=steps), *env),
            ("pytorch 1", ddp_cmd(args, 1, model, batch, steps), *env),
            ("hpf 2", hpf_cmd(args, 2, model, 1, 2 * batch, steps=steps, extra=["--stage-times"]), *env),
            ("pytorch 2", ddp_cmd(args, 2, model, batch, steps), *env),
            ("hpf 2 allreduce", hpf_cmd(args, 2, model, 1, 2 * batch, steps=steps,
                                        extra=["--stage-times", "--reduction", "allreduce"]), *env),
        ]
        if args.baseline:
            groups[f"dp {model}"] += [
                ("baseline 1", hpf_cmd(args, 1, model, 1, batch, steps=steps, exe=args.baseline), *env),
                ("baseline 2", hpf_cmd(args, 2, model, 1, 2 * batch, steps=steps, extra=["--stage-times"],
                                       exe=args.baseline), *env),
            ]
    return groups


def probe_groups(args, env):
    """{"cuts model": jobs}: hpf's pipeline at every compiled cut, M = PROBE_MICRO, stage times on."""
    return {f"cuts {model}": [(f"hpf cut={leaf}", hpf_cmd(args, 2, model, 2, args.batch, PROBE_MICRO, "1f1b",
                                                           PIPE_STEPS[model], ["--stage-times", "--cut", str(leaf)]),
                               *env) for leaf in CUTS[model]]
            for model in args.pipeline_models}


def imbalance(r):
    """max / mean of the ranks' busy times (1 = perfectly balanced), or None."""
    busy = per_rank(r, "rank_busy_ms")
    return max(busy) / (sum(busy) / len(busy)) if busy and min(busy) > 0 else None


def timed_cut(data, model, quiet, margin=0.03):
    """The probed cut whose stages were busiest most evenly (the slower stage is then fastest: every
    cut does the same total work), judged on its fastest quiet run (else its fastest run); it
    replaces Balanced<2>'s cut only if more than `margin` better (noise). None if no probe succeeded."""
    ratios = {}
    for leaf in CUTS[model]:
        runs = data.get(f"cuts {model}", {}).get(f"hpf cut={leaf}", [])
        quiet_runs = [r for r in runs if r.ok and r.foreign_busy < quiet]
        value = imbalance(h.best(quiet_runs or runs)[1])
        if value is not None:
            ratios[leaf] = value
    if not ratios:
        return None
    leaf, balanced = min(ratios, key=ratios.get), CUTS[model][-1]
    return leaf if balanced not in ratios or ratios[leaf] < (1 - margin) * ratios[balanced] else balanced


def pipeline_groups(args, env, cuts):
    """{"pipe model": jobs}: the whole model in one process (M = 1) and the 2-stage pipelines at
    every M (hpf: its default 1F1B at Balanced<2>, and at the time-balanced cut `cuts[model]` when
    that differs; PyTorch: GPipe, the reference's)."""
    groups = {}
    for model in args.pipeline_models:
        steps = PIPE_STEPS[model]
        jobs = [("hpf whole", hpf_cmd(args, 1, model, 1, args.batch, steps=steps), *env),
                ("pytorch whole", pipe_cmd(args, model, 1, steps=steps), *env)]
        for m in args.micro:
            jobs.append((f"hpf M={m}", hpf_cmd(args, 2, model, 2, args.batch, m, "1f1b", steps, ["--stage-times"]),
                         *env))
            if cuts.get(model):
                jobs.append((f"hpf timed cut M={m}", hpf_cmd(args, 2, model, 2, args.batch, m, "1f1b", steps,
                                                             ["--stage-times", "--cut", str(cuts[model])]), *env))
            jobs.append((f"pytorch M={m}", pipe_cmd(args, model, 2, m, "gpipe", steps), *env))
            if args.baseline:
                jobs.append((f"baseline M={m}", hpf_cmd(args, 2, model, 2, args.batch, m, "1f1b", steps,
                                                        ["--stage-times"], exe=args.baseline), *env))
        if args.baseline:
            jobs.append(("baseline whole", hpf_cmd(args, 1, model, 1, args.batch, steps=steps, exe=args.baseline),
                         *env))
        groups[f"pipe {model}"] = jobs
    return groups


def micro_groups(args, env):
    """{"micro model": jobs}: the whole model in one process at M > 1 (gradient accumulation)."""
    groups = {}
    for model in args.pipeline_models:
        steps = PIPE_STEPS[model]
        jobs = []
        for m in (m for m in args.micro if m > 1):
            jobs.append((f"hpf M={m}", hpf_cmd(args, 1, model, 1, args.batch, m, steps=steps), *env))
            jobs.append((f"pytorch M={m}", pipe_cmd(args, model, 1, m, steps=steps), *env))
        if jobs:
            groups[f"micro {model}"] = jobs
    return groups


def memory_groups(args, env):
    """{"memory": jobs}: the schedules the pipeline part did not run, at the memory model's M."""
    model, steps, jobs = args.memory_model, PIPE_STEPS[args.memory_model], []
    for m in args.memory_micro:
        jobs.append((f"hpf gpipe M={m}", hpf_cmd(args, 2, model, 2, args.batch, m, "gpipe", steps, ["--stage-times"]),
                     *env))
        jobs.append((f"pytorch 1f1b M={m}", pipe_cmd(args, model, 2, m, "1f1b", steps), *env))
        if "pipeline" not in args.parts or model not in args.pipeline_models or m not in args.micro:
            jobs.append((f"hpf 1f1b M={m}", hpf_cmd(args, 2, model, 2, args.batch, m, "1f1b", steps,
                                                    ["--stage-times"]), *env))
            jobs.append((f"pytorch gpipe M={m}", pipe_cmd(args, model, 2, m, "gpipe", steps), *env))
    return {"memory": jobs}


def check_jobs(args, env):
    """The PyTorch pipeline against the unsplit model (two SGD steps, both schedules)."""
    return {f"check {model}": [(f"check {s}", pipe_cmd(args, model, 2, 4, s, extra=["--check"]), *env)
                               for s in ("gpipe", "1f1b")] for model in args.pipeline_models}


def measure(args):
    """Runs every part; returns {group key: {job name: [Run]}}."""
    env = h.bench_env(h.BLAS_SETTINGS[args.setting][0], threads=1, extra={"GLOO_SOCKET_IFNAME": "lo"})
    gate = {"max_busy": args.max_busy, "max_wait": args.max_wait, "timeout": 600}
    rounds = {"rounds": args.rounds, "max_rounds": args.max_rounds, "quiet": args.quiet, "min_quiet": args.min_quiet}
    once = {"rounds": 1, "max_rounds": 1, "quiet": args.quiet, "min_quiet": 0}
    data = {}
    if "pipeline" in args.parts:
        h.log("== PyTorch pipeline check against the unsplit model")
        data.update(h.alternate(check_jobs(args, env), **once, **gate))
    if "dp" in args.parts:
        h.log("== data-parallel scaling")
        data.update(h.alternate(dp_groups(args, env), **dict(rounds, rounds=args.dp_rounds), **gate))
    args.timed_cuts = {}
    if "pipeline" in args.parts:
        h.log("== hpf's stage times at each compiled cut")
        data.update(h.alternate(probe_groups(args, env), **dict(rounds, rounds=1), **gate))
        for model in args.pipeline_models:
            leaf = timed_cut(data, model, args.quiet)
            if leaf is not None and leaf != CUTS[model][-1]:
                args.timed_cuts[model] = leaf
        h.log(f"time-balanced cuts other than Balanced<2>'s: {args.timed_cuts or 'none'}")
        h.log("== pipelines")
        data.update(h.alternate(pipeline_groups(args, env, args.timed_cuts), **rounds, **gate))
        if not args.no_micro_baselines:
            h.log("== one process, M micro-batches (gradient accumulation)")
            data.update(h.alternate(micro_groups(args, env), **once, **gate))
    if "memory" in args.parts:
        h.log("== schedules and memory")
        data.update(h.alternate(memory_groups(args, env), **once, **gate))
    return data, env[1]


# --- reading the runs ----------------------------------------------------------------------------------
def best(data, group, job):
    """The best result of a job (None if it never succeeded)."""
    return h.best(data.get(group, {}).get(job, []))[1]


def rate(r):
    return r["images_per_s"] if r else None


def ratio(a, b):
    return a / b if a and b else None


def per_rank(r, key):
    """A `rank_*` field as floats (empty when missing)."""
    if not r or key not in r:
        return []
    return [float(v) for v in str(r[key]).split(",")]


def ranks_text(r, key, digits=0):
    values = per_rank(r, key)
    return " / ".join(f"{v:,.{digits}f}" for v in values) if values and min(values) >= 0 else "-"


def training_mib(r):
    """Peak RSS from engine/model construction on minus the RSS just before, per rank."""
    peaks, bases = per_rank(r, "rank_train_peak_rss_mib"), per_rank(r, "rank_base_rss_mib")
    return " / ".join(f"{p - b:,.0f}" for p, b in zip(peaks, bases)) if peaks else "-"


def pct(value):
    return h.fmt(100 * value, 0, " %") if value is not None else "-"


def find_job(data, job, groups):
    """The first group among `groups` where `job` ran successfully: (group, result)."""
    for g in groups:
        r = best(data, g, job)
        if r:
            return g, r
    return None, None


# --- report ----------------------------------------------------------------------------------------
def load_text(data, args):
    runs = [run for jobs in data.values() for rs in jobs.values() for run in rs]
    if not runs:
        return "no runs"
    foreign = [r.foreign_busy for r in runs]
    waited = sum(r.waited for r in runs)
    quiet = sum(r.ok and r.foreign_busy < args.quiet for r in runs)
    return (f"{len(runs)} runs, {quiet} of them quiet (other processes under {100 * args.quiet:.0f} % of the "
            f"machine); other processes used a median {100 * statistics.median(foreign):.0f} % and at most "
            f"{100 * max(foreign):.0f} % of the machine during a run; the runner waited {waited:.0f} s in all for "
            f"the machine to fall under {100 * args.max_busy:.0f} % busy before runs (at most {args.max_wait:.0f} s "
            f"each)")


def loaded_best_runs(data, quiet):
    """`group/job (n %)` for every job whose best run had other processes over `quiet` of the machine."""
    out = []
    for group, jobs in data.items():
        for job, runs in jobs.items():
            run = h.best(runs)[0]
            if run is not None and run.foreign_busy >= quiet:
                out.append(f"{group} / {job} ({100 * run.foreign_busy:.0f} %)")
    return out


def dp_report(args, data):
    out = ["### Data-parallel scaling on 2 ranks (same batch per rank)", ""]
    rows, notes = [], []
    for model, (batch, *_) in DP_MODELS.items():
        g = f"dp {model}"
        h1, h2, ha = best(data, g, "hpf 1"), best(data, g, "hpf 2"), best(data, g, "hpf 2 allreduce")
        p1, p2 = best(data, g, "pytorch 1"), best(data, g, "pytorch 2")
        eff_h, eff_a, eff_p = ratio(rate(h2), 2 * rate(h1) if h1 else None), \
            ratio(rate(ha), 2 * rate(h1) if h1 else None), ratio(rate(p2), 2 * rate(p1) if p1 else None)
        busy = per_rank(h2, "rank_busy_ms")
        busy_text = (f"{' / '.join(f'{b:.1f}' for b in busy)} of {h2['profiled_step_ms']:.1f}"
                     if busy and min(busy) >= 0 else "-")
        rows.append([model, batch, h.fmt(rate(h1)), h.fmt(rate(h2)), f"**{pct(eff_h)}**", pct(eff_a),
                     h.fmt(rate(p1)), h.fmt(rate(p2)), f"**{pct(eff_p)}**",
                     f"**{ratio(eff_h, eff_p):.2f}**" if ratio(eff_h, eff_p) else "-",
                     h.fmt(ratio(rate(h1), rate(p1)), 2, "x"), busy_text,
                     f"{ranks_text(h2, 'rank_peak_rss_mib')} / {ranks_text(p2, 'rank_peak_rss_mib')}"])
        if eff_h is not None and eff_p is not None:
            notes.append(f"{model}: hpf {100 * eff_h:.0f} % against PyTorch {100 * eff_p:.0f} % "
                         f"({'reaches' if eff_h >= eff_p else 'misses'} the target hpf >= PyTorch)")
    out.append(h.markdown_table(
        ["model", "batch / rank", "hpf 1 rank img/s", "hpf 2 ranks img/s", "hpf efficiency",
         "hpf eff. (MPI_Iallreduce)", "PyTorch 1 img/s", "PyTorch 2 img/s", "PyTorch DDP efficiency",
         "hpf eff. / PyTorch eff.", "hpf / PyTorch, 1 rank", "hpf busy ms / step ms per rank (2 ranks)",
         "peak RSS MiB per rank, hpf / PyTorch (2 ranks)"], rows, "lrrrrrrrrrrrr"))
    out.append("")
    out.append("- efficiency = 2-rank img/s / (2 x 1-rank img/s). hpf's default reduction with 2 replicas is "
               "`ordered` (each bucket all-gathered, then added in a fixed order on every rank); the "
               "`MPI_Iallreduce` column is the same run with `--reduction allreduce`. PyTorch: DDP (gloo, 25 MB "
               "buckets) on 1 and on 2 processes. " + "; ".join(notes) + ".")
    out.append("- hpf busy = time per step in layer, optimizer and data regions on each rank, from a "
               "separate profiled block (`--stage-times`); the rest of the step is waiting for the gradient "
               "reduction and the loss allreduce.")
    out.append("")
    return out


def pipeline_report(args, data):
    out = [f"### Pipeline efficiency, 2 stages, global batch {args.batch}", ""]
    rows = []
    for model in args.pipeline_models:
        g, leaf = f"pipe {model}", args.timed_cuts.get(model)
        hw, pw = best(data, g, "hpf whole"), best(data, g, "pytorch whole")
        rows.append([model, "whole model, 1 process", args.batch, "-", h.fmt(rate(hw)), "-", "-", "-", "-", "-",
                     h.fmt(rate(pw)), "-", "-", "-", h.fmt(ratio(rate(hw), rate(pw)), 2, "x")])
        for m in args.micro:
            ideal = m / (m + STAGES - 1)
            hp, pp = best(data, g, f"hpf M={m}"), best(data, g, f"pytorch M={m}")
            ht = best(data, g, f"hpf timed cut M={m}") if leaf else None
            eh, et, ep = (ratio(rate(r), STAGES * rate(base) if base else None)
                          for r, base in ((hp, hw), (ht, hw), (pp, pw)))
            best_h = max(filter(None, (eh, et)), default=None)
            rows.append([model, f"M = {m}", -(-args.batch // m), pct(ideal),
                         h.fmt(rate(hp)), f"**{pct(eh)}**", h.fmt(ratio(eh, ideal), 2),
                         h.fmt(rate(ht)), pct(et), h.fmt(ratio(et, ideal), 2),
                         h.fmt(rate(pp)), f"**{pct(ep)}**", h.fmt(ratio(ep, ideal), 2),
                         h.fmt(ratio(best_h, ep), 2), h.fmt(ratio(rate(hp), rate(pp)), 2, "x")])
    cuts = ", ".join(f"{model} leaf {leaf}" for model, leaf in args.timed_cuts.items()) or "none differed"
    out.append(h.markdown_table(
        ["model", "run", "micro-batch", "ideal M/(M+1)", "hpf img/s, Balanced<2>", "hpf efficiency", "hpf / ideal",
         "hpf img/s, time-balanced cut", "efficiency", "/ ideal", "PyTorch img/s (GPipe)", "PyTorch efficiency",
         "PyTorch / ideal", "hpf best eff. / PyTorch eff.", "hpf (Balanced<2>) / PyTorch img/s"], rows,
        "llrrrrrrrrrrrrr"))
    out.append("")
    out.append("- efficiency = pipeline img/s / (2 x img/s of the whole model in one process at the same global "
               "batch, M = 1), i.e. T(1 process) / (S x T(pipeline)); ideal = M / (M + S - 1) (fill and drain "
               "bubbles only, stages equal, micro-batches as fast per sample as the whole batch). hpf runs 1F1B "
               "(its default), PyTorch GPipe (the reference's); with 2 stages both have the same bubbles (see the "
               "memory table for both schedules on both sides).")
    out.append(f"- time-balanced cut: the compiled cut whose stages were busy most evenly at M = {PROBE_MICRO} in "
               f"this run (table below); used where it differs from Balanced<2>'s ({cuts}).")
    out.append("")
    if not args.no_micro_baselines:
        out += micro_report(args, data)
    out += balance_report(args, data)
    return out


def micro_report(args, data):
    """Pipeline efficiency split into what smaller batches cost on one process and the rest."""
    out = ["Where the efficiency goes: *micro-batch factor* = img/s of one process accumulating M micro-batches "
           "/ img/s at M = 1 (the cost of small batches alone); *pipelining* = pipeline img/s / (2 x one process "
           "at the same M) (bubbles, imbalance and transfers; ideal M/(M+1)). Efficiency = micro-batch factor x "
           "pipelining.", ""]
    rows = []
    for model in args.pipeline_models:
        g = f"pipe {model}"
        hw, pw = best(data, g, "hpf whole"), best(data, g, "pytorch whole")
        for m in args.micro:
            h1 = hw if m == 1 else best(data, f"micro {model}", f"hpf M={m}")
            p1 = pw if m == 1 else best(data, f"micro {model}", f"pytorch M={m}")
            hp, pp = best(data, g, f"hpf M={m}"), best(data, g, f"pytorch M={m}")
            ht = best(data, g, f"hpf timed cut M={m}")
            rows.append([model, m, h.fmt(rate(h1)), pct(ratio(rate(h1), rate(hw))),
                         pct(ratio(rate(hp), STAGES * rate(h1) if h1 else None)),
                         pct(ratio(rate(ht), STAGES * rate(h1) if h1 else None)), h.fmt(rate(p1)),
                         pct(ratio(rate(p1), rate(pw))), pct(ratio(rate(pp), STAGES * rate(p1) if p1 else None)),
                         pct(m / (m + STAGES - 1))])
    out.append(h.markdown_table(["model", "M", "hpf 1 process img/s", "hpf micro-batch factor",
                                 "hpf pipelining, Balanced<2>", "hpf pipelining, time-balanced cut",
                                 "PyTorch 1 process img/s", "PyTorch micro-batch factor", "PyTorch pipelining",
                                 "ideal pipelining"], rows))
    out.append("")
    return out


def balance_row(model, label, hp, pp=None):
    return [model, label,
            f"{ranks_text(hp, 'rank_stage_gflop_per_sample', 3)} (leaf {ranks_text(hp, 'rank_first_leaf')})"
            if hp else "-",
            ranks_text(hp, "rank_busy_ms", 1), h.fmt(hp and hp.get("profiled_step_ms"), 1),
            h.fmt(imbalance(hp), 2),
            f"{ranks_text(pp, 'rank_stage_gflop_per_sample', 3)} ({pp['split_blocks']} blocks)" if pp else "",
            ranks_text(pp, "rank_busy_ms", 1) if pp else "", h.fmt(pp and pp.get("ms_per_step"), 1) if pp else "",
            h.fmt(imbalance(pp), 2) if pp else ""]


def balance_report(args, data):
    out = ["Stage balance. hpf `Balanced<2>` places the cut by the layers' constexpr training FLOPs, the "
           "PyTorch pipeline by forward MACs per block (the same place for these models). Busy = ms per step "
           "in compute on each stage (hpf: layer, optimizer and data regions in a profiled block; PyTorch: the "
           "step minus the time blocked in recv and send waits), against the step time; max / mean busy = 1 "
           "is perfect balance. `cut L` rows: hpf at every compiled cut, M = "
           f"{PROBE_MICRO} (the probe that picks the time-balanced cut: the lowest max / mean busy of its best "
           "quiet run).", ""]
    rows = []
    for model in args.pipeline_models:
        for leaf in CUTS[model]:
            r = best(data, f"cuts {model}", f"hpf cut={leaf}")
            if r:
                rows.append(balance_row(model, f"cut {leaf}, M = {PROBE_MICRO}", r))
        for m in args.micro:
            hp, pp = best(data, f"pipe {model}", f"hpf M={m}"), best(data, f"pipe {model}", f"pytorch M={m}")
            if hp or pp:
                rows.append(balance_row(model, f"M = {m}", hp, pp))
            ht = best(data, f"pipe {model}", f"hpf timed cut M={m}")
            if ht:
                rows.append(balance_row(model, f"M = {m}, time-balanced cut", ht))
    out.append(h.markdown_table(
        ["model", "run", "hpf stage GFLOP/sample (6 x MACs), first leaf", "hpf busy ms stage 0 / 1",
         "hpf step ms (profiled)", "hpf max / mean busy", "PyTorch stage GFLOP/sample (stage 0)",
         "PyTorch busy ms stage 0 / 1", "PyTorch step ms", "PyTorch max / mean busy"], rows, "lllrrrlrrr"))
    out.append("")
    return out


def memory_report(args, data):
    model = args.memory_model
    out = [f"### Per-stage memory, GPipe against 1F1B ({model}, 2 stages, global batch {args.batch})", ""]
    rows = []
    groups = ["memory", f"pipe {model}"]
    for m in args.memory_micro:
        for fw, schedule in (("hpf", "gpipe"), ("hpf", "1f1b"), ("pytorch", "gpipe"), ("pytorch", "1f1b")):
            default = (fw == "hpf" and schedule == "1f1b") or (fw == "pytorch" and schedule == "gpipe")
            names = [f"{fw} {schedule} M={m}"] + ([f"{fw} M={m}"] if default else [])
            r = None
            for name in names:
                r = r or find_job(data, name, groups)[1]
            rows.append([m, fw, schedule, ranks_text(r, "rank_slots"), ranks_text(r, "rank_peak_rss_mib"),
                         training_mib(r), ranks_text(r, "rank_tape_mib", 1) if fw == "hpf" else "-",
                         ranks_text(r, "rank_views_peak_mib", 1) if fw == "hpf" else "-", h.fmt(rate(r))])
    out.append(h.markdown_table(
        ["M", "framework", "schedule", "micro-batches held, stage 0 / 1", "peak RSS MiB, stage 0 / 1",
         "training MiB (peak - base), stage 0 / 1", "hpf tape MiB, stage 0 / 1", "hpf Kokkos views peak MiB",
         "img/s"], rows, "rlllrrrrr"))
    out.append("")
    out.append("- peak RSS = ru_maxrss of each rank's process (PyTorch's includes about 230 MiB of torch import); "
               "training MiB = the peak from model construction on minus the RSS just before it (data in RAM). "
               "hpf tape MiB = Kokkos views allocated per micro-batch slot (activations kept for backward, the "
               "stage's input/output and the gradient buffers between stages), from Kokkos' allocation callbacks; "
               "views peak = all live Kokkos views at most (tapes, parameters, gradients, momentum, workspace). "
               "Held = micro-batches a stage keeps between forward and backward (hpf: its slots; PyTorch: the most "
               "autograd graphs alive at once).")
    out.append("")
    return out


def check_report(args, data):
    rows = []
    for model in args.pipeline_models:
        for s in ("gpipe", "1f1b"):
            runs = data.get(f"check {model}", {}).get(f"check {s}", [])
            res = next((run.results[0] for run in runs if run.ok), None)
            rows.append(f"{model} {s}: max |difference| {res['max_abs_diff']}" if res else f"{model} {s}: failed")
    return ("PyTorch pipeline check (`pytorch_pipeline.py --check`: two SGD steps of the 2-process pipeline at "
            "M = 4 against the unsplit model trained on the same micro-batches in one process, every parameter "
            "and buffer): " + "; ".join(rows) + ".")


def baseline_report(args, data):
    """hpf now against the baseline executable: the same jobs, alternately in the same rounds."""
    pairs = []
    if "dp" in args.parts:
        for model, (batch, *_) in DP_MODELS.items():
            for ranks in (1, 2):
                pairs.append((f"{model}, data parallel, {ranks} rank{'s' if ranks > 1 else ''} x batch {batch}",
                              f"dp {model}", f"hpf {ranks}", f"baseline {ranks}"))
    if "pipeline" in args.parts:
        for model in args.pipeline_models:
            pairs.append((f"{model}, one process, batch {args.batch}", f"pipe {model}", "hpf whole", "baseline whole"))
            for m in args.micro:
                pairs.append((f"{model}, 2 stages (Balanced<2>, 1F1B), M = {m}", f"pipe {model}", f"hpf M={m}",
                              f"baseline M={m}"))
    rows = []
    for label, group, now_job, before_job in pairs:
        now, before = rate(best(data, group, now_job)), rate(best(data, group, before_job))
        change = ratio(now, before)
        rows.append([label, h.fmt(now), h.fmt(before), f"**{change:.2f}x**" if change else "-"])
    name = args.baseline_revision or h.repo_relative(args.baseline, ROOT)
    return [f"hpf now against hpf at {name} (`{h.repo_relative(args.baseline, ROOT)}`, built from that revision "
            "with the same build type): the same jobs, run alternately with the others in the same rounds.", "",
            h.markdown_table(["job", "hpf img/s now", f"hpf img/s at {name}", "now / before"], rows, "lrrr"), ""]


def report(args, data, overrides):
    out = ["## Parallel training on 2 ranks: hpf vs PyTorch (data parallelism, pipelines, per-stage memory)", ""]
    out.append(f"Measured by `benchmarks/compare_parallel.py` with "
               f"`{h.repo_relative(args.hpf_shown, ROOT)}` built {args.built} (when, at which commit and where: "
               f"its provenance line). Wall time of the run: {args.minutes:.0f} min.")
    out.append("")
    out.append(f"Every process runs one thread, {h.BLAS_SETTINGS[args.setting][1]} for both sides, hpf ranks "
               "under mpiexec (Kokkos Serial, Open MPI over shared memory), PyTorch processes from "
               "torch.multiprocessing.spawn (gloo over loopback). Jobs alternate, each in its own processes: at "
               f"least {args.dp_rounds} runs per data-parallel job and {args.rounds} per pipeline job (more, up to "
               f"{args.max_rounds} rounds, until each had {args.min_quiet} quiet run), one run per cut probe, "
               "memory-only or one-process M > 1 job (those figures are single runs); every figure is "
               "the job's best run, and within a run the best of several timed blocks after warm-up steps. "
               "Efficiencies are ratios of runs of the same job set in this run only.")
    out.append("")
    loaded = loaded_best_runs(data, args.quiet)
    out.append(f"**Machine load during this run**: {load_text(data, args)}. Load average at the start "
               f"{args.load_start}, at the end {args.load_end}. Best runs taken while other processes used "
               f"{100 * args.quiet:.0f} % or more of the machine: {', '.join(loaded) if loaded else 'none'}.")
    out.append("")
    if "dp" in args.parts:
        out += dp_report(args, data)
    if "pipeline" in args.parts:
        out += pipeline_report(args, data)
        out.append(check_report(args, data))
        out.append("")
    if "memory" in args.parts:
        out += memory_report(args, data)
    if args.baseline:
        out += baseline_report(args, data)
    out.append("Commands (run from the repository root; the runner launches exactly these, with these "
               "variables set):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--python", "--mpiexec", "--baseline"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/compare_parallel.py"] + options))
    shown = {args.hpf: args.hpf_shown}
    if args.baseline:
        shown[args.baseline_copy] = args.baseline
    seen = set()
    for jobs in data.values():
        for runs in jobs.values():
            for run in runs[:1]:
                line = h.command_text([h.repo_relative(shown.get(c, c), ROOT) for c in run.cmd], overrides)
                if line not in seen:
                    seen.add(line)
                    out.append(line)
    out.append("```")
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    args.provenance = provenance.start("benchmarks/compare_parallel.py")
    args.built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.hpf)))
    args.hpf_shown, args.hpf = args.hpf, snapshot(args.hpf)
    if args.baseline:
        args.baseline_shown, args.baseline = args.baseline, snapshot(args.baseline)
    args.load_start = h.load_average()
    h.log(f"machine: {h.machine_description()}")
    h.log(f"load now: {100 * h.busy_fraction(1.0):.0f}% of all CPUs busy (load average {args.load_start})")
    start = time.monotonic()
    try:
        data, overrides = measure(args)
    finally:
        shutil.rmtree(os.path.dirname(args.hpf), ignore_errors=True)
        if args.baseline:
            shutil.rmtree(os.path.dirname(args.baseline), ignore_errors=True)
            args.baseline_copy, args.baseline = args.baseline, args.baseline_shown
    args.minutes = (time.monotonic() - start) / 60
    args.load_end = h.load_average()
    text = report(args, data, overrides)
    failed = [f"{g}/{job}" for g, jobs in data.items() for job, runs in jobs.items() if not any(r.ok for r in runs)]
    return provenance.publish(args, SECTION, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
