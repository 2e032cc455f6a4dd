#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Training throughput across emulated hosts: for each fabric (default 1gbit, 10gbit, 25gbit and
unshaped links), scripts/fabric/emulate.sh makes 4 hosts as network namespaces on one switch and
hpf_bench_parallel_throughput trains on them, one rank per host, launched by Open MPI over TCP
exactly as on a cluster: data-parallel (4 replicas) and hybrid (2 pipeline stages x 2 replicas),
on a model whose step is dominated by the gradient exchange (the MLP: 0.67 M parameters, little
arithmetic) and on one dominated by arithmetic (ResNet-20); data-parallel also with one 4 MiB
gradient bucket, the fixed size before automatic buckets, to show what overlapping backward
gains. Prints the table and writes the `fabrics` section of benchmarks/RESULTS.md. As root (network namespaces):

  /usr/bin/python3 scripts/fabric/run_fabrics.py                        # ~10 min on 2 cores
  /usr/bin/python3 scripts/fabric/run_fabrics.py --fabrics 1gbit,unshaped --rounds 1 --no-write
  /usr/bin/python3 scripts/fabric/run_fabrics.py --trace-dir /tmp/traces  # keep the traces
  /usr/bin/python3 scripts/fabric/run_fabrics.py --no-trace    # no traced runs, no trace analysis
  /usr/bin/python3 scripts/fabric/run_fabrics.py --comm-bench           # + benchmarks/comm's runner,
                                         # one machine profile per fabric (--label FABRIC)

Every rank runs one thread (OMP/OpenBLAS/MKL pools pinned to 1, forwarded with -x) with
OPENBLAS_CORETYPE set explicitly. Rounds alternate the fabrics' order (and the jobs' order within
a fabric), each fabric made afresh per round and removed after it, also when the runner fails or
is stopped (SIGTERM, Ctrl-C); every figure is its job's best run. The 4 hosts share this
machine's cores, so the figures are throughput of an emulation, not of 4 machines: what they
show is how much of a step each fabric's rate adds, relative to unshaped links (the veth's own
speed, CPU-bound). Nothing here asserts a speed: benchmarks are not tests.

