# SPDX-License-Identifier: MIT
"""hpf's gradient reduction inside training against the alpha/beta models of the standalone sweep.

run_comm_benchmark.py (--training) launches hpf_bench_parallel_throughput data-parallel on each
rank count with the timeline on (HPF_TRACE), once per reduction (ordered: all-gather and a
fixed-order sum; allreduce: MPI_Iallreduce), and reads from the merged trace every gradient
bucket's reduction: its span on the `collective` row runs from its start during backward to its
completion, its `wait` span is the part the rank sat blocked at the end of the step (exposed).
A span ends when the rank sees the reduction complete: MPI progresses a non-blocking collective
only inside MPI calls, and hpf looks at the earlier buckets each time it starts one, so a span
says when backward could have used the result, not how long the network took.
Each is set against the model fitted to the same bucket in isolation (buckets_ordered or
buckets_allreduce: alpha per bucket + beta per byte), so a ratio above 1 is what sharing the
machine and the MPI progress engine with backward costs, and exposed / span says how much of
the reduction backward hid.
"""
import json
import os
import statistics

import alpha_beta

# A model with a gradient that several buckets carry (ResNet-20: 1.08 MB in 256 KiB buckets).
MODEL, BUCKET_BYTES = "resnet20", 256 << 10
FIRST_STEP, LAST_STEP = 2, 5
BENCH_ARGS = ["--model", MODEL, "--bucket-bytes", str(BUCKET_BYTES), "--steps", "6", "--warmup", "0",
              "--repeats", "1"]
PROFILE_KEY = {"ordered": "buckets_ordered", "allreduce": "buckets_allreduce"}


def bucket_spans(path):
    """{(bucket, bytes): {"span": [s], "exposed": [s]}} over every rank and traced step."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("ph") != "X" or e["name"] != "allreduce" or "bucket" not in e.get("args", {}):
            continue
        key = (e["args"]["bucket"], e["args"].get("bytes", 0))
        kind = "span" if e["cat"] == "collective" else "exposed" if e["cat"] == "wait" else None
        if kind:
            out.setdefault(key, {"span": [], "exposed": []})[kind].append(e["dur"] * 1e-6)
    return out


def predicted(fits, reduction, ranks, size):
    """The standalone model's time of one bucket of `size` bytes, or None without a fit."""
    lines = fits.get(PROFILE_KEY[reduction], {}).get(ranks, [])
    if not lines:
        return None
    return alpha_beta.regime_for(lines, size).time(1, size)


def rows_for(path, fits, reduction, ranks):
    """Table rows (one per bucket) of one traced run."""
    rows = []
    for (bucket, size), spans in sorted(bucket_spans(path).items()):
        # Means of both (a step without a wait on the bucket counts as 0 exposed).
        span = statistics.mean(spans["span"])
        exposed = sum(spans["exposed"]) / len(spans["span"])
        model = predicted(fits, reduction, ranks, size)
        rows.append([ranks, reduction, bucket, f"{size:,}", len(spans["span"]), f"{span * 1e3:,.3f}",
                     f"{exposed * 1e3:,.3f}", f"{100 * exposed / span:.0f} %" if span > 0 else "-",
                     f"{model * 1e3:,.3f}" if model else "-", f"{span / model:.2f}" if model else "-"])
    return rows


def measure(rank_counts, launch, trace_dir, fits):
    """Runs the traced trainings; `launch(ranks, extra_args, extra_env)` returns True on success.
    Returns (table rows, [failed runs])."""
    rows, failed = [], []
    for ranks in rank_counts:
        for reduction in ("ordered", "allreduce"):
            path = os.path.join(trace_dir, f"training_{ranks}_{reduction}.json")
            if os.path.exists(path):
                os.remove(path)
            env = {"HPF_TRACE": path, "HPF_TRACE_STEPS": f"{FIRST_STEP}-{LAST_STEP}"}
            if not launch(ranks, BENCH_ARGS + ["--reduction", reduction], env) or not os.path.exists(path):
                failed.append(f"traced training, {ranks} ranks, {reduction}")
                continue
            rows += rows_for(path, fits, reduction, ranks)
    return rows, failed


HEADER = ["ranks", "reduction", "bucket", "bytes", "spans", "mean span ms", "mean exposed ms", "exposed / span",
          "standalone model ms", "span / model"]
