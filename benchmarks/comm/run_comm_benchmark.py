#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Latency and bandwidth of hpf's MPI wrappers on 2 and 4 ranks (hpf_bench_comm, OSU-style),
alpha/beta models fitted to them, a machine profile, log-log plots, and the `comm` section of
benchmarks/RESULTS.md, in one command:

  /usr/bin/python3 benchmarks/comm/run_comm_benchmark.py                    # full sweep (~2 min here)
  /usr/bin/python3 benchmarks/comm/run_comm_benchmark.py --quick --no-results --profile /tmp/p.json
  /usr/bin/python3 benchmarks/comm/run_comm_benchmark.py --from-csv benchmarks/comm/results/comm_local.csv
  # across hosts (e.g. network namespaces): an Open MPI hostfile and launcher arguments, verbatim
  /usr/bin/python3 benchmarks/comm/run_comm_benchmark.py --label tcp --hostfile hosts \\
      --mpiexec-args "--map-by node --mca btl tcp,self" --launch-prefix "ip netns exec a" --no-results

Ranks start as `[PREFIX] MPIEXEC FLAGS [--hostfile F] -n N ARGS hpf_bench_comm ...`, where FLAGS are
what scripts/launch.sh --preflags gives this launcher (Open MPI: --allow-run-as-root as root,
--oversubscribe beyond the cores) unless --mpiexec-flags says otherwise. Every process runs one
thread. Before each run the runner waits (up to --max-wait s) for the machine to fall under
--max-busy; 4 ranks on a 2-core machine are oversubscribed, so their figures include the
scheduler's time slices. The binary checks every message and reduction it times.

