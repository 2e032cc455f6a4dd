#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch side of the single-process benchmark: the models, batches and settings of
docs/reference.md, measured exactly as benchmarks/train_throughput.cpp measures hpf, printing
the same `RESULT key=value ...` line.

  /usr/bin/python3 benchmarks/pytorch_train.py --model resnet20 --steps 5 --warmup 2 --repeats 3
  /usr/bin/python3 benchmarks/pytorch_train.py --sgemm        # torch.mm through the same OpenBLAS

Thread pools are sized before torch (or numpy) is imported: OMP_NUM_THREADS, OPENBLAS_NUM_THREADS
and MKL_NUM_THREADS, then torch.set_num_threads and openblas_set_num_threads (torch's thread
count does not size OpenBLAS's pool). OPENBLAS_CORETYPE is taken from the environment as it is:
the runner sets it, identically for both frameworks. Peak RSS (ru_maxrss) includes the torch import;
base_rss_mib is the RSS with the data in RAM just before the model is built, train_peak_rss_mib
the peak from there on (as hpf's benchmark reports them).
"""
import argparse
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn", "resnet20", "resnet56", "gpt", "gpt8", "cosmoflow"])
    p.add_argument("--recompute", action="store_true",
                   help="GPTs: each block under torch.utils.checkpoint (its activations rebuilt in backward)")
    p.add_argument("--steps", type=int, default=0,
                   help="steps per timed block (default: mlp 100, cnn 20, resnet20 5, resnet56 3)")
    p.add_argument("--warmup", type=int, default=0,
                   help="untimed steps first (default: mlp 20, cnn 5, resnet20 2, resnet56 1)")
    p.add_argument("--repeats", type=int, default=0, help="timed blocks; images/s is the best block (default 5)")
    p.add_argument("--threads", type=int, default=1, help="intra-op, OpenMP and OpenBLAS threads (default 1)")
    p.add_argument("--blas-threads", type=int, default=0,
                   help="OpenBLAS threads, if not --threads (docs/reference.md: 1 is PyTorch's best 2-thread CNN setting)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", default="float", choices=["float", "bf16"],
                   help="bf16: forward under torch.autocast('cpu', dtype=torch.bfloat16) (default float)")
    p.add_argument("--data-dir", default=os.environ.get("HPF_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    p.add_argument("--profile", type=int, default=0, metavar="P",
                   help="then P more steps under torch.profiler: self ms/step per operator")
    p.add_argument("--sgemm", action="store_true", help="single-core SGEMM GFLOP/s of torch.mm at n=1024 and 2048")
    return p.parse_args()


ARGS = parse_args()
ARGS.blas_threads = ARGS.blas_threads or ARGS.threads
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads)

import time  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils.checkpoint  # noqa: E402

from torch_reference import (CifarResNet, MemoryMarks, blas_info, cnn, fashion_batches, forward_macs,  # noqa: E402
                             cosmoflow, gpt, gpt_macs, mlp, setup_threads, synthetic_batch, text_batch, volume_batch)

ONEDNN_CONV = "unknown"  # set in main()
# batch, steps per block, warm-up steps (as train_throughput.cpp)
DEFAULTS = {"mlp": (128, 100, 20), "cnn": (64, 20, 5), "resnet20": (64, 5, 2), "resnet56": (64, 3, 1),
            "gpt": (32, 10, 2), "gpt8": (32, 5, 2), "cosmoflow": (8, 3, 1)}
GPT_BLOCKS = {"gpt": 4, "gpt8": 8}  # examples/03_language_model's GPT: D 64, 4 heads, context 64, bytes


class Checkpointed(nn.Module):
    """The blocks of an nn.Sequential, each under torch.utils.checkpoint (hpf's --recompute)."""

    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x):
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


# --- threads and BLAS ------------------------------------------------------------------------
def blas_library():
    """File name of the mapped OpenBLAS library (e.g. libopenblasp-r0.3.21.so), or "unknown"."""
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.rstrip().rsplit("/", 1)[-1]
            if "/" in line and name.startswith("libopenblas"):
                return name
    return "unknown"


# --- measurement --------------------------------------------------------------------------------
def run_model(args):
    batch, default_steps, default_warmup = DEFAULTS[args.model]
    steps = args.steps or default_steps
    warmup = args.warmup or default_warmup
    repeats = args.repeats or 5
    fashion = args.model in ("mlp", "cnn")
    language = args.model in GPT_BLOCKS
    volume = args.model == "cosmoflow"
    batches = (fashion_batches(batch, args.seed, args.data_dir) if fashion
               else [text_batch(batch, 64)] if language
               else [volume_batch(batch, args.seed)] if volume else [synthetic_batch(batch, args.seed)])
    memory = MemoryMarks()  # data in RAM; the model and its training follow
    torch.manual_seed(args.seed)
    if fashion:
        model = mlp() if args.model == "mlp" else cnn()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    elif volume:
        model = cosmoflow()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    elif language:
        model = gpt(GPT_BLOCKS[args.model], 64, 4, 64, 256)
        if args.recompute:
            model[2] = Checkpointed(model[2])
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    else:
        model = CifarResNet(20 if args.model == "resnet20" else 56)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    macs = (gpt_macs(GPT_BLOCKS[args.model], 64, 64, 256) if language
            else forward_macs(model, (1, 28, 28) if fashion else (4, 32, 32, 32) if volume else (3, 32, 32)))
    model.train()
    state = {"next": 0}

    def train_steps(count):
        samples, loss_value = 0, 0.0
        for _ in range(count):
            x, y = batches[state["next"] % len(batches)]
            state["next"] += 1
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
                out = model(x)
            out = out.float()  # the loss in float, as autocast computes it anyway
            loss = F.mse_loss(out, y) if volume else F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
            loss.backward()
            opt.step()
            loss_value = loss.item()
            samples += x.shape[0]
        return samples, loss_value

    _, first_loss = train_steps(1)
    if warmup > 1:
        train_steps(warmup - 1)
    best, rates, last_loss = 0.0, [], first_loss
    for _ in range(repeats):
        start = time.perf_counter()
        samples, last_loss = train_steps(steps)
        rate = samples / (time.perf_counter() - start)
        rates.append(rate)
        best = max(best, rate)
    gflop_per_image = 6.0 * macs * 1e-9
    core, blas_threads = blas_info()
    print(f"RESULT framework=pytorch model={args.model} batch={batch} steps={steps} warmup={warmup} repeats={repeats} "
          f"images_per_s={best:.2f} ms_per_step={1e3 * batch / best:.4f} gflop_per_step={gflop_per_image * batch:.5f} "
          f"gflops={best * gflop_per_image:.2f} peak_rss_mib={memory.process_peak():.1f} "
          f"base_rss_mib={memory.base:.1f} "
          f"train_peak_rss_mib={memory.train_peak():.1f} "
          f"blas={core} blas_lib={blas_library()} blas_threads={blas_threads} torch_threads={torch.get_num_threads()} "
          f"torch={torch.__version__} cpu_capability={cpu_capability()} onednn_conv={ONEDNN_CONV} "
          f"loss_first={first_loss:.5f} "
          f"loss_last={last_loss:.5f} block_images_per_s={','.join(str(round(r)) for r in rates)} "
          f"precision={args.precision}", flush=True)
    if args.profile > 0:
        profile(args.model, args.profile, train_steps)


def profile(model_name, steps, train_steps):
    """Self CPU time per operator in ms/step, in train_throughput.cpp's --profile format."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        train_steps(steps)
        wall = time.perf_counter() - start
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    print(f"\nPROFILE model={model_name} steps={steps} step_ms={1e3 * wall / steps:.3f} (torch.profiler; it adds some)")
    print(f"{'self ms':>10} {'% step':>7} {'calls':>9}  operator")
    rest, rest_ops = 0.0, 0
    for e in events:
        seconds = e.self_cpu_time_total * 1e-6
        if seconds < 0.001 * wall:
            rest, rest_ops = rest + seconds, rest_ops + 1
            continue
        print(f"{1e3 * seconds / steps:10.3f} {100 * seconds / wall:6.1f}% {e.count / steps:9.1f}  {e.key}")
    print(f"{1e3 * rest / steps:10.3f} {100 * rest / wall:6.1f}% {'':>9}  ({rest_ops} more operators under 0.1% each)",
          flush=True)


def run_sgemm(args):
    repeats = args.repeats or 5
    core, blas_threads = blas_info()
    g = torch.Generator().manual_seed(1)
    for n in (1024, 2048):
        a, b = torch.rand(n, n, generator=g) * 2 - 1, torch.rand(n, n, generator=g) * 2 - 1
        c = torch.empty(n, n)
        torch.mm(a, b, out=c)
        calls = 8 if n <= 1024 else 2
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                torch.mm(a, b, out=c)
            rates.append(2.0 * n ** 3 * calls * 1e-9 / (time.perf_counter() - start))
        print(f"RESULT framework=pytorch mode=sgemm n={n} gflops={max(rates):.2f} blas={core} "
              f"blas_lib={blas_library()} "
              f"blas_threads={blas_threads} "
              f"samples_gflops={','.join(str(round(r)) for r in rates)}", flush=True)


def cpu_capability():
    """ATen's vector ISA (torch 1.13 reports it only in its build config text)."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def onednn_convolution_kernel():
    """The oneDNN implementation of a small float convolution (e.g. jit:avx512_core), read from
    oneDNN's verbose output, which goes to file descriptor 1 and is captured there."""
    if not torch.backends.mkldnn.is_available():
        return "off"
    import tempfile
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON), torch.no_grad():
                nn.Conv2d(3, 16, 3, padding=1)(torch.zeros(2, 3, 8, 8))
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        captured.seek(0)
        for line in captured.read().decode(errors="replace").splitlines():
            fields = line.split(",")
            if len(fields) > 4 and fields[1] == "exec" and fields[3] == "convolution":
                return fields[4]
    return "unknown"


def main():
    global ONEDNN_CONV
    setup_threads(ARGS.threads, ARGS.blas_threads)
    core, _ = blas_info()
    ONEDNN_CONV = onednn_convolution_kernel()
    print(f"# torch {torch.__version__}; OpenBLAS kernels: {core}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; ATen {cpu_capability()}; "
          f"oneDNN convolution {ONEDNN_CONV}", flush=True)
    if ARGS.sgemm:
        run_sgemm(ARGS)
    else:
        run_model(ARGS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
