#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The oracle judged out of sample (docs/oracle.md, "How the oracle is judged").

Two steps, as a user would take them:

  # 1. freeze: calibrate a profile for every model of both sets (a copy of --profile, its
  #    communication kept; the whole layers, and one member's part under each layer split the
  #    configurations hold) and record the oracle's commit, its source trees, the profile's hash and
  #    each model's process and data memory (hpf_bench_parallel_throughput --describe-memory, after
  #    2 training steps on one rank: the base of the predicted resident set)
  /usr/bin/python3 benchmarks/oracle/held_out.py freeze --label local
  git add benchmarks/oracle/frozen && git commit -m "oracle: frozen for the held-out run"
  # 2. measure one set afresh with the frozen oracle (refused if include/ or tools/ differ from the
  #    frozen commit's, or the profile's hash does), predict before measuring, write the section
  /usr/bin/python3 benchmarks/oracle/held_out.py measure --set held-out --label local    # ~30 min
  /usr/bin/python3 benchmarks/oracle/held_out.py measure --set development --label local
  # the aging profile (default: benchmarks/comm/profiles/local.json) may be an earlier freeze of this host
  /usr/bin/python3 benchmarks/oracle/held_out.py measure --set held-out --label local2 \
      --old-profile benchmarks/oracle/frozen/local.profile.json
  # on an emulated fabric (as root): its communication measured there first (a profile), frozen
  # with the held-out models' compute, then measured there (2 hosts, one rank each)
  scripts/fabric/emulate.sh with 2 1gbit -- sh -c '/usr/bin/python3 benchmarks/comm/run_comm_benchmark.py \
      --mpiexec "$HPF_FABRIC_MPIEXEC" --mpiexec-flags "" --ranks 2 --hosts 2 --hosts-share-cores --quick \
      --training "" --no-results --label fabric-1gbit --profile /var/tmp/fabric-1gbit.json'
  /usr/bin/python3 benchmarks/oracle/held_out.py freeze --label fabric-1gbit --fabric 1gbit \
      --set held-out --profile /var/tmp/fabric-1gbit.json
  scripts/fabric/emulate.sh with 2 1gbit -- sh -c '/usr/bin/python3 benchmarks/oracle/held_out.py measure \
      --set held-out --label fabric-1gbit --old-profile "" --mpiexec "$HPF_FABRIC_MPIEXEC" --mpiexec-flags ""'
  # in bf16 products (hpf::Mixed<hpf::bf16>): calibrated so when frozen, then canaried, predicted and run so
  /usr/bin/python3 benchmarks/oracle/held_out.py freeze --label local-bf16 --set held-out --precision bf16
  /usr/bin/python3 benchmarks/oracle/held_out.py measure --set held-out --label local-bf16
  # 3. the ablation over every published held-out run, pooled (the terms kept or deleted by it)
  /usr/bin/python3 benchmarks/oracle/held_out.py pooled --labels local,fabric-1gbit,fabric-25gbit

Sets: development (MLP, CNN, ResNet-20), on which rules may be tuned; held-out (ResNet-56,
PreActResNet-164, the GPT, the 3-D CNN), never used to choose a rule. Configurations of each model:
1 rank, and on 2 ranks data parallelism, 2-stage pipelines (GPipe and 1F1B, M = 2 and 8), filter
and channel splits, and whatever `hpf-oracle rank --layer-splits` recommends; every rank on its
own core (no more ranks than cores), processes bound to cores. On an emulated fabric (a frozen
record with a `fabric`), only the configurations of 2 ranks, one per host: the hosts share this
machine's cores, unbound (the fabric's launcher). Each configuration runs --rounds
times, interleaved with all others (the order reversed every other round), each run --blocks
timed blocks of at least --block-seconds (steps per block from the frozen prediction): its step
time is the mean of the blocks, with a 95 % confidence interval (Student's t over the blocks).

Predictors, all fixed before the first measurement: the frozen oracle on the fresh profile;
ParaDL's closed form on the same profile (the baseline; runs of an oracle that had refinements to
weigh also priced it without each, the ablation); the oracle on an old profile (--old-profile, as committed; '' where none exists, as for a fabric),
without and with the canary's correction (the canary run once per model before the measurements).
Before each run, the frozen oracle's canary for that run's configuration (`hpf-oracle predict
--canary`, on the frozen profile), as hpf::Auto runs it before it chooses: a second prediction of
the run, rescaled by the host's speed then (--no-canary-each-run: none). The canary runs on every
rank of the run at once, launched and bound as the run; each rule of combining the ranks' ratios
is priced, the one --canary-rule names (default: the slowest, as hpf::Auto) headlining;
--canary-rule "one process" runs it once, unbound, as runs before xeon17. Nothing here asserts a target: the
runner reports, and `check` (run by tests/scripts/test_held_out.py) verifies that the published
section was written from a fresh run of a frozen oracle.
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, BENCHMARKS)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

TERMS = ("tapes in flight", "exchange compute")  # the oracle's terms that `hpf-oracle predict --without` leaves out

SETS = {"development": ("mlp", "cnn", "resnet20"), "held-out": ("resnet56", "resnet164", "gpt", "cosmoflow")}
# name: (description, global batch)
MODELS = {
    "mlp": ("MLP 784-1024-1024-10, Fashion-MNIST", 128),
    "cnn": ("CNN of the examples, Fashion-MNIST", 128),
    "resnet20": ("ResNet-20 (option A), synthetic 3x32x32", 64),
    "resnet56": ("ResNet-56 (option A), synthetic 3x32x32", 64),
    "resnet164": ("PreActResNet-164 (bottleneck), synthetic 3x32x32", 64),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), Adam", 32),
    "cosmoflow": ("CosmoFlow<32>: 3-D CNN on 4 x 32^3 volumes", 8),
}
FROZEN_DIR = os.path.join(HERE, "frozen")
DEFAULT_OLD_PROFILE = "benchmarks/comm/profiles/local.json"  # measure's aging profile unless --old-profile
# What the oracle's predictions are built from: a held-out run needs them as they were frozen.
ORACLE_SOURCES = ("include", "tools")
T_975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


