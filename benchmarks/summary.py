# SPDX-License-Identifier: MIT
"""RESULTS.md's `summary` block: the headline figure of each generated section, read from that
section's own text (never typed in, so it cannot drift from the section), with date, machine and
script from the section's provenance record (benchmarks/provenance.py).

Each row looks its figure up by a table cell or a regular expression; when a section no longer has
what a row looks for, the script fails naming the section and what is missing, rather than printing
a stale value: change the row here together with the section's script.

  /usr/bin/python3 benchmarks/summary.py              # writes the block into benchmarks/RESULTS.md
  /usr/bin/python3 benchmarks/summary.py --no-write   # prints it
  /usr/bin/python3 benchmarks/summary.py --check      # exit 1 if the committed block differs
"""
import argparse
import os
import re
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCHMARKS)
import bench_harness as h  # noqa: E402
import provenance as P  # noqa: E402

RESULTS = os.path.join(BENCHMARKS, "RESULTS.md")
SECTION = "summary"
MODEL = {"mlp": "MLP", "mlp-pairs": "MLP (Dense pair)", "cnn": "CNN", "resnet20": "ResNet-20", "resnet56": "ResNet-56", "resnet164": "PreActResNet-164", "gpt": "GPT", "gpt8": "GPT-8",
         "gpt8-recompute": "GPT-8 re-materialized", "cosmoflow": "CosmoFlow"}


def model(name):
    return MODEL.get(name, name)  # a new model shows under its own name


class Stale(Exception):
    """A row's figure is no longer where the row looks for it in its section."""


# --- reading a section ----------------------------------------------------------------------------
def body(block):
    text = h.read_section(RESULTS, block)
    if not text:
        raise Stale(f"no '{block}' block in {RESULTS}")
    return text


def match(block, pattern):
    m = re.search(pattern, body(block), re.M)
    if not m:
        raise Stale(f"block '{block}': nothing matches {pattern!r}")
    return m


def tables(text):
    """Every markdown table of `text`, as lists of {header: cell} rows (bold marks removed)."""
    found, header = [], None
    for line in text.split("\n"):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            found.append([])
        elif not set(line) <= set("|-: "):
            found[-1].append(dict(zip(header, cells)))
    return found


def rows(block, column, where=lambda row: True):
    """The rows of `block`'s tables that have `column` and satisfy `where`; at least one."""
    hits = [r for t in tables(body(block)) for r in t if column in r and where(r)]
    if not hits:
        raise Stale(f"block '{block}': no table row with a '{column}' column that the row looks for")
    return hits


def cell(block, column, where):
    """The `column` cell of the one row of `block` that satisfies `where`."""
    hits = rows(block, column, where)
    if len(hits) != 1:
        raise Stale(f"block '{block}': {len(hits)} rows match where one '{column}' was expected")
    return hits[0][column]


def number(text):
    return float(re.match(r"[\d.]+", text.replace(",", "")).group())


# --- the rows: (blocks whose records label the row, anchor block, function -> (figure, value)) -----
def throughput_range(block):
    """All models and OpenBLAS settings of `block`: the range of hpf / PyTorch, naming the model at each end."""
    found = sorted(rows(block, "hpf / PyTorch"), key=lambda r: number(r["hpf / PyTorch"]))
    lo, hi = found[0], found[-1]
    return f"{lo['hpf / PyTorch']} ({model(lo['model'])}) to {hi['hpf / PyTorch']} ({model(hi['model'])})"


def single_process():
    return "hpf / PyTorch training throughput, one process, one thread", throughput_range("single-process")


def single_process_models():
    return ("hpf / PyTorch training throughput, GPT and 3-D CNN, one thread", throughput_range("single-process-models"))


def language_model():
    mean = {r["framework"]: r["mean"] for r in rows("language-model-seeds", "mean")}
    return ("language model: held-out bits per byte, mean of seeds, hpf / PyTorch", f"{mean['hpf']} / {mean['PyTorch']}")


def accuracy_seeds():
    found = rows("accuracy-seeds", "mean")
    seeds = sum(k.startswith("seed ") for k in found[0])
    models = list(dict.fromkeys(r["model"] for r in found))
    mean = {(r["model"], r["framework"]): r["mean"] for r in found}
    return (f"Fashion-MNIST test accuracy after one epoch, mean of {seeds} seeds, hpf / PyTorch",
            ", ".join(f"{model(m)} {mean[m, 'hpf']} / {mean[m, 'PyTorch']} %" for m in models))


