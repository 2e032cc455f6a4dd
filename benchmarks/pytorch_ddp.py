#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch DistributedDataParallel side of the data-parallel scaling benchmark: P processes with
one thread each, gloo over the loopback device, started with torch.multiprocessing.spawn and
init_method tcp://127.0.0.1:<free port> (docs/reference.md). Measured as
benchmarks/parallel_throughput.cpp measures hpf; prints the same `RESULT key=value ...` line.

  /usr/bin/python3 benchmarks/pytorch_ddp.py --model resnet20 --nprocs 2 --batch 64
  /usr/bin/python3 benchmarks/pytorch_ddp.py --model mlp --nprocs 1          # DDP on one process
  GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 benchmarks/pytorch_ddp.py --rank R --nprocs 4 \
      --master 10.77.0.1:29500                    # one process of 4 on separate hosts

With --rank, this process is rank R of --nprocs processes started separately (one per host, as
torchrun starts them), rank 0 listening on --master ADDRESS:PORT; without it, --nprocs processes
spawned here on the loopback device.

--batch is per process (the global batch is nprocs x batch). Each step is zero_grad + forward +
cross-entropy + backward (DDP's bucketed allreduce overlaps it) + SGD step. The MLP cycles
through real pre-shuffled Fashion-MNIST batches, rank r taking every nprocs-th batch from r; the
ResNet trains on one fixed synthetic batch per rank. images/s (global) is the best of `repeats`
blocks of `steps` steps after `warmup` steps, timed on rank 0, each block starting at a barrier.
"""
import argparse
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet20", choices=["mlp", "resnet20", "resnet56"])
    p.add_argument("--nprocs", type=int, default=2, help="processes (DDP world size)")
    p.add_argument("--batch", type=int, default=0, help="samples per process and step (default mlp 128, resnets 64)")
    p.add_argument("--steps", type=int, default=0, help="steps per timed block (default mlp 100, resnet20 5, resnet56 3)")
    p.add_argument("--warmup", type=int, default=0, help="untimed steps first (default mlp 20, resnet20 2, resnet56 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed blocks; images/s is the best block")
    p.add_argument("--threads", type=int, default=1, help="threads per process (default 1)")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb (default 25, DDP's own)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rank", type=int, default=-1, help="this process's rank of --nprocs started separately")
    p.add_argument("--master", default="", help="ADDRESS:PORT rank 0 listens on (with --rank)")
    p.add_argument("--data-dir", default=os.environ.get("HPF_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    return p.parse_args()


ARGS = parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before torch loads the pools
    os.environ[var] = str(ARGS.threads)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import torch_parallel as tp  # noqa: E402
import torch_reference as ref  # noqa: E402
from torch_reference import CifarResNet, mlp  # noqa: E402

DEFAULTS = {"mlp": (128, 100, 20), "resnet20": (64, 5, 2), "resnet56": (64, 3, 1)}  # batch, steps, warm-up


def build(args):
    """(model, optimizer, forward MACs per sample): the reference's settings."""
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    if args.model == "mlp":
        model = mlp()
        macs = ref.forward_macs(model, (1, 28, 28))
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), macs
    model = CifarResNet(20 if args.model == "resnet20" else 56)
    macs = ref.forward_macs(model, (3, 32, 32))
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4), macs


def batches_for(args, rank, world, batch):
    if args.model == "mlp":
        return ref.fashion_batches(batch, args.seed, args.data_dir)[rank::world]
    return [ref.synthetic_batch(batch, args.seed + rank)]


def worker(rank, args, port, address="127.0.0.1"):
    tp.init_group(rank, args.nprocs, port, args.threads, address)
    batch, default_steps, default_warmup = DEFAULTS[args.model]
    batch = args.batch or batch
    steps, warmup = args.steps or default_steps, args.warmup or default_warmup
    batches = batches_for(args, rank, args.nprocs, batch)
    memory = ref.MemoryMarks()
    model, opt, macs = build(args)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    ddp.train()
    state = {"next": 0}

    def train_steps(count):
        loss_value = 0.0
        for _ in range(count):
            x, y = batches[state["next"] % len(batches)]
            state["next"] += 1
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            loss_value = loss.item()
        return loss_value

    best, rates, first, last = tp.timed_blocks(train_steps, steps, warmup, args.repeats, batch * args.nprocs,
                                               dist.barrier)
    values = tp.gather_values([memory.process_peak(), memory.base, memory.train_peak()])
    if rank == 0:
        core, blas_threads = ref.blas_info()
        gflop_per_image = 6.0 * macs * 1e-9
        global_batch = batch * args.nprocs
        print(f"RESULT framework=pytorch mode=ddp model={args.model} world={args.nprocs} batch={global_batch} "
              f"batch_per_replica={batch} steps={steps} warmup={warmup} repeats={args.repeats} "
              f"images_per_s={best:.2f} ms_per_step={1e3 * global_batch / best:.4f} "
              f"gflop_per_step={gflop_per_image * global_batch:.5f} gflops={best * gflop_per_image:.2f} "
              f"rank_peak_rss_mib={tp.per_rank(values, 0)} rank_base_rss_mib={tp.per_rank(values, 1)} "
              f"rank_train_peak_rss_mib={tp.per_rank(values, 2)} bucket_cap_mb={args.bucket_mb:g} "
              f"blas={core} blas_threads={blas_threads} torch_threads={torch.get_num_threads()} "
              f"torch={torch.__version__} loss_first={first:.5f} loss_last={last:.5f} "
              f"block_images_per_s={','.join(str(round(r)) for r in rates)}", flush=True)
    tp.finish_group()
    sys.stdout.flush()
    os._exit(0)


def main():
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    core, _ = ref.blas_info()
    print(f"# torch {torch.__version__}; OpenBLAS kernels: {core}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; DDP gloo, {ARGS.nprocs} processes x "
          f"{ARGS.threads} thread", flush=True)
    if ARGS.rank >= 0:
        if not 0 <= ARGS.rank < ARGS.nprocs or ":" not in ARGS.master:
            raise SystemExit("pytorch_ddp.py: --rank needs 0 <= R < --nprocs and --master ADDRESS:PORT")
        address, port = ARGS.master.rsplit(":", 1)
        worker(ARGS.rank, ARGS, int(port), address)  # leaves the process itself
    mp.spawn(worker, args=(ARGS, tp.free_port()), nprocs=ARGS.nprocs, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
