#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Held-out bits per byte of examples/03_language_model's GPT over several seeds, hpf against
PyTorch trained with the same settings (benchmarks/pytorch_language_model.py: the same model from
torch.nn layers, Adam lr 3e-3, batch 32, 300 steps, the same text and held-out tail), one process
and one thread each, in float and with bf16 products (hpf --precision bf16, PyTorch's forward
under autocast), and the text hpf's seed 0 generates in float. Prints the table and writes the
`language-model-seeds` section of benchmarks/RESULTS.md, and the means and the sample in
docs/launching.md's.

  cmake --build build --target hpf_language_model
  /usr/bin/python3 benchmarks/language_model_over_seeds.py                 # seeds 0-4 (~20 min)
  /usr/bin/python3 benchmarks/language_model_over_seeds.py --seeds 0 1 --no-write

Bits per byte do not depend on the machine's load, so hpf and PyTorch run side by side (--jobs 2).
"""
import argparse
import concurrent.futures
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_harness as h  # noqa: E402
import provenance  # noqa: E402

SECTION = "language-model-seeds"
PRECISIONS = ("float", "bf16")
LABELS = {("hpf", "float"): "hpf", ("pytorch", "float"): "PyTorch", ("hpf", "bf16"): "hpf bf16",
          ("pytorch", "bf16"): "PyTorch bf16"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hpf", default=os.path.join(ROOT, "build", "examples", "hpf_language_model"),
                   help="hpf_language_model (default: build/examples/hpf_language_model)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch (default /usr/bin/python3)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--jobs", type=int, default=2, help="runs at the same time (default 2)")
    p.add_argument("--precisions", default="float,bf16",
                   help="float and/or bf16 (hpf --precision bf16, PyTorch under autocast); default both")
    h.add_results_options(p, os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args()
    args.precisions = [x for x in args.precisions.split(",") if x]
    if "float" not in args.precisions or any(x not in PRECISIONS for x in args.precisions):
        p.error("--precisions takes float, or float and bf16 (the guide shows float's)")
    return args


def commands(args, out_dir):
    """(framework, precision, seed or None, command): one hpf process per seed and precision, one
    PyTorch process per precision for all seeds."""
    jobs = []
    for precision in args.precisions:
        sample = precision == "float"
        jobs += [("hpf", precision, s,
                  [args.hpf, "--steps", str(args.steps), "--seed", str(s), "--precision", precision, "--generate",
                   "300" if sample and s == args.seeds[0] else "0", "--out", os.path.join(out_dir, f"{precision}-seed-{s}")])
                 for s in args.seeds]
        jobs.append(("pytorch", precision, None,
                     [args.python, os.path.join(HERE, "pytorch_language_model.py"), "--steps", str(args.steps), "--precision",
                      precision, "--seeds"] + [str(s) for s in args.seeds]))
    return jobs


def one_thread_env():
    """(environment, overrides): one thread, OPENBLAS_CORETYPE unset (as under ctest)."""
    env, overrides = h.bench_env("", 1)
    del env["OPENBLAS_CORETYPE"], overrides["OPENBLAS_CORETYPE"]
    return env, overrides


def run(job):
    framework, precision, seed, cmd = job
    env, _ = one_thread_env()
    start = time.monotonic()
    # errors="replace": a sample of a barely trained model may hold bytes that are not UTF-8.
    proc = h.subprocess.run(cmd, env=env, stdout=h.subprocess.PIPE, stderr=h.subprocess.PIPE, text=True,
                            errors="replace")
    wall = time.monotonic() - start
    bits, sample = {}, None
    if framework == "hpf":
        m = re.search(r"held-out bits per byte: ([\d.]+)", proc.stdout)
        if m:
            bits[seed] = float(m.group(1))
        m = re.search(r"--- sample \(([^)]*)\) ---\n(.*)\n---", proc.stdout, re.S)
        if m:
            sample = (m.group(1), m.group(2))
    else:
        for r in h.parse_results(proc.stdout):
            bits[int(r["seed"])] = float(r["bits_per_byte"])
    if proc.returncode != 0 or not bits:
        h.log(f"  {' '.join(cmd)}: FAILED (exit {proc.returncode})\n{proc.stderr.strip()[-2000:]}")
    else:
        h.log(f"  {framework} {' '.join(cmd[1:])}: {bits} ({wall:.0f} s)")
    return (framework, precision), bits, sample


def measure(args, out_dir):
    """{(framework, precision): {seed: bits per byte}}, and hpf's float sample."""
    data, sample = {(f, p): {} for f in ("hpf", "pytorch") for p in args.precisions}, None
    jobs = sorted(commands(args, out_dir), key=lambda j: j[0] != "pytorch")  # the longest first
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f in concurrent.futures.as_completed([pool.submit(run, j) for j in jobs]):
            key, bits, generated = f.result()
            data[key].update(bits)
            sample = generated or sample
    return data, sample


