#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hpf against PyTorch on one process and one thread, on the same machine in the same run:
training throughput (images/s), GFLOP/s against the single-core SGEMM rate of the same OpenBLAS,
and peak memory, for the MLP, CNN, ResNet-20 and ResNet-56 under each OpenBLAS kernel setting.
Prints the tables and writes the `single-process` section of benchmarks/RESULTS.md.

  /usr/bin/python3 benchmarks/compare_single_process.py                 # everything (~15-25 min)
  /usr/bin/python3 benchmarks/compare_single_process.py --models mlp --settings skylakex --rounds 2 --no-write
  # against an earlier revision REV, run as a third side in the same rounds:
  git worktree add --detach ../hpf-REV REV && cmake -S ../hpf-REV -B ../hpf-REV/build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DHPF_ENABLE_TESTS=OFF && cmake --build ../hpf-REV/build --target hpf_bench_train_throughput
  /usr/bin/python3 benchmarks/compare_single_process.py --baseline ../hpf-REV/build/benchmarks/hpf_bench_train_throughput --baseline-revision REV
  cmake --build build --target hpf_benchmarks_single_process            # the same, from the build

For every BLAS setting (OPENBLAS_CORETYPE set explicitly and identically for both sides, thread
pools pinned to one thread), each model runs hpf and PyTorch alternately, each run in its own
process, at least `--rounds` times and more (up to `--max-rounds`) until each side had
`--min-quiet` quiet runs; every side's figure is its best run (the machine is a noisy shared VM,
and noise only slows a run down). Before each run the runner waits until /proc/stat shows a core
free (or gives up after --max-wait); during each run it records how busy other processes kept
the machine (a run is quiet below --quiet). Nothing here asserts a speed: benchmarks are not tests.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

MODELS = {  # name: (description, in-process steps per block, warm-up steps, blocks)
    "mlp": ("MLP 784-512-512-10, batch 128, Fashion-MNIST", 100, 20, 5),
    "cnn": ("CNN conv32-pool-conv64-pool-fc128-fc10, batch 64, Fashion-MNIST", 20, 5, 5),
    "resnet20": ("ResNet-20 (option A), batch 64, synthetic 3x32x32", 5, 2, 3),
    "resnet56": ("ResNet-56 (option A), batch 64, synthetic 3x32x32", 3, 1, 3),
    "gpt": ("GPT of examples/03_language_model (4 blocks, D 64, 4 heads, 64 bytes), batch 32, Adam", 10, 2, 3),
    "gpt8": ("the same GPT with 8 blocks, batch 32, Adam", 5, 2, 3),
    "gpt8-recompute": ("GPT-8, blocks re-materialized in backward (hpf: NetworkOptions::recompute; PyTorch: "
                       "torch.utils.checkpoint per block)", 5, 2, 3),
    "cosmoflow": ("CosmoFlow<32>: 3-D CNN on 4 x 32^3 volumes, 4 targets, batch 8, SGD", 3, 1, 3),
}
PROFILE_STEPS = {"mlp": 100, "cnn": 20, "resnet20": 3, "resnet56": 2, "gpt": 5, "gpt8": 3, "gpt8-recompute": 3,
                 "cosmoflow": 2}
# Models that are another model with options (the same for both frameworks' programs).
VARIANTS = {"gpt8-recompute": ("gpt8", ["--recompute"])}
# The classic section (MLP, CNN, ResNets) and the one of the transformer and volume models.
SECTIONS = {"single-process": "Single process, one thread: hpf vs PyTorch (training throughput and peak memory)",
            "single-process-models": "Single process, one thread: hpf vs PyTorch on a GPT and a 3-D CNN"}