Files (LABEL from --label, default `local`): benchmarks/comm/results/comm_LABEL.csv (every RESULT
row), comm_LABEL_time.svg and comm_LABEL_bandwidth.svg next to it (--out-dir moves all three), and
the profile benchmarks/comm/profiles/LABEL.json (--profile). A profile there that was measured on
this host keeps its compute part (hpf-oracle calibrate's); one from another host is replaced whole.

Fits (benchmarks/comm/alpha_beta.py): per primitive and rank count, t = alpha + beta * n over the
median times, least squares on relative error, cut into up to 3 regimes of message size where one
line misses a point by more than 15 % (the cuts minimise the total error; e.g. Open MPI's switch
from eager to rendezvous messages). What t and n are:
  p2p_latency        one-way time of a ping-pong of n bytes (osu_latency)
  p2p_rested         time of one message of n bytes after the link rested 20 ms, both ranks awake (its
                     4-byte answer taken off): what a link with a burst (a token bucket) does with a
                     lone message
  p2p_bandwidth      time per message of n bytes in a window of back-to-back messages (osu_bw):
                     1 / beta is the streaming bandwidth, alpha the gap between messages
  bibw               the same with a window in each direction at once (osu_bibw): n bytes each way
                     per t, so both directions together move 2n / t
  allreduce          one hpf::comm::allreduce (sum, in place) of n bytes on every rank
  buckets_ordered,   one reduction of a model's whole gradient (gradient_bytes G) through
  buckets_allreduce  hpf::GradientBuckets of b-byte buckets: t = alpha * ceil(G / b) + beta * G
                     (alpha per bucket, beta per gradient byte); min_bytes/max_bytes are bucket sizes

The link (the profile's "link" object, from the pair of the smallest rank count):
  burst_bytes,       a rested message of n bytes as a hinge: t = rested_alpha_s + rested_beta_s_per_byte
  rested_alpha_s,    * min(n, B) + beta * max(0, n - B), beta the largest messages' p2p_bandwidth beta
  rested_beta_s_...  (the streaming rate); B = burst_bytes, what a rested link passes before it slows
                     to that rate. Least squares on relative error over the rested sizes, B scanned
                     on a fine grid (0: no burst; the largest size measured: at least that)
  compute_s_per_byte the busy loop's extra time (hpf_bench_comm's steal) per byte its rank moved while
                     it computed (2 x the message size): what traffic takes from computation

Inside training (benchmarks/comm/in_training.py; skipped by --quick, --from-csv and --training ''):
hpf_bench_parallel_throughput trains ResNet-20 data-parallel on each rank count with the timeline on,
once per gradient reduction, and the section tables each bucket's reduction as training ran it
(start during backward to completion, and the part left exposed) against the standalone fit.

Machine profile (JSON; the performance oracle reads it):
  {"format": "hpf-machine-profile", "version": 1, "label": "local", "created": "2025-01-01T12:00:00+00:00",
   "host": {"cpu": "...", "cores": 2, "threads_per_core": 1, "sockets": 1, "memory_gib": 7.8,
            "kernel": "...", "description": "..."},
   "mpi": "Open MPI v4.1.4", "kokkos": "Serial", "hosts": 1, "ranks_per_host": 4,
   "placement": {"2": {"hosts": 1, "ranks_per_host": 2, "peer": 1, "peer_same_host": true}, "4": {...}},
   "comm": {"<primitive>": {"<ranks>": [{"min_bytes": 4, "max_bytes": 4096, "alpha_s": 5e-07,
            "beta_s_per_byte": 1e-10, "mean_rel_error": 0.05, "max_rel_error": 0.2, "points": 11}, ...]}},
   "buckets": {"model": "resnet20", "gradient_bytes": 1078912},
   "link": {"ranks": 2, "burst_bytes": 112000, "rested_alpha_s": 6e-05, "rested_beta_s_per_byte": 4e-10,
            "compute_s_per_byte": 1e-09}}
Regimes of one primitive and rank count are contiguous and increasing: a size n takes the first
regime whose max_bytes >= n (the last beyond it). hosts and ranks_per_host are those of the largest
rank count (--hosts overrides the host count the ranks' processor names give, e.g. for network
namespaces that share one host name); "hosts_share_cores": true (--hosts-share-cores) says the hosts
are namespaces of one machine, whose cores all ranks share. check_profile.py validates a profile.
"""
import argparse
import csv
import datetime
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, BENCHMARKS)
sys.path.insert(0, HERE)
import alpha_beta  # noqa: E402
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402
import check_profile  # noqa: E402
import in_training  # noqa: E402
import svg_plot  # noqa: E402

SECTION = "comm"
TITLE = "Communication: latency and bandwidth of hpf's MPI wrappers"
QUICK_ARGS = ["--max-bytes", "65536", "--iterations", "20", "--iterations-large", "5", "--warmup", "2",
              "--warmup-large", "1", "--bucket-min-bytes", "16384"]
# Profile name of each measured series: (RESULT primitive, reduction) -> profile primitive.
PROFILE_NAMES = {("latency", ""): "p2p_latency", ("rested", ""): "p2p_rested", ("bw", ""): "p2p_bandwidth",
                 ("bibw", ""): "bibw", ("allreduce", ""): "allreduce", ("buckets", "ordered"): "buckets_ordered",
                 ("buckets", "allreduce"): "buckets_allreduce"}
CSV_COLUMNS = ["label", "primitive", "ranks", "bytes", "median_us", "p99_us", "bandwidth_MBps", "bus_bandwidth_MBps",
               "iterations", "warmup", "window", "peer", "model", "reduction", "bucket_bytes", "buckets", "piece_bytes",
               "rest_us", "loop_us", "exchange_us", "hosts", "ranks_per_host", "peer_same_host", "kokkos",
               "elements", "mpi"]
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OMP_PROC_BIND": "false", "OMP_WAIT_POLICY": "passive"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "benchmarks", "comm", "hpf_bench_comm"),
                   help="the hpf_bench_comm executable (default: build/benchmarks/comm/hpf_bench_comm)")
    p.add_argument("--mpiexec", default="mpiexec", help="MPI launcher (default: mpiexec on PATH)")
    p.add_argument("--mpiexec-flags", default=None,
                   help="launcher flags before -n (default: what scripts/launch.sh --preflags gives per rank count)")
    p.add_argument("--mpiexec-args", default="", help="more launcher arguments after -n N, appended verbatim")
    p.add_argument("--hostfile", default="", help="passed to the launcher as --hostfile FILE (Open MPI)")
    p.add_argument("--launch-prefix", default="", help="command words before the launcher (e.g. 'ip netns exec a')")
    p.add_argument("--ranks", default="2,4", help="rank counts, comma-separated (default 2,4)")
    p.add_argument("--quick", action="store_true",
                   help="4 B .. 64 KiB, few repetitions, no waiting for a quiet machine (for tests)")
    p.add_argument("--bench-args", default="", help="more hpf_bench_comm options, e.g. '--max-volume 268435456'")
    p.add_argument("--label", default="local", help="name of this machine/fabric: file names and profile")
    p.add_argument("--hosts", type=int, default=0, help="host count for the profile (default: from the ranks)")
    p.add_argument("--hosts-share-cores", action="store_true",
                   help="the hosts are emulated on this machine (network namespaces) and share its cores: "
                        "the profile says so, and the oracle lets all ranks share them")
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"), help="where the CSV and plots go")
    p.add_argument("--csv", default="", help="CSV path (default OUT_DIR/comm_LABEL.csv)")
    p.add_argument("--profile", default="", help="profile path (default benchmarks/comm/profiles/LABEL.json)")
    p.add_argument("--from-csv", default="", help="fit, plot and report an earlier run's CSV instead of measuring")
    p.add_argument("--max-busy", type=float, default=0.25,
                   help="wait before each run until less than this fraction of all CPUs is busy (default 0.25)")
    p.add_argument("--max-wait", type=float, default=30.0, help="give up waiting after this many seconds (then run)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds one launch may take (default 900)")
    p.add_argument("--training", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_parallel_throughput"),
                   help="hpf_bench_parallel_throughput, traced to compare the gradient reduction inside training "
                        "with the fits (default: the build's; '' or --quick: not run)")
    p.add_argument("--results", default=os.path.join(BENCHMARKS, "RESULTS.md"), help="markdown file to update")
    p.add_argument("--no-results", action="store_true", help="leave RESULTS.md alone (print the section only)")
    args = p.parse_args()
    try:
        args.rank_counts = sorted({int(r) for r in args.ranks.split(",") if r.strip()})
    except ValueError:
        p.error(f"--ranks expects comma-separated whole numbers, got '{args.ranks}'")
    if not args.rank_counts or min(args.rank_counts) < 2:
        p.error("--ranks needs rank counts of at least 2 (the point-to-point tests need a pair)")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", args.label):
        p.error("--label may hold letters, digits, '.', '_' and '-' only (it names files)")
    if args.from_csv:
        if not os.path.exists(args.from_csv):
            p.error(f"--from-csv {args.from_csv}: no such file")
    else:
        if not os.access(args.hpf, os.X_OK):
            p.error(f"{args.hpf} is not an executable: build it first (ninja -C build hpf_bench_comm)")
        if not shutil.which(args.mpiexec):
            p.error(f"no MPI launcher '{args.mpiexec}'")
        if args.hostfile and not os.path.exists(args.hostfile):
            p.error(f"--hostfile {args.hostfile}: no such file")
    if args.quick or args.from_csv:
        args.training = ""
    if args.training and not os.access(args.training, os.X_OK):
        p.error(f"{args.training} is not an executable: build it (ninja -C build hpf_bench_parallel_throughput) "
                "or pass --training ''")
    args.csv = args.csv or os.path.join(args.out_dir, f"comm_{args.label}.csv")
    args.profile = args.profile or os.path.join(HERE, "profiles", f"{args.label}.json")
    if args.quick:
        args.max_wait = 0.0
    return args


# --- running ------------------------------------------------------------------------------------------
def launcher_flags(args, ranks):
    """--mpiexec-flags, or what scripts/launch.sh derives for this launcher and rank count."""
    if args.mpiexec_flags is not None:
        return shlex.split(args.mpiexec_flags)
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "launch.sh"), "--preflags", "--launcher",
                          args.mpiexec, "-n", str(ranks)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise SystemExit(f"run_comm_benchmark: scripts/launch.sh --preflags failed: {out.stderr.strip()}")
    return out.stdout.split()


def command(args, ranks, program=None):
    """The launch of `program` (default: hpf_bench_comm with its options) on `ranks` ranks."""
    program = program or [args.hpf] + (QUICK_ARGS if args.quick else []) + shlex.split(args.bench_args)
    return (shlex.split(args.launch_prefix) + [args.mpiexec] + launcher_flags(args, ranks)
            + (["--hostfile", args.hostfile] if args.hostfile else []) + ["-n", str(ranks)]
            + shlex.split(args.mpiexec_args) + program)


def measure_training(args, fits, commands):
    """in_training's table of the gradient buckets inside traced training runs."""
    base = {k: v for k, v in os.environ.items() if k not in h.CLEARED_VARIABLES}
    base.update(THREADS)

    def launch(ranks, bench_args, extra_env):
        cmd = command(args, ranks, [args.training] + bench_args)
        overrides = dict(THREADS, **extra_env)
        shown = dict(overrides, HPF_TRACE=os.path.basename(extra_env["HPF_TRACE"]))
        commands.append(h.command_text(cmd, shown).replace(os.path.abspath(args.training),
                                                           h.repo_relative(args.training, ROOT)))
        h.log(f"== traced training: {commands[-1]}")
        run = h.launch(f"traced training, {ranks} ranks", cmd, dict(base, **extra_env), overrides,
                       max_busy=args.max_busy, max_wait=args.max_wait, timeout=args.timeout)
        if run.returncode != 0:
            h.log(f"   exit {run.returncode}: {run.stderr.strip()[-1500:]}")
        return run.returncode == 0

    with tempfile.TemporaryDirectory(prefix="hpf_comm_training_") as trace_dir:
        return in_training.measure(args.rank_counts, launch, trace_dir, fits)


def measure(args):
    """Runs every rank count; returns (rows, {ranks: environment row}, [commands], [failed], [load])."""
    env = {k: v for k, v in os.environ.items() if k not in h.CLEARED_VARIABLES}
    env.update(THREADS)
    rows, environments, commands, failed, loads = [], {}, [], [], []
    for ranks in args.rank_counts:
        cmd = command(args, ranks)
        commands.append(h.command_text(cmd, THREADS))
        h.log(f"== {ranks} ranks: {commands[-1]}")
        run = h.launch(f"{ranks} ranks", cmd, env, THREADS, max_busy=args.max_busy, max_wait=args.max_wait,
                       timeout=args.timeout)
        h.log(f"   {ranks} ranks: exit {run.returncode}, {len(run.results)} results in {run.wall:.0f} s, "
              f"other processes kept {100 * run.foreign_busy:.0f} % of the machine busy")
        loads.append(f"{100 * run.foreign_busy:.0f} % during the {ranks}-rank run ({run.wall:.0f} s, after waiting "
                     f"{run.waited:.0f} s for under {100 * args.max_busy:.0f} %)")
        if run.returncode != 0:
            failed.append(f"{ranks} ranks (exit {run.returncode}): {run.stderr.strip()[-1500:]}")
        for r in run.results:
            r["label"] = args.label
            if r.get("primitive") == "environment":
                environments[ranks] = r
            else:
                rows.append(r)
    return rows, environments, commands, failed, loads


# --- CSV ----------------------------------------------------------------------------------------------------
def write_csv(path, rows, environments):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for e in environments.values():
            writer.writerow(e)
        for r in rows:
            writer.writerow(r)


def read_csv(path):
    rows, environments = [], {}
    with open(path, newline="") as f:
        for raw in csv.DictReader(f):
            r = {k: h.parse_value(v) for k, v in raw.items() if v not in ("", None)}
            if r.get("primitive") == "environment":
                environments[r["ranks"]] = r
            else:
                rows.append(r)
    return rows, environments


# --- fits -------------------------------------------------------------------------------------------------------
def profile_name(row):
    return PROFILE_NAMES.get((row["primitive"], row.get("reduction", "") if row["primitive"] == "buckets" else ""))


def fit_point(row):
    """(size, a, b, t) of a RESULT row for alpha_beta (see the docstring for what t and n are)."""
    t = row["median_us"] * 1e-6
    if row["primitive"] in ("bw", "bibw"):
        t /= row["window"]
    if row["primitive"] == "buckets":
        return (row["bucket_bytes"], row["buckets"], row["bytes"], t)
    return (row["bytes"], 1, row["bytes"], t)


def fit_all(rows):
    """{profile primitive: {ranks: [Line]}}."""
    series = {}
    for r in rows:
        name = profile_name(r)
        if name and r.get("median_us", 0) > 0:
            series.setdefault(name, {}).setdefault(r["ranks"], []).append(fit_point(r))
    return {name: {ranks: alpha_beta.fit_regimes(points) for ranks, points in sorted(per.items())}
            for name, per in series.items()}


# --- profile ------------------------------------------------------------------------------------------------
def host_facts():
    facts = {}
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True, env={**os.environ, "LC_ALL": "C"}).stdout
        facts = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        m = re.search(r"MemTotal:\s*(\d+)", f.read())

    def number(key):
        try:
            return int(facts.get(key, ""))
        except ValueError:
            return None

    return {"cpu": facts.get("Model name", "unknown"), "cores": os.cpu_count(),
            "threads_per_core": number("Thread(s) per core"), "sockets": number("Socket(s)"),
            "memory_gib": round(int(m.group(1)) / 2**20, 1) if m else None, "kernel": os.uname().release,
            "hypervisor": facts.get("Hypervisor vendor"), "description": h.machine_description()}