def report(args, data, sample, out_dir):
    seeds = args.seeds
    out = ["## Language model: held-out bits per byte over seeds", ""]
    out.append(f"Measured by `benchmarks/language_model_over_seeds.py` with `{h.repo_relative(args.hpf, ROOT)}` "
               "(when, at which commit and where: its provenance line).")
    out.append("")
    out.append(f"The byte-level GPT of `examples/03_language_model` (4 pre-LayerNorm blocks of 4 heads, 64 features, "
               f"64 bytes of context; 237k parameters) trained {args.steps} steps of 32 windows with Adam lr 3e-3 on "
               "six files of Debian's `fortunes` package (0.9 MB of English), the last 5 % of the bytes held out; "
               "PyTorch 1.13 trains the same model built from `torch.nn` layers with the same settings "
               "(`benchmarks/pytorch_language_model.py`). One process and one thread each. The seed sets the "
               "initial weights and the order of the windows; the frameworks' generators differ, so what "
               "compares is the mean and the spread.")
    if "bf16" in args.precisions:
        out.append("")
        out.append("bf16 rows: hpf with `--precision bf16` (the products of Dense and attention read bf16 inputs, "
                   "`hpf::Mixed<hpf::bf16>`), PyTorch with its forward passes under "
                   "`torch.autocast(\"cpu\", dtype=torch.bfloat16)`, the loss in float; the same seeds.")
    out.append("")
    headers = ["framework"] + [f"seed {s}" for s in seeds] + ["mean", "stdev"]
    rows = []
    for key in sorted(data, key=lambda k: (k[1] != "float", k[0] != "hpf")):
        label = LABELS[key]
        values = [data[key].get(s) for s in seeds]
        got = [v for v in values if v is not None]
        rows.append([label] + [f"{v:.3f}" if v is not None else "-" for v in values] +
                    [f"{statistics.mean(got):.3f}" if got else "-", f"{statistics.stdev(got):.3f}" if len(got) > 1 else "-"])
    out.append("Held-out bits per byte (lower is better):")
    out.append("")
    out.append(h.markdown_table(headers, rows, "l" + "r" * (len(headers) - 1)))
    out.append("")
    for mine, theirs in ((("hpf", "float"), ("pytorch", "float")), (("hpf", "bf16"), ("hpf", "float")),
                         (("pytorch", "bf16"), ("pytorch", "float"))):
        got, spread = list(data.get(mine, {}).values()), list(data.get(theirs, {}).values())
        if len(got) > 1 and len(spread) > 1:
            low, high, mean = min(spread), max(spread), statistics.mean(got)
            out.append(f"{LABELS[mine]}'s mean {mean:.3f} lies {'within' if low <= mean <= high else 'outside'} "
                       f"{LABELS[theirs]}'s spread over the seeds ({low:.3f} to {high:.3f}).")
            out.append("")
    if sample:
        out.append(f"hpf's seed {seeds[0]} after training, prompted with \"The \" ({sample[0]}):")
        out.append("")
        out.append("```text")
        out.append(sample[1])
        out.append("```")
        out.append("")
    out.append("Commands (run from the repository root; the runner launches exactly these, one thread each):")
    out.append("")
    out.append("```sh")
    options = h.runner_options(sys.argv[1:], ("--hpf", "--results", "--python"))
    out.append(" ".join(["/usr/bin/python3 benchmarks/language_model_over_seeds.py"] + options))
    _, overrides = one_thread_env()
    for framework, _, seed, cmd in commands(args, out_dir):
        shown = [h.repo_relative(c, ROOT) for c in cmd]
        shown = [c.replace(out_dir, "OUT") for c in shown]
        out.append(h.command_text(shown, overrides) + (f"   # seed {seed}" if seed is not None else ""))
    out.append("```")
    return "\n".join(out) + "\n"


def guide_summary(data, sample, seeds, steps):
    """docs/launching.md's paragraph: the means over the seeds and hpf's generated sample."""
    out = []
    hpf_bits, torch_bits = list(data[("hpf", "float")].values()), list(data[("pytorch", "float")].values())
    if hpf_bits and torch_bits:
        out.append(f"After {steps} steps the held-out bits per byte over seeds {', '.join(map(str, seeds))} were "
                   f"{statistics.mean(hpf_bits):.3f} (hpf) and {statistics.mean(torch_bits):.3f} (PyTorch, the same "
                   "model and settings). hpf's first seed, prompted with \"The \":")
        out.append("")
    if sample:
        out += ["```text", sample[1], "```"]
    return "\n".join(out) + "\n"


def main():
    args = parse_args()
    if not os.path.exists(args.hpf):
        h.log(f"{args.hpf} not found: cmake --build build --target hpf_language_model")
        return 2
    args.provenance = provenance.start("benchmarks/language_model_over_seeds.py")
    h.log(f"machine: {h.machine_description()}")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hpf-language-model-") as out_dir:
        data, sample = measure(args, out_dir)
        text = report(args, data, sample, out_dir)
    h.log(f"measured in {time.monotonic() - start:.0f} s")
    failed = [f"{LABELS[k]}/seed {s}" for k in data for s in args.seeds if s not in data[k]]
    status = provenance.publish(args, SECTION, text, failed, args.provenance)
    # The guide's page on the example shows the same run's sample, with its provenance.
    summary = provenance.with_lines(guide_summary(data, sample, args.seeds, args.steps), [provenance.block_record(SECTION)],
                                    [args.provenance])
    if not args.no_write and not failed:
        h.replace_section(os.path.join(ROOT, "docs", "launching.md"), SECTION, summary)
        h.log(f"wrote the '{SECTION}' section of docs/launching.md")
    return status


if __name__ == "__main__":
    sys.exit(main())
