#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Strong scaling across emulated hosts where data parallelism runs out of samples: 4 hosts x 1
rank (scripts/fabric/emulate.sh, Open MPI over TCP), a global batch of 4, and per fabric (1 and 10
Gbit/s) and model (the 3-D CNN and ResNet-20):

  data parallel 4         4 replicas of one sample each, as far as data parallelism goes
  filter split 2          2 replicas whose Dense and convolution layers split by filters over 2 hosts
  spatial split 2         2 replicas whose samples split into 2 slabs over 2 hosts (hpf::Spatial<2>)
  spatial split 4         1 replica, every sample in 4 slabs, one per host

A group's ranks are neighbours, so each sits on its own host here: halos, the group's sums and
gathers cross the emulated links. Every job also runs once traced (first round): compute,
communication and exposed communication per step (`scripts/hpf-trace summary`). Rounds alternate
the order of fabrics and jobs; every figure is its job's best run. Beside each, the oracle's
prediction from the fabric's machine profile (benchmarks/comm/profiles/FABRIC.json: its links
measured on 4 emulated hosts by run_fabrics.py --comm), with --calibrate from a copy whose compute
is calibrated first, models and slabs, before any measurement. Prints the table and writes the
`spatial-splits-hosts` section of benchmarks/RESULTS.md. As root:

  /usr/bin/python3 scripts/fabric/run_spatial_across_hosts.py --calibrate   # ~10 min on 2 cores
  /usr/bin/python3 scripts/fabric/run_spatial_across_hosts.py --fabrics 1gbit --rounds 1 --no-write

The hosts share this machine's 2 cores (4 single-threaded ranks), so the figures are an
emulation's. Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402
import run_fabrics as fabrics  # noqa: E402
from run_fabrics import EMULATE, HPF_TRACE  # noqa: E402

SECTION = "spatial-splits-hosts"
HOSTS = 4
BATCH = 4
MODELS = {"cosmoflow": (30, 5, 2), "resnet20": (100, 10, 2)}  # steps per block, warm-up, blocks
# (label, --split, further flags): the last computes each slab's interior rows while the halos travel.
JOBS = [("data parallel 4", None, []), ("filter split 2", "filter:2", []), ("spatial split 2", "spatial:2", []),
        ("spatial split 4", "spatial:4", []), ("spatial split 4, interior first", "spatial:4", ["--interior-first"])]
