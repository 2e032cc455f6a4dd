#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The README's pipeline pictures, drawn from real traces: the Fashion-MNIST example's CNN on 4
ranks as 4 pipeline stages with 4 micro-batches, one step traced under GPipe and one under 1F1B,
each rendered by `scripts/hpf-trace svg` into benchmarks/figures/pipeline_<schedule>.svg.

  /usr/bin/python3 benchmarks/pipeline_pictures.py --build build [--mpiexec mpiexec --mpiexec-flags '...']
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--mpiexec-flags", default="--allow-run-as-root --oversubscribe --bind-to none")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "figures"))
    args = parser.parse_args(argv)
    example = os.path.join(args.build, "examples", "hpf_fashion_mnist")
    if not os.access(example, os.X_OK):
        raise SystemExit(f"pipeline_pictures.py: {example} is missing; build hpf first")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for schedule in ("gpipe", "1f1b"):
            trace = os.path.join(tmp, f"{schedule}.json")
            env = dict(os.environ, HPF_TRACE=trace, HPF_TRACE_STEPS="3", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            cmd = ([args.mpiexec] + args.mpiexec_flags.split() + ["-n", "4", example, "--model", "cnn", "--stages", "4",
                   "--micro-batches", "4", "--schedule", schedule, "--steps", "5"])
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=600)
            out = os.path.join(args.out, f"pipeline_{schedule}.svg")
            title = (f"{'GPipe' if schedule == 'gpipe' else '1F1B'}: CNN on 4 pipeline stages (1 rank each), "
                     "4 micro-batches of 16 images, one training step")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "hpf-trace"), "svg", trace, out, "--title", title],
                           check=True)
            print(f"wrote {os.path.relpath(out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
