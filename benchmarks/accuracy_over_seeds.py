#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Fashion-MNIST test accuracy after one epoch over several seeds, hpf against PyTorch, with the
settings of docs/reference.md (x/255, reshuffled every epoch, last partial batch kept, SGD lr 0.05
momentum 0.9, PyTorch's default init; ResNet-20's convolutions He et al.'s), everything on one
process and one thread. Prints the tables and writes the `accuracy-seeds` section of
benchmarks/RESULTS.md (ResNet-20's rows: `accuracy-seeds-resnet20`).

  cmake --build build --target hpf_fashion_mnist
  /usr/bin/python3 benchmarks/accuracy_over_seeds.py                 # cnn and mlp, seeds 0-4 (~25 min)
  /usr/bin/python3 benchmarks/accuracy_over_seeds.py --models mlp --seeds 0 1 --no-write
  /usr/bin/python3 benchmarks/accuracy_over_seeds.py --models resnet20   # its own section (~30 min)

The examples' accuracy tests (examples/CMakeLists.txt, tests/support/accuracy_over_seeds.cmake)
read PyTorch's mean from the section this script writes: hpf's mean over the seeds they run must
lie within PyTorch's mean +- 1 point. Accuracy does not depend on the machine's load, so hpf and PyTorch run
side by side (--jobs 2); nothing here measures a speed.
"""
import argparse
import concurrent.futures
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

SECTION = "accuracy-seeds"
MODELS = {
    "cnn": "CNN conv32-pool-conv64-pool-fc128-fc10, batch 64",
    "mlp": "MLP 784-512-512-10, batch 128",
    "resnet20": "ResNet-20's layers (conv3x3-16, 3 x 3 basic blocks at 16/32/64 channels, option A shortcuts) on the "
                "1x28x28 images (CIFAR-10, its own data, is not packaged in Debian), batch 64; the convolutions of "
                "both start from He et al.'s initialisation (N(0, 2 / fan_out), as CIFAR ResNets)",
}
# The section each model's rows go to (default SECTION): the examples' accuracy tests read the CNN's
# and the MLP's; ResNet-20's, half an hour of both cores with its seeds, is measured on its own.
SECTIONS = {"resnet20": "accuracy-seeds-resnet20"}
PRECISIONS = ("float", "bf16")
# Row labels: the examples' accuracy tests read the `PyTorch` row (float).
LABELS = {("hpf", "float"): "hpf", ("pytorch", "float"): "PyTorch", ("hpf", "bf16"): "hpf bf16",
          ("pytorch", "bf16"): "PyTorch bf16"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "examples", "hpf_fashion_mnist"),
                   help="hpf_fashion_mnist (default: build/examples/hpf_fashion_mnist)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    p.add_argument("--models", default="cnn,mlp",
                   help="comma-separated subset of " + ",".join(MODELS) + " (default cnn,mlp; resnet20 on its own)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--precisions", default="float,bf16",
                   help="float and/or bf16 (hpf --precision bf16, PyTorch under autocast); default both")
    p.add_argument("--jobs", type=int, default=2, help="runs at the same time (default 2)")
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        p.error("unknown model(s): " + ", ".join(unknown))
    sections = {SECTIONS.get(m, SECTION) for m in args.models}
    if len(sections) != 1:
        p.error("--models: " + ", ".join(args.models) + " go to different sections of RESULTS.md (" +
                ", ".join(sorted(sections)) + "): one run per section")
    args.section = sections.pop()
    args.precisions = [x for x in args.precisions.split(",") if x]
    if not args.precisions or any(x not in PRECISIONS for x in args.precisions):
        p.error(f"--precisions takes {' and/or '.join(PRECISIONS)}")
    return args


def commands(args, model):
    """((framework, precision), seed or None, command): one hpf process per seed, one PyTorch process
    for all, in each precision."""
    jobs = []
    for precision in args.precisions:
        jobs += [(("hpf", precision), s, [args.hpf, "--model", model, "--stages", "1", "--epochs", "1", "--precision",
                                          precision, "--seed", str(s)]) for s in args.seeds]
        jobs.append((("pytorch", precision), None, [args.python, os.path.join(HERE, "pytorch_accuracy.py"), "--model",
                                                    model, "--epochs", "1", "--precision", precision, "--seeds"]
                     + [str(s) for s in args.seeds]))
    return jobs


def accuracy_env():
    """(environment, overrides): the examples' accuracy tests' (one thread; OPENBLAS_CORETYPE
    unset, so hpf picks the widest OpenBLAS kernels itself, as under ctest). The last digits of an
    accuracy depend on the kernels' summation order, so the table shows what the tests run."""
    env, overrides = h.bench_env("", 1)
    del env["OPENBLAS_CORETYPE"], overrides["OPENBLAS_CORETYPE"]
    return env, overrides


def run(job):
    framework, seed, cmd = job
    env, _ = accuracy_env()
    start = time.monotonic()
    proc = h.subprocess.run(cmd, env=env, stdout=h.subprocess.PIPE, stderr=h.subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    accuracies = {}
    if framework[0] == "hpf":
        m = re.search(r"final test accuracy: ([\d.]+)%", proc.stdout)
        if m:
            accuracies[seed] = float(m.group(1))
    else:
        for r in h.parse_results(proc.stdout):
            accuracies[int(r["seed"])] = float(r["test_accuracy"])
    if proc.returncode != 0 or not accuracies:
        h.log(f"  {' '.join(cmd)}: FAILED (exit {proc.returncode})\n{proc.stderr.strip()[-2000:]}")
    else:
        h.log(f"  {LABELS[framework]} {' '.join(cmd[1:])}: {accuracies} ({wall:.0f} s)")
    return framework, accuracies, wall


def measure(args):
    """{model: {(framework, precision): {seed: accuracy %}}}"""
    data = {m: {(f, p): {} for f in ("hpf", "pytorch") for p in args.precisions} for m in args.models}
    jobs = [(m, j) for m in args.models for j in commands(args, m)]
    # PyTorch's single processes take longest: start them first.
    jobs.sort(key=lambda mj: mj[1][0][0] != "pytorch")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run, j): m for m, j in jobs}
        for f in concurrent.futures.as_completed(futures):
            framework, accuracies, _ = f.result()
            data[futures[f]][framework].update(accuracies)
    return data


def report(args, data):
    seeds = args.seeds
    resnet = args.section != SECTION
    title = "ResNet-20's test accuracy" if resnet else "test accuracy"
    out = [f"## Fashion-MNIST: {title} after one epoch, over seeds", ""]
    out.append("Measured by `benchmarks/accuracy_over_seeds.py` with `build/examples/hpf_fashion_mnist` "
               "(when, at which commit and where: its provenance line).")
    out.append("")
    out.append("One process and one thread each (hpf: Kokkos Serial, oneDNN convolutions where enabled; PyTorch "
               "1.13, `torch.set_num_threads(1)`), OPENBLAS_CORETYPE unset (hpf picks the widest "
               "kernels, as under ctest), the training settings of "
               "`docs/reference.md` (SGD lr 0.05, momentum 0.9, x/255, reshuffled every epoch, last partial batch "
               "kept). The seed sets the initial weights and the data order. hpf's and PyTorch's generators "
               "differ, so seed s of one framework is not seed s of the other: what compares is the mean and the "
               "spread.")
    out.append("")
    headers = ["model", "framework"] + [f"seed {s}" for s in seeds] + ["mean", "stdev"]
    rows = []
    for model in args.models:
        for framework in data[model]:
            label = LABELS[framework]
            acc = data[model][framework]
            values = [acc.get(s) for s in seeds]
            got = [v for v in values if v is not None]
            mean = f"{statistics.mean(got):.2f}" if got else "-"
            stdev = f"{statistics.stdev(got):.2f}" if len(got) > 1 else "-"
            rows.append([model, label] + [f"{v:.2f}" if v is not None else "-" for v in values] + [mean, stdev])
    out.append(h.markdown_table(headers, rows, "ll" + "r" * (len(headers) - 2)))
    out.append("")
    for model in args.models:
        out.append(f"- {model}: {MODELS[model]}.")
    if "bf16" in args.precisions:
        out.append("- bf16 rows: hpf with `--precision bf16` (the products of Dense and Conv2D read bf16 inputs, "
                   "`hpf::Mixed<hpf::bf16>`), PyTorch with its forward passes under "
                   "`torch.autocast(\"cpu\", dtype=torch.bfloat16)`.")
    if not resnet:
        out.append("- The examples' accuracy tests (`ctest -L accuracy`, seeds in `examples/CMakeLists.txt`) read "
                   "PyTorch's (float) mean from this table: hpf's mean over the seeds they run must lie within it +- 1 "
                   "point.")
    out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these, one thread each):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--python"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/accuracy_over_seeds.py"] + options))
    _, overrides = accuracy_env()
    for model in args.models:
        for framework, seed, cmd in commands(args, model):
            if framework[0] == "hpf" and seed != seeds[0]:
                continue
            shown = [h.repo_relative(c, ROOT) for c in cmd]
            if framework[0] == "hpf":
                shown = [c if c != str(seed) else "S" for c in shown[:-1]] + ["S"]
                out.append(h.command_text(shown, overrides) + f"   # S = {', '.join(map(str, seeds))}")
            else:
                out.append(h.command_text(shown, overrides))
    out.append("```")
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    if not os.path.exists(args.hpf):
        h.log(f"{args.hpf} not found: cmake --build build --target hpf_fashion_mnist")
        return 2
    args.provenance = provenance.start("benchmarks/accuracy_over_seeds.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    data = measure(args)
    text = report(args, data)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{m}/{LABELS[f]}/seed {s}" for m in data for f in data[m] for s in args.seeds if s not in data[m][f]]
    return provenance.publish(args, args.section, text, failed, args.provenance)


if __name__ == "__main__":
    sys.exit(main())