def accuracy_seeds_resnet20():
    found = rows("accuracy-seeds-resnet20", "mean")
    seeds = sum(k.startswith("seed ") for k in found[0])
    mean = {r["framework"]: r["mean"] for r in found}
    return (f"Fashion-MNIST test accuracy of ResNet-20's layers after one epoch, mean of {seeds} seeds, hpf / PyTorch",
            f"float {mean['hpf']} / {mean['PyTorch']} %, bf16 {mean['hpf bf16']} / {mean['PyTorch bf16']} %")


def parallel():
    found = rows("parallel", "PyTorch DDP efficiency", lambda r: "hpf efficiency" in r)
    return ("data-parallel efficiency on 2 ranks, hpf (PyTorch DDP)",
            ", ".join(f"{model(r['model'])} {r['hpf efficiency']} ({r['PyTorch DDP efficiency']})" for r in found))


def two_cores():
    column = "fastest hpf 1 x 2 / hpf 2 x 1"
    return ("1 rank x 2 threads against 2 ranks x 1 thread",
            ", ".join(f"{model(r['model'])} {r[column].split()[0]}" for r in rows("two-cores", column)))


def two_cores_models():
    column = "best hpf / best PyTorch (2 cores)"
    return ("hpf / PyTorch on 2 cores (best setting of each), GPT and 3-D CNN",
            ", ".join(f"{model(r['model'])} {r[column].strip('*').split()[0]}"
                      for r in rows("two-cores-models", column)))


def precision_ratios(what, columns, block="precision"):
    """The table of `block` with `columns` (hpf bf16 against hpf float, and against PyTorch's autocast):
    a row naming `what`, each model's two ratios."""
    found = next((t for t in tables(body(block)) if t and all(c in t[0] for c in columns)), None)
    if found is None:
        raise Stale(f"block '{block}': no table with the columns {columns}")
    return (f"mixed precision (bf16 products), {what}",
            ", ".join(f"{model(r['model'])} {r[columns[0]].strip('*')} ({r[columns[1]].strip('*')})" for r in found))


def precision():
    """One thread: hpf bf16 against hpf float and against PyTorch's autocast."""
    return precision_ratios("one thread: hpf bf16 / hpf float (/ PyTorch autocast bf16)",
                            ("hpf bf16 / float", "hpf bf16 / PyTorch bf16"))


def precision_two_cores():
    """Two cores: hpf's faster layout in bf16 against its float and against PyTorch's autocast on 2 threads."""
    return precision_ratios("two cores: hpf bf16 / hpf float (/ PyTorch autocast bf16, 2 threads)",
                            ("hpf bf16 / float (2 cores)", "hpf bf16 / PyTorch bf16 (2 cores)"))


def precision_avx512_bf16():
    """precision()'s figures on a CPU with AVX512-BF16 and no AMX."""
    return precision_ratios("AVX512-BF16 without AMX, one thread: hpf bf16 / hpf float (/ PyTorch autocast bf16)",
                            ("hpf bf16 / float", "hpf bf16 / PyTorch bf16"), "precision-avx512-bf16")


def precision_avx512_bf16_two_cores():
    """precision_two_cores()'s figures on a CPU with AVX512-BF16 and no AMX."""
    return precision_ratios("AVX512-BF16 without AMX, two cores: hpf bf16 / hpf float (/ PyTorch autocast bf16, 2 threads)",
                            ("hpf bf16 / float (2 cores)", "hpf bf16 / PyTorch bf16 (2 cores)"), "precision-avx512-bf16")


def layer_splits():
    """Per model and global batch of `layer-splits`: data parallel, filter and channel split on 2 ranks over 1 rank."""
    column, layouts = "speed-up over 1 rank", ("data parallel 2", "filter split 2", "channel split 2")
    found = rows("layer-splits", column, lambda r: r.get("layout") in layouts)
    by = {}
    for r in found:
        by.setdefault((r["model"], r["global batch"]), {})[r["layout"]] = r[column]
    if any(len(v) != len(layouts) for v in by.values()):
        raise Stale("block 'layer-splits': a model and batch without all of " + ", ".join(layouts))
    return ("2 ranks over 1 rank at one global batch: data parallel / filter split / channel split",
            ", ".join(f"{model(m)} batch {b} {' / '.join(v[x] for x in layouts)}" for (m, b), v in by.items()))


