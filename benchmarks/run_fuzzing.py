#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs hpf's libFuzzer targets (scripts/fuzz.sh) for a given time each and writes the "fuzzing"
section of benchmarks/RESULTS.md: per target the seconds, executions, exec/s, libFuzzer's final
coverage counters (cov: code edges, ft: features), the corpus size before and after, and whether
it found anything; and the regression inputs of fixed findings that the committed corpus holds.

    /usr/bin/python3 benchmarks/run_fuzzing.py [--seconds 600] [--parallel 2] [--targets idx json]

Exit status 1 if a target found something (scripts/fuzz.sh saved it as a regression input).
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
SECTION = "fuzzing"
TARGETS = {
    "idx": "`hpf::data::read_idx`, `read_idx_header` (raw and gzip; whole, strided, header only)",
    "npy": "`hpf::data::read_npy_header`, `read_npy` (header only, whole as float and int64, strided) and "
           "`load_npy_regression`",
    "safetensors": "`hpf::io::Safetensors::parse` (what `load` reads) and the checkpoint loader's "
                   "`SafetensorsReader` (must agree); every tensor read; save/load round trip",
    "json": "`hpf::io::detail::JsonParser` (write/parse round trip); objects also as a checkpoint index "
            "(`read_checkpoint_index`, `verify_checkpoint_files`) and `read_training_state`",
}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=600, help="fuzzing time per target (default 600)")
    parser.add_argument("--parallel", type=int, default=1, help="targets fuzzed at once (default 1)")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--section", default=SECTION,
                        help="the section of RESULTS.md to write (default fuzzing; e.g. fuzzing-npy for one new target)")
    h.add_results_options(parser, os.path.join(ROOT, "benchmarks", "RESULTS.md"))
    args = parser.parse_args(argv)
    record = provenance.start("benchmarks/run_fuzzing.py")  # as the run begins: the commit its build most likely came from

    seeds = {t: sorted(os.listdir(os.path.join(ROOT, "tests", "fuzz", "corpus", t))) for t in args.targets}
    load_before = h.load_average()
    cmd = [os.path.join(ROOT, "scripts", "fuzz.sh"), str(args.seconds)] + args.targets
    env = dict(os.environ, HPF_FUZZ_PARALLEL=str(args.parallel))
    h.log("running: " + h.command_text(cmd, {"HPF_FUZZ_PARALLEL": str(args.parallel)}))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    results = {}
    for line in proc.stdout:
        sys.stderr.write(line)
        if line.startswith("== fuzz target="):
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            results[fields["target"]] = fields
    proc.wait()
    load_after = h.load_average()

    rows, failed = [], []
    for t in args.targets:
        r = results.get(t)
        if r is None:
            failed.append(t)
            rows.append([t, TARGETS[t], "-", "-", "-", "-", "-", str(len(seeds[t])), "no result"])
            continue
        if r["crashed"] != "no":
            failed.append(t)

        def num(key):
            return h.fmt(int(r[key])) if re.fullmatch(r"\d+", r.get(key, "")) else "-"

        rows.append([t, TARGETS[t], r["seconds"], num("executions"), num("exec_per_s"), num("cov"), num("ft"),
                     f"{len(seeds[t])} → {r['corpus']}", "**yes**" if r["crashed"] != "no" else "0"])
    regressions = [f"`tests/fuzz/corpus/{t}/{name}`" for t in args.targets for name in seeds[t]
                   if name.startswith("regress-")]
    options = " ".join(["--seconds", str(args.seconds), "--parallel", str(args.parallel)] +
                       (["--targets"] + args.targets if args.targets != list(TARGETS) else []))
    text = "\n".join([
        "## Fuzzing" + ("" if args.section == SECTION else ": " + ", ".join(args.targets)),
        "",
        f"Written by `benchmarks/run_fuzzing.py {options}` (when, at which commit and where: its provenance "
        f"line); load average {load_before} before, {load_after} after. "
        f"`scripts/fuzz.sh {args.seconds}` builds `tests/fuzz` with clang 14 and "
        "`-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all` and runs each target on a fresh copy "
        "of its committed corpus with `-max_len=4096 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10` "
        f"({args.parallel} target(s) at a time): a crash, a sanitizer report, a leak, an allocation over 64 MiB, "
        "an input slower than 10 s, or any exception other than the reader's documented one "
        "(`hpf::data::DataError`, `hpf::io::FormatError`, `JsonError`) counts as a finding. "
        "cov and ft are libFuzzer's coverage counters (edges, features) at the end of the run.",
        "",
        h.markdown_table(["target", "reader and checks", "s", "executions", "exec/s", "cov", "ft",
                          "corpus (start → end)", "findings"], rows, align="llrrrrrrr"),
        "",
        "Regression inputs of fixed findings in the committed corpus (run by `hpf.fuzz.<target>.corpus`): " +
        (", ".join(regressions) if regressions else "none") + ".",
    ])
    return provenance.publish(args, args.section, text, failed, record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