TRACED_STEPS = "3-5"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fabrics.add_run_options(p, "hpfs", "10.77.3.0/24")
    p.add_argument("--fabrics", default="1gbit,10gbit", help="comma-separated tc rates (default %(default)s)")
    p.add_argument("--models", default=",".join(MODELS), help="subset of " + ",".join(MODELS))
    p.add_argument("--rounds", type=int, default=2, help="runs of every job (best is kept)")
    p.add_argument("--oracle", default=os.path.join(ROOT, "build", "tools", "hpf-oracle"),
                   help="the hpf-oracle executable (default: build/tools/hpf-oracle)")
    p.add_argument("--profiles", default=os.path.join(ROOT, "benchmarks", "comm", "profiles"),
                   help="directory of the fabrics' machine profiles, FABRIC.json (default %(default)s)")
    p.add_argument("--calibrate", action="store_true",
                   help="first calibrate the models and their slabs into a copy of each fabric's profile, "
                        "benchmarks/results/spatial_hosts_FABRIC_profile.json, and predict from the copies")
    h.add_results_options(p, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = p.parse_args()
    args.fabrics = [f for f in args.fabrics.split(",") if f]
    args.models = [m for m in args.models.split(",") if m]
    if not args.fabrics or any(not re.fullmatch(r"[0-9.]+(mbit|gbit)", f) for f in args.fabrics):
        p.error("--fabrics takes tc rates in mbit or gbit")
    h.check_models(p, args.models, MODELS)
    if os.geteuid() != 0:
        p.error("needs root (network namespaces): run it with sudo")
    for exe in (args.hpf, args.oracle):
        if not os.access(exe, os.X_OK):
            p.error(f"{exe} is not an executable: build it first")
    args.profile_of = {f: os.path.join(args.profiles, f"{f}.json") for f in args.fabrics}
    for fabric, profile in args.profile_of.items():
        if not os.path.exists(profile):
            p.error(f"no machine profile of the {fabric} fabric: {profile} (run_fabrics.py --comm measures it)")
    return args


def calibrate(args):
    """Per fabric: a copy of its profile with the models' and their slabs' compute calibrated here."""
    splits = sorted({split for _, split, _ in JOBS if split and split.startswith("spatial")})
    for fabric in args.fabrics:
        profile_args = argparse.Namespace(oracle=args.oracle, profile=args.profile_of[fabric])
        copy = os.path.join(ROOT, "benchmarks", "results", f"spatial_hosts_{fabric}_profile.json")
        h.calibrate_copy(profile_args, args.models, copy, splits=splits)
        args.profile_of[fabric] = copy


def predicted_ms(args, fabric, model, split):
    """The oracle's step time of one job on one fabric's profile (None where it cannot tell)."""
    profile_args = argparse.Namespace(oracle=args.oracle, profile=args.profile_of[fabric])
    p = h.oracle_json(profile_args, "predict", ["--model", model, "--ranks", HOSTS, "--batch", BATCH, "--stages", 1,
                                                "--micro-batches", 1] + (["--split", split] if split else []))
    return p and 1e3 * p["time_s"]


def fabric_env(args):
    return {"HPF_FABRIC_PREFIX": args.prefix, "HPF_FABRIC_NET": args.net, "HPF_FABRIC_TIMEOUT": str(args.timeout),
            "HPF_FABRIC_SLOTS": "1"}


def command(args, model, split, flags=()):
    steps, warmup, repeats = MODELS[model]
    return (["bash", EMULATE, "mpiexec", "-n", str(HOSTS), args.hpf, "--model", model, "--batch", str(BATCH),
             "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)] +
            (["--split", split] if split else []) + list(flags))


def jobs(args):
    return [(model, label, split, flags) for model in args.models for label, split, flags in JOBS]


def measure(args):
    """({(fabric, model, label): [Run]}, {(fabric, model, label): trace summary or None})."""
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], threads=1)
    env = {**env, **fabric_env(args)}
    launch = dict(max_busy=args.max_busy, max_wait=args.max_wait, timeout=args.timeout + 30)
    data = {(f, m, label): [] for f in args.fabrics for m, label, _, _ in jobs(args)}
    traces = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for fabric in (args.fabrics if r % 2 == 0 else list(reversed(args.fabrics))):
                fabrics.emulate(args, "up", str(HOSTS), fabric, env=fabric_env(args))
                try:
                    todo = jobs(args) if r % 2 == 0 else list(reversed(jobs(args)))
                    for model, label, split, flags in todo:
                        run = h.launch(f"{fabric} {model} {label}", command(args, model, split, flags), env, overrides,
                                       **launch)
                        data[(fabric, model, label)].append(run)
                        h.log(f"round {r + 1} {fabric} {model} {label}: {h.summary(run)}")
                    if r == 0:
                        for model, label, split, flags in todo:
                            traces[(fabric, model, label)] = traced(args, tmp, fabric, model, label,
                                                                    command(args, model, split, flags), env, overrides,
                                                                    launch)
                finally:
                    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # removing the fabric is not interrupted
                    fabrics.emulate(args, "down", check=False, env=fabric_env(args))
                    signal.signal(signal.SIGTERM, previous)
    return data, traces


def traced(args, tmp, fabric, model, label, job, env, overrides, launch):
    """One more run of `job` with the timeline on: `hpf-trace summary --json`'s overall, or None."""
    path = os.path.join(tmp, f"{fabric}-{model}-{label.replace(' ', '-').replace(',', '')}.json")
    more = {"HPF_TRACE": path, "HPF_TRACE_STEPS": TRACED_STEPS}
    run = h.launch(f"{fabric} {model} {label} traced", job, {**env, **more},
                   {**overrides, **more}, **launch)
    h.log(f"traced {fabric} {model} {label}: exit {run.returncode}")
    if not run.ok or not os.path.exists(path):
        return None
    done = subprocess.run([sys.executable, HPF_TRACE, "summary", path, "--json"], capture_output=True, text=True)
    return json.loads(done.stdout)["overall"] if done.returncode == 0 else None


