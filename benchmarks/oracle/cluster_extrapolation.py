#!/usr/bin/python3
"""The oracle's extrapolation to a cluster: PreActResNet-1001 on 64, 256 and 1024 nodes of the
cluster profile benchmarks/oracle/clusters/infiniband_hdr.json (its assumptions are printed with
the tables), computing at the rates calibrated into the machine profile (PreActResNet-164's blocks,
which PreActResNet-1001 repeats). Writes the `oracle-cluster` section of docs/oracle.md.

  /usr/bin/python3 benchmarks/oracle/cluster_extrapolation.py [--no-write]

Needs build/tools/hpf-oracle and a machine profile calibrated for resnet164
(`build/tools/hpf-oracle calibrate --model resnet164`).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_harness as bh  # noqa: E402
import provenance  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = "benchmarks/oracle/clusters/infiniband_hdr.json"
PROFILE = "benchmarks/comm/profiles/local.json"
NODES = (64, 256, 1024)
BATCH = 2048
SHOWN = 5


def rank(oracle, nodes):
    cmd = [oracle, "rank", "--model", "resnet1001", "--ranks", str(nodes), "--batch", str(BATCH),
           "--profile", PROFILE, "--cluster", CLUSTER, "--json"]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return cmd, json.loads(out)


def strategy(s):
    kind = "data parallel" if s["stages"] == 1 else "pipeline" if s["replicas"] == 1 else "hybrid"
    return f"{kind} {s['stages']} x {s['replicas']}"


def table(result):
    rows = []
    for i, s in enumerate(result["strategies"][:SHOWN]):
        rows.append([str(i + 1), strategy(s), str(s["micro_batches"]),
                     s["schedule"] if s["stages"] > 1 else "-", f"{s['time_s'] * 1e3:.1f}",
                     f"{s['compute_s'] * 1e3:.1f}", f"{s['bubble_s'] * 1e3:.1f}", f"{s['transfer_s'] * 1e3:.2f}",
                     f"{s['reduction_s'] * 1e3:.2f}", f"{s['peak_memory_bytes'] / 2**20:.0f}", s["reason"]])
    return bh.markdown_table(["#", "stages x replicas", "M", "schedule", "step ms", "compute", "bubble", "transfer",
                              "reduction", "peak MiB", "why"], rows,
                             align="rlrlrrrrrrl")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--oracle", default=os.path.join(ROOT, "build/tools/hpf-oracle"))
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    cluster = json.load(open(os.path.join(ROOT, CLUSTER)))
    parts = [
        f"PreActResNet-1001 (10.3 M parameters, CIFAR-10 images), global batch {BATCH}, on the cluster of "
        f"`{CLUSTER}`: {cluster['description']} Compute rates: this machine's calibration "
        f"(`{PROFILE}`, PreActResNet-164's blocks) times the stated speed. The {SHOWN} fastest of every "
        "feasible strategy (written by `benchmarks/oracle/cluster_extrapolation.py`; when the profile was measured "
        "and when this priced it: the provenance line):",
        ""]
    for nodes in NODES:
        cmd, result = rank(args.oracle, nodes)
        best = result["strategies"][0]
        parts += [f"**{nodes} nodes** ({len(result['strategies'])} strategies ranked in "
                  f"{result['query_us'] / 1e3:.0f} ms; recommended: {strategy(best)}, M = {best['micro_batches']}, "
                  f"{BATCH / best['time_s']:,.0f} images/s). "
                  f"`{' '.join(os.path.relpath(c, ROOT) if c == args.oracle else c for c in cmd[:-1])}`", "",
                  table(result), ""]
    # Measured: the profile's record (it is recalibrated by the oracle runs); priced: this run.
    record = dict(provenance.read(os.path.join(ROOT, PROFILE)),
                  priced=dict(provenance.start("benchmarks/oracle/cluster_extrapolation.py"), measured_at=provenance.now()))
    data = provenance.block_record("oracle-cluster")
    text = provenance.with_lines("\n".join(parts), [data], [record])
    print(text)
    if not args.no_write:
        provenance.write(data, record)
        bh.replace_section(os.path.join(ROOT, "docs", "oracle.md"), "oracle-cluster", text)


if __name__ == "__main__":
    main()
