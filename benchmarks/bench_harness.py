# SPDX-License-Identifier: MIT
"""Shared pieces of hpf's benchmark runners (single process, data-parallel scaling, pipelines,
threads): launching a benchmark with a controlled environment, reading its `RESULT key=value`
lines, checking how busy the machine is before and during each run, best-of-N over alternating
runs, machine facts, markdown tables, and replacing one delimited section of RESULTS.md.

Runs on any Python 3.8+ (no numpy or torch needed here).
"""
import datetime
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time

# Variables a benchmark environment always pins (thread pools of every library in the process).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# Where a process's OpenMP threads go: one per core, side by side (docs/process-setup.md, "Placing threads").
THREAD_PLACEMENT = {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
# Variables that would change what hpf or OpenBLAS choose behind the runner's back.
CLEARED_VARIABLES = ("HPF_BLAS_REEXECUTED", "HPF_KEEP_BLAS_KERNELS", "OMP_NUM_THREADS_BLAS")

# OPENBLAS_CORETYPE settings by short name: the machines' default (the environment sets Haswell)
# and the AVX-512 kernels.
BLAS_SETTINGS = {
    "haswell": ("Haswell", "default (OPENBLAS_CORETYPE=Haswell, AVX2)"),
    "skylakex": ("SkylakeX", "AVX-512 (OPENBLAS_CORETYPE=SkylakeX)"),
}


def log(message):
    print(message, file=sys.stderr, flush=True)


# --- environment and commands ----------------------------------------------------------------
def bench_env(coretype, threads=1, extra=None):
    """(full environment, the overrides that matter): this process's environment with the
    OpenBLAS kernel family and every thread pool pinned. Both frameworks of a comparison get the
    same overrides."""
    overrides = {"OPENBLAS_CORETYPE": coretype}
    overrides.update({v: str(threads) for v in THREAD_VARIABLES})
    overrides.update(extra or {})
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_VARIABLES}
    env.update(overrides)
    return env, overrides


def precision_words(args):
    """The products' precision as hpf-oracle and the benchmarks take it, from `args.precision`:
    nothing for float (or no such argument), else `--precision P`."""
    precision = getattr(args, "precision", "float")
    return [] if precision == "float" else ["--precision", precision]


def command_text(cmd, overrides=None):
    """The shell line that reproduces a run: `VAR=value ... program args`."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (overrides or {}).items())
    line = " ".join(shlex.quote(str(c)) for c in cmd)
    return f"{prefix} {line}" if prefix else line


def repo_relative(path, root):
    """`path` relative to `root` when inside it (for commands written into RESULTS.md)."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


# --- RESULT lines ------------------------------------------------------------------------------
def parse_value(text):
    """A RESULT field (or a CSV cell) as int, float or text."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_results(output):
    """Every `RESULT key=value ...` line of a benchmark's output, as dicts (numbers converted)."""
    results = []
    for line in output.splitlines():
        if not line.startswith("RESULT "):
            continue
        fields = {}
        for token in shlex.split(line[len("RESULT "):]):
            key, sep, value = token.partition("=")
            if sep:
                fields[key] = parse_value(value)
        results.append(fields)
    return results


# --- machine load --------------------------------------------------------------------------------
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1


def cpu_jiffies():
    """(busy, total) jiffies of all CPUs from /proc/stat (idle and iowait are not busy)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    total = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
    return total - values[3] - values[4], total


def busy_fraction(seconds=1.0):
    """Fraction of the machine's CPUs busy over `seconds` (0 idle ... 1 all cores busy)."""
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
    return (b1 - b0) / max(1, t1 - t0)


def wait_until_quiet(max_busy=0.15, max_wait=180.0, sample=1.0):
    """Samples /proc/stat until less than `max_busy` of the machine is busy or `max_wait` seconds
    have passed. Returns (busy fraction of the last sample, seconds waited)."""
    start = time.monotonic()
    busy = busy_fraction(sample)
    while busy >= max_busy and time.monotonic() - start < max_wait:
        time.sleep(2.0)
        busy = busy_fraction(sample)
    return busy, time.monotonic() - start


class Run:
    """One launch of a benchmark: its RESULT lines and the machine's state around it."""

    def __init__(self, name, cmd, overrides, returncode, stdout, stderr, wall, busy_before, waited, foreign_busy):
        self.name, self.cmd, self.overrides = name, cmd, overrides
        self.returncode, self.stdout, self.stderr, self.wall = returncode, stdout, stderr, wall
        self.busy_before, self.waited, self.foreign_busy = busy_before, waited, foreign_busy
        self.results = parse_results(stdout)

    @property
    def ok(self):
        return self.returncode == 0 and bool(self.results)

    def result(self, **match):
        """The first RESULT line whose fields equal `match` (None if none)."""
        for r in self.results:
            if all(r.get(k) == v for k, v in match.items()):
                return r
        return None