def placement(args, environments):
    """{ranks: where the ranks ran}: from the ranks' processor names, or from --hosts (then whether
    the point-to-point pair shared a host is unknown: None)."""
    out = {}
    for ranks, e in sorted(environments.items()):
        if args.hosts:
            out[str(ranks)] = {"hosts": args.hosts, "ranks_per_host": math.ceil(ranks / args.hosts),
                               "peer": e.get("peer"), "peer_same_host": None}
        else:
            out[str(ranks)] = {"hosts": int(e.get("hosts", 1)), "ranks_per_host": int(e.get("ranks_per_host", ranks)),
                               "peer": e.get("peer"), "peer_same_host": bool(e.get("peer_same_host", 1))}
    return out


def burst_hinge(points, beta, grid=400):
    """(B, alpha, slope): t = alpha + slope * min(n, B) + beta * max(0, n - B) fitted to the rested
    (n, t) points, least squares on relative error, B scanned over 0 and a geometric grid from the
    smallest to the largest size."""
    low, high = min(n for n, _ in points), max(n for n, _ in points)
    candidates = [0.0] + [low * (high / low) ** (i / (grid - 1)) for i in range(grid)]
    best = None
    for burst in candidates:
        # Weighted least squares of y = t - beta * max(0, n - B) on x = min(n, B), weights 1 / t^2.
        sw = sx = sxx = sy = sxy = 0.0
        for n, t in points:
            w, x, y = 1 / t ** 2, min(n, burst), t - beta * max(0, n - burst)
            sw, sx, sxx, sy, sxy = sw + w, sx + w * x, sxx + w * x * x, sy + w * y, sxy + w * x * y
        det = sw * sxx - sx * sx
        slope = max(0.0, (sw * sxy - sx * sy) / det) if det > 0 else 0.0
        alpha = max(0.0, (sy - slope * sx) / sw)
        error = sum((alpha + slope * min(n, burst) + beta * max(0, n - burst) - t) ** 2 / t ** 2 for n, t in points)
        if best is None or error < best[0]:
            best = (error, burst, alpha, slope)
    return best[1], best[2], best[3]


