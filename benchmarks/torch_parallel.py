# SPDX-License-Identifier: MIT
"""Pieces shared by the multi-process PyTorch benchmarks (pytorch_ddp.py, pytorch_pipeline.py):
process groups over gloo on the loopback device, timed blocks and per-rank values gathered to
rank 0 (models, data, threads and memory marks: torch_reference.py).

Import it after the thread environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS)
is set: it imports torch and numpy, which size their pools when they load.
"""
import os
import socket
import time

import torch
import torch.distributed as dist

from torch_reference import setup_threads


# --- processes ---------------------------------------------------------------------------------
def free_port():
    """A TCP port that was free a moment ago on 127.0.0.1 (for init_method=tcp://)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_group(rank, world, port, threads, address="127.0.0.1"):
    """This process's gloo group (on the loopback device unless GLOO_SOCKET_IFNAME says another),
    rank 0 listening on address:port; threads pinned first."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    setup_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://{address}:{port}", rank=rank, world_size=world)


def gather_values(values):
    """Every rank's list of floats (same length everywhere), as a list per rank on every rank."""
    mine = torch.tensor(values, dtype=torch.float64)
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    return [p.tolist() for p in parts]


def per_rank(values_by_rank, index, digits=1):
    """`a,b,...`: one value of every rank, for a RESULT field."""
    return ",".join(f"{v[index]:.{digits}f}" for v in values_by_rank)


def finish_group():
    """Tears the group down after every rank has printed, then leaves at once: a gloo group has
    been seen to hang at interpreter exit (docs/reference.md)."""
    dist.barrier()
    dist.destroy_process_group()


# --- timing ----------------------------------------------------------------------------------------
def timed_blocks(train_steps, steps, warmup, repeats, samples_per_step, barrier=None):
    """Runs `warmup` steps, then `repeats` blocks of `steps` (each after `barrier`, if given).
    `train_steps(count)` returns the last loss. Returns (best images/s, [images/s per block],
    first loss, last loss)."""
    first = train_steps(1)
    if warmup > 1:
        train_steps(warmup - 1)
    rates, last = [], first
    for _ in range(repeats):
        if barrier:
            barrier()
        start = time.perf_counter()
        last = train_steps(steps)
        rates.append(steps * samples_per_step / (time.perf_counter() - start))
    return max(rates), rates, first, last