def launch(name, cmd, env, overrides, max_busy=0.15, max_wait=180.0, timeout=900):
    """Waits for a quiet machine, runs `cmd`, and records how busy the machine was before the run
    and, during it, how busy it was with other processes than this benchmark (CPU time of the
    whole machine from /proc/stat minus the child's own user+system time, per core and second)."""
    busy_before, waited = wait_until_quiet(max_busy, max_wait)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0, _ = cpu_jiffies()
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        returncode, stdout, stderr = -9, e.stdout or "", (e.stderr or "") + f"\ntimed out after {timeout} s"
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    wall = time.monotonic() - start
    b1, _ = cpu_jiffies()
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    foreign = max(0.0, (b1 - b0) / CLOCK_TICKS - own) / max(1e-9, wall * CPUS)
    run = Run(name, cmd, overrides, returncode, stdout, stderr, wall, busy_before, waited, foreign)
    if not run.ok:
        log(f"  {name}: FAILED (exit {returncode})\n{stderr.strip()[-2000:]}")
    return run


def alternate(groups, rounds=3, max_rounds=None, quiet=0.15, min_quiet=2, **launch_args):
    """Runs every group's jobs alternately (A B in even rounds, B A in odd ones, so slow drifts
    of the machine hit every side alike), round-major over the groups so that a busy spell is
    spread over all of them. After `rounds` rounds, a group keeps going (up to `max_rounds`)
    while one of its jobs has fewer than `min_quiet` runs during which other processes kept less
    than `quiet` of the machine busy. Noise only ever slows a run down, so each side's figure is
    then simply its best run.

    `groups` maps a key to a list of jobs (name, cmd, env, overrides); returns
    {key: {name: [Run, ...]}}."""
    max_rounds = max(rounds, max_rounds or rounds)
    runs = {key: {name: [] for name, *_ in jobs} for key, jobs in groups.items()}

    def settled(key):
        return all(sum(r.ok and r.foreign_busy < quiet for r in side) >= min_quiet for side in runs[key].values())

    for r in range(max_rounds):
        pending = [key for key in groups if r < rounds or not settled(key)]
        if not pending:
            break
        for key in pending:
            jobs = groups[key] if r % 2 == 0 else list(reversed(groups[key]))
            for name, cmd, env, overrides in jobs:
                run = launch(name, cmd, env, overrides, **launch_args)
                runs[key][name].append(run)
                log(f"round {r + 1} {key} {name}: {summary(run)}")
    return runs


def quiet_count(runs, quiet=0.15):
    """How many of `runs` succeeded while other processes kept less than `quiet` of the machine busy."""
    return sum(r.ok and r.foreign_busy < quiet for r in runs)


def summary(run):
    key = "images_per_s" if any("images_per_s" in r for r in run.results) else "gflops"
    values = [f"{r[key]:.1f}" for r in run.results if key in r] or ["-"]
    return (f"{key}={','.join(values)} wall={run.wall:.1f}s busy_before={100 * run.busy_before:.0f}% "
            f"foreign_during={100 * run.foreign_busy:.0f}%" + (f" waited={run.waited:.0f}s" if run.waited >= 1 else ""))


def best(runs, key="images_per_s", **match):
    """(run, result) with the largest `key` among successful runs' matching results, or (None, None)."""
    chosen = (None, None)
    for run in runs:
        r = run.result(**match) if match else (run.results[0] if run.results else None)
        if run.returncode == 0 and r is not None and key in r and (chosen[1] is None or r[key] > chosen[1][key]):
            chosen = (run, r)
    return chosen


# --- machine facts ---------------------------------------------------------------------------------
def machine_of(description):
    """The machine of a host description (CPU, clock, cores, memory): without the kernel's release.
    A machine profile belongs to one machine (benchmarks/comm/profiles/)."""
    return ", ".join(part for part in description.split(", ") if not part.startswith("Linux "))


def read_profile(path):
    """A machine profile (benchmarks/comm/profiles/) as a dict: {} when it is missing or unreadable."""
    try:
        with open(path) as f:
            profile = json.load(f)
    except (OSError, ValueError):
        return {}
    return profile if isinstance(profile, dict) else {}


def profile_host(profile):
    """The description of the host a profile (read_profile's) was measured on ("" when it does not say)."""
    host = profile.get("host")
    return host.get("description", "") if isinstance(host, dict) else ""