def report(args, data, traces, predictions):
    out = ["## Spatial splits across emulated hosts: samples split into slabs against data parallelism", ""]
    out.append("Measured by `scripts/fabric/run_spatial_across_hosts.py` (when, at which commit and where: its "
               f"provenance line). {HOSTS} emulated hosts x 1 rank (network namespaces on one bridge, `tc` rate "
               f"limits, Open MPI over TCP) train a global batch of {BATCH}: as {HOSTS} data-parallel replicas of one "
               "sample each, as 2 replicas whose layers split by filters over 2 hosts (`hpf::Filter<2>`), as 2 "
               "replicas whose samples split into 2 slabs over 2 hosts (`hpf::Spatial<2>`), and as one replica "
               "with every sample in 4 slabs (`hpf::Spatial<4>`), once more with each convolution computing its "
               "slab's interior rows while the halos travel (`NetworkOptions::interior_first`, `--interior-first`; "
               "the oracle prices both alike); `hpf_bench_parallel_throughput --split`. A "
               "group's ranks sit on different hosts: halos, the group's sums and gathers cross the links. The 4 "
               "hosts share this machine's 2 cores.")
    out.append("")
    out.append(f"Every job ran {args.rounds} times, fabrics and jobs alternating; each figure is its best run, within "
               "a run its best timed block after warm-up. Compute, communication (from post to completion: messages, "
               "collectives, the group's halo exchanges and sums) and exposed communication: the mean over ranks and "
               f"steps {TRACED_STEPS} of a separate traced run (`HPF_TRACE`, `scripts/hpf-trace summary --json`).")
    out.append("")
    rows = []
    for fabric in args.fabrics:
        for model in args.models:
            base = h.best(data[(fabric, model, JOBS[0][0])])[1]
            for label, _, _ in JOBS:
                r = h.best(data[(fabric, model, label)])[1]
                ms = r and r["ms_per_step"]
                against = f"{base['ms_per_step'] / ms:.2f}x" if base and ms else "-"
                t = traces.get((fabric, model, label))
                ms_of = (lambda key: h.fmt(t[key] / 1e3, 1)) if t else (lambda key: "-")
                p = predictions.get((fabric, model, label))
                rows.append([fabric, model, label, h.fmt(ms, 1), against, h.fmt(p, 1),
                             f"{100 * min(p, ms) / max(p, ms):.0f} %" if p and ms else "-", ms_of("compute"),
                             ms_of("communication"), ms_of("exposed")])
    out.append(h.markdown_table(["fabric", "model", "layout", "ms per step", "speed-up over data parallel 4",
                                 "predicted ms", "prediction accuracy", "traced: compute ms", "communication ms",
                                 "exposed ms"], rows, "lllrrrrrrr"))
    out.append("")
    profiles = ", ".join(f"`{h.repo_relative(args.profile_of[f], ROOT)}`" for f in args.fabrics)
    out.append(f"Predicted: `hpf-oracle predict` from the fabrics' profiles ({profiles}: links measured on 4 emulated "
               "hosts by `run_fabrics.py --comm`"
               + (", compute calibrated on this machine before the measurements: the models, and one slab rank's "
                  "layers of `spatial:2` and `spatial:4`" if args.calibrate else "") +
               "); the spatial split's terms were written before this run and not tuned on it. Accuracy is "
               "min/max of predicted and measured.")
    out.append("")
    out.append("Commands (run from the repository root as root; each inside `emulate.sh up 4 RATE` ... `down`, "
               f"and once more with `HPF_TRACE=... HPF_TRACE_STEPS={TRACED_STEPS}`; {args.models[-1]} shown):")
    out.append("")
    out.extend(h.commands_block("scripts/fabric/run_spatial_across_hosts.py", sys.argv[1:],
                                [command(args, args.models[-1], split, flags) for _, split, flags in JOBS], ROOT))
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    record = provenance.start("scripts/fabric/run_spatial_across_hosts.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    if args.calibrate:
        calibrate(args)
    data, traces = measure(args)
    predictions = {(f, m, label): predicted_ms(args, f, m, split) for f in args.fabrics for m, label, split, _ in jobs(args)}
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [" ".join(k) for k, runs in data.items() if not any(r.ok for r in runs)]
    failed += [" ".join(k) + " traced" for k, t in traces.items() if t is None]
    return provenance.publish(args, SECTION, report(args, data, traces, predictions), failed, record)


if __name__ == "__main__":
    sys.exit(main())
