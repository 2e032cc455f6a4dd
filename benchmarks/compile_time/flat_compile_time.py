#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Compile time and peak memory of g++ -O2 on flat models (flat_model.cpp: N layers written out
without Repeat, trained through Trainer and through fit with a 4-stage pipeline) of 250, 500, 1000,
2000 and 4000 layers, and of PreActResNet-1001, a 48-block GPT (both through Repeat) and the 3-D
CNN CosmoFlow (train_step.cpp). Writes the `compile-flat` section of benchmarks/RESULTS.md.

    benchmarks/compile_time/flat_compile_time.py [-b BUILD_DIR] [--layers 250 500 1000 2000 4000]
                                                 [--repeats R] [--no-write]

Each compile waits for a quiet machine first (up to --max-wait s) and the fastest of --repeats
runs is kept. Wall time on a shared machine is inflated by other work; CPU time (user + sys) is
the steadier number and is what the budget and the linearity check use (the budget of the
hpf.compile_budget tests, benchmarks/compile_time/CMakeLists.txt). Exits 1 if 2000 flat layers exceed
120 s of CPU or 2 GiB, the GPT or CosmoFlow exceeds 60 s of CPU or 2 GiB, or the growth from 1000 to 2000
layers is not linear (CPU time or peak memory more than 2x).
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

BUDGET_LAYERS = 2000  # the goal: 2000 flat layers within the budget below
BUDGET_CPU_SECONDS = 120  # as HPF_COMPILE_BUDGET_CPU_SECONDS
BUDGET_MIB = 2048
# The models of the transformer and volume issue: 60 s of CPU and 2 GiB each.
MODEL_BUDGET_CPU_SECONDS = 60
MODELS = [("GPT, 48 blocks (Repeat)", "hpf::zoo::Gpt<48,64,4,64,256>"), ("CosmoFlow<32> (3-D CNN)", "hpf::zoo::CosmoFlow<32>")]


def flags(build_dir):
    return ["-std=c++20", "-O2", "-DNDEBUG", "-I" + os.path.join(ROOT, "include"),
            "-I" + os.path.join(build_dir, "include"), "-isystem", os.environ.get("KOKKOS_INCLUDE_DIR", "/usr/include/trilinos"),
            "-isystem", "/usr/lib/x86_64-linux-gnu/openmpi/include"]


def compile_once(cxx, build_dir, source, defines, work, max_wait, timeout):
    """(wall s, CPU s, peak MiB, busy fraction before) of one compile, None if it failed, or
    "timeout" if it ran longer than `timeout` seconds (then stopped)."""
    busy, _ = h.wait_until_quiet(max_busy=0.15, max_wait=max_wait)
    record = os.path.join(work, "time")
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", record, cxx] + flags(build_dir) + \
        ["-D" + d for d in defines] + ["-c", source, "-o", os.path.join(work, "tu.o")]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        h.log(f"{cxx} on {source} {defines}: stopped after {timeout} s")
        return "timeout"
    if done.returncode != 0:
        h.log(f"{cxx} failed on {source} {defines}:\n" + done.stderr[-3000:])
        return None
    wall, user, system, kib = open(record).read().split()[-4:]
    return float(wall), float(user) + float(system), int(kib) / 1024, busy