def profile_of_other_machine(path, root):
    """Why the machine profile at `path` cannot price this host's runs: "PATH was measured on: ...;
    this host is: ...", or "" where it was measured here or does not say. A profile is a fact of
    one machine: predicting this host's runs from another's misprices them (an EPYC's profile put
    the MLP 25 % fast on a Xeon)."""
    measured_on, here = profile_host(read_profile(path)), machine_description()
    if measured_on and machine_of(measured_on) != machine_of(here):
        return f"{repo_relative(path, root)} was measured on: {measured_on}; this host is: {here}"
    return ""


def machine_description():
    """One line: CPU model, clock (where the VM shows one), cores, memory, kernel."""
    facts = {}
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True, env={**os.environ, "LC_ALL": "C"}).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            facts[key.strip()] = value.strip()
    except OSError:
        pass
    mhz = facts.get("CPU max MHz") or facts.get("CPU MHz")
    if not mhz:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^cpu MHz\s*:\s*([\d.]+)", f.read(), re.M)
            mhz = m.group(1) if m else None
    with open("/proc/meminfo") as f:
        m = re.search(r"MemTotal:\s*(\d+)", f.read())
    memory = f"{int(m.group(1)) / 2**20:.0f} GiB" if m else "?"
    parts = [facts.get("Model name", "unknown CPU")]
    if facts.get("CPU family") and facts.get("Model"):
        parts.append(f"family {facts['CPU family']} model {facts['Model']}")
    if mhz:
        parts.append(f"{float(mhz):.0f} MHz (as reported)")
    parts.append(f"{CPUS} vCPU" + (f" ({facts['Hypervisor vendor']})" if facts.get("Hypervisor vendor") else ""))
    parts.append(memory)
    parts.append(f"Linux {os.uname().release}")
    flags = facts.get("Flags", "").split()
    parts.append("AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "no AVX2"))
    return ", ".join(parts)


def today():
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M")


def git_revision(root):
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "") if rev else "unknown"
    except OSError:
        return "unknown"


# --- markdown ----------------------------------------------------------------------------------------
def markdown_table(headers, rows, align=None):
    """A GitHub table; `align` is a string of l/r per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def replace_section(path, name, body):
    """Writes `body` between `<!-- name:begin -->` and `<!-- name:end -->` in the file at `path`,
    replacing what was there; appends the section (or creates the file) if it is missing."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    text = open(path).read() if os.path.exists(path) else ""
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        j += len(end)
        if j < len(text) and text[j] == "\n":
            j += 1
        text = text[:i] + block + text[j:]
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block
    with open(path, "w") as f:
        f.write(text)


def read_section(path, name):
    """The body between `<!-- name:begin -->` and `<!-- name:end -->` in the file at `path`, or ""."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = open(path).read() if os.path.exists(path) else ""
    i, j = text.find(begin), text.find(end)
    return text[i + len(begin):j].strip("\n") if i >= 0 and j > i else ""


def load_average():
    """The 1, 5 and 15 minute load averages, as the kernel prints them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def add_train_binary_options(parser, root):
    """--hpf-openmp and --hpf-serial: hpf_bench_train_throughput built against Kokkos OpenMP (in
    build-openmp) and against Kokkos Serial (in build), for the runners that compare threads."""
    for option, folder, space in (("--hpf-openmp", "build-openmp", "OpenMP"), ("--hpf-serial", "build", "Serial")):
        parser.add_argument(option, default=os.path.join(root, folder, "benchmarks", "hpf_bench_train_throughput"),
                            help=f"hpf_bench_train_throughput built against Kokkos {space} "
                                 f"(default: {folder}/benchmarks/...)")


def add_oracle_binary_options(parser, root):
    """--hpf (hpf_bench_parallel_throughput), --oracle (hpf-oracle) and --profile (the machine profile
    the oracle predicts from), for the runners that set measurements beside predictions."""
    parser.add_argument("--hpf", default=os.path.join(root, "build", "benchmarks", "hpf_bench_parallel_throughput"),
                        help="the hpf_bench_parallel_throughput executable (default: build/benchmarks/...)")
    parser.add_argument("--oracle", default=os.path.join(root, "build", "tools", "hpf-oracle"),
                        help="the hpf-oracle executable (default: build/tools/hpf-oracle)")
    parser.add_argument("--profile", default=os.path.join(root, "benchmarks", "comm", "profiles", "local.json"),
                        help="the machine profile the oracle predicts from (default: benchmarks/comm/profiles/local.json)")


def check_models(parser, names, known):
    """Stops with a parser error naming the first of `names` not in `known` (a runner's model table)."""
    for m in names:
        if m not in known:
            parser.error(f"unknown model '{m}' (known: {', '.join(known)})")


# Open MPI's flags for one rank per core, bound to it: runs that compare 2 ranks with 2 threads.
ONE_RANK_PER_CORE = "--allow-run-as-root --oversubscribe --bind-to core --map-by core"