def link_facts(rows, fits):
    """The profile's "link" object (see the docstring), or None without rested and steal rows."""
    pairs = sorted({r["ranks"] for r in rows if r["primitive"] in ("rested", "steal")})
    if not pairs:
        return None
    ranks, out = pairs[0], {"ranks": pairs[0]}
    rested = [(r["bytes"], r["median_us"] * 1e-6) for r in rows if r["primitive"] == "rested"
              and r["ranks"] == ranks and r.get("median_us", 0) > 0]
    stream = fits.get("p2p_bandwidth", {}).get(ranks)
    if len(rested) >= 3 and stream:
        burst, alpha, slope = burst_hinge(rested, stream[-1].beta)
        out.update({"burst_bytes": round(burst), "rested_alpha_s": alpha, "rested_beta_s_per_byte": slope})
    steal = [r for r in rows if r["primitive"] == "steal" and r["ranks"] == ranks]
    if steal:
        out["compute_s_per_byte"] = max(0.0, steal[0]["median_us"] * 1e-6 / (2 * steal[0]["bytes"]))
    return out


def profile(args, fits, rows, environments):
    where = placement(args, environments)
    largest = where[max(where, key=int)] if where else {"hosts": args.hosts or 1, "ranks_per_host": None}
    first_env = next(iter(environments.values()), {})
    comm = {}
    for name, per in fits.items():
        comm[name] = {str(ranks): [{"min_bytes": l.low, "max_bytes": l.high, "alpha_s": l.alpha,
                                    "beta_s_per_byte": l.beta, "mean_rel_error": round(l.mean_rel_error, 4),
                                    "max_rel_error": round(l.max_rel_error, 4), "points": l.count}
                                   for l in lines]
                      for ranks, lines in per.items()}
    bucket_rows = [r for r in rows if r["primitive"] == "buckets"]
    out = {"format": check_profile.FORMAT, "version": check_profile.VERSION, "label": args.label,
           "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "host": host_facts(), "mpi": first_env.get("mpi", "unknown"), "kokkos": first_env.get("kokkos", "unknown"),
           "hosts": largest["hosts"], "ranks_per_host": largest["ranks_per_host"], "placement": where, "comm": comm}
    if args.hosts_share_cores:
        out["hosts_share_cores"] = True
    if bucket_rows:
        out["buckets"] = {"model": bucket_rows[0].get("model"), "gradient_bytes": bucket_rows[0]["bytes"]}
    link = link_facts(rows, fits)
    if link:
        out["link"] = link
    return out


