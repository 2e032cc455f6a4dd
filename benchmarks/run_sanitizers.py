#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs scripts/test_sanitizers.sh (the unit and MPI tests built with AddressSanitizer and
UndefinedBehaviorSanitizer) and writes the "sanitizers" section of benchmarks/RESULTS.md: wall
time of the build and of the tests, tests run, passed and failed, sanitizer findings, and the
slowest tests with their times under the sanitizers.

    /usr/bin/python3 benchmarks/run_sanitizers.py [--configuration openmp-mpich] [--slowest 15] [--no-run]

--configuration: serial or openmp-mpich (default; what CI runs), the script's argument.
--no-run: publish the last run's numbers (<build>/sanitizer-summary.txt and its JUnit report).

Exit status: that of scripts/test_sanitizers.sh (1 on a failed test or any finding).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "sanitizers"
# The build folder scripts/test_sanitizers.sh uses for each configuration (its argument).
BUILD_FOLDERS = {"serial": "build-asan", "openmp-mpich": "build-asan-openmp-mpich"}


def preset_flags():
    """The asan-ubsan preset's compile flags, read from CMakePresets.json (what the build used)."""
    with open(os.path.join(ROOT, "CMakePresets.json")) as f:
        preset = next(p for p in json.load(f)["configurePresets"] if p["name"] == "asan-ubsan")
    variables = preset["cacheVariables"]
    return f"{variables['CMAKE_CXX_FLAGS_RELWITHDEBINFO']} {variables['CMAKE_CXX_FLAGS']}"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configuration", choices=sorted(BUILD_FOLDERS), default="openmp-mpich",
                        help="the configuration scripts/test_sanitizers.sh builds (CI's: openmp-mpich)")
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest tests to list")
    parser.add_argument("--no-run", action="store_true", help="publish the last run instead of running")
    h.add_results_options(parser, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = parser.parse_args(argv)

    folder = BUILD_FOLDERS[args.configuration]
    build = os.environ.get("HPF_BUILD_DIR", os.path.join(ROOT, folder))
    summary_file = os.path.join(build, "sanitizer-summary.txt")
    status = 0
    if args.no_run:
        load_before = load_after = None
    else:
        if os.path.exists(summary_file):
            os.remove(summary_file)
        load_before = h.load_average()
        cmd = [os.path.join(ROOT, "scripts", "test_sanitizers.sh"), args.configuration]
        h.log("running: " + h.command_text(cmd))
        status = subprocess.run(cmd, stdout=sys.stderr).returncode
        load_after = h.load_average()
    if not os.path.exists(summary_file):
        h.log(f"no {summary_file} (scripts/test_sanitizers.sh exit status {status}): nothing to publish")
        return status or 1
    written = datetime.datetime.fromtimestamp(os.path.getmtime(summary_file)).strftime("%Y-%m-%d %H:%M")
    with open(summary_file) as f:
        numbers, *described = f.read().splitlines()
    summary = dict(re.findall(r"(\w+)=([\w-]+)", numbers))
    summary.update(line.split(": ", 1) for line in described)
    if "backend" not in summary or "ctest" not in summary:
        h.log(f"{summary_file} does not say what was built and run (an older scripts/test_sanitizers.sh wrote it)")
        return status or 1
    if summary.get("configuration") != args.configuration:
        h.log(f"{summary_file} is of the configuration '{summary.get('configuration')}', not '{args.configuration}'")
        return status or 1

    cases = []
    for case in ET.parse(os.path.join(build, "Testing", "hpf-ctest-junit.xml")).getroot().iter("testcase"):
        cases.append((case.get("name"), float(case.get("time") or 0), case.get("status")))
    passed = sum(1 for _, _, s in cases if s == "run")
    failed_names = [n for n, _, s in cases if s == "fail"]
    serial_s = sum(t for _, t, _ in cases)

    totals = [[f"{summary['build_s']} s ({summary.get('build_steps', '?')} steps)", f"{summary['test_s']} s", f"{serial_s:.0f} s", str(len(cases)),
               str(passed), str(len(failed_names)), summary["findings"]]]
    slowest = sorted(cases, key=lambda c: -c[1])[:args.slowest]
    text = "\n".join([
        "## Unit, MPI and reference tests under AddressSanitizer + UndefinedBehaviorSanitizer"
        if args.configuration == "openmp-mpich" else "## Unit and MPI tests under AddressSanitizer + UndefinedBehaviorSanitizer",
        "",
        "Written by `benchmarks/run_sanitizers.py` from the run its provenance line dates" +
        (f"; load average {load_before} before, {load_after} after. " if load_before else ". ") +
        f"`scripts/test_sanitizers.sh` configures CMakePresets.json's `asan-ubsan` preset (g++ 12, `{preset_flags()}`, "
        f"{summary['backend']}), "
        f"builds what is out of date in `{folder}` (*steps*: the build steps ninja ran) and runs "
        f"`ctest {summary['ctest']}` with `-j` = cores. "
        "Every test's whole output is kept, and a sanitizer report in any of it (any process, ranks and tests "
        "expected to fail included) counts as a finding; the MPI libraries' own never-freed allocations are suppressed by "
        "`tests/sanitizers/lsan.supp`, which names nothing else. "
        "*Test wall*: the ctest run; *sum*: the tests' own times added up.",
        "",
        h.markdown_table(["build wall", "test wall", "sum of test times", "tests", "passed", "failed", "findings"],
                         totals, align="rrrrrrr"),
        "",
        f"{summary.get('mpi_tests', '?')} of the {len(cases)} tests are MPI tests (label mpi). "
        f"The {len(slowest)} slowest tests under the sanitizers:",
        "",
        h.markdown_table(["test", "s"], [[n, f"{t:.1f}"] for n, t, _ in slowest]),
    ] + (["", "Failed: " + ", ".join(failed_names) + "."] if failed_names else []))
    failed = failed_names + (["sanitizer findings"] if summary["findings"] != "0" else [])
    record = dict(provenance.start("benchmarks/run_sanitizers.py"), measured_at=written.replace(" ", "T"))
    code = provenance.publish(args, SECTION, text, failed, record)
    return status or code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