def add_mpiexec_options(parser, flags="--allow-run-as-root --oversubscribe --bind-to none"):
    """--mpiexec and --mpiexec-flags (default `flags`): how the runners that start MPI jobs launch them."""
    parser.add_argument("--mpiexec", default="mpiexec", help="MPI launcher (default: mpiexec on PATH)")
    parser.add_argument("--mpiexec-flags", default=flags, help="launcher flags before -n (default: %(default)s)")


def check_executables(parser, paths, mpiexec):
    """Stops with a parser error unless every one of `paths` is an executable and `mpiexec` is on PATH."""
    for exe in paths:
        if not os.access(exe, os.X_OK):
            parser.error(f"{exe} is not an executable: build it first (see --help)")
    if not shutil.which(mpiexec):
        parser.error(f"no MPI launcher '{mpiexec}'")


def check_oracle_binaries(parser, args):
    """Stops with a parser error unless --hpf and --oracle are executables and --mpiexec is on PATH."""
    check_executables(parser, (args.hpf, args.oracle), args.mpiexec)


def commands_block(script, argv, commands, root):
    """The lines of a fenced block with a runner's own command line (`script` and the options in
    `argv` that shape the measurement) and the commands it launched, paths relative to `root`."""
    own = " ".join([f"/usr/bin/python3 {script}"] + runner_options(argv, ("--hpf", "--oracle", "--results", "--profile")))
    return ["```sh", own] + [command_text([repo_relative(str(c), root) for c in cmd]) for cmd in commands] + ["```"]


def calibrate_copy(args, models, copy, splits=()):
    """Copies args.profile to `copy`, calibrates every model into it with args.oracle (before any
    measurement, as a user would), and one slab rank's layers of each spatial split in `splits`
    ("spatial:G"), and points args.profile at the copy."""
    shutil.copyfile(args.profile, copy)
    for model in models:
        for split in (None,) + tuple(splits):
            log(f"calibrating {model}{' ' + split if split else ''} into {copy}")
            subprocess.run([args.oracle, "calibrate", "--model", model, "--profile", copy] +
                           (["--split", split] if split else []), check=True, stdout=subprocess.DEVNULL)
    args.profile = copy


def oracle_json(args, command, options):
    """`hpf-oracle COMMAND ... --profile args.profile --json` parsed, or None (its error logged)."""
    done = subprocess.run([args.oracle, command] + [str(o) for o in options] + ["--profile", args.profile, "--json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        log(f"oracle: {done.stderr.strip()}")
        return None
    return json.loads(done.stdout)


def add_alternation_options(parser, rounds=3, max_rounds=5, quiet=0.10, min_quiet=2, max_busy=0.10, max_wait=60.0):
    """--rounds, --max-rounds, --quiet, --min-quiet, --max-busy, --max-wait: how `alternate` runs
    the configurations of a runner that uses the whole machine."""
    parser.add_argument("--rounds", type=int, default=rounds,
                        help="alternating runs per configuration and model (best is kept)")
    parser.add_argument("--max-rounds", type=int, default=max_rounds,
                        help="more rounds, up to this many, until each configuration has --min-quiet quiet runs")
    parser.add_argument("--quiet", type=float, default=quiet,
                        help="a run is quiet if other processes kept less than this fraction of the machine busy")
    parser.add_argument("--min-quiet", type=int, default=min_quiet,
                        help=f"quiet runs wanted per configuration (default {min_quiet})")
    parser.add_argument("--max-busy", type=float, default=max_busy,
                        help="wait before each run until less than this fraction of all CPUs is busy")
    parser.add_argument("--max-wait", type=float, default=max_wait,
                        help="give up waiting after this many seconds (then run)")


def add_results_options(parser, default_path):
    """--results (the markdown file a runner updates) and --no-write."""
    parser.add_argument("--results", default=default_path, help="markdown file to update")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")


def publish(args, section, text, failed):
    """Prints a runner's report, writes it as `section` of args.results unless --no-write, and
    returns the exit status: 1 if any of `failed` (names of jobs without a successful run)."""
    print(text)
    if not args.no_write:
        replace_section(args.results, section, text)
        log(f"wrote the '{section}' section of {args.results}")
    if failed:
        log("no successful run for: " + ", ".join(failed))
        return 1
    return 0


def fmt(value, digits=0, unit=""):
    """A number for a table: thousands separated, `-` when missing."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}{unit}"


def runner_options(argv, path_options):
    """A runner's own options that shape the measurement, without `path_options` (where files
    are: they take a value, as `--opt value` or `--opt=value`) and --no-write."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in path_options:
            skip = True
        elif not a.startswith(tuple(o + "=" for o in path_options) + ("--no-write",)):
            kept.append(a)
    return kept