SECTION = "single-process"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "benchmarks", "hpf_bench_train_throughput"),
                   help="the hpf_bench_train_throughput executable (default: build/benchmarks/...)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    p.add_argument("--settings", default="haswell,skylakex",
                   help="comma-separated OPENBLAS_CORETYPE settings: " + ", ".join(
                       f"{k} = {v[1]}" for k, v in h.BLAS_SETTINGS.items()))
    p.add_argument("--rounds", type=int, default=3, help="alternating runs per side and model at least (best is kept)")
    p.add_argument("--max-rounds", type=int, default=6,
                   help="more rounds, up to this many, until each side has --min-quiet quiet runs")
    p.add_argument("--quiet", type=float, default=0.15,
                   help="a run is quiet if other processes kept less than this fraction of the machine busy")
    p.add_argument("--min-quiet", type=int, default=2, help="quiet runs wanted per side (default 2)")
    p.add_argument("--steps", type=int, default=0, help="override the steps per timed block of every model")
    p.add_argument("--max-busy", type=float, default=0.45,
                   help="wait before each run until less than this fraction of all CPUs is busy (default 0.45: "
                        "on 2 vCPUs, one core free for the one-thread run)")
    p.add_argument("--max-wait", type=float, default=60.0, help="give up waiting after this many seconds (then run)")
    p.add_argument("--baseline", default="",
                   help="an hpf_bench_train_throughput built from an earlier revision: run it as a third side, "
                        "alternately with the others, and add a table of hpf now against it")
    p.add_argument("--baseline-revision", default="", help="the revision --baseline was built from (shown)")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the per-kernel profiles (hpf --profile, torch.profiler)")
    p.add_argument("--section", default=SECTION, choices=sorted(SECTIONS),
                   help="the section of RESULTS.md to write (single-process-models: --models gpt,gpt8,...)")
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.settings = [s for s in args.settings.split(",") if s]
    h.check_models(p, args.models, MODELS)
    for s in args.settings:
        if s not in h.BLAS_SETTINGS:
            p.error(f"unknown setting '{s}' (known: {', '.join(h.BLAS_SETTINGS)})")
    if args.baseline and not os.access(args.baseline, os.X_OK):
        p.error(f"--baseline {args.baseline} is not an executable")
    if not os.access(args.hpf, os.X_OK):
        p.error(f"{args.hpf} is not an executable: build it first "
                "(cmake --build build --target hpf_bench_train_throughput)")
    return args


def model_commands(args, model, profile_steps=0, hpf=None):
    """(hpf command, PyTorch command) for one model: the same step, warm-up and block counts (`hpf`:
    another hpf executable, such as the baseline)."""
    _, steps, warmup, repeats = MODELS[model]
    name, extra = VARIANTS.get(model, (model, []))
    common = ["--model", name, "--steps", str(args.steps or steps), "--warmup", str(warmup), "--repeats", str(repeats)]
    if profile_steps:
        common = ["--model", name, "--steps", "1", "--warmup", str(warmup), "--repeats", "1",
                  "--profile", str(profile_steps)]
    common += extra
    return [hpf or args.hpf] + common, [args.python, os.path.join(HERE, "pytorch_train.py")] + common