In the first round every configuration also runs once more on every fabric with the timeline on
(HPF_TRACE, steps 2-3, not timed), and `scripts/hpf-trace summary` of each trace gives the step's
split into compute, exposed and hidden communication and pipeline bubble per fabric, and the
critical path and straggler of one step on the slowest fabric.
"""
import argparse
import json
import re
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402
from compare_single_process import snapshot  # noqa: E402

SECTION = "fabrics"
TITLE = "Emulated fabrics: training across network-namespace hosts"
EMULATE = os.path.join(HERE, "emulate.sh")
HPF_TRACE = os.path.join(ROOT, "scripts", "hpf-trace")
COMM_RUNNER = os.path.join(ROOT, "benchmarks", "comm", "run_comm_benchmark.py")
# (model, strategy, stages, micro-batches, global batch, (steps per block, warm-up, blocks)). The
# same global batch everywhere: data-parallel is 64 per replica, hybrid 128 per replica in 4
# micro-batches of 32.
# A seventh element: more arguments. "one 4 MiB bucket" is the bucket size hpf had before sizing
# buckets per stage (StepOptions::bucket_bytes): both models' whole gradient in one bucket, which
# backward cannot overlap.
ONE_BUCKET = ["--bucket-bytes", str(4 << 20)]
CONFIGS = [
    ("mlp", "data-parallel 4", 1, 1, 256, (30, 5, 3)),
    ("mlp", "data-parallel 4, one 4 MiB bucket", 1, 1, 256, (30, 5, 3), ONE_BUCKET),
    ("mlp", "hybrid 2x2", 2, 4, 256, (30, 5, 3)),
    ("resnet20", "data-parallel 4", 1, 1, 256, (3, 1, 3)),
    ("resnet20", "data-parallel 4, one 4 MiB bucket", 1, 1, 256, (3, 1, 3), ONE_BUCKET),
    ("resnet20", "hybrid 2x2", 2, 4, 256, (3, 1, 3)),
]


class Stopped(Exception):
    pass


def add_run_options(p, prefix, net):
    """The options every fabric runner takes: the hpf benchmark, BLAS setting, its fabrics'
    namespace prefix and subnet, and how launches wait and are bounded."""
    default_hpf = os.path.join(ROOT, "build-fabric", "benchmarks", "hpf_bench_parallel_throughput")
    if not os.access(default_hpf, os.X_OK):
        default_hpf = os.path.join(ROOT, "build", "benchmarks", "hpf_bench_parallel_throughput")
    p.add_argument("--hpf", default=default_hpf, help="the hpf_bench_parallel_throughput executable "
                   "(default: build-fabric/benchmarks/..., else build/benchmarks/...)")
    p.add_argument("--setting", default="haswell", choices=list(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting for every rank (default haswell: the machine's own)")
    p.add_argument("--prefix", default=prefix, help="namespace prefix of the runner's fabrics (default %(default)s)")
    p.add_argument("--net", default=net, help="the emulated hosts' /24 (default %(default)s)")
    p.add_argument("--timeout", type=int, default=300, help="seconds one launch may take (default 300)")
    p.add_argument("--max-busy", type=float, default=0.2,
                   help="wait before each run until less than this fraction of all CPUs is busy (default 0.2)")
    p.add_argument("--max-wait", type=float, default=5.0, help="give up waiting after this many seconds (then run)")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(p, "hpfr", "10.77.1.0/24")
    p.add_argument("--fabrics", default="1gbit,10gbit,25gbit,unshaped",
                   help="comma-separated link rates (tc rates or 'unshaped'; default %(default)s)")
    p.add_argument("--hosts", type=int, default=4, help="emulated hosts = ranks (default 4; hybrid needs an even count)")
    p.add_argument("--models", default="mlp,resnet20", help="subset of mlp,resnet20")
    p.add_argument("--strategies", default="data-parallel,hybrid", help="subset of data-parallel,hybrid")
    p.add_argument("--rounds", type=int, default=2, help="runs of every job on every fabric (best is kept)")
    p.add_argument("--trace-dir", default="",
                   help="where the traced runs' files go, DIR/FABRIC-MODEL-STRATEGY.json (default: a temporary "
                        "directory, removed at the end)")
    p.add_argument("--no-trace", action="store_true", help="no traced runs and no trace analysis")
    p.add_argument("--comm-bench", action="store_true",
                   help="also run benchmarks/comm/run_comm_benchmark.py on every fabric (--label FABRIC --profile), "
                        "if it exists")
    p.add_argument("--comm-bench-args", default="--quick --bench-args '--max-bytes 16777216' --training ''",
                   help="more arguments for run_comm_benchmark.py (default %(default)s: few repetitions, but "
                        "messages up to 16 MiB, as large as the activations and gradient buckets the oracle "
                        "predicts with; a full sweep takes ~10 min per fabric)")
    default_comm = os.path.join(ROOT, "build-fabric", "benchmarks", "comm", "hpf_bench_comm")
    if not os.access(default_comm, os.X_OK):
        default_comm = os.path.join(ROOT, "build", "benchmarks", "comm", "hpf_bench_comm")
    p.add_argument("--comm-hpf", default=default_comm, help="the hpf_bench_comm executable for --comm-bench")
    p.add_argument("--comm-out", default="",
                   help="directory for the comm runner's CSVs, plots and profiles (default: its own, "
                        "benchmarks/comm/results and benchmarks/comm/profiles/FABRIC.json)")
    h.add_results_options(p, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = p.parse_args()
    args.fabrics = [f for f in args.fabrics.split(",") if f]
    args.models = [m for m in args.models.split(",") if m]
    args.strategies = [s for s in args.strategies.split(",") if s]
    args.configs = [c for c in CONFIGS if c[0] in args.models and c[1].split()[0] in args.strategies]
    if not args.configs:
        p.error("no configuration left (--models mlp,resnet20 --strategies data-parallel,hybrid)")
    if args.hosts < 2 or (args.hosts % 2 and "hybrid" in args.strategies):
        p.error("--hosts must be 2 or more, and even for the hybrid strategy")
    if os.geteuid() != 0:
        p.error("needs root (network namespaces): run it with sudo")
    if not os.access(args.hpf, os.X_OK):
        p.error(f"{args.hpf} is not an executable: build it first (see scripts/fabric/README in emulate.sh --help)")
    return args


def fabric_env(args):
    return {"HPF_FABRIC_PREFIX": args.prefix, "HPF_FABRIC_NET": args.net, "HPF_FABRIC_TIMEOUT": str(args.timeout)}


def emulate(args, *words, check=True, env=None):
    """scripts/fabric/emulate.sh WORDS with the runner's fabric variables (fabric_env, or `env`)."""
    env = {**os.environ, **(fabric_env(args) if env is None else env)}
    proc = subprocess.run(["bash", EMULATE, *words], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    if check and proc.returncode != 0:
        raise RuntimeError(f"emulate.sh {' '.join(words)} failed ({proc.returncode}):\n{proc.stdout}")
    return proc.stdout


def config_key(config):
    return f"{config[0]} {config[1]}"


def hpf_cmd(args, config, exe):
    model, _, stages, micro, batch, (steps, warmup, repeats) = config[:6]
    return (["bash", EMULATE, "mpiexec", "-n", str(args.hosts), exe, "--model", model, "--stages", str(stages),
             "--batch", str(batch), "--micro-batches", str(micro), "--steps", str(steps), "--warmup", str(warmup),
             "--repeats", str(repeats)] + list(config[6] if len(config) > 6 else []))


def slowest(fabrics):
    shaped = [f for f in fabrics if f != "unshaped"]
    if not shaped:
        return fabrics[0]
    scale = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    return min(shaped, key=lambda f: float(f[:-4]) * scale.get(f[-4:], 1))


def measure(args):
    env, overrides = h.bench_env(h.BLAS_SETTINGS[args.setting][0], threads=1, extra=fabric_env(args))
    args.overrides = {k: v for k, v in overrides.items() if not k.startswith("HPF_FABRIC_")}
    data = {f: {config_key(c): [] for c in args.configs} for f in args.fabrics}
    args.achieved, args.comm = {}, {}
    launch = dict(max_busy=args.max_busy, max_wait=args.max_wait, timeout=args.timeout + 30)
    for r in range(args.rounds):
        order = args.fabrics if r % 2 == 0 else list(reversed(args.fabrics))
        for fabric in order:
            emulate(args, "up", str(args.hosts), fabric)
            try:
                out = emulate(args, "check", "2", check=False)
                args.achieved.setdefault(fabric, []).extend(
                    float(t.split("=")[1]) for t in out.split() if t.startswith("achieved_gbit_per_s="))
                jobs = args.configs if r % 2 == 0 else list(reversed(args.configs))
                for config in jobs:
                    run = h.launch(f"{fabric} {config_key(config)}", hpf_cmd(args, config, args.hpf), env, overrides,
                                   **launch)
                    data[fabric][config_key(config)].append(run)
                    h.log(f"round {r + 1} {fabric} {config_key(config)}: {h.summary(run)}")
                if r == 0 and not args.no_trace:
                    traced(args, fabric, env, overrides, launch)
                if r == 0 and args.comm_bench:
                    comm_bench(args, fabric, env)
            finally:
                previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # removing the fabric is not interrupted
                emulate(args, "down", check=False)
                signal.signal(signal.SIGTERM, previous)
    return data


TRACED_STEPS = "2-3"


def traced(args, fabric, env, overrides, launch):
    """Every configuration once more with HPF_TRACE=FILE (emulate.sh forwards it to the ranks with
    -x), then `hpf-trace summary --json` of the merged trace. Not timed."""
    os.makedirs(args.trace_dir, exist_ok=True)
    for config in args.configs:
        path = os.path.abspath(os.path.join(args.trace_dir, f"{fabric}-{config[0]}-{re.sub('[^a-z0-9]+', '-', config[1].lower())}.json"))
        extra = {"HPF_TRACE": path, "HPF_TRACE_STEPS": TRACED_STEPS}
        run = h.launch(f"{fabric} {config_key(config)} traced", hpf_cmd(args, config, args.hpf),
                       {**env, **extra}, {**overrides, **extra}, **launch)
        summary, text = None, ""
        if run.ok and os.path.exists(path):
            analyse = lambda *extra: subprocess.run([sys.executable, HPF_TRACE, "summary", path, *extra],
                                                    stdout=subprocess.PIPE, text=True)
            as_json, as_text = analyse("--json"), analyse()
            if as_json.returncode == 0 and as_text.returncode == 0:
                summary, text = json.loads(as_json.stdout), as_text.stdout.replace(os.path.dirname(path) + "/", "")
        args.traces[(fabric, config_key(config))] = (summary, text)
        h.log(f"traced {fabric} {config_key(config)}: exit {run.returncode}, "
              f"{'analysed' if summary else 'no trace'} {path}")


def trace_tables(args):
    """The traced runs' breakdown per fabric, and the full summary of one step on the slowest."""
    rows = []
    for config in args.configs:
        for fabric in args.fabrics:
            s, _ = args.traces.get((fabric, config_key(config)), (None, ""))
            if not s:
                rows.append([fabric, config[0], config[1]] + ["-"] * 7)
                continue
            o = s["overall"]
            ms = lambda key: f"{o[key] / 1e3:,.1f}"
            hidden = f"{100 * o['hidden'] / o['communication']:.0f} %" if o["communication"] > 0 else "-"
            rows.append([fabric, config[0], config[1], ms("step"), ms("compute"), ms("communication"),
                         ms("hidden"), hidden, ms("exposed"), ms("bubble")])
    out = [f"### Where the step goes, per fabric (timeline of steps {TRACED_STEPS}, mean over ranks)", "",
           h.markdown_table(["fabric", "model", "strategy", "step ms", "compute ms", "communication ms", "hidden ms",
                             "hidden", "exposed ms", "of it bubble ms"], rows, "lllrrrrrrr"), "",
           "From a separate traced run per configuration and fabric (`HPF_TRACE`, `scripts/hpf-trace summary "
           "--json`), slower by what tracing costs. Communication: each operation from post to completion; "
           "hidden: the part of it while the rank computed; exposed: the rank blocked in a receive, a "
           "collective or a wait (bubble: the part blocked on a neighbouring stage).", ""]
    slow = slowest(args.fabrics)
    for config in args.configs:
        s, text = args.traces.get((slow, config_key(config)), (None, ""))
        if s and config[0] == "mlp" and config[1].startswith("hybrid"):
            out += [f"`scripts/hpf-trace summary` of the {config[0]} {config[1]} run on the slowest fabric ({slow}):",
                    "", "```", text.strip(), "```", ""]
    return out


def comm_bench(args, fabric, env):
    """benchmarks/comm's runner on this fabric: its launcher is the fabric's mpiexec."""
    if not os.path.exists(COMM_RUNNER):
        h.log(f"--comm-bench: {h.repo_relative(COMM_RUNNER, ROOT)} does not exist (yet); skipped")
        args.comm[fabric] = "runner missing"
        return
    launcher = os.path.join("/run/hpf-fabric", args.prefix, "mpiexec")  # written by `emulate.sh up`
    # The fabric's launcher adds every flag itself (--mpiexec-flags ""); its RESULTS.md section is
    # the comm runner's own business (--no-results): here one profile per fabric, labelled FABRIC.
    cmd = ["/usr/bin/python3", COMM_RUNNER, "--hpf", args.comm_hpf, "--mpiexec", launcher, "--mpiexec-flags", "",
           "--label", fabric, "--hosts", str(args.hosts), "--hosts-share-cores", "--no-results", "--max-busy", str(args.max_busy),
           "--max-wait", str(args.max_wait), "--timeout", str(args.timeout)]
    if args.comm_out:
        cmd += ["--out-dir", args.comm_out, "--profile", os.path.join(args.comm_out, f"{fabric}.json")]
    cmd += shlex.split(args.comm_bench_args)
    h.log("comm benchmark: " + h.command_text(cmd))
    try:
        proc = subprocess.run(cmd, env=env, timeout=args.timeout * 4)
        args.comm[fabric] = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        args.comm[fabric] = f"timed out after {args.timeout * 4} s"


# --- report ------------------------------------------------------------------------------------------
def report(args, data):
    out = [f"## {TITLE}", ""]
    out.append(f"Measured by `scripts/fabric/run_fabrics.py` with "
               f"`{h.repo_relative(args.hpf_shown, ROOT)}` built {args.built} (when, at which commit and where: its "
               f"provenance line). Wall time of the run: {args.minutes:.0f} min.")
    out.append("")
    out.append(f"{args.hosts} hosts made by `scripts/fabric/emulate.sh` as network namespaces on one Linux bridge, "
               "each host's link shaped by tc tbf to the fabric's rate in both directions (burst = 1 ms at the "
               "rate, 10 ms queue; no added latency); one rank per host, launched by Open MPI 4.1 from host 0 "
               "through a hostfile of the hosts' addresses and a launch agent in place of ssh, over TCP only "
               "(`btl tcp,self`, both TCP interfaces restricted to the fabric's subnet). The hosts share this "
               f"machine's {h.CPUS} cores: {args.hosts} single-threaded ranks on {h.CPUS} cores are CPU-bound, "
               "so absolute figures are lower than on separate machines and the TCP stack's own CPU time competes "
               "with the ranks; the columns relative to unshaped links show what each rate adds. "
               f"Every figure is the best of {args.rounds} runs (fabrics and jobs in alternating order, each "
               "fabric made afresh per round); within a run, the best of several timed blocks after warm-up "
               "steps. Global batch 256 everywhere: data-parallel 64 per replica, hybrid 2 stages x 2 replicas "
               "with 128 per replica in 4 micro-batches (1F1B, cut by `Balanced<2>`).")
    out.append("")
    achieved = ", ".join(f"{f} {max(v):.2f} Gbit/s" for f, v in args.achieved.items() if v)
    out.append(f"Achieved TCP rate from host 0 to host 1 (one stream, `emulate.sh check`, best of the rounds): "
               f"{achieved}. What unshaped links reach is the limit of this machine's veth path (CPU-bound): "
               "fabrics rated above it cannot differ much here.")
    out.append("")
    headers = ["fabric", "link rate", "model", "strategy", "images/s", "ms per step", "vs unshaped (images/s)",
               "runs"]
    rows = []
    base = {}
    if "unshaped" in data:
        for config in args.configs:
            _, r = h.best(data["unshaped"][config_key(config)])
            base[config_key(config)] = r["images_per_s"] if r else None
    for config in args.configs:
        for fabric in args.fabrics:
            runs = data[fabric][config_key(config)]
            _, r = h.best(runs)
            rate = "veth (no qdisc)" if fabric == "unshaped" else fabric.replace("gbit", " Gbit/s").replace(
                "mbit", " Mbit/s")
            b = base.get(config_key(config))
            rel = f"{r['images_per_s'] / b:.2f}" if r and b else "-"
            rows.append([fabric, rate, config[0], config[1], h.fmt(r and r["images_per_s"]),
                         h.fmt(r and r["ms_per_step"], 1), rel, str(sum(x.ok for x in runs))])
    out.append(h.markdown_table(headers, rows, "llllrrrr"))
    out.append("")
    out.append(f"**Machine load during this run**: {load_text(data, args)}. Load average at the start "
               f"{args.load_start}, at the end {args.load_end}.")
    out.append("")
    if args.traces:
        out += trace_tables(args)
    if args.comm:
        out.append("Comm benchmark per fabric: " + ", ".join(f"{f}: {v}" for f, v in args.comm.items()))
        out.append("")
    out.append("Commands (run from the repository root, as root; the runner launches these on each fabric "
               "it made with `scripts/fabric/emulate.sh up 4 RATE`, with these variables set):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--trace-dir"))
    out.append(" ".join(["/usr/bin/python3 scripts/fabric/run_fabrics.py"] + options))
    for config in args.configs:
        cmd = hpf_cmd(args, config, args.hpf_shown)[1:]
        cmd = [h.repo_relative(c, ROOT) for c in cmd]
        out.append(h.command_text(cmd, args.overrides))
    out.append("```")
    return "\n".join(out) + "\n"