def best_of(repeats, *args):
    runs = [compile_once(*args) for _ in range(repeats)]
    done = [r for r in runs if isinstance(r, tuple)]
    if done:
        return min(done, key=lambda r: r[1])
    return "timeout" if "timeout" in runs else None


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-b", "--build-dir", default=os.path.join(ROOT, "build"), help="configured build (hpf/config.hpp)")
    p.add_argument("--cxx", default="g++")
    p.add_argument("--layers", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait for a quiet machine per compile")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds after which a compile is stopped")
    h.add_results_options(p, os.path.join(os.path.dirname(HERE), "RESULTS.md"))
    args = p.parse_args(argv)
    if not os.path.exists(os.path.join(args.build_dir, "include", "hpf", "config.hpp")):
        sys.exit(f"flat_compile_time.py: {args.build_dir}/include/hpf/config.hpp not found; configure first or pass -b")

    record = provenance.start("benchmarks/compile_time/flat_compile_time.py")
    version = subprocess.run([args.cxx, "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    rows, results, failed, models = [], {}, [], {}
    with tempfile.TemporaryDirectory() as work:
        jobs = [(f"flat, {n} layers", os.path.join(HERE, "flat_model.cpp"), [f"HPF_FLAT_LAYERS={n}"], n)
                for n in args.layers]
        jobs.append(("PreActResNet-1001 (Repeat)", os.path.join(HERE, "train_step.cpp"),
                     ["HPF_MODEL=hpf::zoo::PreActResNet1001"], None))
        jobs += [(name, os.path.join(HERE, "train_step.cpp"), [f"HPF_MODEL={model}"], None) for name, model in MODELS]
        for name, source, defines, n in jobs:
            h.log(f"compiling {name}")
            r = best_of(args.repeats, args.cxx, args.build_dir, source, defines, work, args.max_wait, args.timeout)
            if r is None or r == "timeout":
                failed.append(name)
                what = "failed" if r is None else f"> {args.timeout:.0f} (stopped)"
                rows.append([name, what, "-", "-", "-", "-", "-"])
                continue
            wall, cpu, mib, busy = r
            # What each further 1000 layers cost since the previous (shorter) flat row: constant
            # when growth is linear.
            shorter = [m for m in results if m is not None and n is not None and m < n]
            added = ["-", "-"]
            if shorter:
                m = max(shorter)
                scale = 1000 / (n - m)
                added = [f"{(cpu - results[m][1]) * scale:.1f}", f"{(mib - results[m][2]) * scale:.0f}"]
            results[n] = r
            if name in dict(MODELS):
                models[name] = r
            rows.append([name, f"{wall:.1f}", f"{cpu:.1f}", f"{mib:.0f}", *added, f"{busy * 100:.0f} %"])

    verdict = []
    big = BUDGET_LAYERS if BUDGET_LAYERS in args.layers else max(args.layers)
    if big not in results:
        verdict.append(f"- {big} flat layers: no completed compile, so OVER the budget of {BUDGET_CPU_SECONDS} s of CPU "
                       f"and {BUDGET_MIB} MiB.")
    else:
        wall, cpu, mib, _ = results[big]
        ok = cpu < BUDGET_CPU_SECONDS and mib < BUDGET_MIB
        verdict.append(f"- {big} flat layers: {cpu:.1f} s CPU ({wall:.1f} s wall), {mib:.0f} MiB peak: "
                       f"{'within' if ok else 'OVER'} the budget of {BUDGET_CPU_SECONDS} s of CPU and {BUDGET_MIB} MiB.")
        if not ok:
            failed.append(f"budget at {big} layers")
    for name, _ in MODELS:
        if name in models:
            wall, cpu, mib, _ = models[name]
            ok = cpu < MODEL_BUDGET_CPU_SECONDS and mib < BUDGET_MIB
            verdict.append(f"- {name}: {cpu:.1f} s CPU, {mib:.0f} MiB peak: {'within' if ok else 'OVER'} "
                           f"{MODEL_BUDGET_CPU_SECONDS} s of CPU and {BUDGET_MIB} MiB.")
            if not ok:
                failed.append(f"{name} budget")
    if 1000 in results and 2000 in results:
        ratio = results[2000][1] / results[1000][1]
        mib_ratio = results[2000][2] / results[1000][2]
        linear = ratio <= 2.0 and mib_ratio <= 2.0
        verdict.append(f"- growth from 1000 to 2000 layers: CPU time x{ratio:.2f}, peak memory x{mib_ratio:.2f} "
                       f"({'linear or better' if linear else 'SUPERLINEAR'}; x2 is linear, the fixed cost of the "
                       "headers and the engine makes it less).")
        if not linear:
            failed.append("linear growth")

    text = "\n".join([
        "## Compile time of long flat models (g++ -O2)",
        "",
        f"Measured by `benchmarks/compile_time/flat_compile_time.py` with {version} (when, at which commit and "
        "where: its provenance line).",
        "",
        "One TU per row, compiled alone with `" + " ".join([args.cxx] + flags("build")[:3]) + " -c` "
        "(plus the include paths): `flat_model.cpp` is a `Sequential` of N layers `Dense<8>, ReLU, ...` written out "
        "without `Repeat` (plus a Dense head and the loss), trained through `hpf::Trainer` and through "
        "`hpf::fit<Model, hpf::Pipeline<hpf::Balanced<4>>>`; `train_step.cpp` is one training step of "
        "PreActResNet-1001 and of `hpf::zoo::Gpt<48, 64, 4, 64, 256>`, whose blocks come through `Repeat`, and "
        "of `hpf::zoo::CosmoFlow<32>`. CPU = user + sys; busy = the share of the "
        "machine other processes used just before the compile (wall time grows with it). The per-1000-layers "
        "columns compare a row with the previous flat row: they stay about constant when growth is linear.",
        "",
        h.markdown_table(["model", "wall s", "CPU s", "peak MiB", "CPU s per 1000 more layers", "MiB per 1000 more layers", "busy before"], rows),
        "",
        *verdict,
    ])
    return provenance.publish(args, "compile-flat", text, failed, record)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