def kept_compute(path, host):
    """The compute part (hpf-oracle calibrate's) of the profile at `path`, if it was measured on this
    machine (bench_harness.machine_of, as run_oracle_accuracy.py checks): measuring the
    communication again keeps the models calibrated there (PreActResNet-164's blocks for the cluster
    extrapolation are not among the accuracy runner's)."""
    old = h.read_profile(path)
    same_machine = h.machine_of(h.profile_host(old)) == h.machine_of(host.get("description", ""))
    return old.get("compute") if old and same_machine else None


# --- plots ---------------------------------------------------------------------------------------------------
def sizes_between(low, high):
    n, out = 1, []
    while n <= high:
        if n >= low:
            out.append(n)
        n *= 2
    return out


def fitted(lines, transform):
    """Each regime's fitted curve as (x, transform(n, t)) over its sizes."""
    return [[(n, transform(n, line.time(1, n))) for n in sizes_between(line.low, line.high)] for line in lines]


def plots(args, rows, fits):
    """comm_LABEL_time.svg and comm_LABEL_bandwidth.svg in the CSV's folder; returns their paths."""
    sizes = [r["bytes"] for r in rows if r["primitive"] != "buckets"] or [4, 2**26]
    ticks = svg_plot.byte_ticks(min(sizes), max(sizes))
    markers = {ranks: svg_plot.MARKERS[i % len(svg_plot.MARKERS)] for i, ranks in enumerate(args.rank_counts)}
    dashes = {ranks: (None if i == 0 else "6,3") for i, ranks in enumerate(args.rank_counts)}

    def measured(primitive, ranks, value):
        return [(r["bytes"], value(r)) for r in rows if r["primitive"] == primitive and r["ranks"] == ranks]

    def add(plot, color, title, primitive, profile_key, value, model_value):
        for ranks in args.rank_counts:
            plot.points(f"{title}, {ranks} ranks", measured(primitive, ranks, value), color, markers[ranks])
            for i, curve in enumerate(fitted(fits.get(profile_key, {}).get(ranks, []), model_value(ranks))):
                plot.line(f"fit, {ranks} ranks" if i == 0 else None, curve, color, dashes[ranks])

    paths = []
    folder = os.path.dirname(os.path.abspath(args.csv))
    time_plot = svg_plot.Plot(f"hpf::comm time per operation ({args.label})", "message size", "time (µs)",
                              x_ticks=ticks)
    add(time_plot, svg_plot.COLORS[0], "ping-pong one-way", "latency", "p2p_latency", lambda r: r["median_us"],
        lambda ranks: lambda n, t: t * 1e6)
    add(time_plot, svg_plot.COLORS[1], "allreduce", "allreduce", "allreduce", lambda r: r["median_us"],
        lambda ranks: lambda n, t: t * 1e6)
    paths.append(os.path.join(folder, f"comm_{args.label}_time.svg"))
    time_plot.write(paths[-1])
    bw_plot = svg_plot.Plot(f"hpf::comm bandwidth ({args.label})", "message size", "MB/s", x_ticks=ticks)
    add(bw_plot, svg_plot.COLORS[0], "bw", "bw", "p2p_bandwidth", lambda r: r["bandwidth_MBps"],
        lambda ranks: lambda n, t: n / t / 1e6)
    add(bw_plot, svg_plot.COLORS[2], "bibw", "bibw", "bibw", lambda r: r["bandwidth_MBps"],
        lambda ranks: lambda n, t: 2 * n / t / 1e6)
    add(bw_plot, svg_plot.COLORS[1], "allreduce bus bw", "allreduce", "allreduce", lambda r: r["bus_bandwidth_MBps"],
        lambda ranks: lambda n, t: n / t / 1e6 * 2 * (ranks - 1) / ranks)
    paths.append(os.path.join(folder, f"comm_{args.label}_bandwidth.svg"))
    bw_plot.write(paths[-1])
    return paths