def spatial_splits():
    """Per model of `spatial-splits`: data parallel, filter and spatial split on 2 ranks over 1 rank."""
    column, layouts = "speed-up over 1 rank", ("data parallel 2", "filter split 2", "spatial split 2")
    found = rows("spatial-splits", column, lambda r: r.get("layout") in layouts)
    by = {}
    for r in found:
        by.setdefault(r["model"], {})[r["layout"]] = r[column]
    if not by or any(len(v) != len(layouts) for v in by.values()):
        raise Stale("block 'spatial-splits': a model without all of " + ", ".join(layouts))
    return ("2 ranks over 1 rank at a global batch of 2: data parallel / filter split / spatial split",
            ", ".join(f"{model(m)} {' / '.join(v[x] for x in layouts)}" for m, v in by.items()))


def spatial_splits_hosts():
    """Per fabric and model of `spatial-splits-hosts`: spatial splits over 2 and 4 hosts against data parallelism."""
    column = "speed-up over data parallel 4"
    layouts = ("filter split 2", "spatial split 2", "spatial split 4", "spatial split 4, interior first")
    found = rows("spatial-splits-hosts", column, lambda r: r.get("layout") in layouts)
    by = {}
    for r in found:
        by.setdefault((r["fabric"], r["model"]), {})[r["layout"]] = r[column]
    if not by or any(len(v) != len(layouts) for v in by.values()):
        raise Stale("block 'spatial-splits-hosts': a fabric and model without all of " + ", ".join(layouts))
    return ("4 emulated hosts, batch 4, over data parallel: filter split 2 / spatial split 2 / spatial split 4 / "
            "the same, interior rows first",
            ", ".join(f"{model(m)} {f} {' / '.join(v[x] for x in layouts)}" for (f, m), v in by.items()))


def cuts():
    """Per model and stage count of `cuts`: the oracle's cuts' step against Balanced<S>'s."""
    found = re.findall(r"^- (\w+), (\d) stages: the chosen cuts [\d,]+ measured .*; chosen against Balanced<\d>: "
                       r"([+-][\d.]+) %\.$", body("cuts"), re.M)
    if not found:
        raise Stale("block 'cuts': no '- MODEL, S stages: the chosen cuts ... chosen against Balanced<S>: X %.' line")
    return ("pipeline step with the cuts the oracle chose, against Balanced<S>'s (2 and 4 stages)",
            ", ".join(f"{model(m)} S={s} {c} %" for m, s, c in found))


def threads_breakdown():
    found = re.findall(r"^\*\*(\w+)\*\*, batch .*?\*\*\+[\d.]+ ms \((\+[\d.]+ %)\)\*\* per step more",
                       body("threads-breakdown"), re.M)
    if not found:
        raise Stale("block 'threads-breakdown': no '**MODEL**, batch ...: **+X ms (+Y %)** per step more' line")
    return "what 2 threads lose per step against two processes", ", ".join(f"{model(m)} {p}" for m, p in found)


def compile_flat():
    m = match("compile-flat", r"^- (\d+) flat layers: ([\d.]+ s) CPU \([^)]*\), (\d+ MiB) peak: within the "
                              r"budget of (\d+ s) of CPU and (\d+ MiB)")
    return (f"compiler CPU time of {m[1]} flat layers (g++ -O2)",
            f"{m[2]}, {m[3]} (budget {m[4]} of CPU, {m[5]})")


def comm():
    # The fit of the smallest sizes (the regime starting at 4 B) of the 2-rank ping-pong.
    alpha = cell("comm", "alpha (µs)", lambda r: (r.get("primitive"), r.get("ranks")) == ("p2p_latency", "2")
                 and r.get("sizes", "").startswith("4 B "))
    return "point-to-point latency, 2 ranks, small messages (fit α)", f"{alpha} µs"


def trace_overhead():
    found = rows("trace-overhead", "on / out")
    ratios = sorted(r["on / out"] for r in found)
    return "throughput with tracing on / compiled out", f"{ratios[0]}-{ratios[-1]} ({len(found)} configurations)"


