#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hpf against PyTorch DDP across emulated hosts, and what summing gradients per host first and
overlapping the exchange with backward give there. For each layout (4 hosts x 1 rank, 2 hosts x 2
ranks) and fabric (1 and 10 Gbit/s), scripts/fabric/emulate.sh makes the hosts and runs, per model
(the MLP: exchange-bound; ResNet-20: compute-bound), with the same global batch of 256:

  hpf data parallel        StepOptions' defaults: automatic buckets, summed per host first on 2 x 2
  hpf, hierarchy off       (2 x 2 only) every replica exchanging with every other
  hpf, bf16 exchange       gradients exchanged as bf16 (StepOptions::exchange_precision); a host's
                           partial sum still crosses hosts as float
  hpf, progress thread     a thread per rank calls into MPI every millisecond while a step runs
                           (StepOptions::exchange_progress), inside layers too
  hpf hybrid 2x2           2 pipeline stages x 2 replicas, 4 micro-batches of 32 (also with the
                           progress thread, and with activations and their gradients as bf16
                           between the stages: StepOptions::stage_precision)
  PyTorch DDP              gloo over the hosts' addresses, one process per rank (torchrun's layout),
                           64 samples per process, DDP's 25 MB buckets

Every data-parallel hpf job also runs once traced (first round): the timeline's compute, hidden
and exposed communication per step, and the ideal step max(compute, wire) + last bucket, where
wire is the time the busiest host link needs for the bytes one step's exchange moves through it.
Rounds alternate the order of fabrics and jobs; every figure is its job's best run. Prints the
tables and writes the `across-hosts` section of benchmarks/RESULTS.md. As root:

  /usr/bin/python3 scripts/fabric/run_across_hosts.py                 # ~12 min on 2 cores
  /usr/bin/python3 scripts/fabric/run_across_hosts.py --fabrics 1gbit --rounds 1 --no-write

The hosts share this machine's cores (4 single-threaded ranks on 2 cores), so absolute figures
are an emulation's; both frameworks run under the same conditions, side by side in one run.
Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import json
import os
import re
import shlex
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
from compare_single_process import snapshot  # noqa: E402
import run_fabrics as fabrics  # noqa: E402
from run_fabrics import EMULATE, HPF_TRACE, load_text  # noqa: E402