def measure(args):
    """Runs everything; returns {setting: {"sgemm": runs, model: runs}}, runs being
    {"hpf": [Run], "pytorch": [Run]} (and, with profiles, "profile": {"hpf": Run, "pytorch": Run})."""
    gate = {"max_busy": args.max_busy, "max_wait": args.max_wait}
    rounds = {"rounds": args.rounds, "max_rounds": args.max_rounds, "quiet": args.quiet, "min_quiet": args.min_quiet}
    script = os.path.join(HERE, "pytorch_train.py")
    envs = {s: h.bench_env(h.BLAS_SETTINGS[s][0]) for s in args.settings}
    sgemm = {f"{s} sgemm": [("hpf", [args.hpf, "--sgemm"], *envs[s]),
                            ("pytorch", [args.python, script, "--sgemm"], *envs[s])]
             for s in args.settings}
    groups = {}
    for s in args.settings:
        for model in args.models:
            hpf_cmd, torch_cmd = model_commands(args, model)
            groups[f"{s} {model}"] = [("hpf", hpf_cmd, *envs[s]), ("pytorch", torch_cmd, *envs[s])]
            if args.baseline:
                groups[f"{s} {model}"].append(("baseline", model_commands(args, model, hpf=args.baseline)[0], *envs[s]))
    h.log("== single-core SGEMM")
    sgemm_runs = h.alternate(sgemm, **rounds, **gate)
    h.log("== training")
    model_runs = h.alternate(groups, **rounds, **gate)
    data = {s: {"sgemm": sgemm_runs[f"{s} sgemm"], **{m: model_runs[f"{s} {m}"] for m in args.models}}
            for s in args.settings}
    if not args.no_profile:
        h.log("== per-kernel profiles")
        for s in args.settings:
            for model in args.models:
                hpf_cmd, torch_cmd = model_commands(args, model, PROFILE_STEPS[model])
                for name, cmd in (("hpf", hpf_cmd), ("pytorch", torch_cmd)):
                    run = h.launch(name, cmd, *envs[s], **gate)
                    data[s][model].setdefault("profile", {})[name] = run
                    h.log(f"profile {s} {model} {name}: {h.summary(run)}")
    return data


def runs_text(sides, quiet):
    """`runs (quiet runs)` of hpf / PyTorch."""
    return " / ".join(f"{sum(x.ok for x in sides[side])} ({h.quiet_count(sides[side], quiet)})"
                      for side in ("hpf", "pytorch"))


def sgemm_rate(runs, n):
    _, r = h.best(runs, "gflops", mode="sgemm", n=n)
    return r["gflops"] if r else None