def fabrics():
    ratio = cell("fabrics", "vs unshaped (images/s)", lambda r: (r["fabric"], r["model"], r["strategy"])
                 == ("1gbit", "mlp", "data-parallel 4"))
    return "MLP data parallel on 4 emulated hosts, 1 Gbit/s against unshaped links", f"{ratio}x images/s"


def across_hosts():
    ratio = lambda model: cell("across-hosts", "hpf / DDP (images/s)", lambda r: (
        r["hosts x ranks"], r["fabric"], r["model"], r["job"]) == ("4x1", "1gbit", model, "hpf data parallel"))
    return ("data parallel on 4 emulated hosts at 1 Gbit/s, hpf / PyTorch DDP (images/s)",
            f"MLP {ratio('mlp')}x, ResNet-20 {ratio('resnet20')}x")


def findings(n):
    return "no findings" if n == 0 else f"{n} finding(s)"


def fuzzed(block, what):
    found = rows(block, "findings")
    seconds = {r["s"] for r in found}
    if len(seconds) != 1:
        raise Stale(f"block '{block}': the targets ran for different times ({sorted(seconds)})")
    return f"fuzzing {what}, {seconds.pop()} s per target", findings(sum(int(r["findings"]) for r in found))


def fuzzing():
    return fuzzed("fuzzing", "the file readers")


def fuzzing_npy():
    return fuzzed("fuzzing-npy", "the NumPy reader")


def sanitizers():
    r = rows("sanitizers", "findings", lambda r: "passed" in r and "tests" in r)[0]
    return ("unit, MPI and reference tests under ASan + UBSan",
            f"{r['passed']} of {r['tests']} passed, {findings(int(r['findings']))}")


def reliability():
    m = match("reliability", r"\*\*(\d+) tests, (\d+) checked cases, (\d+) tests passed\*\*")
    return "bad input, mismatched ranks, faults, damaged checkpoints", f"{m[3]} of {m[1]} tests passed ({m[2]} cases)"


def mean_accuracy(block):
    """(mean accuracy, configurations) from an oracle block's summary line."""
    m = match(block, r"^- \*\*mean accuracy ([\d.]+ %) \((\d+)\)\*\*")
    return m[1], m[2]


def oracle():
    mean, configurations = mean_accuracy("oracle")
    floor = match("oracle", r"^- \*\*noise floor\*\* .*?, mean accuracy ([\d.]+ %)")[1]
    return (f"oracle: mean accuracy of the predicted step time, this host ({configurations} configurations)",
            f"{mean} (noise floor {floor})")


def oracle_memory():
    return ("oracle: worst per-rank error of the predicted Kokkos memory",
            match("oracle", r"^- memory: \*\*worst error ([\d.]+ %)\*\*")[1])


def oracle_judged(which, fabric="", label=""):
    """The frozen oracle on a set's fresh measurements: mean accuracy, data parallel, recommendations."""
    block = "oracle-" + which + (f"-fabric-{fabric}" if fabric else f"-{label}" if label else "")
    def figures(column):
        figure = lambda name: cell(block, column, lambda r: r.get("figure", "").startswith(name))  # noqa: E731
        return f"{figure('mean accuracy')} / {figure('data parallel')} / {figure('recommendation within')} cases"
    commit = match(block, r"Oracle frozen at commit `(\w+)`")[1]
    configurations = len(rows(block, "95 % interval"))
    where = f" on 2 emulated hosts at {fabric}" if fabric else f" ({label})" if label else ""
    canary = "with the canary before each run"  # the column of runs that ran it (held_out.py)
    canaried = any(canary in r for t in tables(body(block)) for r in t)
    return (f"oracle, {which} set{where}, frozen at {commit[:7]}, measured afresh ({configurations} configurations): "
            "mean accuracy / data parallel / recommendation within 5 %",
            figures("measured") + (f"; {canary}: {figures(canary)}" if canaried else ""))


def oracle_held_out():
    return oracle_judged("held-out")


def oracle_development():
    return oracle_judged("development")


def oracle_held_out_pruned():
    return oracle_judged("held-out", label="pruned")


def oracle_held_out_1gbit():
    return oracle_judged("held-out", "1gbit")


