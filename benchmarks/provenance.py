# SPDX-License-Identifier: MIT
"""Where a generated block's numbers come from: when, at which commit and on which machine they
were measured, kept next to the data as `<data>.provenance.json` and rendered into the block from
there, never carried over from the text the block replaces (a copied line once put the fabric
oracle tables at 23:45 / 23:58 of 8523976 while their CSVs held the runs of 21:05 / 21:16).

A record: measured_at (ISO time the run finished), commit (the repository when the run began, the
binaries most likely built from it), uncommitted_changes, machine (bench_harness's one-line
description), script; optionally priced (the same for a later run that priced the measurements
again with newer code, `--from-csv`) and recovered (how a record written after the fact was found).

Blocks whose script keeps no data file have a record of their own,
benchmarks/results/NAME.provenance.json, whose data is the block itself.

  /usr/bin/python3 benchmarks/provenance.py relabel   # every block's provenance line from its records
"""
import datetime
import json
import os
import re
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, BENCHMARKS)
import bench_harness as h  # noqa: E402

SUFFIX = ".provenance.json"
REPRICED = "re-priced from those measurements"

# Each generated block's data files (repository paths). A block of a script that keeps no data file
# names its own record's data, benchmarks/results/NAME (the record is NAME.provenance.json).
BLOCK_DATA = {
    "single-process": ["benchmarks/results/single-process"],
    "single-process-models": ["benchmarks/results/single-process-models"],
    "language-model-seeds": ["benchmarks/results/language-model-seeds"],
    "fuzzing-npy": ["benchmarks/results/fuzzing-npy"],
    "accuracy-seeds": ["benchmarks/results/accuracy-seeds"],
    "accuracy-seeds-resnet20": ["benchmarks/results/accuracy-seeds-resnet20"],
    "parallel": ["benchmarks/results/parallel"],
    "two-cores": ["benchmarks/results/two-cores"],  # RESULTS.md's table and README's paragraph alike
    "two-cores-models": ["benchmarks/results/two-cores-models"],
    "threads-breakdown": ["benchmarks/results/threads-breakdown"],
    "compile-flat": ["benchmarks/results/compile-flat"],
    "comm": ["benchmarks/comm/results/comm_local.csv"],
    "trace-overhead": ["benchmarks/results/trace-overhead"],
    "fabrics": ["benchmarks/results/fabrics"],
    "across-hosts": ["benchmarks/results/across-hosts"],
    "precision": ["benchmarks/results/precision"],
    "precision-avx512-bf16": ["benchmarks/results/precision-avx512-bf16"],
    "layer-splits": ["benchmarks/results/layer-splits"],
    "spatial-splits": ["benchmarks/results/spatial-splits"],
    "spatial-splits-hosts": ["benchmarks/results/spatial-splits-hosts"],
    "cuts": ["benchmarks/results/cuts"],
    "fuzzing": ["benchmarks/results/fuzzing"],
    "sanitizers": ["benchmarks/results/sanitizers"],
    "reliability": ["benchmarks/results/reliability"],
    "oracle": ["benchmarks/oracle/results/oracle_local.csv"],
    "oracle-bf16": ["benchmarks/oracle/results/oracle_bf16.csv"],
    "oracle-held-out": ["benchmarks/oracle/results/held_out_local_held-out.json"],
    "oracle-development": ["benchmarks/oracle/results/held_out_local_development.json"],
    "oracle-held-out-pruned": ["benchmarks/oracle/results/held_out_pruned_held-out.json"],
    "oracle-held-out-xeon": ["benchmarks/oracle/results/held_out_xeon_held-out.json"],
    "oracle-development-xeon": ["benchmarks/oracle/results/held_out_xeon_development.json"],
    "oracle-held-out-xeon2": ["benchmarks/oracle/results/held_out_xeon2_held-out.json"],
    "oracle-development-xeon3": ["benchmarks/oracle/results/held_out_xeon3_development.json"],
    "oracle-held-out-xeon4": ["benchmarks/oracle/results/held_out_xeon4_held-out.json"],
    "oracle-held-out-xeon5": ["benchmarks/oracle/results/held_out_xeon5_held-out.json"],
    "oracle-held-out-xeon6": ["benchmarks/oracle/results/held_out_xeon6_held-out.json"],
    "oracle-held-out-xeon7": ["benchmarks/oracle/results/held_out_xeon7_held-out.json"],
    "oracle-held-out-xeon8": ["benchmarks/oracle/results/held_out_xeon8_held-out.json"],
    "oracle-held-out-xeon9": ["benchmarks/oracle/results/held_out_xeon9_held-out.json"],
    "oracle-held-out-xeon10": ["benchmarks/oracle/results/held_out_xeon10_held-out.json"],
    "oracle-held-out-xeon11": ["benchmarks/oracle/results/held_out_xeon11_held-out.json"],
    "oracle-held-out-xeon12": ["benchmarks/oracle/results/held_out_xeon12_held-out.json"],
    "oracle-held-out-xeon13": ["benchmarks/oracle/results/held_out_xeon13_held-out.json"],
    "oracle-held-out-xeon14": ["benchmarks/oracle/results/held_out_xeon14_held-out.json"],
    "oracle-development-xeon15": ["benchmarks/oracle/results/held_out_xeon15_development.json"],
    "oracle-development-xeon16": ["benchmarks/oracle/results/held_out_xeon16_development.json"],
    "oracle-development-xeon17": ["benchmarks/oracle/results/held_out_xeon17_development.json"],
    "oracle-held-out-xeon18": ["benchmarks/oracle/results/held_out_xeon18_held-out.json"],
    "oracle-development-xeon19": ["benchmarks/oracle/results/held_out_xeon19_development.json"],
    "oracle-development-xeon20": ["benchmarks/oracle/results/held_out_xeon20_development.json"],
    "oracle-held-out-xeon21": ["benchmarks/oracle/results/held_out_xeon21_held-out.json"],
    "oracle-held-out-epyc1": ["benchmarks/oracle/results/held_out_epyc1_held-out.json"],
    "oracle-development-epyc2": ["benchmarks/oracle/results/held_out_epyc2_development.json"],
    "oracle-held-out-epyc3": ["benchmarks/oracle/results/held_out_epyc3_held-out.json"],
    "oracle-held-out-epyc4-bf16": ["benchmarks/oracle/results/held_out_epyc4-bf16_held-out.json"],
    "oracle-held-out-epyc5": ["benchmarks/oracle/results/held_out_epyc5_held-out.json"],
    "oracle-held-out-epyc6-bf16": ["benchmarks/oracle/results/held_out_epyc6-bf16_held-out.json"],
    "oracle-held-out-xeon22": ["benchmarks/oracle/results/held_out_xeon22_held-out.json"],
    "oracle-development-xeon23": ["benchmarks/oracle/results/held_out_xeon23_development.json"],
    "oracle-held-out-xeon24": ["benchmarks/oracle/results/held_out_xeon24_held-out.json"],
    "oracle-held-out-xeon25": ["benchmarks/oracle/results/held_out_xeon25_held-out.json"],
    "oracle-held-out-fabric-1gbit": ["benchmarks/oracle/results/held_out_fabric-1gbit_held-out.json"],
    "oracle-held-out-fabric-25gbit": ["benchmarks/oracle/results/held_out_fabric-25gbit_held-out.json"],
    "oracle-ablation": ["benchmarks/oracle/results/held_out_local_held-out.json",
                        "benchmarks/oracle/results/held_out_fabric-1gbit_held-out.json",
                        "benchmarks/oracle/results/held_out_fabric-25gbit_held-out.json"],
    "oracle-1gbit": ["benchmarks/oracle/results/oracle_1gbit.csv"],
    "oracle-10gbit": ["benchmarks/oracle/results/oracle_10gbit.csv"],
    "oracle-fabrics": ["benchmarks/oracle/results/oracle_local.csv", "benchmarks/oracle/results/oracle_10gbit.csv",
                       "benchmarks/oracle/results/oracle_1gbit.csv"],
    # The ranking is priced from the profile as it was then (the profile is recalibrated by the
    # oracle runs), so its record keeps that profile's provenance.
    "oracle-cluster": ["benchmarks/results/oracle-cluster"],
    "oracle-query": ["benchmarks/oracle/results/query_time.json"],
}