# --- git and files ---------------------------------------------------------------------------------
def git(*words):
    done = subprocess.run(["git", "-C", ROOT] + list(words), capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def source_trees(commit="HEAD"):
    """{folder: git tree hash} of the oracle's sources at `commit` (None where git cannot tell)."""
    return {folder: git("rev-parse", f"{commit}:{folder}") for folder in ORACLE_SOURCES}


def uncommitted_sources():
    return git("status", "--porcelain", "--", *ORACLE_SOURCES)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def frozen_path(label):
    return os.path.join(FROZEN_DIR, f"{label}.json")


def data_path(label, which):
    return os.path.join(HERE, "results", f"held_out_{label}_{which}.json")


def section_name(label, which):
    return f"oracle-{which}" + ("" if label == "local" else f"-{label}")


# --- statistics ------------------------------------------------------------------------------------
def interval(blocks):
    """(mean, half width of the 95 % confidence interval) of a configuration's block times."""
    n = len(blocks)
    mean = statistics.fmean(blocks)
    if n < 2:
        return mean, math.inf
    t = T_975[n - 2] if n - 2 < len(T_975) else 1.96
    return mean, t * statistics.stdev(blocks) / math.sqrt(n)


def accuracy(predicted, measured):
    return 1 - abs(predicted - measured) / measured


def best_accuracy_in(predicted, low, high):
    """The highest accuracy of `predicted` against any time in [low, high]."""
    if low <= predicted <= high:
        return 1.0
    return max(accuracy(predicted, low), accuracy(predicted, high))


def kendall_separated(rows, key):
    """Kendall's tau over the pairs of `rows` whose measured intervals do not overlap (None without
    such pairs) and the number of those pairs."""
    concordant = discordant = 0
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a["low_ms"] <= b["high_ms"] and b["low_ms"] <= a["high_ms"]:
                continue
            dm = (a["measured_ms"] > b["measured_ms"]) - (a["measured_ms"] < b["measured_ms"])
            dp = (a[key] > b[key]) - (a[key] < b[key])
            concordant += dm * dp > 0
            discordant += dm * dp < 0
    pairs = concordant + discordant
    return ((concordant - discordant) / pairs if pairs else None), pairs


def paired_interval(differences, draws=4000, seed=1):
    """(mean, low, high): the 95 % bootstrap interval of the mean of paired differences."""
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(statistics.fmean(rng.choices(differences, k=n)) for _ in range(draws))
    return statistics.fmean(differences), means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


# --- configurations --------------------------------------------------------------------------------
def config(model, ranks, stages=1, micro=1, schedule="1f1b", split=""):
    return {"model": model, "ranks": ranks, "stages": stages, "micro": micro,
            "schedule": schedule if stages > 1 else "1f1b", "split": split}


def config_key(c):
    return (c["model"], c["ranks"], c["stages"], c["micro"], c["schedule"], c["split"])


def describe(c):
    if c["split"]:
        kind, group = c["split"].split(":")
        return f"{kind} split over {group}"
    if c["stages"] == 1:
        text = "1 process" if c["ranks"] == 1 else f"data parallel x{c['ranks']}"
        return text + (f", M={c['micro']}" if c["micro"] > 1 else "")
    return f"pipeline {c['stages']} stages, M={c['micro']}, {c['schedule']}"


def kind(c):
    return "split" if c["split"] else "data" if c["stages"] == 1 else "pipeline"


def configurations(model, cores, fabric=False):
    """`model`'s configurations: on a fabric those of 2 ranks only (one process runs as on the host)."""
    batch = MODELS[model][1]
    out = [] if fabric else [config(model, 1)]
    if cores >= 2 or fabric:
        out.append(config(model, 2))
        out += [config(model, 2, 2, m, s) for s in ("gpipe", "1f1b") for m in (2, 8) if m <= batch]
        out += [config(model, 2, split=f"{k}:2") for k in ("filter", "channel")]
    return out


def oracle_words(c):
    words = ["--model", c["model"], "--ranks", str(c["ranks"]), "--batch", str(MODELS[c["model"]][1]),
             "--stages", str(c["stages"]), "--micro-batches", str(c["micro"]), "--schedule", c["schedule"]]
    return words + (["--split", c["split"]] if c["split"] else [])


def memory_words(args, model):
    """--process-mib and --data-mib from the frozen record (freeze measured them), where it has them."""
    m = getattr(args, "frozen_memory", {}).get(model)
    return ["--process-mib", f"{m['process_mib']:.2f}", "--data-mib", f"{m['data_mib']:.2f}"] if m else []


def config_of_plan(model, p):
    split = "" if p["split"] in ("", "none") else p["split"]
    if split:  # "filter split over 2" -> "filter:2"
        m = re.match(r"(filter|channel) split over (\d+)", split)
        split = f"{m.group(1)}:{m.group(2)}" if m else split
    return config(model, p["ranks"], p["stages"], p["micro_batches"], p["schedule"], split)


# --- the oracle ------------------------------------------------------------------------------------
def run_env():
    """(environment, overrides) of everything that runs the layers: the measured runs, the freeze's
    calibration and the canary. One OpenBLAS kernel family and one thread each: calibrated with
    OpenBLAS' widest kernels (hpf's default: SkylakeX on an AVX-512 Intel CPU) and measured with
    Haswell's, the MLP's single process ran 1.6 times longer than predicted."""
    return h.bench_env(h.BLAS_SETTINGS["haswell"][0], 1)


def oracle(args, command, words, profile, extra=()):
    cmd = [args.oracle, command] + words + ["--profile", profile, "--json"] + h.precision_words(args) + list(extra)
    done = subprocess.run(cmd, capture_output=True, text=True, env=run_env()[0])
    if done.returncode != 0:
        raise RuntimeError(f"{h.command_text(cmd)}: {done.stderr.strip()}")
    start = done.stdout.find("{")
    return json.loads(done.stdout[start:]), done.stderr


# The ratio in `hpf-oracle --canary`'s line.
CANARY_LINE = r"took ([0-9.]+) x their calibrated time"


def canary_predict(args, c, profile, words=()):
    """(ratio, prediction) of `hpf-oracle predict --canary` for configuration `c` on `profile`: the
    canary of c's model run now against the profile, and c predicted with compute rescaled by it."""
    predicted, err = oracle(args, "predict", oracle_words(c) + list(words), profile, ["--canary", str(args.canary_seconds)])
    m = re.search(CANARY_LINE, err)
    if not m:
        raise RuntimeError(f"no canary ratio in: {err}")
    return float(m.group(1)), predicted


def canary_ratio(args, model, profile):
    """The canary of `model` against `profile`, as `hpf-oracle predict --canary` measures it."""
    return canary_predict(args, config(model, 1), profile)[0]


# How a run's ranks' canary ratios combine into the one its prediction is rescaled by (--canary-rule).
CANARY_RULES = {"rank 0": lambda ratios: ratios[0], "mean": statistics.fmean, "slowest": max}


def canary_on_every_rank(args, c):
    """Each rank's canary ratio, rank order: `hpf-oracle predict --canary` launched as the run of `c`
    will be (the same launcher and binding, one process per rank, all at once), so that each rank
    times its own core while the others compute, as the run's ranks will."""
    # Each process's messages tagged with its rank (Open MPI's, MPICH's or PMIx's variable).
    tagged = ('r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}; "$@" 2>&1 >/dev/null | '
              'sed "s/^/rank $r: /" >&2')
    cmd = [args.mpiexec] + shlex.split(args.mpiexec_flags) + [
        "-n", str(c["ranks"]), "sh", "-c", tagged, "sh", args.oracle, "predict"] + oracle_words(c) + [
        "--profile", args.frozen_profile, "--canary", str(args.canary_seconds)] + h.precision_words(args)
    done = subprocess.run(cmd, capture_output=True, text=True, env=run_env()[0])
    found = {}
    for m in re.finditer(r"rank (\d+): .*?" + CANARY_LINE, done.stderr):
        found[int(m.group(1))] = float(m.group(2))
    if done.returncode != 0 or sorted(found) != list(range(c["ranks"])):
        raise RuntimeError(f"{h.command_text(cmd)}: no canary ratio from every rank in: {done.stderr.strip()}")
    return [found[r] for r in range(c["ranks"])]


def canary_before_run(args, c):
    """The frozen oracle's prediction of the run of `c` about to start, its canary run just before
    it (as hpf::Auto runs the canary before it chooses): {"ratio", "time_s"}; unless --canary-rule is
    "one process", the canary on every rank ("ratios") and the prediction by each rule ("rules": seconds)."""
    words = memory_words(args, c["model"])
    if args.canary_rule == "one process":
        ratio, predicted = canary_predict(args, c, args.frozen_profile, words)
        return {"ratio": ratio, "time_s": predicted["time_s"]}
    ratios = canary_on_every_rank(args, c)
    rules = {}
    for name, combine in CANARY_RULES.items():
        scale = ["--compute-scale", f"{combine(ratios):.6f}"]
        rules[name] = oracle(args, "predict", oracle_words(c) + words, args.frozen_profile, scale)[0]["time_s"]
    return {"ratio": CANARY_RULES[args.canary_rule](ratios), "time_s": rules[args.canary_rule], "ratios": ratios,
            "rules": rules}


def predictors(args, models):
    """{name: {config key: prediction dict}} for every predictor, before any measurement, and the
    canary ratios."""
    frozen = args.frozen_profile
    canaries = {m: canary_ratio(args, m, args.old_profile) for m in models} if args.old_profile else {}
    variants = {"oracle": (frozen, []), "closed form": (frozen, ["--closed-form"])}
    # The ablation: the frozen oracle without each term that can be left out (hpf-oracle --without).
    variants.update({f"without {term}": (frozen, ["--without", term.replace(" ", "-")]) for term in TERMS})
    if args.old_profile:
        variants["old profile"] = (args.old_profile, [])
    out = {name: {} for name in variants}
    for c in args.configs:
        words = oracle_words(c) + memory_words(args, c["model"])
        for name, (profile, extra) in variants.items():
            out[name][config_key(c)] = oracle(args, "predict", words, profile, extra)[0]
        if args.old_profile:
            scale = ["--compute-scale", f"{canaries[c['model']]:.6f}"]
            out.setdefault("old profile + canary", {})[config_key(c)] = oracle(
                args, "predict", words, args.old_profile, scale)[0]
    return out, canaries


def recommended(args, model, ranks):
    """The plan `hpf-oracle rank --layer-splits` puts first (the frozen oracle, fresh profile)."""
    words = ["--model", model, "--ranks", str(ranks), "--batch", str(MODELS[model][1]), "--layer-splits"]
    ranked, _ = oracle(args, "rank", words, args.frozen_profile)
    return config_of_plan(model, ranked["strategies"][0])


def query_times(args, model):
    """`rank`'s own query time at 64 and 1024 ranks (the profile's host extrapolated: a cluster is not
    needed for the time of the search): {ranks: (the first query in a fresh process, the median of 9
    more in it)}."""
    out = {}
    for ranks in (64, 1024):
        words = ["--model", model, "--ranks", str(ranks), "--batch", str(16 * ranks), "--repeat", "10"]
        ranked = oracle(args, "rank", words, args.frozen_profile)[0]
        out[ranks] = (ranked["query_us"] / 1e3, ranked["warm_query_us"] / 1e3)
    return out


# --- measurement -----------------------------------------------------------------------------------
def bench_cmd(args, c, predicted_s):
    steps = max(2, math.ceil(args.block_seconds / predicted_s))
    warmup = max(1, math.ceil(0.5 / predicted_s))
    cmd = [args.mpiexec] + shlex.split(args.mpiexec_flags) + [
        "-n", str(c["ranks"]), args.hpf, "--model", c["model"], "--batch", str(MODELS[c["model"]][1]),
        "--stages", str(c["stages"]), "--micro-batches", str(c["micro"]), "--schedule", c["schedule"],
        "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(args.blocks)] + h.precision_words(args)
    return cmd + (["--split", c["split"]] if c["split"] else [])


def floats(value):
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(x) for x in str(value).split(",") if x]


def measure(args, predicted):
    """{config key: {"blocks": [ms], "rss_mib": [per rank], ...}}: --rounds interleaved runs each,
    each run after its canary prediction (canary_before_run) unless --no-canary-each-run."""
    env, overrides = run_env()
    runs = {config_key(c): [] for c in args.configs}
    total, done = args.rounds * len(args.configs), 0
    for r in range(args.rounds):
        order = args.configs if r % 2 == 0 else list(reversed(args.configs))
        for c in order:
            cmd = bench_cmd(args, c, predicted[config_key(c)]["time_s"])
            canary = None
            if args.canary_each_run:  # on a quiet machine, as the run: launch's own wait is then short
                h.wait_until_quiet(args.max_busy, args.max_wait)
                canary = canary_before_run(args, c)
            run = h.launch(describe(c), cmd, env, overrides, max_busy=args.max_busy, max_wait=args.max_wait,
                           timeout=args.timeout)
            done += 1
            res = run.results[0] if run.ok else {}
            h.log(f"[{done}/{total}] {c['model']} {describe(c)}: block ms {res.get('block_ms_per_step', '-')} "
                  f"foreign {100 * run.foreign_busy:.0f}%")
            if run.ok:
                runs[config_key(c)].append({"blocks": floats(res["block_ms_per_step"]),
                                            "rss_mib": floats(res["rank_peak_rss_mib"]),
                                            "base_rss_mib": floats(res["rank_base_rss_mib"]),
                                            "views_mib": floats(res["rank_views_peak_mib"]),
                                            "foreign": run.foreign_busy})
                if canary:
                    runs[config_key(c)][-1]["canary"] = canary
    return runs, overrides


# --- the report ------------------------------------------------------------------------------------
# The predictor of runs that canaried before each run: the frozen oracle, its compute rescaled by the
# canary just before the run (a configuration's: the mean over its blocks of their run's prediction).
CANARY_EACH_RUN = "oracle + canary before each run"


def canary_rule_name(rule):
    """The predictor of a canary rule (CANARY_RULES) in a report's rows."""
    return f"canary on every rank, {rule}"


def canary_runs(runs):
    """Whether every run of a configuration was predicted by its canary just before it."""
    return bool(runs) and all("canary" in run for run in runs)


def rows_of(data):
    """One row per measured configuration: measured mean and interval, each predictor's time."""
    rows = []
    for entry in data["configurations"]:
        c, runs = entry["config"], entry["runs"]
        blocks = [b for run in runs for b in run["blocks"]]
        if not blocks:
            continue
        mean, half = interval(blocks)
        row = dict(c, measured_ms=mean, low_ms=mean - half, high_ms=mean + half, blocks=len(blocks),
                   rss_mib=[max(v) for v in zip(*[run["rss_mib"] for run in runs])],
                   base_rss_mib=[min(v) for v in zip(*[run["base_rss_mib"] for run in runs])])
        for name, p in entry["predicted"].items():
            row[name] = 1e3 * p["time_s"]
        if canary_runs(runs):
            row[CANARY_EACH_RUN] = 1e3 * statistics.fmean(run["canary"]["time_s"] for run in runs for _ in run["blocks"])
            for rule in runs[0]["canary"].get("rules", {}):
                row[canary_rule_name(rule)] = 1e3 * statistics.fmean(
                    run["canary"]["rules"][rule] for run in runs for _ in run["blocks"])
        oracle = entry["predicted"]["oracle"]
        row["stage_memory_mib"] = [b / 2**20 for b in oracle["stage_memory_bytes"]]
        # Frozen with the process and the data measured, the oracle predicts the resident set itself.
        resident = data["frozen"].get("memory") and oracle.get("stage_resident_bytes")
        row["resident_mib"] = [b / 2**20 for b in resident] if resident else None
        rows.append(row)
    return rows


def memory_error(row, above_base=False):
    """|predicted - measured| / measured of each rank's peak RSS against its stage's predicted
    resident set (runs frozen without the process measured: the engine's memory), the worst rank;
    with `above_base`, of what the rank's RSS grew by from before training against the engine's
    memory (the process around the engine left out: libraries, MPI, the data set)."""
    group = 2 if row["split"] else 1
    predicted = row["stage_memory_mib"] if above_base or not row["resident_mib"] else row["resident_mib"]
    worst = 0.0
    for r, rss in enumerate(row["rss_mib"]):
        stage = (r // group) % row["stages"]
        measured = rss - row["base_rss_mib"][r] if above_base else rss
        worst = max(worst, abs(predicted[stage] - measured) / measured)
    return worst


def query_text(data, column, digits):
    """Each model's `rank` query time: the first in a fresh process, and where the run has it, the
    median of the warm ones after it."""
    warm = data.get("warm_query_ms", {})
    return " / ".join(f"{m} {t[column]:.{digits}f} ms" + (f" (warm {warm[m][column]:.{digits}f})" if m in warm else "")
                      for m, t in data["query_ms"].items())


def scores(rows, name):
    """The issue's figures for one predictor over `rows`."""
    acc = [accuracy(r[name], r["measured_ms"]) for r in rows]
    data = [accuracy(r[name], r["measured_ms"]) for r in rows if kind(r) == "data"]
    below = [r for r in rows if best_accuracy_in(r[name], r["low_ms"], r["high_ms"]) < 0.9]
    taus, pairs, hits, cases = [], 0, 0, 0
    for model in sorted({r["model"] for r in rows}):
        case = [r for r in rows if r["model"] == model and r["ranks"] == 2]
        if len(case) < 2:
            continue
        tau, n = kendall_separated(case, name)
        if tau is not None:
            taus.append((tau, n))
            pairs += n
        chosen = min(case, key=lambda r: r[name])
        fastest = min(case, key=lambda r: r["measured_ms"])
        cases += 1
        hits += chosen["measured_ms"] <= 1.05 * fastest["measured_ms"] or chosen["low_ms"] <= fastest["high_ms"]
    tau = sum(t * n for t, n in taus) / pairs if pairs else None
    return {"mean": statistics.fmean(acc), "data": statistics.fmean(data) if data else None, "below": below,
            "tau": tau, "pairs": pairs, "hits": hits, "cases": cases, "accuracies": acc}


def weighed(rows, full, name):
    """A predictor against the full oracle (`full`: its scores over `rows`): its mean accuracy, the
    difference of means with its bootstrap interval, and the verdict of the rule (docs/oracle.md)."""
    s = scores(rows, name)
    diff, low, high = paired_interval([a - b for a, b in zip(full["accuracies"], s["accuracies"])])
    if name == "closed form":
        verdict = ("the full oracle is better" if low > 0 else "the closed form is better" if high < 0
                   else "no measurable difference")
    else:
        verdict = ("earns its place" if low > 0 else "costs accuracy: the oracle is better without it" if high < 0
                   else "no measurable effect")
    return pct(s["mean"]), f"{100 * diff:+.2f} ({100 * low:+.2f} to {100 * high:+.2f})", verdict


def pct(x, digits=1):
    return "-" if x is None else f"{100 * x:.{digits}f} %"


def aging_report(data, rows):
    """The aging profile's lines: the oracle on it, as it is and rescaled by the canary."""
    old = data["old_profile"]
    out = [f"An aging profile: `{old['path']}`, calibrated {old['calibrated_at']} on {old['machine']}. Its "
           "canary (`hpf-oracle predict --canary`) measured the layers now at "
           + ", ".join(f"{m} {r:.3f}x" for m, r in data["canaries"].items())
           + " of their calibrated time.", ""]
    old_rows = []
    names = ("oracle",) + ((CANARY_EACH_RUN,) if CANARY_EACH_RUN in rows[0] else ()) + ("old profile", "old profile + canary")
    for name in names:
        s = scores(rows, name)
        old_rows.append([name.replace("oracle", "fresh profile"), pct(s["mean"]), pct(s["data"]), len(s["below"]),
                         f"{s['tau']:.2f}" if s["tau"] is not None else "-", f"{s['hits']} of {s['cases']}"])
    out.append(h.markdown_table(["profile", "mean accuracy", "data parallel", "wholly below 90 %", "tau", "recommended"],
                                old_rows, "lrrrrr"))
    out.append("")
    return out


def canary_rules_report(rows, rule):
    """Each rule of combining the ranks' canary ratios (all priced by the frozen oracle before each
    run) and the oracle without the canary, against the rule named before the run: the difference
    of mean accuracies with its bootstrap interval over configurations, and per model."""
    named = scores(rows, canary_rule_name(rule))
    several = [i for i, r in enumerate(rows) if r["ranks"] > 1]
    lines = []
    for name, predictor in [("no canary", "oracle")] + [(n, canary_rule_name(n)) for n in CANARY_RULES]:
        s = scores(rows, predictor)
        diff, low, high = paired_interval([a - b for a, b in zip(named["accuracies"], s["accuracies"])])
        per_model = " / ".join(
            f"{m} {pct(statistics.fmean(s['accuracies'][i] for i, r in enumerate(rows) if r['model'] == m))} "
            f"({statistics.median(rows[i][predictor] / rows[i]['measured_ms'] for i in several if rows[i]['model'] == m):.2f})"
            for m in dict.fromkeys(r["model"] for r in rows))
        lines.append([name + (" (named before the run)" if name == rule else ""), pct(s["mean"]), pct(s["data"]),
                      pct(statistics.fmean(s["accuracies"][i] for i in several)),
                      f"{statistics.median(rows[i][predictor] / rows[i]['measured_ms'] for i in several):.2f}",
                      len(s["below"]), f"{s['tau']:.2f}" if s["tau"] is not None else "-",
                      "-" if name == rule else f"{100 * diff:+.2f} ({100 * low:+.2f} to {100 * high:+.2f})", per_model])
    return ["The canary's rules: how the ranks' ratios combine (rank 0's, their mean, the slowest), each priced "
            f"before every run, and the oracle without the canary. The difference is the {rule} rule's mean accuracy "
            "minus the row's, with the 95 % bootstrap interval over configurations; per model, the mean accuracy "
            "and (in brackets) the median predicted / measured of its configurations of 2 or more ranks:", "",
            h.markdown_table(["predictor", "mean accuracy", "data parallel", "configurations of 2 or more ranks",
                              "their median predicted / measured", "wholly below 90 %", "tau",
                              "difference, points (interval)", "per model"], lines, "lrrrrrrrl"), ""]


def report(data):
    """The published section: every figure from `data` (check() renders it again and compares)."""
    rows = rows_of(data)
    frozen, run = data["frozen"], data["run"]
    which = data["set"]
    full = scores(rows, "oracle")
    fabric, aging = frozen.get("fabric"), data.get("old_profile") is not None
    canaried = bool(rows) and CANARY_EACH_RUN in rows[0]
    where = f", 2 emulated hosts at {fabric}" if fabric else ""
    precision = frozen.get("precision")
    where += f", {precision} products" if precision else ""
    out = [f"## Performance oracle, {which} set{where}: predicted against measured step time, a frozen oracle", ""]
    out.append(f"Written by `benchmarks/oracle/held_out.py measure --set {which}` from "
               f"`{os.path.relpath(data_path(data['label'], which), ROOT)}`. Oracle frozen at commit "
               f"`{frozen['commit']}` ({frozen['frozen_at']}), profile `{frozen['profile']}` calibrated then "
               f"(sha256 {frozen['profile_sha256'][:12]}); measured afresh from {run['started_at']} to "
               f"{run['finished_at']} at commit `{run['commit']}`, whose `include/` and `tools/` are the frozen ones. "
               + (f"Two hosts made by `scripts/fabric/emulate.sh with 2 {fabric}` (network namespaces, links shaped "
                  "to the rate), one rank per host, the profile's communication measured there before the freeze; "
                  "the hosts share this machine's 2 cores, unbound; " if fabric else
                  "Every rank on its own core, bound to it; ")
               + (f"calibrated, canaried and measured with {' '.join(f'{k}={v}' for k, v in frozen['calibrated_with'].items())}; "
                  if frozen.get("calibrated_with") else "")
               + (f"every calibration, canary, prediction and run with {precision} products (`--precision {precision}`: "
                  f"`hpf::Mixed<hpf::{precision}>`, NetworkOptions::matmul_precision); " if precision else "")
               + f"each configuration {run['rounds']} runs interleaved with "
               f"the others, {run['blocks_per_run']} blocks of at least {run['block_seconds']:g} s each: the mean "
               "of the blocks and its 95 % confidence interval.")
    rule = run.get("canary_rule")
    if canaried and not rule:
        ratios = sorted(r["canary"]["ratio"] for entry in data["configurations"] for r in entry["runs"])
        out[-1] += (" Before each run the frozen oracle ran its canary (`hpf-oracle predict --canary "
                    f"{run['canary_seconds']:g}`, the run's model against the frozen profile) and predicted that run "
                    "with compute rescaled by it, as `hpf::Auto` does before it chooses; a configuration's canary "
                    "prediction is the mean over its blocks of their run's. The canary found the layers at "
                    f"{ratios[0]:.3f}-{ratios[-1]:.3f}x their calibrated time (median "
                    f"{statistics.median(ratios):.3f}, {len(ratios)} runs).")
    if canaried and rule:
        ratios = sorted(x for entry in data["configurations"] for r in entry["runs"] for x in r["canary"]["ratios"])
        out[-1] += (" Before each run the frozen oracle ran its canary on every rank of the run at once, launched as "
                    f"the run is (`hpf-oracle predict --canary {run['canary_seconds']:g}` per rank, the run's model "
                    "against the frozen profile, each rank bound to its core), and predicted that run with compute "
                    f"rescaled by the ranks' ratios combined by the rule named before the run: the {rule} "
                    "(`hpf::Auto` takes the slowest); a configuration's canary prediction is the mean over its blocks "
                    "of their run's. The canary found "
                    f"the layers at {ratios[0]:.3f}-{ratios[-1]:.3f}x their calibrated time (median "
                    f"{statistics.median(ratios):.3f}, {len(ratios)} ranks' canaries).")
    out.append("")
    aged = ["old profile", "old profile + canary"] if aging else []
    resident = bool(rows and rows[0]["resident_mib"])
    out.append(h.markdown_table(
        ["model", "ranks", "strategy", "measured ms", "95 % interval", "oracle ms", "accuracy"]
        + (["canary before run ms", "accuracy (canary)"] if canaried else []) + ["closed form ms"]
        + (["old profile ms", "+ canary ms"] if aging else [])
        + ["peak RSS MiB", "predicted RSS MiB" if resident else "predicted MiB"],
        [[r["model"], r["ranks"], describe(r), f"{r['measured_ms']:.1f}", f"{r['low_ms']:.1f}-{r['high_ms']:.1f}",
          f"{r['oracle']:.1f}", pct(accuracy(r["oracle"], r["measured_ms"]))]
         + ([f"{r[CANARY_EACH_RUN]:.1f}", pct(accuracy(r[CANARY_EACH_RUN], r["measured_ms"]))] if canaried else [])
         + [f"{r['closed form']:.1f}"] + [f"{r[name]:.1f}" for name in aged]
         + [f"{max(r['rss_mib']):.0f}", f"{max(r['resident_mib'] if resident else r['stage_memory_mib']):.0f}"]
         for r in rows], "rrlrrrrr" + "rr" * canaried + "rr" * aging + "rr"))
    out.append("")
    mem = [memory_error(r) for r in rows]
    grown = [memory_error(r, above_base=True) for r in rows]
    within = sum(e <= 0.10 for e in mem)
    # Time figures per predictor: the fresh profile's, and where the run canaried before each run, that one's.
    judged = [full] + ([scores(rows, CANARY_EACH_RUN)] if canaried else [])
    same = ["(the same)"] * canaried  # memory and the query do not depend on the canary
    out.append("Against the issue's targets (oracle on the fresh profile"
               + (", and the same oracle with its canary before each run" if canaried else "") + "):")
    out.append("")
    out.append(h.markdown_table(["figure", "target", "measured"] + ["with the canary before each run"] * canaried, [
        ["mean accuracy", "≥ 96 %"] + [pct(s["mean"]) for s in judged],
        ["data parallel (1 and 2 ranks)", "≥ 97 %"] + [pct(s["data"]) for s in judged],
        ["configurations whose interval lies wholly below 90 %", "none"]
        + [", ".join(f"{r['model']} {describe(r)}" for r in s["below"]) or "none" for s in judged],
        ["Kendall tau, pairs whose intervals do not overlap", "≥ 0.9"]
        + [f"{s['tau']:.2f} ({s['pairs']} pairs)" if s["tau"] is not None else "no such pairs" for s in judged],
        ["recommendation within 5 % of the best (or inside its interval)", "≥ 90 % of cases"]
        + [f"{s['hits']} of {s['cases']}" for s in judged],
        ["peak RSS within 10 %", "every configuration",
         f"{within} of {len(mem)} (median error {pct(statistics.median(mem), 0)})"] + same,
        ["peak RSS above the process's RSS before training, within 10 %", "(the engine's own memory)",
         f"{sum(e <= 0.10 for e in grown)} of {len(grown)} (median error {pct(statistics.median(grown), 0)})"] + same,
        ["`rank` query, 64 ranks", "≤ 1 ms", query_text(data, 0, 2)] + same,
        ["`rank` query, 1024 ranks", "≤ 50 ms", query_text(data, 1, 1)] + same,
    ], "lll" + "l" * canaried))
    out.append("")
    out += aging_report(data, rows) if aging else []
    out += canary_rules_report(rows, rule) if canaried and rule else []
    # The predictors the run priced: the closed form, and the oracle without each term it could leave out then.
    variants = ["closed form"] + sorted(name for name in data["configurations"][0]["predicted"] if name.startswith("without "))
    if len(variants) > 1:
        out.append("The ablation: each term left out of the frozen oracle (`hpf-oracle predict --without TERM`) and "
                   "ParaDL's closed form (`--closed-form`), on the same measurements. The difference is the full "
                   "oracle's mean accuracy minus the variant's, with the 95 % bootstrap interval over configurations; "
                   "a term earns its place when the interval lies above 0.")
    else:
        out.append("The baseline: ParaDL's closed form (`hpf-oracle predict --closed-form`) on the same calibration and "
                   "measurements. The difference is the oracle's mean accuracy minus the closed form's, with the 95 % "
                   "bootstrap interval over configurations.")
    out.append("")
    ablation = []
    for name in variants:
        mean, difference, verdict = weighed(rows, full, name)
        moved = sum(abs(r[name] - r["oracle"]) > 1e-6 * r["oracle"] for r in rows)
        ablation.append([name, mean, difference, f"{moved} of {len(rows)}", verdict])
    out.append(h.markdown_table(["predictor", "mean accuracy", "difference, points (interval)",
                                 "configurations it changes", "verdict"], ablation, "lrrrl"))
    out.append("")
    out.append("- " + "\n- ".join(f"{m}: {MODELS[m][0]}, global batch {MODELS[m][1]}." for m in SETS[which]))
    out.append("")
    out.append("Commands (from the repository root; one configuration shown):")
    out.append("")
    # --old-profile where the run named another than the default (a fabric's runs named none: '')
    old = data.get("old_profile")
    aging_option = f" --old-profile {old['path']}" if old and old["path"] != DEFAULT_OLD_PROFILE else ""
    out += ["```sh", f"/usr/bin/python3 benchmarks/oracle/held_out.py measure --set {which} --label {data['label']}"
            + aging_option, run["example_command"], "```"]
    return "\n".join(out) + "\n"


POOLED_SECTION = "oracle-ablation"


def pooled_report(labels):
    """The ablation over the held-out runs of `labels` pooled: per predictor they all priced, the
    mean accuracy and the difference from the full oracle with its bootstrap interval (the rule by
    which a term stays, docs/oracle.md)."""
    runs = []
    for label in labels:
        with open(data_path(label, "held-out")) as f:
            runs.append((label, json.load(f)))
    rows = [r for _, d in runs for r in rows_of(d)]
    names = set.intersection(*(set(d["configurations"][0]["predicted"]) for _, d in runs))
    full = scores(rows, "oracle")
    out = ["## Performance oracle: the ablation over the held-out runs, pooled", ""]
    out.append(f"Written by `benchmarks/oracle/held_out.py pooled --labels {','.join(labels)}` from the held-out runs' data "
               "files (their sections above give each run's frozen commit and measurements): "
               + ", ".join(f"`{label}` {len(rows_of(d))} configurations, frozen at `{d['frozen']['commit']}`"
                           for label, d in runs)
               + f"; {len(rows)} in all. The difference is the full oracle's mean accuracy minus the variant's, with the "
               "95 % bootstrap interval over the pooled configurations; a term stays only where the interval lies "
               "above 0.")
    out.append("")
    table = []
    for name in ["closed form"] + sorted(n for n in names if n.startswith("without ")):
        mean, difference, verdict = weighed(rows, full, name)
        per_run = []
        for label, d in runs:
            one = rows_of(d)
            a, b = scores(one, "oracle")["accuracies"], scores(one, name)["accuracies"]
            per_run.append(f"{100 * statistics.fmean(x - y for x, y in zip(a, b)):+.2f}")
        table.append([name, mean, difference, " / ".join(per_run), verdict])
    out.append(h.markdown_table(["predictor", "mean accuracy", "difference, points (interval)",
                                 "per run: " + " / ".join(labels), "verdict"], table, "lrrrl"))
    out.append("")
    out.append(f"The full oracle: mean accuracy {pct(full['mean'])} over the {len(rows)} configurations.")
    return "\n".join(out) + "\n", [data_path(label, "held-out") for label in labels]


def rendered(data, path, record=None):
    """The section as published: the report with its provenance line (from the data's record)."""
    return provenance.with_lines(report(data), [path], [record] if record else None)


# --- the check of a published run ------------------------------------------------------------------
def problems_of(data, committed_frozen, published, path):
    """What is wrong with a published section (`published`, its text) of the run in `data` (read
    from `path`), given the committed frozen record: empty when it was written by a fresh run of a
    frozen oracle and its figures are the data's."""
    problems = []
    frozen, run = data.get("frozen", {}), data.get("run", {})
    if committed_frozen is None:
        problems.append("no committed frozen record")
    elif committed_frozen != frozen:
        problems.append("the data's frozen record is not the committed one")
    if not run.get("measured_afresh"):
        problems.append("the measurements were not taken afresh by this run")
    if run.get("started_at", "") <= frozen.get("frozen_at", "~"):
        problems.append(f"measured at {run.get('started_at')}, not after the freeze at {frozen.get('frozen_at')}")
    if run.get("trees") != frozen.get("trees"):
        problems.append("the run's include/ and tools/ were not the frozen ones")
    profile = os.path.join(ROOT, frozen.get("profile", ""))
    if not os.path.isfile(profile) or sha256(profile) != frozen.get("profile_sha256"):
        problems.append(f"the frozen profile {frozen.get('profile')} is missing or changed")
    # In git history (a shallow clone may not hold the commits: then only the records are compared).
    shallow = git("rev-parse", "--is-shallow-repository") == "true"
    if git("rev-parse", "--git-dir") is not None:
        for name, commit in (("frozen", frozen.get("commit")), ("measured", run.get("commit"))):
            if commit and shallow and git("cat-file", "-e", f"{commit}^{{commit}}") is None:
                continue
            if not commit or source_trees(commit) != frozen.get("trees"):
                problems.append(f"the {name} commit {commit}'s include/ and tools/ are not the frozen trees")
    if published.strip() != rendered(data, path).strip():
        problems.append("the published section is not what the data file renders")
    return problems


def check(label, which, results_path):
    """problems_of the published `which` section of `label` in `results_path`."""
    path = data_path(label, which)
    if not os.path.exists(path):
        return [f"{os.path.relpath(path, ROOT)} is missing"]
    with open(path) as f:
        data = json.load(f)
    committed = None
    if os.path.exists(frozen_path(label)):
        with open(frozen_path(label)) as f:
            committed = json.load(f)
    return problems_of(data, committed, h.read_section(results_path, section_name(label, which)), path)


def check_pooled(results_path):
    """Problems of the published pooled ablation (pooled_problems); None when none is published."""
    published = h.read_section(results_path, POOLED_SECTION)
    return pooled_problems(published, results_path) if published else None


def pooled_problems(published, results_path):
    """Problems of a pooled ablation section `published`: each pooled run must pass its own check,
    and the section must be what their data renders."""
    m = re.search(r"pooled --labels ([\w,-]+)", published)
    if not m:
        return ["the pooled section names no --labels"]
    labels = m.group(1).split(",")
    problems = [f"{label}: {problem}" for label in labels for problem in check(label, "held-out", results_path)]
    text, paths = pooled_report(labels)
    if published.strip() != provenance.with_lines(text, paths).strip():
        problems.append("the pooled section is not what the runs' data render")
    return problems


def frozen_labels():
    """The labels with a committed frozen record (LABEL.json beside its profile and, for a fabric, the
    communication measurements behind it)."""
    return sorted(f[:-len(".json")] for f in os.listdir(FROZEN_DIR) if f.endswith(".json") and "." not in f[:-len(".json")])


# --- steps -----------------------------------------------------------------------------------------
def freeze(args):
    if uncommitted_sources():
        sys.exit("held_out.py: include/ or tools/ have uncommitted changes: commit them before freezing")
    # The frozen profile keeps --profile's communication: a user's profile is made on the host it
    # prices (xeon11 was frozen with another host's and its communication was mispriced).
    other = h.profile_of_other_machine(args.profile, ROOT)
    if other:
        sys.exit(f"held_out.py: {other}. Measure its communication here first "
                 "(benchmarks/comm/run_comm_benchmark.py --profile FILE) and freeze with that profile")
    os.makedirs(FROZEN_DIR, exist_ok=True)
    profile = os.path.join(FROZEN_DIR, f"{args.label}.profile.json")
    shutil.copyfile(args.profile, profile)
    models = SETS[args.set] if args.set_given else SETS["development"] + SETS["held-out"]
    for model in models:
        # The whole layers, then one member's part of each filter and channel split the model's
        # configurations hold (what the oracle predicts those splits from).
        splits = sorted({c["split"] for c in configurations(model, 2) if c["split"]})
        for split in [""] + splits:
            h.log(f"calibrating {model}{' (' + split + ' member)' if split else ''} into {profile}")
            subprocess.run([args.oracle, "calibrate", "--model", model, "--profile", profile]
                           + (["--split", split] if split else []) + h.precision_words(args),
                           check=True, env=run_env()[0], stdout=subprocess.DEVNULL)
    record = {"commit": git("rev-parse", "--short=12", "HEAD"), "trees": source_trees(),
              "frozen_at": datetime.datetime.now().isoformat(timespec="seconds"),
              "profile": os.path.relpath(profile, ROOT), "profile_sha256": sha256(profile),
              "profile_from": h.repo_relative(args.profile, ROOT), "machine": h.machine_description(),
              "calibrated_with": run_env()[1]}
    # What a training process holds beside its data and the engine's views, and its data set: the
    # base of the predicted resident set (hpf-oracle --process-mib, --data-mib), measured once per
    # model here.
    record["memory"] = {model: describe_memory(args, model) for model in models}
    if args.fabric:  # measured only on that fabric (its communication is in the profile)
        record["fabric"] = args.fabric
    if args.precision != "float":  # every calibration, canary, prediction and run in it
        record["precision"] = args.precision
    with open(frozen_path(args.label), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    h.log(f"frozen: {os.path.relpath(frozen_path(args.label), ROOT)}; commit it with the profile before measuring")
    return 0


def describe_memory(args, model):
    """{process_mib, data_mib[, process_before_training_mib]} of `hpf_bench_parallel_throughput
    --describe-memory` on one rank, run as the measured runs are."""
    cmd = [args.mpiexec] + shlex.split(args.mpiexec_flags) + ["-n", "1", args.hpf, "--model", model, "--batch",
                                                               str(MODELS[model][1]), "--describe-memory"] + h.precision_words(args)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=run_env()[0]).stdout
    m = re.search(r"MEMORY model=\S+ process_mib=([0-9.]+) data_mib=([0-9.]+)(?: process_before_training_mib=([0-9.]+))?", out)
    if not m:
        raise RuntimeError(f"{h.command_text(cmd)} printed no MEMORY line: {out}")
    memory = {"process_mib": float(m.group(1)), "data_mib": float(m.group(2))}
    if m.group(3):
        memory["process_before_training_mib"] = float(m.group(3))
    return memory


def old_profile_facts(path):
    record = provenance.read(path) or {}
    with open(path) as f:
        p = json.load(f)
    return {"path": os.path.relpath(path, ROOT), "calibrated_at": record.get("measured_at", p.get("created", "?")),
            "machine": record.get("machine", p.get("host", {}).get("description", "?"))}


def measure_set(args):
    with open(frozen_path(args.label)) as f:
        frozen = json.load(f)
    if uncommitted_sources() or source_trees() != frozen["trees"]:
        sys.exit("held_out.py: include/ or tools/ differ from the frozen commit "
                 f"{frozen['commit']}: a held-out run predicts with the frozen oracle only")
    args.frozen_profile = os.path.join(ROOT, frozen["profile"])
    args.frozen_memory = frozen.get("memory", {})
    args.precision = frozen.get("precision", "float")
    if args.precision != "float" and args.old_profile == os.path.join(ROOT, DEFAULT_OLD_PROFILE):
        args.old_profile = ""  # the committed aging profile is calibrated in float only
    if sha256(args.frozen_profile) != frozen["profile_sha256"]:
        sys.exit(f"held_out.py: {frozen['profile']} changed since it was frozen")
    if h.machine_of(frozen.get("machine", "")) != h.machine_of(h.machine_description()):
        sys.exit(f"held_out.py: {args.label} was frozen on: {frozen.get('machine')}; this host is: "
                 f"{h.machine_description()}. Freeze a new label here")
    subprocess.run(["cmake", "--build", args.build, "--target", "hpf-oracle", "hpf_bench_parallel_throughput"], check=True,
                   stdout=subprocess.DEVNULL)  # the binaries of the frozen sources
    record = provenance.start("benchmarks/oracle/held_out.py")
    started = datetime.datetime.now().isoformat(timespec="seconds")
    models = SETS[args.set] if not args.models else args.models.split(",")
    cores = os.cpu_count() or 1
    fabric = frozen.get("fabric")
    if fabric and not args.mpiexec_given:
        sys.exit(f"held_out.py: {args.label} is frozen for the emulated fabric {fabric}: measure there, with "
                 "--mpiexec \"$HPF_FABRIC_MPIEXEC\" --mpiexec-flags '' under scripts/fabric/emulate.sh with 2 " + fabric)
    args.configs = [c for m in models for c in configurations(m, cores, bool(fabric))]
    for m in models if cores >= 2 or fabric else ():  # the 2-rank case's recommendation, measured too
        rec = recommended(args, m, 2)
        if config_key(rec) not in {config_key(c) for c in args.configs}:
            args.configs.append(rec)
    predicted, canaries = predictors(args, models)
    query = {m: query_times(args, m) for m in models}
    runs, _ = measure(args, predicted["oracle"])
    data = {"label": args.label, "set": args.set, "frozen": frozen, "canaries": canaries,
            "old_profile": old_profile_facts(args.old_profile) if args.old_profile else None,
            "query_ms": {m: [q[64][0], q[1024][0]] for m, q in query.items()},
            "warm_query_ms": {m: [q[64][1], q[1024][1]] for m, q in query.items()},
            "run": {"started_at": started, "finished_at": datetime.datetime.now().isoformat(timespec="seconds"),
                    "commit": git("rev-parse", "--short=12", "HEAD"), "trees": source_trees(),
                    "measured_afresh": True, "rounds": args.rounds, "blocks_per_run": args.blocks,
                    "block_seconds": args.block_seconds,
                    **({"canary_seconds": args.canary_seconds} if args.canary_each_run else {}),
                    **({"canary_rule": args.canary_rule} if args.canary_each_run and args.canary_rule != "one process"
                       else {}),
                    "example_command": h.command_text([h.repo_relative(x, ROOT) for x in bench_cmd(
                        args, args.configs[-1], predicted["oracle"][config_key(args.configs[-1])]["time_s"])])},
            "configurations": [{"config": c, "runs": runs[config_key(c)],
                                "predicted": {name: p[config_key(c)] for name, p in predicted.items()}}
                               for c in args.configs]}
    path = data_path(args.label, args.set)
    record["measured_at"] = provenance.now()
    if not args.no_write:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        provenance.write(path, record)
    failed = [describe(c) for c in args.configs if not runs[config_key(c)]]
    return h.publish(args, section_name(args.label, args.set), rendered(data, path, record), failed)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=("freeze", "measure", "render", "check", "pooled"))
    p.add_argument("--labels", default="local", help="pooled: the frozen labels whose held-out runs are pooled")
    p.add_argument("--label", default="local", help="the frozen oracle's name (default local)")
    p.add_argument("--set", default=None, choices=tuple(SETS),
                   help="measure: the set (default held-out); freeze: calibrate its models only (default both sets')")
    p.add_argument("--fabric", default="", help="freeze: the emulated fabric the profile's communication was "
                   "measured on (e.g. 1gbit): the label is measured there only")
    p.add_argument("--models", default="", help="measure: a subset of the set's models (a trial, not a publication)")
    p.add_argument("--precision", default="float", choices=("float", "bf16"),
                   help="freeze: the products' precision of every calibration, canary, prediction and run of the "
                   "label (bf16: hpf::Mixed<hpf::bf16>, NetworkOptions::matmul_precision); measure takes the frozen one")
    h.add_oracle_binary_options(p, ROOT)
    p.add_argument("--old-profile", default=os.path.join(ROOT, DEFAULT_OLD_PROFILE),
                   help="the aging profile predicted from with and without the canary (default: the committed local.json; "
                   "'' for none)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder of --hpf and --oracle")
    p.add_argument("--canary-seconds", type=float, default=2.0,
                   help="seconds of each canary: the aging profile's, and the one before each run (default 2)")
    p.add_argument("--no-canary-each-run", dest="canary_each_run", action="store_false",
                   help="measure: no canary before each run (runs before 2026-12-06 had none)")
    p.add_argument("--canary-rule", default="slowest", choices=("one process",) + tuple(CANARY_RULES),
                   help="measure: the canary before each run on every rank of the run at once, its prediction "
                   "rescaled by the slowest ratio (default, as hpf::Auto does), their mean or rank 0's (each rule's "
                   "prediction is kept), or in one process, unbound (runs before xeon17)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved runs per configuration (default 5)")
    p.add_argument("--blocks", type=int, default=2, help="timed blocks per run (default 2)")
    p.add_argument("--block-seconds", type=float, default=3.0, help="least seconds per block (default 3)")
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--mpiexec-flags", default="--allow-run-as-root --bind-to core --map-by core",
                   help="launcher flags before -n: every rank bound to a core of its own (default: %(default)s)")
    p.add_argument("--max-busy", type=float, default=0.10)
    p.add_argument("--max-wait", type=float, default=30.0)
    p.add_argument("--timeout", type=float, default=300.0)
    h.add_results_options(p, os.path.join(BENCHMARKS, "RESULTS.md"))
    args = p.parse_args()
    args.set_given, args.set = args.set is not None, args.set or "held-out"
    args.mpiexec_given = args.mpiexec != "mpiexec"
    return args


def main():
    args = parse_args()
    if args.step == "freeze":
        return freeze(args)
    if args.step == "measure":
        return measure_set(args)
    if args.step == "pooled":
        text, paths = pooled_report([label for label in args.labels.split(",") if label])
        text = provenance.with_lines(text, paths)
        print(text)
        if not args.no_write:
            h.replace_section(args.results, POOLED_SECTION, text)
        return 0
    if args.step == "render":  # the section again from the data file (after a change of report())
        path = data_path(args.label, args.set)
        with open(path) as f:
            text = rendered(json.load(f), path)
        print(text)
        if not args.no_write:
            h.replace_section(args.results, section_name(args.label, args.set), text)
        return 0
    problems = check(args.label, args.set, args.results)
    for problem in problems:
        print(f"held_out.py check: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