def oracle_held_out_25gbit():
    return oracle_judged("held-out", "25gbit")


def oracle_ablation():
    """The pooled ablation: each term's difference, points (the full oracle minus the oracle without it)."""
    found = re.findall(r"^\| without ([\w-]+) \| [\d.]+ % \| ([+-][\d.]+) \(", body("oracle-ablation"), re.M)
    if not found:
        raise Stale("block 'oracle-ablation': no '| without TERM | X % | +D (...' row")
    return ("oracle terms on the pooled held-out runs, points of mean accuracy they add (a term stays above its interval)",
            ", ".join(f"{term} {diff}" for term, diff in found))


def oracle_query():
    def first(name, ranks):
        return cell("oracle-query", "first ms (median)", lambda r: (r["model"], r["ranks"]) == (name, ranks))
    names = dict.fromkeys(r["model"] for r in rows("oracle-query", "first ms (median)"))
    return ("oracle `rank` query, first in a fresh process (median), 64 / 1024 ranks",
            ", ".join(f"{model(n)} {first(n, '64')} / {first(n, '1024')} ms" for n in names))


def oracle_fabrics():
    (mean1, n1), (mean10, n10) = mean_accuracy("oracle-1gbit"), mean_accuracy("oracle-10gbit")
    counts = f"{n1} configurations each" if n1 == n10 else f"{n1} / {n10} configurations"
    return f"oracle: mean accuracy on emulated 1 / 10 Gbit/s ({counts})", f"{mean1} / {mean10}"


ROWS = [(["single-process"], single_process), (["single-process-models"], single_process_models),
        (["accuracy-seeds"], accuracy_seeds), (["accuracy-seeds-resnet20"], accuracy_seeds_resnet20),
        (["language-model-seeds"], language_model), (["parallel"], parallel),
        (["two-cores"], two_cores), (["two-cores-models"], two_cores_models), (["threads-breakdown"], threads_breakdown),
        (["compile-flat"], compile_flat),
        (["comm"], comm), (["trace-overhead"], trace_overhead), (["fabrics"], fabrics),
        (["across-hosts"], across_hosts), (["layer-splits"], layer_splits),
        (["spatial-splits"], spatial_splits), (["spatial-splits-hosts"], spatial_splits_hosts), (["cuts"], cuts),
        (["precision"], precision), (["precision"], precision_two_cores),
        (["precision-avx512-bf16"], precision_avx512_bf16), (["precision-avx512-bf16"], precision_avx512_bf16_two_cores),
        (["fuzzing"], fuzzing), (["fuzzing-npy"], fuzzing_npy),
        (["sanitizers"], sanitizers), (["reliability"], reliability), (["oracle"], oracle),
        (["oracle"], oracle_memory), (["oracle-1gbit", "oracle-10gbit"], oracle_fabrics),
        (["oracle-held-out"], oracle_held_out), (["oracle-development"], oracle_development),
        (["oracle-held-out-fabric-1gbit"], oracle_held_out_1gbit), (["oracle-held-out-fabric-25gbit"], oracle_held_out_25gbit),
        (["oracle-ablation"], oracle_ablation), (["oracle-held-out-pruned"], oracle_held_out_pruned),
        (["oracle-query"], oracle_query)]
# Frozen oracles of other labels, each set's block by the same figures.
ROWS += [([f"oracle-{which}-{label}"], lambda which=which, label=label: oracle_judged(which, label=label))
         for which, label in [("held-out", "xeon"), ("development", "xeon"), ("held-out", "xeon2"),
                              ("development", "xeon3"), ("held-out", "xeon4"), ("held-out", "xeon5"),
                              ("held-out", "xeon6"), ("held-out", "xeon7"), ("held-out", "xeon8"),
                              ("held-out", "xeon9"), ("held-out", "xeon10"), ("held-out", "xeon11"),
                              ("held-out", "xeon12"), ("held-out", "xeon13"), ("held-out", "xeon14"),
                              ("development", "xeon15"), ("development", "xeon16"),
                              ("development", "xeon17"), ("held-out", "xeon18"),
                              ("development", "xeon19"), ("development", "xeon20"), ("held-out", "xeon21"),
                              ("held-out", "epyc1"), ("development", "epyc2"),
                              ("held-out", "epyc3"), ("held-out", "epyc4-bf16"), ("held-out", "epyc5"),
                              ("held-out", "epyc6-bf16"), ("held-out", "xeon22"), ("development", "xeon23"),
                              ("held-out", "xeon24"), ("held-out", "xeon25")]]


