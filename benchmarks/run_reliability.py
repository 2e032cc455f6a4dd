#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs the bad-input, mismatch, fault and checkpoint tests (`ctest -L reliability`) and writes
the "reliability" section of benchmarks/RESULTS.md: each test with its result and time, and the
count of checked cases (a test may check several: the checkpoint script's `ok:` and bit-for-bit
comparisons are counted one by one).

    /usr/bin/python3 benchmarks/run_reliability.py [--build build]

Exit status 1 if a test failed.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="configured and built build directory")
    h.add_results_options(parser, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = parser.parse_args(argv)
    record = provenance.start("benchmarks/run_reliability.py")  # as the run begins: the commit its build most likely came from
    run = subprocess.run(["ctest", "--test-dir", args.build, "-L", "reliability", "-V"], capture_output=True, text=True)
    output = run.stdout + run.stderr
    results = re.findall(r"Test +#\d+: (\S+) \.+\**\s*(Passed|Failed|\*\*\*Failed|Timeout|\*\*\*Timeout|Not Run)?\S*\s+([\d.]+) sec",
                         output)
    rows, cases, failed = [], 0, []
    for name, status, seconds in results:
        if name.endswith(".files"):  # a fixture that writes a test's damaged files
            continue
        inner = len(re.findall(rf"^\d+: +(ok: |identical: )", output_of(output, name), re.M))
        count = max(inner, 1)
        cases += count
        ok = status == "Passed"
        if not ok:
            failed.append(name)
        rows.append([f"`{name}`", count, "passed" if ok else "**failed**", f"{float(seconds):.1f}"])
    text = "\n".join([
        "## Reliability: bad input, mismatched ranks, faults, damaged checkpoints",
        "",
        "Bad input, mismatched ranks, faults and damaged checkpoints (`ctest -L reliability`; when, at which commit "
        "and where: the provenance line): **{len(rows)} tests, {cases} checked cases, "
        f"{len(rows) - len(failed)} tests passed**. Each expects the message it names on every rank, the exit "
        "code, and an end within its CTest timeout (60-120 s; most finish in 1-3 s).",
        "",
        h.markdown_table(["test", "cases", "result", "seconds"], rows, "lrlr"),
        "",
        "Written by `benchmarks/run_reliability.py`.",
    ])
    return provenance.publish(args, "reliability", text, failed, record)


def output_of(output, name):
    """The verbose output lines of test `name` (ctest -V prefixes them with its number)."""
    m = re.search(rf"^ *\d+/\d+ Test +#(\d+): {re.escape(name)} ", output, re.M)
    if not m:
        return ""
    return "\n".join(line for line in output.splitlines() if line.startswith(m.group(1) + ": "))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
