#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Where 1 rank x 2 threads loses against 2 ranks x 1 thread, region by region.

One process with 2 threads (Kokkos OpenMP, the global batch) is profiled against two single-thread
processes started together, one per core (Kokkos Serial, half the batch each): the work of 2 ranks
x 1 thread without their gradient reduction. Each side trains --profile steps with Kokkos' tool
callbacks (`hpf_bench_train_throughput --profile`), which give the milliseconds per step of every
region name (inclusive: a convolution's backward with everything inside it) and of every kernel. The
table sets 1 x 2's figure against the mean of the two processes', the step first. A round runs both
sides back to back, which side first alternating; the figures are medians over rounds, the difference
and ratio the medians of the rounds' own. With perfect threading 1 x 2 would take what one of the two
processes takes: the differences are what the threads lose, region by region.

  cmake --build build-openmp --target hpf_bench_train_throughput
  cmake --build build --target hpf_bench_train_throughput
  /usr/bin/python3 benchmarks/threads_breakdown.py                       # ResNet-20 and -56 (~4 min)
  /usr/bin/python3 benchmarks/threads_breakdown.py --models resnet20 --rounds 1 --no-write

Writes the `threads-breakdown` section of benchmarks/RESULTS.md (the `two-cores` section has the
throughput of the same layouts). Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

SECTION = "threads-breakdown"
# name: (global batch, profiled steps)
MODELS = {"mlp": (128, 400), "cnn": (64, 80), "resnet20": (64, 20), "resnet56": (64, 8)}
# Thread placement of the 2-thread process (docs/process-setup.md, "Placing threads"); the processes are pinned.
PLACEMENT = h.THREAD_PLACEMENT
STEP = "hpf::StageEngine::step"
# Rows below this many ms per step on both sides are summed into "other regions".
SMALLEST_ROW_MS = 0.1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_train_binary_options(p, ROOT)
    p.add_argument("--models", default="resnet20,resnet56", help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--setting", default="haswell", choices=sorted(h.BLAS_SETTINGS),
                   help="OPENBLAS_CORETYPE setting (default haswell, the machines' default)")
    p.add_argument("--rounds", type=int, default=9, help="runs of each side per model (medians are kept)")
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        p.error("unknown model(s): " + ", ".join(unknown))
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    return args


def parse_profile(output):
    """{name: ms per step} from a --profile run: every region name (PROFILE_REGIONS, inclusive),
    and every kernel (an entry of the self-time table that is no region) as 'name (kernel)', summed
    over the regions it runs in."""
    regions, self_times, table = {}, {}, None
    for line in output.splitlines():
        if line.startswith("PROFILE_REGIONS"):
            table = regions
        elif line.startswith("PROFILE "):
            table = self_times
        elif line.startswith("PROFILE_LAYERS"):
            table = None
        elif table is not None:
            fields = line.split(None, 3)  # ms, % of the step, calls per step, name
            try:
                ms, _ = float(fields[0]), float(fields[2])
            except (IndexError, ValueError):
                continue  # headers, totals and notes
            name = fields[3].strip().split(" > ")[-1]
            table[name] = table.get(name, 0.0) + ms
    kernels = {f"{name} (kernel)": ms for name, ms in self_times.items() if name not in regions}
    return {**regions, **kernels}


def commands(args, model):
    batch, steps = MODELS[model]
    common = ["--model", model, "--steps", "2", "--warmup", "2", "--repeats", "1", "--profile", str(steps)]
    coretype = h.BLAS_SETTINGS[args.setting][0]
    one = ([args.hpf_openmp] + common + ["--batch", str(batch)], h.bench_env(coretype, 2, PLACEMENT))
    half = [args.hpf_serial] + common + ["--batch", str(batch // 2)]
    two = [(["taskset", "-c", str(core)] + half, h.bench_env(coretype, 1)) for core in (0, 1)]
    return one, two


def run_together(jobs):
    """Starts every job (cmd, (env, overrides)) at once and returns their outputs; exits naming the
    command when one fails, after all have ended."""
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for cmd, (env, _) in jobs]
    outputs = [proc.communicate(timeout=900)[0] for proc in procs]
    for (cmd, _), proc, out in zip(jobs, procs, outputs):
        if proc.returncode != 0:
            sys.exit(f"threads_breakdown.py: {' '.join(cmd)} exited with {proc.returncode}:\n{out[-2000:]}")
    return outputs


def measure(args):
    """{model: {"one": [profile per round], "two": [mean of the two processes' profiles per round]}}."""
    data = {}
    for model in args.models:
        one_job, two_jobs = commands(args, model)
        data[model] = {"one": [], "two": [], "busy": []}
        for r in range(args.rounds):
            for side in (("one", "two") if r % 2 == 0 else ("two", "one")):
                busy, _ = h.wait_until_quiet()
                data[model]["busy"].append(busy)
                if side == "one":
                    data[model]["one"].append(parse_profile(run_together([one_job])[0]))
                else:
                    a, b = (parse_profile(o) for o in run_together(two_jobs))
                    data[model]["two"].append({k: (a.get(k, 0.0) + b.get(k, 0.0)) / 2 for k in set(a) | set(b)})
                h.log(f"round {r + 1} {model} {side}: step "
                      f"{data[model][side][-1].get(STEP, float('nan')):.1f} ms")
    return data


def medians(profiles_one, profiles_two, value):
    """Medians over rounds of value(one) and value(two), and of the rounds' differences and ratios
    (a round runs both sides back to back, so its difference is less touched by the host's drift)."""
    pairs = [(value(a), value(b)) for a, b in zip(profiles_one, profiles_two)]
    ones = [a for a, _ in pairs if a is not None]
    twos = [b for _, b in pairs if b is not None]
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    return (statistics.median(ones) if ones else None, statistics.median(twos) if twos else None,
            statistics.median(a - b for a, b in both) if both else None,
            statistics.median(a / b for a, b in both if b) if both else None)


def model_table(profiles_one, profiles_two):
    """[(name, 1 x 2 ms, processes' ms, difference, ratio)]: the step first, then every region and
    kernel of at least SMALLEST_ROW_MS on either side, the others summed in a last row."""
    names = set().union(*profiles_one, *profiles_two) - {STEP}
    typical = {n: max(medians(profiles_one, profiles_two, lambda p: p.get(n))[:2], key=lambda v: v or 0) or 0
               for n in names}
    small = {n for n in names if typical[n] < SMALLEST_ROW_MS}
    rows = [("**whole step**", *medians(profiles_one, profiles_two, lambda p: p.get(STEP)))]
    rows += [(n, *medians(profiles_one, profiles_two, lambda p, n=n: p.get(n)))
             for n in sorted(names - small, key=lambda n: -typical[n])]
    rows.append((f"other regions and kernels (each under {SMALLEST_ROW_MS} ms)",
                 *medians(profiles_one, profiles_two, lambda p: sum(p.get(n, 0.0) for n in small))))
    return rows


def report(args, data):
    out = ["## Threads against processes: where 1 rank x 2 threads loses, region by region", "",
           f"Measured by `benchmarks/threads_breakdown.py` (when, at which commit and where: its provenance line), "
           f"{h.BLAS_SETTINGS[args.setting][1]}.", ""]
    out.append("1 rank x 2 threads (Kokkos OpenMP, the global batch) against two single-thread processes started "
               "together, one per core (Kokkos Serial, half the batch each: 2 ranks x 1 thread without the gradient "
               "reduction). Milliseconds per step from Kokkos' tool callbacks (`--profile`): every region name "
               "inclusive (a region's row holds the regions and kernels inside it, so rows do not add up), kernels "
               "marked (kernel) on their own. The two processes' figure is their mean; a round runs both sides back to "
               f"back, which side first alternating; the ms columns are medians over {args.rounds} rounds, the "
               "difference and ratio the medians of the rounds' own (the host drifts between rounds). With perfect "
               "threading the 2 threads would take what one of the processes takes: the difference column is what "
               "the threads lose, region by region. `weight_gradient_lanes` is the convolution's weight gradient "
               "run as one single-threaded oneDNN computation per thread (a single thread runs it inline, so the "
               "processes have no such kernel).")
    for model in args.models:
        rows = model_table(data[model]["one"], data[model]["two"])
        _, _, _, diff, ratio = rows[0]
        batch = MODELS[model][0]
        steps = [(a.get(STEP), b.get(STEP)) for a, b in zip(data[model]["one"], data[model]["two"])]
        ratios = sorted(a / b for a, b in steps if a and b)
        loss = "" if diff is None else (
            f": the 2 threads take **{diff:+.2f} ms ({100 * (ratio - 1):+.1f} %)** per step more than one process "
            f"(medians of the rounds' differences and ratios; the rounds' ratios ranged from {ratios[0]:.3f} to "
            f"{ratios[-1]:.3f}, the processes' steps from {h.fmt(min(b for _, b in steps if b), 1)} to "
            f"{h.fmt(max(b for _, b in steps if b), 1)} ms)")
        big = [r[4] for r in rows[1:] if r[2] is not None and r[2] >= 1.0 and r[4] is not None]
        spread = "" if not big else (
            f" The {len(big)} regions and kernels of at least 1 ms per step take between "
            f"{100 * (min(big) - 1):+.0f} % and {100 * (max(big) - 1):+.0f} % with the threads.")
        table = [[name, h.fmt(one, 2), h.fmt(two, 2), "-" if d is None else f"{d:+.2f}",
                  "-" if r is None else f"{r:.3f}"] for name, one, two, d, r in rows]
        out += ["", f"**{model}**, batch {batch} (the processes {batch // 2} each){loss}; machine busy before the runs "
                    f"at most {100 * max(data[model]['busy']):.0f} %.{spread}", "",
                h.markdown_table(["region or kernel", "1 x 2 ms/step", "2 processes ms/step (mean)", "difference ms",
                                  "ratio"], table, "lrrrr")]
    out += ["", "Commands (run from the repository root; the runner launches exactly these, resnet56 shown, the two "
                "single-thread processes at once):", "", "```sh", "/usr/bin/python3 benchmarks/threads_breakdown.py"]
    (one_cmd, (_, one_over)), two_jobs = commands(args, args.models[-1])
    out.append(h.command_text([h.repo_relative(c, ROOT) for c in one_cmd], one_over))
    for cmd, (_, over) in two_jobs:
        out.append(h.command_text([h.repo_relative(c, ROOT) for c in cmd], over))
    out.append("```")
    return "\n".join(out)


def main():
    args = parse_args()
    for binary in (args.hpf_openmp, args.hpf_serial):
        if not os.access(binary, os.X_OK):
            sys.exit(f"threads_breakdown.py: {binary} is not built (see this script's help)")
    args.provenance = provenance.start("benchmarks/threads_breakdown.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    data = measure(args)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    return provenance.publish(args, SECTION, report(args, data), [], args.provenance)


if __name__ == "__main__":
    sys.exit(main())