# --- labels from the records ------------------------------------------------------------------------
def short_machine(machine):
    """bench_harness's machine line in a few words: 'AMD EPYC, family 25 model 17, ..., 2 vCPU (KVM), ...'
    -> 'AMD EPYC fam. 25, 2 vCPU'; 'unknown' where the record names none."""
    if machine.startswith("unknown"):
        return "unknown"
    m = re.match(r"(?P<cpu>[^,]+), family (?P<family>\d+) model \d+,.*?\b(?P<cpus>\d+) vCPU", machine)
    if not m:
        raise Stale(f"a machine line summary.py cannot shorten (add its form to short_machine): {machine!r}")
    return f"{m['cpu']} fam. {m['family']}, {m['cpus']} vCPU"


def date(record):
    text = P.when(record).split(" ")[0]
    return text + (f" (priced again {P.when(record['priced']).split(' ')[0]})" if record.get("priced") else "")


def script(record):
    # The table's column is relative to benchmarks/ (scripts/ paths stay as they are, from the root).
    path = record.get("script", "unknown")
    return path[len("benchmarks/"):] if path.startswith("benchmarks/") else path


def records(block):
    found = [P.read(d) for d in P.data_paths(block)]
    if not found or not all(found):
        raise Stale(f"block '{block}': no provenance record (BLOCK_DATA in benchmarks/provenance.py)")
    return found


def joined(values):
    return " / ".join(dict.fromkeys(values))


def anchors():
    """{block: GitHub's anchor of its first heading} for RESULTS.md (repeated headings numbered as GitHub does)."""
    found, seen, block = {}, {}, None
    for line in open(RESULTS).read().split("\n"):
        m = re.match(r"<!-- ([\w-]+):begin -->", line)
        if m:
            block = m[1]
        elif line.startswith("#"):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            if block:
                found[block] = slug if n == 0 else f"{slug}-{n}"
                block = None
    return found


def render():
    link = anchors()
    lines = ["## Summary", "",
             "The headline figure of each section below, read from the section's own text by "
             "`benchmarks/summary.py`; date, machine and script from the section's provenance record (date: "
             "when measured; machine: in short, the section's provenance line names it in full). The section "
             "says how it was measured, with its exact commands; `scripts/` paths are from the repository root.",
             "", "| figure | value | date | machine | script (in `benchmarks/`) |", "| --- | --- | --- | --- | --- |"]
    for blocks, row in ROWS:
        figure, value = row()
        labels = [r for b in blocks for r in records(b)]
        if blocks[0] not in link:
            raise Stale(f"block '{blocks[0]}': no heading to link to")
        lines.append(f"| [{figure}](#{link[blocks[0]]}) | {value} | {joined(date(r) for r in labels)} | "
                     f"{joined(short_machine(r.get('machine', 'unknown')) for r in labels)} | "
                     f"{joined('`' + script(r) + '`' for r in labels)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true", help="print the block, write nothing")
    parser.add_argument("--check", action="store_true", help="exit 1 if RESULTS.md's block differs from this rendering")
    args = parser.parse_args()
    try:
        text = render()
    except Stale as e:
        sys.exit(f"summary.py: {e}")
    if args.check:
        rendered, committed = text.split("\n"), h.read_section(RESULTS, SECTION).rstrip().split("\n")
        for k, (a, b) in enumerate(zip(rendered, committed)):
            if a != b:
                sys.exit(f"summary.py --check: line {k + 1} of the '{SECTION}' block differs\n  rendered:  {a}\n"
                         f"  committed: {b}\n(run /usr/bin/python3 benchmarks/summary.py to write it)")
        if len(rendered) != len(committed):
            sys.exit(f"summary.py --check: {len(rendered)} lines rendered, {len(committed)} committed")
        print(f"summary.py --check: the '{SECTION}' block is what the sections and their records give")
    elif args.no_write:
        print(text)
    else:
        h.replace_section(RESULTS, SECTION, text)


if __name__ == "__main__":
    main()