def load_text(data, args):
    """The machine's load around the runs. The ranks start through the fabric's launch agent, not
    as children of this runner, so their CPU time counts as the machine's, not the benchmark's:
    what tells a quiet run here is how busy the machine was just before it."""
    runs = [run for jobs in data.values() for rs in jobs.values() for run in rs]
    if not runs:
        return "no runs"
    before = sorted(r.busy_before for r in runs)
    during = sorted(r.foreign_busy for r in runs)
    return (f"{len(runs)} runs; just before a run the machine was at most {100 * before[-1]:.0f} % busy (median "
            f"{100 * before[len(before) // 2]:.0f} %). During a run it was a median {100 * during[len(during) // 2]:.0f} "
            "% busy with processes other than the runner's children, which here include the ranks themselves (they "
            "start through the fabric's launch agent)")


def guarded(args, runner, remove_leftovers, measure, temporary=()):
    """measure(args) after remove_leftovers(), SIGTERM raising Stopped; the benchmark's snapshot
    and the `temporary` directories go however it ends. (data, None), or (None, exit status)
    when stopped."""
    def stop(signum, _frame):
        raise Stopped(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    h.log(f"machine: {h.machine_description()}")
    try:
        remove_leftovers()  # what a crashed earlier run of this runner left
        return measure(args), None
    except (Stopped, KeyboardInterrupt) as e:
        h.log(f"{runner}: {e or 'interrupted'}; the fabric was removed")
        return None, 143 if isinstance(e, Stopped) else 130
    finally:
        shutil.rmtree(os.path.dirname(args.hpf), ignore_errors=True)
        for directory in temporary:
            shutil.rmtree(directory, ignore_errors=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main():
    args = parse_args()
    args.provenance = provenance.start("scripts/fabric/run_fabrics.py")
    args.built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.hpf)))
    args.hpf_shown, args.hpf = args.hpf, snapshot(args.hpf)
    args.load_start = h.load_average()
    args.traces = {}
    own_trace_dir = not args.trace_dir and not args.no_trace
    if own_trace_dir:
        args.trace_dir = tempfile.mkdtemp(prefix="hpf_fabric_traces_")
    start = time.monotonic()
    data, stopped = guarded(args, "run_fabrics.py", lambda: emulate(args, "down", check=False), measure,
                            [args.trace_dir] if own_trace_dir else [])
    if stopped is not None:
        return stopped
    args.minutes = (time.monotonic() - start) / 60
    args.load_end = h.load_average()
    text = report(args, data)
    failed = [f"{f}/{config_key(c)}" for f in args.fabrics for c in args.configs
              if not any(r.ok for r in data[f][config_key(c)])]
    return provenance.publish(args, SECTION, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
