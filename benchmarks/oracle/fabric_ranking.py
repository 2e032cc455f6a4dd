#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How the ranking of strategies moves as bandwidth drops, predicted against measured: for every
model on 2 ranks, the fastest data-parallel and the fastest pipelined configuration on each
fabric (this machine's shared memory, then the emulated fabrics from fast to slow), with the
oracle's times and the measured ones, and which of the two wins by each. Reads the CSVs that
run_oracle_accuracy.py wrote (one per label, measured with that fabric's own profile) and writes
the `oracle-fabrics` section of benchmarks/RESULTS.md; measures nothing.

  /usr/bin/python3 benchmarks/oracle/fabric_ranking.py                      # local, 10gbit, 1gbit
  /usr/bin/python3 benchmarks/oracle/fabric_ranking.py --labels local,1gbit --no-write
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)
sys.path.insert(0, BENCHMARKS)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

sys.path.insert(0, HERE)
from run_oracle_accuracy import make_config, strategy_text  # noqa: E402

SECTION = "oracle-fabrics"
RANKS = "2"  # the rank count every fabric ran (one rank per emulated host)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--labels", default="local,10gbit,1gbit", help="CSV labels, fastest fabric first")
    p.add_argument("--results", default=os.path.join(BENCHMARKS, "RESULTS.md"), help="markdown file to update")
    p.add_argument("--no-write", action="store_true", help="print the section only")
    return p.parse_args()


def csv_path(label):
    return os.path.join(HERE, "results", f"oracle_{label}.csv")


def read(label):
    path = csv_path(label)
    if not os.path.exists(path):
        sys.exit(f"fabric_ranking.py: {h.repo_relative(path, ROOT)} does not exist: run "
                 f"run_oracle_accuracy.py --label {label} first")
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r["ranks"] == RANKS and r["status"] == "ok"]


def describe(r):
    return strategy_text(make_config(r["model"], int(r["ranks"]), int(r["stages"]), int(r["micro_batches"]),
                                     r["schedule"]))


def fastest(rows, data_parallel, by):
    """The data-parallel (or else pipelined) configuration with the least `by` time ('predicted_ms'
    or 'measured_ms')."""
    pool = [r for r in rows if (r["kind"] == "data") == data_parallel]
    return min(pool, key=lambda r: float(r[by])) if pool else None


def winner(rows, by):
    data, pipe = fastest(rows, True, by), fastest(rows, False, by)
    if not data or not pipe:
        return "-"
    return "data parallel" if float(data[by]) <= float(pipe[by]) else "pipeline"


def main():
    args = parse_args()
    labels = [x for x in args.labels.split(",") if x]
    per_label = {label: read(label) for label in labels}
    models = [m for m in ("mlp", "cnn", "resnet20", "resnet56") if any(r["model"] == m for rows in per_label.values()
                                                                         for r in rows)]
    lines = ["## Performance oracle across fabrics: how the ranking moves as bandwidth drops", "",
             f"2 ranks (one per emulated host on the fabrics), from `benchmarks/oracle/results/oracle_LABEL.csv` "
             f"for the labels {', '.join(labels)} (each measured and predicted with its own profile by "
             "`run_oracle_accuracy.py`; see the `oracle` and `oracle-LABEL` sections). Per model and fabric: the "
             "data-parallel and the pipelined configuration the oracle predicts fastest, their predicted / "
             "measured step times, and which kind wins by the prediction and by measurement.", "",
             "| model | fabric | fastest data parallel (predicted) | predicted / measured ms | fastest pipeline "
             "(predicted) | predicted / measured ms | winner predicted | winner measured | agree |",
             "| --- | --- | --- | ---: | --- | ---: | --- | --- | --- |"]
    agree = total = 0
    for model in models:
        for label in labels:
            rows = [r for r in per_label[label] if r["model"] == model]
            data, pipe = fastest(rows, True, "predicted_ms"), fastest(rows, False, "predicted_ms")
            if not data or not pipe:
                continue
            # The winners compare every measured configuration of each kind, not only the predicted fastest.
            predicted, measured = winner(rows, "predicted_ms"), winner(rows, "measured_ms")
            total += 1
            agree += predicted == measured
            lines.append(f"| {model} | {label} | {describe(data)} | {float(data['predicted_ms']):.1f} / "
                         f"{float(data['measured_ms']):.1f} | {describe(pipe)} | {float(pipe['predicted_ms']):.1f} / "
                         f"{float(pipe['measured_ms']):.1f} | {predicted} | {measured} | "
                         f"{'yes' if predicted == measured else '**no**'} |")
    # Where each CSV was measured: its provenance record (not what a section of RESULTS.md says).
    hosts = {label: provenance.read(csv_path(label)).get("machine", "") for label in labels}
    lines += ["", f"- the winning kind agrees in **{agree} of {total}** (model, fabric) pairs."]
    if len(set(hosts.values())) > 1:
        lines.append("- the labels were measured on different machines: times compare within a fabric, not "
                     "across fabrics.")
    lines += [""] + [provenance.line(csv_path(label)) for label in labels]
    lines += ["",
              "Regenerate: `/usr/bin/python3 benchmarks/oracle/fabric_ranking.py --labels " + ",".join(labels) + "`."]
    return h.publish(args, SECTION, "\n".join(lines) + "\n", [])


if __name__ == "__main__":
    sys.exit(main())
