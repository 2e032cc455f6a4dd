#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What hpf's per-rank timeline costs: training throughput with tracing compiled out
(hpf_bench_parallel_throughput_untraced, HPF_ENABLE_TRACE=0), compiled in but off, and on (every
timed step traced), side by side in alternating rounds; then the bytes a trace takes per rank and
step for ResNet-56 and the pipelined ResNet-1001, at the default detail and with per-layer spans.
Rewrites the "trace-overhead" section of benchmarks/RESULTS.md.

  /usr/bin/python3 benchmarks/trace_overhead.py --build build [--rounds 3] [--mpiexec mpiexec --mpiexec-flags '...']

Any Python 3.8+; the binaries come from a Release build (`cmake --build build`).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "trace-overhead"
# (key, ranks, benchmark arguments): a long single-process step, a pipeline with many messages,
# and short data-parallel steps (where a per-span cost would show most).
CONFIGS = [
    ("resnet56, 1 rank", 1, ["--model", "resnet56", "--steps", "3", "--warmup", "1", "--repeats", "3"]),
    ("resnet20, 2 stages x 4 micro-batches", 2, ["--model", "resnet20", "--stages", "2", "--micro-batches", "4",
                                                "--steps", "5", "--warmup", "2", "--repeats", "3"]),
    ("mlp, 2 replicas", 2, ["--model", "mlp", "--steps", "100", "--warmup", "20", "--repeats", "3"]),
]


def mpi_command(args, ranks, program):
    return [args.mpiexec] + args.mpiexec_flags.split() + ["-n", str(ranks)] + program


def trace_bytes(path):
    """(bytes, ranks, traced steps) of a merged trace."""
    import json
    with open(path) as f:
        data = json.load(f)
    ranks = {e["pid"] for e in data["traceEvents"]}
    steps = {e["args"]["step"] for e in data["traceEvents"] if e.get("ph") == "X" and e["name"] == "step"}
    return os.path.getsize(path), len(ranks), len(steps)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="hpf build directory")
    parser.add_argument("--mpiexec", default="mpiexec", help="MPI launcher (default: mpiexec on PATH)")
    parser.add_argument("--mpiexec-flags", default="--allow-run-as-root --oversubscribe --bind-to none",
                        help="launcher flags (Open MPI's by default; '' for MPICH)")
    parser.add_argument("--rounds", type=int, default=3)
    h.add_results_options(parser, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = parser.parse_args(argv)
    record = provenance.start("benchmarks/trace_overhead.py")  # as the run begins: the commit its build most likely came from
    traced = os.path.join(args.build, "benchmarks", "hpf_bench_parallel_throughput")
    untraced = traced + "_untraced"
    resnet1001 = os.path.join(args.build, "examples", "hpf_resnet1001_pipeline")
    for exe in (traced, untraced, resnet1001):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"trace_overhead.py: {exe} is missing; build hpf first (cmake --build {args.build})")
    tmp = tempfile.mkdtemp(prefix="hpf_trace_overhead_")
    env, overrides = h.bench_env("Haswell", threads=1)
    on_env = dict(env, HPF_TRACE=os.path.join(tmp, "on.json"), HPF_TRACE_STEPS="0-1000000")
    groups = {}
    for key, ranks, bench_args in CONFIGS:
        groups[key] = [
            ("compiled out", mpi_command(args, ranks, [untraced] + bench_args), env, overrides),
            ("compiled in, off", mpi_command(args, ranks, [traced] + bench_args), env, overrides),
            ("on", mpi_command(args, ranks, [traced] + bench_args), on_env,
             dict(overrides, HPF_TRACE="FILE", HPF_TRACE_STEPS="0-1000000")),
        ]
    runs = h.alternate(groups, rounds=args.rounds, max_busy=0.3, max_wait=60)
    rows, failed = [], []
    for key, _, _ in CONFIGS:
        rate = {}
        for name in ("compiled out", "compiled in, off", "on"):
            _, r = h.best(runs[key][name])
            rate[name] = r["images_per_s"] if r else None
            if r is None:
                failed.append(f"{key} / {name}")
        base = rate["compiled out"]
        ratio = lambda v: f"{v / base:.3f}" if v and base else "-"
        quiet = min(h.quiet_count(runs[key][n], 0.15) for n in rate)
        rows.append([key, h.fmt(base, 1), h.fmt(rate["compiled in, off"], 1), h.fmt(rate["on"], 1),
                     ratio(rate["compiled in, off"]), ratio(rate["on"]), f"{quiet}/{len(runs[key]['on'])}"])

    # Trace size per rank and step.
    sizes = []
    size_jobs = [
        ("resnet56, 1 rank", mpi_command(args, 1, [traced] + CONFIGS[0][2])),
        ("PreActResNet-1001, 4 stages x 4 micro-batches", mpi_command(args, 4, [resnet1001, "--steps", "3"])),
    ]
    for label, cmd in size_jobs:
        for layers in ("0", "1"):
            path = os.path.join(tmp, f"size_{len(sizes)}.json")
            extra = {"HPF_TRACE": path, "HPF_TRACE_STEPS": "1-2", "HPF_TRACE_LAYERS": layers}
            run = h.launch(label, cmd, dict(env, **extra), dict(overrides, **extra), max_busy=1.0, max_wait=0)
            if run.returncode != 0 or not os.path.exists(path):
                failed.append(f"trace size: {label}")
                continue
            size, ranks, steps = trace_bytes(path)
            sizes.append([label, "per layer" if layers == "1" else "default", str(ranks), str(steps),
                          h.fmt(size / 1024, 1), h.fmt(size / 1024 / max(1, ranks * steps), 1)])

    text = "\n".join([
        "## Tracing overhead and trace size",
        "",
        "Written by `benchmarks/trace_overhead.py` (when, at which commit and where: its provenance line). One thread per rank, OpenBLAS Haswell kernels; best block of each "
        f"side over {args.rounds} alternating rounds. *Compiled out*: `hpf_bench_parallel_throughput_untraced` "
        "(`HPF_ENABLE_TRACE=0`); *compiled in, off*: the normal build; *on*: the normal build with "
        "`HPF_TRACE` recording every timed step. Quiet: rounds in which other processes kept less than 15% "
        "of the machine busy.",
        "",
        h.markdown_table(["configuration", "compiled out, img/s", "compiled in, off", "on", "off / out", "on / out",
                          "quiet rounds"], rows),
        "",
        "Trace size (steps 1-2 traced, merged file of all ranks):",
        "",
        h.markdown_table(["model", "detail", "ranks", "steps", "KiB", "KiB per rank per step"], sizes),
    ])
    return provenance.publish(args, SECTION, text, failed, record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