SECTION = "across-hosts"
TITLE = "Across emulated hosts: hpf against PyTorch DDP, gradients summed per host first"
DDP = os.path.join(ROOT, "benchmarks", "pytorch_ddp.py")
LAYOUTS = {"4x1": (4, 1), "2x2": (2, 2)}  # hosts, ranks per host
BATCH = 256
MODELS = {"mlp": (30, 5, 3), "resnet20": (3, 1, 3)}  # steps per block, warm-up, blocks
# (job, hpf arguments or None for DDP, layouts it runs on)
JOBS = [
    ("hpf data parallel", ["--stages", "1", "--micro-batches", "1"], ("4x1", "2x2")),
    ("hpf, hierarchy off", ["--stages", "1", "--micro-batches", "1", "--hierarchy", "off"], ("2x2",)),
    ("hpf, bf16 exchange", ["--stages", "1", "--micro-batches", "1", "--exchange-precision", "bf16"], ("4x1", "2x2")),
    ("hpf, progress thread", ["--stages", "1", "--micro-batches", "1", "--exchange-progress", "thread"], ("4x1", "2x2")),
    ("hpf hybrid 2x2", ["--stages", "2", "--micro-batches", "4"], ("4x1", "2x2")),
    ("hpf hybrid 2x2, progress thread", ["--stages", "2", "--micro-batches", "4", "--exchange-progress", "thread"],
     ("4x1", "2x2")),
    ("hpf hybrid 2x2, bf16 between stages", ["--stages", "2", "--micro-batches", "4", "--stage-precision", "bf16"],
     ("4x1", "2x2")),
    ("PyTorch DDP", None, ("4x1", "2x2")),
]
TRACED_STEPS = "2-3"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fabrics.add_run_options(p, "hpfa", "10.77.2.0/24")
    p.add_argument("--fabrics", default="1gbit,10gbit", help="comma-separated tc rates (default %(default)s)")
    p.add_argument("--layouts", default="4x1,2x2", help="subset of 4x1,2x2 (hosts x ranks per host)")
    p.add_argument("--models", default="mlp,resnet20", help="subset of mlp,resnet20")
    p.add_argument("--rounds", type=int, default=2, help="runs of every job (best is kept)")
    p.add_argument("--no-trace", action="store_true", help="no traced runs")
    h.add_results_options(p, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = p.parse_args()
    args.fabrics = [f for f in args.fabrics.split(",") if f]
    args.layouts = [x for x in args.layouts.split(",") if x]
    args.models = [m for m in args.models.split(",") if m]
    if any(f == "unshaped" or not re.fullmatch(r"[0-9.]+(mbit|gbit)", f) for f in args.fabrics):
        p.error("--fabrics takes tc rates in mbit or gbit (the ideal step needs a rate)")
    if not args.layouts or any(x not in LAYOUTS for x in args.layouts):
        p.error("--layouts is a subset of 4x1,2x2")
    if not args.models or any(m not in MODELS for m in args.models):
        p.error("--models is a subset of mlp,resnet20")
    if os.geteuid() != 0:
        p.error("needs root (network namespaces): run it with sudo")
    if not os.access(args.hpf, os.X_OK):
        p.error(f"{args.hpf} is not an executable: build it first")
    return args


def fabric_env(args, layout):
    return {"HPF_FABRIC_PREFIX": args.prefix, "HPF_FABRIC_NET": args.net, "HPF_FABRIC_TIMEOUT": str(args.timeout),
            "HPF_FABRIC_SLOTS": str(LAYOUTS[layout][1])}


def emulate(args, layout, *words, check=True):
    return fabrics.emulate(args, *words, check=check, env=fabric_env(args, layout))


def ranks(layout):
    hosts, slots = LAYOUTS[layout]
    return hosts * slots


def hpf_cmd(args, layout, model, extra, exe):
    steps, warmup, repeats = MODELS[model]
    return (["bash", EMULATE, "mpiexec", "-n", str(ranks(layout)), exe, "--model", model, "--batch", str(BATCH),
             "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)] + extra)


def ddp_cmd(args, layout, model):
    """Every DDP process started in its host (rank r on host r // slots), rank 0 listening on host
    0's address; fails when any process does."""
    hosts, slots = LAYOUTS[layout]
    steps, warmup, repeats = MODELS[model]
    master = args.net.split("/")[0].rsplit(".", 1)[0] + ".1:29500"
    starts = []
    for r in range(hosts * slots):
        cmd = ["bash", EMULATE, "exec", str(r // slots), "--", "/usr/bin/python3", DDP, "--model", model,
               "--rank", str(r), "--nprocs", str(hosts * slots), "--master", master, "--batch",
               str(BATCH // (hosts * slots)), "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)]
        starts.append(shlex.join(cmd) + " &")
    script = "\n".join(starts + ["status=0", "for p in $(jobs -p); do wait $p || status=1; done", "exit $status"])
    return ["bash", "-c", script]


def jobs_of(args, layout):
    return [(model, job, extra) for model in args.models for job, extra, layouts in JOBS if layout in layouts]


def key(model, job):
    return f"{model} {job}"


def measure(args):
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], threads=1)
    env["GLOO_SOCKET_IFNAME"] = overrides["GLOO_SOCKET_IFNAME"] = "eth0"  # PyTorch's traffic on the fabric
    args.overrides = overrides
    data = {(x, f): {key(m, j): [] for m, j, _ in jobs_of(args, x)} for x in args.layouts for f in args.fabrics}
    launch = dict(max_busy=args.max_busy, max_wait=args.max_wait, timeout=args.timeout + 30)
    for r in range(args.rounds):
        grid = [(x, f) for x in args.layouts for f in args.fabrics]
        for layout, fabric in (grid if r % 2 == 0 else list(reversed(grid))):
            emulate(args, layout, "up", str(LAYOUTS[layout][0]), fabric)
            try:
                jobs = jobs_of(args, layout)
                for model, job, extra in (jobs if r % 2 == 0 else list(reversed(jobs))):
                    cmd = ddp_cmd(args, layout, model) if extra is None else hpf_cmd(args, layout, model, extra, args.hpf)
                    run = h.launch(f"{layout} {fabric} {key(model, job)}", cmd, {**env, **fabric_env(args, layout)},
                                   overrides, **launch)
                    data[(layout, fabric)][key(model, job)].append(run)
                    h.log(f"round {r + 1} {layout} {fabric} {key(model, job)}: {h.summary(run)}")
                if r == 0 and not args.no_trace:
                    traced(args, layout, fabric, env, overrides, launch)
            finally:
                previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # removing the fabric is not interrupted
                emulate(args, layout, "down", check=False)
                signal.signal(signal.SIGTERM, previous)
    return data


def traced(args, layout, fabric, env, overrides, launch):
    """The data-parallel hpf jobs once more with the timeline on; `hpf-trace summary --json`."""
    for model, job, extra in jobs_of(args, layout):
        if extra is None or "--stages" in extra and extra[extra.index("--stages") + 1] != "1":
            continue
        path = os.path.join(args.trace_dir, f"{layout}-{fabric}-{model}-{re.sub('[^a-z0-9]+', '-', job.lower())}.json")
        more = {"HPF_TRACE": path, "HPF_TRACE_STEPS": TRACED_STEPS}
        run = h.launch(f"{layout} {fabric} {key(model, job)} traced", hpf_cmd(args, layout, model, extra, args.hpf),
                       {**env, **fabric_env(args, layout), **more}, {**overrides, **more}, **launch)
        summary = None
        if run.ok and os.path.exists(path):
            out = subprocess.run([sys.executable, HPF_TRACE, "summary", path, "--json"], stdout=subprocess.PIPE, text=True)
            if out.returncode == 0:
                summary = json.loads(out.stdout)["overall"]
        args.traces[(layout, fabric, key(model, job))] = (summary, run)
        h.log(f"traced {layout} {fabric} {key(model, job)}: exit {run.returncode}")


def rate_bytes(fabric):
    value, unit = float(fabric[:-4]), fabric[-4:]
    return value * (1e6 if unit == "mbit" else 1e9) / 8


def link_bytes(layout, parameters, summed_per_host, bf16):
    """Bytes one step's data-parallel exchange (the ordered reduction) moves into a host over its
    link. Among P participants each receives the other's copy (P = 2) or, scattered and
    collected, (P - 1) / P of the gradient twice, of which the share from the other hosts crosses
    the link: the P participants are the R replicas, L on each host, or summed per host first the
    H hosts' leaders. Exchanged as bf16, replicas' own copies and the collected sums take 2 bytes
    a value, a host's partial sum 4."""
    hosts, slots = LAYOUTS[layout]
    own = 2 if bf16 else 4  # a replica's copy, or a collected sum
    if summed_per_host:
        return (hosts - 1) * 4 * parameters if hosts <= 2 else (hosts - 1) / hosts * (4 + own) * parameters
    replicas = hosts * slots
    if replicas <= 2:
        return slots * (replicas - slots) * own * parameters
    return slots * (replicas - slots) / replicas * 2 * own * parameters


def report(args, data):
    out = [f"## {TITLE}", ""]
    out.append(f"Measured by `scripts/fabric/run_across_hosts.py` with `{h.repo_relative(args.hpf_shown, ROOT)}` built "
               f"{args.built} (when, at which commit and where: its provenance line) and PyTorch {args.torch} "
               f"(`benchmarks/pytorch_ddp.py`). Wall time of the run: {args.minutes:.0f} min.")
    out.append("")
    out.append("Hosts made by `scripts/fabric/emulate.sh` (network namespaces on one bridge, every link shaped by tc "
               "tbf in both directions), 4 hosts x 1 rank or 2 hosts x 2 ranks (`HPF_FABRIC_SLOTS=2`: ranks on one "
               "host share memory). hpf: launched by Open MPI over TCP between hosts; PyTorch: one process per rank "
               "started in its host, DDP over gloo on the hosts' addresses. Global batch 256 for every job; one "
               f"thread per rank; the 4 ranks share this machine's {h.CPUS} cores. Every figure is the best of "
               f"{args.rounds} runs, fabrics, layouts and jobs in alternating order.")
    out.append("")
    rows = []
    for layout in args.layouts:
        for fabric in args.fabrics:
            runs = data[(layout, fabric)]
            for model in args.models:
                _, ddp = h.best(runs.get(key(model, "PyTorch DDP"), []))
                for _, job, _ in [j for j in jobs_of(args, layout) if j[0] == model]:
                    _, r = h.best(runs[key(model, job)])
                    ratio = f"{r['images_per_s'] / ddp['images_per_s']:.2f}" if r and ddp and job != "PyTorch DDP" else ""
                    rows.append([layout, fabric, model, job, h.fmt(r and r["ms_per_step"], 1),
                                 h.fmt(r and r["images_per_s"]), ratio])
    out.append(h.markdown_table(["hosts x ranks", "fabric", "model", "job", "ms per step", "images/s",
                                 "hpf / DDP (images/s)"], rows, "lllllrr"))
    out.append("")
    if args.traces:
        out += trace_table(args)
    out.append(f"**Machine load during this run**: {load_text({0: data_by_job(data)}, args)}.")
    out.append("")
    out.append("Commands (from the repository root, as root; the runner makes each fabric with "
               "`HPF_FABRIC_SLOTS=S scripts/fabric/emulate.sh up HOSTS RATE` and sets these variables):")
    out.append("")
    out.append("```sh")
    out.append(" ".join(["/usr/bin/python3 scripts/fabric/run_across_hosts.py"] +
                        h.runner_options(sys.argv[1:], ("--hpf", "--results"))))
    shown = {**args.overrides, "HPF_FABRIC_SLOTS": "2"}  # as for 2 hosts x 2 ranks
    for model in args.models:
        for _, extra, _ in JOBS:
            if extra is not None:
                cmd = [h.repo_relative(c, ROOT) for c in hpf_cmd(args, "2x2", model, extra, args.hpf_shown)[1:]]
                out.append(h.command_text(cmd, shown))
        ddp = [h.repo_relative(c, ROOT) for c in shlex.split(ddp_cmd(args, "2x2", model)[2].splitlines()[0][:-2])]
        out.append(h.command_text(ddp[1:], shown) + "   # and ranks 1-3, rank r in host r / 2")
    out.append("```")
    return "\n".join(out) + "\n"


def data_by_job(data):
    return {f"{x} {f} {k}": runs for (x, f), jobs in data.items() for k, runs in jobs.items()}


def trace_table(args):
    rows = []
    for (layout, fabric, name), (s, run) in args.traces.items():
        result = run.results[-1] if run.ok and run.results else {}
        if not s or not result:
            rows.append([layout, fabric, name] + ["-"] * 7)
            continue
        parameters = int(result.get("parameters", 0))
        gradient = 4 * parameters
        summed = result.get("summed_per_host") == "yes"
        wire = 1e3 * link_bytes(layout, parameters, summed, result.get("exchange_precision") == "bf16") / rate_bytes(fabric)
        bucket = min(1.0, int(result["bucket_bytes"]) / gradient) if gradient else 1.0
        compute = s["compute"] / 1e3
        ideal = max(compute, wire) + wire * bucket
        hidden = f"{100 * s['hidden'] / s['communication']:.0f} %" if s["communication"] > 0 else "-"
        rows.append([layout, fabric, name, f"{s['step'] / 1e3:,.1f}", f"{compute:,.1f}", f"{s['communication'] / 1e3:,.1f}",
                     hidden, f"{s['exposed'] / 1e3:,.1f}", f"{wire:,.1f}", f"{ideal:,.1f}"])
    return [f"### Where the data-parallel step goes (timeline of steps {TRACED_STEPS}, mean over ranks)", "",
            h.markdown_table(["hosts x ranks", "fabric", "job", "step ms", "compute ms", "communication ms", "hidden",
                              "exposed ms", "wire ms", "ideal ms"], rows, "lllrrrrrrr"), "",
            "From a separate traced run per job (`HPF_TRACE`, `scripts/hpf-trace summary --json`). Hidden: the share "
            "of the exchange's time in flight while the rank computed. Wire: the bytes one step's exchange moves "
            "into a host over its link, at the link's rate: among P participants (the replicas, or summed per "
            "host first the hosts' leaders) each receives the other's copy (P = 2) or 2 (P - 1) / P of the "
            "gradient (scattered and collected), the part from other hosts over the link; exchanged as bf16, a "
            "replica's copy and a collected sum take 2 bytes a value and a host's partial sum 4. Ideal: max(compute, "
            "wire) + the last bucket's share of the wire time.", ""]


def main():
    args = parse_args()
    args.provenance = provenance.start("scripts/fabric/run_across_hosts.py")
    args.built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.hpf)))
    args.hpf_shown, args.hpf = args.hpf, snapshot(args.hpf)
    args.torch = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                                stdout=subprocess.PIPE, text=True).stdout.strip() or "?"
    args.load_start = h.load_average()
    args.traces = {}
    args.trace_dir = tempfile.mkdtemp(prefix="hpf_across_hosts_")
    start = time.monotonic()
    data, stopped = fabrics.guarded(args, "run_across_hosts.py", lambda: emulate(args, args.layouts[0], "down", check=False),
                                    measure, [args.trace_dir])
    if stopped is not None:
        return stopped
    args.minutes = (time.monotonic() - start) / 60
    args.load_end = h.load_average()
    text = report(args, data)
    failed = [f"{x} {f} {k}" for (x, f), jobs in data.items() for k, runs in jobs.items() if not any(r.ok for r in runs)]
    return provenance.publish(args, SECTION, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