# --- report ----------------------------------------------------------------------------------------------------
def size_text(n):
    return svg_plot.byte_label(n)


def fit_table(fits):
    rows = []
    for name in PROFILE_NAMES.values():
        for ranks, lines in sorted(fits.get(name, {}).items()):
            for line in lines:
                rows.append([name, ranks, f"{size_text(line.low)} - {size_text(line.high)}", line.count,
                             f"{line.alpha * 1e6:,.3g}", f"{1 / line.beta / 1e9:,.3g}",
                             f"{100 * line.mean_rel_error:.1f} %", f"{100 * line.max_rel_error:.1f} %"])
    return h.markdown_table(["primitive", "ranks", "sizes", "points", "alpha (µs)", "1/beta (GB/s)",
                             "mean rel. error", "max rel. error"], rows, "lrlrrrrr")


def key_figures(rows, rank_counts):
    sizes = [4, 1024, 65536, 2**20, 2**26]
    out = []
    for primitive, shown in (("latency", "ping-pong, one way"), ("rested", "one message after a rest"),
                             ("bw", "bw, per message"), ("bibw", "bibw, per message pair"),
                             ("allreduce", "allreduce")):
        for ranks in rank_counts:
            mine = {r["bytes"]: r for r in rows if r["primitive"] == primitive and r["ranks"] == ranks}
            if not mine:
                continue
            cells = []
            for n in sizes:
                r = mine.get(n)
                per = r["median_us"] / r["window"] if r and primitive in ("bw", "bibw") else (r or {}).get("median_us")
                cells.append(f"{per:,.2f}" if per is not None else "-")
            key = "bus_bandwidth_MBps" if primitive == "allreduce" else "bandwidth_MBps"
            best = max((r.get(key, 0) for r in mine.values()), default=0)
            out.append([shown, ranks] + cells + [f"{best:,.0f}" if best else "-"])
    return h.markdown_table(["primitive", "ranks"] + [f"{size_text(n)} (µs)" for n in sizes]
                            + ["best MB/s (allreduce: bus)"], out, "lr" + "r" * (len(sizes) + 1))


def bucket_table(rows, fits):
    buckets = [r for r in rows if r["primitive"] == "buckets"]
    if not buckets:
        return None
    out = []
    for ranks in sorted({r["ranks"] for r in buckets}):
        allreduce_fit = fits.get("allreduce", {}).get(ranks, [])
        for size in sorted({r["bucket_bytes"] for r in buckets if r["ranks"] == ranks}):
            mine = {r.get("reduction"): r for r in buckets if r["ranks"] == ranks and r["bucket_bytes"] == size}
            any_row = next(iter(mine.values()))
            gradient, count = any_row["bytes"], any_row["buckets"]

            def cells(reduction):
                r = mine.get(reduction)
                return [f"{r['median_us'] / 1e3:,.2f}", f"{gradient / (r['median_us'] * 1e-6) / 1e9:,.2f}"] if r \
                    else ["-", "-"]

            one = alpha_beta.regime_for(allreduce_fit, gradient).time(1, gradient) if allreduce_fit else None
            per_bucket = sum(alpha_beta.regime_for(allreduce_fit, b).time(1, b)
                             for b in bucket_sizes(gradient, size)) if allreduce_fit else None
            measured = mine.get("allreduce", {}).get("median_us")
            out.append([ranks, size_text(size), count] + cells("ordered") + cells("allreduce")
                       + [f"{one * 1e3:,.2f}" if one else "-", f"{gradient / one / 1e9:,.2f}" if one else "-",
                          f"{per_bucket * 1e3:,.2f}" if per_bucket else "-",
                          f"{measured * 1e-6 / per_bucket:.2f}" if measured and per_bucket else "-"])
    return h.markdown_table(["ranks", "bucket", "buckets", "ordered ms", "ordered GB/s", "allreduce ms",
                             "allreduce GB/s", "model: 1 allreduce of G, ms", "model GB/s",
                             "model: one allreduce per bucket, ms", "measured allreduce / model"], out,
                            "rrrrrrrrrrr")