def report(args, data):
    """The markdown section (also printed)."""
    out = ["## " + SECTIONS[args.section], ""]
    out.append(f"Measured by `benchmarks/compare_single_process.py` with "
               f"`{h.repo_relative(args.hpf_shown, ROOT)}` built {args.built} (when, at which commit and where: "
               "its provenance line).")
    out.append("")
    out.append("Both sides run in separate processes, one model per process, alternately: at least "
               f"{args.rounds} runs each per model and setting, more (up to {args.max_rounds}) until each side had "
               f"{args.min_quiet} quiet runs (other processes under {100 * args.quiet:.0f} % of the machine). "
               "Each figure is the side's best run (noise only slows a run down), and within a run the best of "
               "several timed blocks after warm-up steps. FLOPs per step = 6 x forward MACs x batch "
               "(docs/reference.md). `% SGEMM` = achieved GFLOP/s / the single-core SGEMM rate of the same "
               "OpenBLAS setting: the best of hpf's `--sgemm` (KokkosBlas::gemm -> OpenBLAS sgemm) and PyTorch's "
               "`torch.mm` (the same library and kernels) at n = 1024 and 2048.")
    out.append("")

    # Kernels actually used, as each side reported them.
    out.append("**Kernels in use** (as each process reported them):")
    out.append("")
    for setting in args.settings:
        label = h.BLAS_SETTINGS[setting][1]
        hpf_r = next((r.results[0] for m in args.models for r in data[setting][m]["hpf"] if r.ok), {})
        pt_r = next((r.results[0] for m in args.models for r in data[setting][m]["pytorch"] if r.ok), {})
        out.append(f"- {label}: hpf: OpenBLAS `{hpf_r.get('blas', '?')}` ({hpf_r.get('blas_threads', '?')} thread, "
                   f"`{hpf_r.get('blas_lib', '?')}`), "
                   f"Kokkos `{hpf_r.get('kokkos_space', '?')}`, oneDNN `{hpf_r.get('onednn_isa', '?')}` for "
                   "convolutions (Winograd's algorithm for the 3x3 stride-1 layers of 32 or more channels where "
                   "the ISA is AVX-512, direct for the others); PyTorch "
                   f"{pt_r.get('torch', '?')}: OpenBLAS "
                   f"`{pt_r.get('blas', '?')}` ({pt_r.get('blas_threads', '?')} thread, "
                   f"`{pt_r.get('blas_lib', '?')}`) for "
                   f"Linear/matmul, oneDNN "
                   f"`{pt_r.get('onednn_conv', '?')}` for convolutions (independent of OPENBLAS_CORETYPE), ATen "
                   f"element-wise `{pt_r.get('cpu_capability', '?')}`, {pt_r.get('torch_threads', '?')} "
                   "intra-op thread.")
    out.append("")

    # SGEMM.
    rows = []
    for setting in args.settings:
        s = data[setting]["sgemm"]
        rows.append([h.BLAS_SETTINGS[setting][1]] +
                    [h.fmt(sgemm_rate(s[side], n), 1) for side in ("hpf", "pytorch") for n in (1024, 2048)] +
                    [runs_text(s, args.quiet)])
    out.append("Single-core SGEMM, GFLOP/s (best of the runs):")
    out.append("")
    out.append(h.markdown_table(["OpenBLAS setting", "hpf n=1024", "hpf n=2048", "torch.mm n=1024", "torch.mm n=2048",
                                    "runs (quiet) hpf / PyTorch"], rows))
    out.append("")

    # Throughput and memory.
    rows = []
    for model in args.models:
        for setting in args.settings:
            runs = data[setting][model]
            peak = sgemm_peak(data[setting]["sgemm"])
            hb_run, hb = h.best(runs["hpf"])
            pb_run, pb = h.best(runs["pytorch"])
            ratio = hb["images_per_s"] / pb["images_per_s"] if hb and pb else None

            def pct(r):
                return h.fmt(100 * r["gflops"] / peak, 0, " %") if r and peak else "-"

            def mem(r, key):
                return h.fmt(r[key], 0) if r else "-"

            def above_base(r):
                return h.fmt(r["train_peak_rss_mib"] - r["base_rss_mib"], 0) if r else "-"

            foreign = "/".join(f"{100 * x.foreign_busy:.0f}" for x in (hb_run, pb_run) if x)
            rows.append([model, setting,
                         h.fmt(hb and hb["images_per_s"]), h.fmt(pb and pb["images_per_s"]),
                         f"**{ratio:.2f}x**" if ratio else "-",
                         h.fmt(hb and hb["gflops"], 1), pct(hb), h.fmt(pb and pb["gflops"], 1), pct(pb),
                         f"{mem(hb, 'peak_rss_mib')} / {mem(pb, 'peak_rss_mib')}",
                         f"{above_base(hb)} / {above_base(pb)}", runs_text(runs, args.quiet), foreign])
    out.append("Training throughput and memory (one process, one thread):")
    out.append("")
    out.append(h.markdown_table(
        ["model", "OpenBLAS", "hpf img/s", "PyTorch img/s", "hpf / PyTorch", "hpf GFLOP/s", "hpf % SGEMM",
         "PyTorch GFLOP/s", "PyTorch % SGEMM", "peak RSS MiB hpf / PyTorch", "training MiB hpf / PyTorch",
         "runs (quiet) hpf / PyTorch", "other load % (best runs)"], rows, "llrrrrrrrrrrr"))
    out.append("")
    out.append("- peak RSS = getrusage ru_maxrss of the whole process; PyTorch's includes the torch import "
               "(about 230 MiB) and its data set as float tensors (188 MiB for Fashion-MNIST), hpf's holds "
               "Fashion-MNIST as bytes (47 MiB).")
    out.append("- training MiB = peak RSS from model construction to the end of training minus the RSS just "
               "before the model was built (data already in RAM): the model, its activations, gradients and "
               "optimizer state, allocator slack.")
    out.append("- other load = CPU time other processes used during the best run, in % of the whole machine "
               "(/proc/stat minus the run's own CPU time). The runner waited before each run until less than "
               f"{100 * args.max_busy:.0f} % of the machine was busy (at most {args.max_wait:.0f} s).")
    if args.section == "single-process-models":
        out.append("- The GPTs train on one fixed batch of 32 windows of 64 bytes of a repeated phrase, Adam lr 3e-3 "
                   "(the language-model example's model and optimizer); hpf's `--recompute` keeps only the blocks' "
                   "inputs and runs each block's forward again in backward, PyTorch's wraps each block in "
                   "`torch.utils.checkpoint` (non-reentrant). FLOPs count the causal attention's query-key pairs "
                   "only, as hpf's LayerCost does. CosmoFlow trains on one fixed batch of N(0, 1) volumes and "
                   "targets; both run oneDNN's direct 3-D convolutions (hpf's float path on the host, PyTorch's "
                   "mkldnn_convolution).")
    out.append("- MLP/CNN cycle through real, pre-shuffled Fashion-MNIST batches in RAM (hpf gathers each batch "
               "from its byte array inside the step, PyTorch slices ready float tensors); the ResNets train on "
               "one fixed synthetic batch (SGD lr 0.1, momentum 0.9, weight decay 5e-4).")
    out.append("")

    if args.baseline:
        out += baseline_report(args, data)

    if not args.no_profile:
        out += profile_report(args, data)

    # Exact commands.
    out.append("Commands (run from the repository root; the runner launches exactly these):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--python", "--baseline"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/compare_single_process.py"] + options))
    first = args.settings[0]
    _, overrides = h.bench_env(h.BLAS_SETTINGS[first][0])
    shown = {args.hpf: args.hpf_shown}  # the private copy ran; the commands name the original
    commands = [[args.hpf, "--sgemm"], [args.python, os.path.join(HERE, "pytorch_train.py"), "--sgemm"]]
    commands += [cmd for model in args.models for cmd in model_commands(args, model)]
    for cmd in commands:
        out.append(h.command_text([h.repo_relative(shown.get(c, c), ROOT) for c in cmd], overrides))
    out.append("```")
    others = [h.BLAS_SETTINGS[s][0] for s in args.settings[1:]]
    if others:
        out.append("")
        out.append(f"and the same with OPENBLAS_CORETYPE={', '.join(others)}.")
    return "\n".join(out) + "\n"


def baseline_report(args, data):
    """hpf now against the baseline executable, from the same alternating runs."""
    rows = []
    for model in args.models:
        for setting in args.settings:
            runs = data[setting][model]
            _, now = h.best(runs["hpf"])
            _, before = h.best(runs["baseline"])
            ratio = now["images_per_s"] / before["images_per_s"] if now and before else None
            rows.append([model, setting, h.fmt(now and now["images_per_s"]), h.fmt(before and before["images_per_s"]),
                         f"**{ratio:.2f}x**" if ratio else "-",
                         f"{sum(x.ok for x in runs['hpf'])} ({h.quiet_count(runs['hpf'], args.quiet)}) / "
                         f"{sum(x.ok for x in runs['baseline'])} ({h.quiet_count(runs['baseline'], args.quiet)})"])
    label = args.baseline_revision or h.repo_relative(args.baseline, ROOT)
    out = [f"hpf now against hpf at {label} (`{h.repo_relative(args.baseline, ROOT)}`, built from that revision "
           "with the same build type), a third side of the same alternating runs:", ""]
    out.append(h.markdown_table(["model", "OpenBLAS", "hpf img/s now", f"hpf img/s at {label}", "now / before",
                                 "runs (quiet) now / before"], rows, "llrrrr"))
    out.append("")
    return out


def sgemm_peak(runs):
    """The single-core SGEMM rate of the OpenBLAS setting: the best of both sides' measurements
    (the same library and kernels), n = 1024 or 2048."""
    rates = [sgemm_rate(runs[side], n) for side in ("hpf", "pytorch") for n in (1024, 2048)]
    return max(filter(None, rates), default=None)


def profile_lines(run, limit):
    """The top `limit` rows of a --profile table, and its step_ms."""
    if not run or run.returncode != 0:
        return None, []
    text = run.stdout
    start = text.find("\nPROFILE ")
    if start < 0:
        return None, []
    lines = text[start + 1:].splitlines()
    step_ms = next((t.split("=")[1] for t in lines[0].split() if t.startswith("step_ms=")), None)
    rows = []
    for line in lines[2:]:
        if not line.strip() or line.startswith(("GEMM", "PROFILE")):
            break
        parts = line.split(None, 3)
        # Summary rows ("(27 more sites ...)", "(outside ...)") have no call count; a region without
        # kernels inside (oneDNN convolutions) is the site "(top) > region".
        if len(parts) == 4 and not parts[2].startswith("("):
            rows.append((parts[0], parts[1], parts[2], parts[3].removeprefix("(top) > ")))
    gemm = next((line for line in lines if line.startswith("GEMM (")), None)
    return (step_ms, gemm), rows[:limit]


def profile_report(args, data, limit=8):
    out = ["Where the time goes (self time per kernel, one profiled run per side; hpf: Kokkos tool "
           "callbacks, `--profile`; PyTorch: torch.profiler, `--profile`). Top entries, ms per step:", ""]
    for setting in args.settings:
        for model in args.models:
            prof = data[setting][model].get("profile", {})
            (hpf_meta, hpf_rows), (pt_meta, pt_rows) = (profile_lines(prof.get("hpf"), limit),
                                                        profile_lines(prof.get("pytorch"), limit))
            if not hpf_rows and not pt_rows:
                continue
            hpf_ms, pt_ms = (meta[0] if meta else "?" for meta in (hpf_meta, pt_meta))
            out.append(f"<details><summary>{model}, {h.BLAS_SETTINGS[setting][1]}: hpf {hpf_ms} ms/step, "
                       f"PyTorch {pt_ms} ms/step (profiled)</summary>")
            out.append("")
            rows = []
            for i in range(max(len(hpf_rows), len(pt_rows))):
                a = hpf_rows[i] if i < len(hpf_rows) else ("", "", "", "")
                b = pt_rows[i] if i < len(pt_rows) else ("", "", "", "")
                rows.append([f"`{a[3]}`" if a[3] else "", a[0], a[1], f"`{b[3]}`" if b[3] else "", b[0], b[1]])
            out.append(h.markdown_table(["hpf site (region > kernel)", "ms", "%", "PyTorch operator", "ms", "%"], rows,
                                        "lrrlrr"))
            if hpf_meta and hpf_meta[1]:
                out.append("")
                out.append(f"hpf {hpf_meta[1]}")
            out.append("")
            out.append("</details>")
            out.append("")
    return out


def snapshot(path):
    """A private copy of the hpf executable: a rebuild of the tree during the (long) run must not
    mix two versions of hpf in one table. Returns the copy's path."""
    directory = tempfile.mkdtemp(prefix="hpf_bench_")
    copy = os.path.join(directory, os.path.basename(path))
    shutil.copy2(path, copy)
    return copy


def main():
    args = parse_args()
    # At the start: the commit the executable was (most likely) built from.
    args.provenance = provenance.start("benchmarks/compare_single_process.py")
    args.built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(args.hpf)))
    args.hpf_shown, args.hpf = args.hpf, snapshot(args.hpf)
    if args.baseline:
        args.baseline_shown, args.baseline = args.baseline, snapshot(args.baseline)
    h.log(f"machine: {h.machine_description()}")
    h.log(f"load now: {100 * h.busy_fraction(1.0):.0f}% of all CPUs busy")
    try:
        data = measure(args)
    finally:
        shutil.rmtree(os.path.dirname(args.hpf), ignore_errors=True)
        if args.baseline:
            shutil.rmtree(os.path.dirname(args.baseline), ignore_errors=True)
            args.baseline = args.baseline_shown
    text = report(args, data)
    failed = [f"{s}/{m}/{side}" for s in args.settings for m in args.models
              for side in ("hpf", "pytorch") if not any(r.ok for r in data[s][m][side])]
    return provenance.publish(args, args.section, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
