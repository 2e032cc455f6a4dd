# SPDX-License-Identifier: MIT
"""Pieces shared by the multi-process PyTorch benchmarks (pytorch_ddp.py, pytorch_pipeline.py):
thread pools and BLAS facts, process groups over gloo on the loopback device, memory marks, the
benchmark batches, timed blocks and per-rank values gathered to rank 0.

Import it after the thread environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS)
is set: it imports torch and numpy, which size their pools when they load.
"""
import ctypes
import os
import resource
import socket
import time

import numpy as np
import torch
import torch.distributed as dist

from torch_reference import read_idx

# --- threads and BLAS ------------------------------------------------------------------------
def openblas():
    """The BLAS library this process loaded (libblas.so.3 -> OpenBLAS on Debian), or None."""
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            if hasattr(lib, "openblas_get_corename"):
                return lib
        except OSError:
            pass
    return None


def setup_threads(threads):
    """torch's intra- and inter-op pools and OpenBLAS's pool (torch does not size the latter)."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass
    lib = openblas()
    if lib is not None:
        lib.openblas_set_num_threads(threads)


def blas_info():
    """(OpenBLAS core name, its thread count)."""
    lib = openblas()
    if lib is None:
        return "not_OpenBLAS", -1
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode(), lib.openblas_get_num_threads()


# --- processes ---------------------------------------------------------------------------------
def free_port():
    """A TCP port that was free a moment ago on 127.0.0.1 (for init_method=tcp://)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_group(rank, world, port, threads):
    """This spawned process's gloo group on the loopback device, threads pinned first."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    setup_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)


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


# --- memory ----------------------------------------------------------------------------------------
def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def status_mib(field):
    """A /proc/self/status field in MiB (VmRSS: now, VmHWM: peak since start or last reset), or -1."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return -1.0


class MemoryMarks:
    """Peak memory of the training alone, as the hpf benchmarks measure it: the process's peak so
    far is kept, then the kernel's high-water mark is reset to the current RSS (clear_refs 5), so
    VmHWM afterwards is the peak of what follows."""

    def __init__(self):
        self.peak_before, self.base = peak_rss_mib(), status_mib("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.reset = True
        except OSError:
            self.reset = False

    def train_peak(self):
        return status_mib("VmHWM") if self.reset else peak_rss_mib()

    def process_peak(self):
        return max(self.peak_before, self.train_peak(), peak_rss_mib())


# --- data ------------------------------------------------------------------------------------------
def fashion_batches(batch, seed, data_dir):
    """Full pre-shuffled batches of Fashion-MNIST (x/255, no normalisation) held in RAM."""
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    perm = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(seed)).numpy()
    x = torch.from_numpy(images[perm]).unsqueeze(1).float().div_(255.0)
    y = torch.from_numpy(labels[perm].astype(np.int64))
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, x.shape[0] - batch + 1, batch)]


def synthetic_batch(batch, seed):
    """One fixed batch of N(0, 1) 3x32x32 images and uniform labels (the ResNet benchmarks)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)


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


def forward_macs_of(module, output):
    """Forward MACs per sample of one Conv2d or Linear given its output for one sample."""
    if isinstance(module, torch.nn.Conv2d):
        return output[0].numel() * (module.in_channels // module.groups) * module.kernel_size[0] * module.kernel_size[1]
    if isinstance(module, torch.nn.Linear):
        return module.in_features * module.out_features
    return 0


def forward_macs(model, sample_shape):
    """Conv2d/Linear forward MACs per sample, counted with hooks (the reference's FLOP basis)."""
    total = [0]

    def hook(m, inp, out):
        total[0] += forward_macs_of(m, out)

    kinds = (torch.nn.Conv2d, torch.nn.Linear)
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, kinds)]
    was_training = model.training
    with torch.no_grad():
        model.eval()
        model(torch.zeros(1, *sample_shape))
    model.train(was_training)
    for h in handles:
        h.remove()
    return total[0]