def bucket_sizes(gradient, bucket):
    """Bytes of each bucket GradientBuckets cuts from a float gradient of `gradient` bytes."""
    per = max(1, bucket // 4)
    total, out = gradient // 4, []
    while total > 0:
        take = min(per, total)
        out.append(4 * take)
        total -= take
    return out


def oversubscribed_text(args, environments):
    """A sentence on rank counts with more ranks per host than this machine has cores, or ''."""
    cores = os.cpu_count() or 1
    over = [r for r, p in placement(args, environments).items() if p["ranks_per_host"] > cores]
    if not over:
        return ""
    return (f" {' and '.join(over)} ranks oversubscribe the {cores} cores per host, so their collectives "
            "include the scheduler's time slices.")


def report(args, rows, fits, environments, commands, plot_paths, info, training_rows, link):
    env = next(iter(environments.values()), {})
    rel = lambda p: os.path.relpath(os.path.abspath(p), os.path.dirname(os.path.abspath(args.results)))
    out = [f"## {TITLE}", ""]
    where = ", ".join(f"{r} ranks on {p['hosts']} host{'s' if p['hosts'] > 1 else ''}"
                      for r, p in placement(args, environments).items())
    measured = (f"Fitted again from `{h.repo_relative(args.from_csv, ROOT)}` (measured earlier; when, where and at which "
                "commits: its provenance line)" if args.from_csv else "Measured (when, at which commit and where: its "
                "provenance line)")
    out.append(f"{measured} by `benchmarks/comm/run_comm_benchmark.py` (label `{args.label}`) with "
               f"`{h.repo_relative(args.hpf, ROOT)}`. "
               f"MPI: {env.get('mpi', 'unknown')}; Kokkos {env.get('kokkos', 'unknown')}; {where or 'ranks unknown'}"
               f"{info['wall']}. {info['load']}".rstrip())
    out.append("")
    out.insert(2, provenance.line(args.from_csv or args.csv, info["provenance"]))
    out.insert(3, "")
    reps = [r["iterations"] for r in rows if "iterations" in r] or [0]
    out.append("OSU-style (`hpf_bench_comm`, benchmarks/comm/comm_benchmark.cpp): float views sent through "
               "`hpf::comm::isend/irecv/allreduce` as training sends them; per size warm-up and then "
               f"{max(reps)} (small messages) down to {min(reps)} (largest) timed repetitions, each timed on its "
               "own; the tables give medians. Every message and sum is checked against "
               "values computed locally. Point-to-point tests run between rank 0 and rank n/2 while the other "
               f"ranks sleep.{oversubscribed_text(args, environments)} Fits: t = alpha + beta * n on relative error, per regime of sizes "
               "(`benchmarks/comm/alpha_beta.py`; regimes are cut where one line misses by more than 15 %). "
               f"Machine profile: `{h.repo_relative(args.profile, ROOT)}`; every row: "
               f"`{h.repo_relative(args.from_csv or args.csv, ROOT)}`.")
    out.append("")
    for path in plot_paths:
        kind = "time per operation" if path.endswith("_time.svg") else "bandwidth"
        out.append(f"![{kind}, measured medians and fitted alpha/beta models]({rel(path)})")
    out.append("")
    out.append("### Fitted models")
    out.append("")
    out.append(fit_table(fits))
    out.append("")
    out.append("- p2p_latency: one-way time of a ping-pong; p2p_bandwidth and bibw: time per message in a window "
               "of 64 back-to-back messages (at most 64 MiB per window), so 1/beta is the streaming bandwidth (bibw: "
               "in each direction at once) and alpha the gap between messages; allreduce: one in-place sum of n "
               "bytes; buckets_*: alpha per bucket and beta per gradient byte (sizes are bucket sizes).")
    out.append("")
    out.append("### Measured medians")
    out.append("")
    out.append(key_figures(rows, args.rank_counts))
    out.append("")
    if link:
        steal = next((r for r in rows if r["primitive"] == "steal" and r["ranks"] == link["ranks"]), None)
        burst = f"{link['burst_bytes'] / 1e3:,.0f} kB" if "burst_bytes" in link else "-"
        out.append(f"- The link ({link['ranks']} ranks): a rested link passes {burst} before it slows to its "
                   "streaming rate (`burst_bytes`, from p2p_rested and p2p_bandwidth)"
                   + (f"; while a message of {size_text(steal['bytes'])} went each way, a busy loop of "
                      f"{steal['loop_us'] / 1e3:,.1f} ms took {steal['median_us'] / 1e3:,.2f} ms longer "
                      f"({link['compute_s_per_byte'] * 1e9:.3f} ns of compute per byte the rank moved, "
                      "`compute_s_per_byte`)." if steal else "."))
        out.append("")
    table = bucket_table(rows, fits)
    if table:
        b = next(r for r in rows if r["primitive"] == "buckets")
        out.append(f"### Gradient buckets: one reduction of {b.get('model', 'the model')}'s gradient "
                   f"({b['bytes']:,} bytes)")
        out.append("")
        out.append(table)
        out.append("")
        out.append("- `hpf::GradientBuckets` with every bucket announced ready at once (`ready(0)`, then "
                   "`finish()`), GradientReduction::ordered (all-gather, then a fixed-order sum) and ::allreduce "
                   "(MPI_Iallreduce). GB/s = gradient bytes / time. Model columns: the fitted allreduce model "
                   "for one allreduce of the whole gradient G, and for one allreduce per bucket one after another; "
                   "measured / model below 1 means the buckets overlap.")
        out.append("")
    if training_rows:
        out.append(f"### Inside training: {in_training.MODEL}'s gradient buckets in traced data-parallel steps")
        out.append("")
        out.append(h.markdown_table(in_training.HEADER, training_rows, "rlrrrrrrrr"))
        out.append("")
        out.append(f"- `hpf_bench_parallel_throughput --model {in_training.MODEL} --bucket-bytes "
                   f"{in_training.BUCKET_BYTES}` data-parallel on every rank count, steps {in_training.FIRST_STEP}-"
                   f"{in_training.LAST_STEP} traced (`HPF_TRACE`), all ranks' spans pooled. Span: a bucket's "
                   "reduction from its start during backward until the rank sees it complete (the `collective` row); exposed: "
                   "the time a rank sat blocked on it after backward (the `wait` row), per span. Model: the "
                   "standalone buckets_* fit above for one bucket of that size. Span / model above 1 is what "
                   "running beside backward costs (MPI progresses a non-blocking collective only inside MPI "
                   "calls, and the ranks share the cores).")
        out.append("")
    out.append("Commands (from the repository root; the runner launches exactly these):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--mpiexec", "--csv", "--profile", "--out-dir",
                                              "--from-csv", "--hostfile"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/comm/run_comm_benchmark.py"] + options))
    out += [c.replace(os.path.abspath(args.hpf), h.repo_relative(args.hpf, ROOT)) for c in commands]
    out.append("```")
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    # As the run begins: the commit the benchmark was most likely built from.
    info = {"provenance": provenance.start("benchmarks/comm/run_comm_benchmark.py"), "wall": "", "load": ""}
    failed = []
    if args.from_csv:
        rows, environments = read_csv(args.from_csv)
        commands = ["# fitted from " + h.repo_relative(args.from_csv, ROOT)]
        # Fitted again by this code from the CSV's measurements: their record, and this run as its pricing.
        info["provenance"] = dict(provenance.read(args.from_csv),
                                  priced=dict(info["provenance"], measured_at=provenance.now()))
    else:
        start = time.monotonic()
        rows, environments, commands, failed, loads = measure(args)
        info["wall"] = f"; wall time of the run {(time.monotonic() - start) / 60:.1f} min"
        info["load"] = "Other processes kept " + "; ".join(loads) + " of the machine busy."
        write_csv(args.csv, rows, environments)
        info["provenance"] = provenance.write(args.csv, info["provenance"])
        h.log(f"wrote {args.csv}")
    if failed:
        for f in failed:
            h.log(f"run_comm_benchmark: FAILED: {f}")
        h.log("run_comm_benchmark: no profile, plots or results from a failed run")
        return 1
    fits = fit_all(rows)
    prof = profile(args, fits, rows, environments)
    problems = check_profile.problems(prof, args.rank_counts)
    if problems:
        for p in problems:
            h.log(f"run_comm_benchmark: profile: {p}")
        h.log(f"run_comm_benchmark: {args.profile} not written")
        return 1
    kept = kept_compute(args.profile, prof["host"])
    if kept:
        prof["compute"] = kept
        h.log(f"kept the compute part of {args.profile}: calibrated on this host "
              f"({len(kept.get('units', {}))} units)")
    os.makedirs(os.path.dirname(os.path.abspath(args.profile)), exist_ok=True)
    with open(args.profile, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    provenance.write(args.profile, dict(info["provenance"], compute="kept from its earlier calibration") if kept
                     else info["provenance"])
    h.log(f"wrote {args.profile}")
    plot_paths = plots(args, rows, fits)
    h.log("wrote " + ", ".join(plot_paths))
    training_rows = []
    if args.training:
        training_rows, failed = measure_training(args, fits, commands)
        if failed:
            h.log("run_comm_benchmark: FAILED: " + "; ".join(failed))
            return 1
    text = report(args, rows, fits, environments, commands, plot_paths, info, training_rows, prof.get("link"))
    print(text)
    if not args.no_results:
        if args.from_csv:
            provenance.write(args.from_csv, info["provenance"])
        h.replace_section(args.results, SECTION, text)
        h.log(f"wrote the '{SECTION}' section of {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