# Blocks made from other blocks and their records, not from data of their own: they state no
# provenance line (each row carries its section's date and machine); their script's --check test
# compares them with what the sections give now.
DERIVED = {"summary": "benchmarks/summary.py"}  # RESULTS.md's summary table (tests/scripts/test_summary.py)


def block_record(name):
    """The data path of a block whose script keeps no data file (its record sits next to it)."""
    return os.path.join(ROOT, "benchmarks", "results", name)


# --- records -----------------------------------------------------------------------------------
def start(script):
    """This run's provenance as it begins: the commit the binaries were most likely built from, the
    machine, the script (repository path). measured_at is added when the data is written."""
    revision = h.git_revision(ROOT)
    return {"commit": revision.split(" ")[0], "uncommitted_changes": "uncommitted" in revision,
            "machine": h.machine_description(), "script": script}


def now():
    return datetime.datetime.now().isoformat(timespec="minutes")


def sidecar(data_path):
    return data_path + SUFFIX


def read(data_path):
    """The record of a data file, {} when it has none."""
    try:
        with open(sidecar(data_path)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write(data_path, record):
    """Writes the record next to the data (measured_at now, unless the record has one)."""
    record = dict(record)
    record.setdefault("measured_at", now())
    record["data"] = h.repo_relative(data_path, ROOT)
    os.makedirs(os.path.dirname(os.path.abspath(data_path)), exist_ok=True)
    with open(sidecar(data_path), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    return record


def priced(data_path, pricing):
    """The data's record with `pricing` (a start() of the run that priced the measurements again,
    measured_at its time) as its `priced` part, written back."""
    record = read(data_path)
    record["priced"] = dict(pricing, measured_at=pricing.get("measured_at") or now())
    return write(data_path, record)


# --- labels ------------------------------------------------------------------------------------
def when(record):
    return record.get("measured_at", "unknown").replace("T", " ")


def revision(record):
    return record.get("commit", "unknown") + (" + uncommitted changes" if record.get("uncommitted_changes") else "")


def line(data_path, record=None):
    """The block's sentence on one data file: `Provenance (`RECORD`): measured WHEN at COMMIT on
    MACHINE[; priced again WHEN at COMMIT on MACHINE (re-priced from those measurements)].`"""
    record = record if record is not None else read(data_path)
    text = (f"Provenance (`{h.repo_relative(sidecar(data_path), ROOT)}`): measured {when(record)} at "
            f"{revision(record)} on {record.get('machine', 'unknown')}")
    again = record.get("priced")
    if again:
        text += (f"; priced again {when(again)} at {revision(again)} on {again.get('machine', 'unknown')} "
                 f"({REPRICED})")
    return text + "."


LINE = re.compile(r"^Provenance \(`(?P<record>[^`]+)`\): measured (?P<at>\S+ \S+) at (?P<commit>\S+"
                  r"(?: \+ uncommitted changes)?) on (?P<machine>.+?)(?:; priced again (?P<priced_at>\S+ \S+) at "
                  r"(?P<priced_commit>\S+(?: \+ uncommitted changes)?) on (?P<priced_machine>.+?) \("
                  + re.escape(REPRICED) + r"\))?\.$", re.M)


def stated(body):
    """{record path: the provenance a block's lines state} for every provenance line of `body`."""
    return {m["record"]: m.groupdict() for m in LINE.finditer(body)}


def expected(record):
    """What a provenance line states for `record`, in stated()'s terms."""
    again = record.get("priced") or {}
    return {"at": when(record), "commit": revision(record), "machine": record.get("machine", "unknown"),
            "priced_at": when(again) if again else None, "priced_commit": revision(again) if again else None,
            "priced_machine": again.get("machine", "unknown") if again else None}


def with_lines(body, data_paths, records=None):
    """`body` with its provenance lines rendered from the records of `data_paths` (or `records`, one
    each, when they are not written): old ones replaced in place; new ones after the heading (or first)."""
    new = [line(p, r) for p, r in zip(data_paths, records or [None] * len(data_paths))]
    lines = [x for x in body.split("\n") if not LINE.match(x)]
    at = next((i for i, x in enumerate(body.split("\n")) if LINE.match(x)), None)
    if at is None:
        at = 2 if lines and lines[0].startswith("#") else 0
        new = new + [""]
    return "\n".join(lines[:at] + new + lines[at:])


def publish(args, section, text, failed, record):
    """bench_harness.publish for a script that keeps no data file: the block's own record (`record`,
    start()'s, measured_at now) written unless --no-write, and its provenance line rendered from it."""
    data = block_record(section)
    record.setdefault("measured_at", now())  # in the caller's record too, for a second block from the same run
    record["data"] = h.repo_relative(data, ROOT)
    if not args.no_write:
        write(data, record)
    return h.publish(args, section, with_lines(text, [data], [record]), failed)


# --- blocks --------------------------------------------------------------------------------------
BLOCK = re.compile(r"<!-- (?P<name>[\w-]+):begin -->\n(?P<body>.*?)<!-- (?P=name):end -->", re.S)


def block_files():
    """Every markdown file that may hold generated blocks: README.md, docs/*.md, benchmarks/RESULTS.md."""
    docs = os.path.join(ROOT, "docs")
    pages = sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md")) if os.path.isdir(docs) else []
    return [os.path.join(ROOT, "README.md")] + pages + [os.path.join(BENCHMARKS, "RESULTS.md")]


def blocks():
    """(file, name, body) of every generated block, wherever it is."""
    for path in block_files():
        if os.path.exists(path):
            for m in BLOCK.finditer(open(path).read()):
                yield path, m["name"], m["body"]


def data_paths(name):
    return [os.path.join(ROOT, p) for p in BLOCK_DATA.get(name, [])]


def relabel():
    """Renders every known block's provenance lines from its records; nothing else changes (no
    measuring: for blocks whose script cannot render again without measuring)."""
    for path, name, body in list(blocks()):
        if name in BLOCK_DATA:
            h.replace_section(path, name, with_lines(body, data_paths(name)))


if __name__ == "__main__":
    if sys.argv[1:] != ["relabel"]:
        sys.exit(__doc__)
    relabel()
