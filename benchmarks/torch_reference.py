# SPDX-License-Identifier: MIT
"""The PyTorch side of hpf's benchmarks, shared by its scripts: the models and data of
docs/reference.md, thread pools and BLAS facts, memory marks and forward MACs. Import it after the
thread environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) is set: it imports torch
and numpy, which size their pools when they load."""
import ctypes
import gzip
import os
import resource

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# --- models (docs/reference.md) ----------------------------------------------------------------
def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


class ZeroPadShortcut(nn.Module):
    """Option A: stride-2 subsample, then zero channels on both sides (parameter-free)."""

    def __init__(self, planes):
        super().__init__()
        self.pad = planes // 4

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad), "constant", 0.0)


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = ZeroPadShortcut(planes) if stride != 1 or in_planes != planes else nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """He et al. 2016 CIFAR ResNet of depth 6n+2, option A shortcuts (on grey images: in_channels=1)."""

    def __init__(self, depth, classes=10, in_channels=3):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, in_planes = [], 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                layers.append(BasicBlock(in_planes, planes, stride if i == 0 else 1))
                in_planes = planes
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.fc(out)


# --- data ---------------------------------------------------------------------------------------
def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_batches(batch, seed, data_dir):
    """Full pre-shuffled batches of Fashion-MNIST (x/255, no normalisation) held in RAM."""
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    perm = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(seed)).numpy()
    x = torch.from_numpy(images[perm]).unsqueeze(1).float().div_(255.0)  # permuted as bytes: one float copy
    y = torch.from_numpy(labels[perm].astype(np.int64))
    del images, labels
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, x.shape[0] - batch + 1, batch)]


def synthetic_batch(batch, seed):
    """One fixed batch of N(0, 1) 3x32x32 images and uniform labels (the ResNet benchmarks)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)


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


def setup_threads(threads, blas_threads=None):
    """torch's intra- and inter-op pools and OpenBLAS's pool (torch does not size the latter;
    `blas_threads` defaults to `threads`)."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass
    lib = openblas()
    if lib is not None:
        lib.openblas_set_num_threads(blas_threads or threads)


def blas_info():
    """(OpenBLAS core name, its thread count)."""
    lib = openblas()
    if lib is None:
        return "not_OpenBLAS", -1
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode(), lib.openblas_get_num_threads()


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


# --- FLOPs ---------------------------------------------------------------------------------------
def forward_macs_of(module, output):
    """Forward MACs per sample of one Conv2d, Conv3d or Linear given its output for one sample."""
    if isinstance(module, (torch.nn.Conv2d, torch.nn.Conv3d)):
        return output[0].numel() * (module.in_channels // module.groups) * int(np.prod(module.kernel_size))
    if isinstance(module, torch.nn.Linear):
        return module.in_features * module.out_features
    return 0


def forward_macs(model, sample_shape):
    """Conv2d/Linear forward MACs per sample, counted with hooks (the reference's FLOP basis)."""
    total = [0]

    def hook(m, inp, out):
        total[0] += forward_macs_of(m, out)

    kinds = (torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear)
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, kinds)]
    was_training = model.training
    with torch.no_grad():
        model.eval()
        model(torch.zeros(1, *sample_shape))
    model.train(was_training)
    for h in handles:
        h.remove()
    return total[0]


# --- a 3-D CNN (hpf::zoo::CosmoFlow) --------------------------------------------------------------
def cosmoflow(size=32, channels=4, targets=4):
    """hpf::zoo::CosmoFlow<size, channels, targets>."""
    return nn.Sequential(nn.Conv3d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                         nn.Conv3d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
                         nn.Conv3d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2), nn.Flatten(),
                         nn.Linear(64 * (size // 8) ** 3, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, targets))


def volume_batch(batch, seed, size=32, channels=4, targets=4):
    """One fixed batch of N(0, 1) volumes and targets (the CosmoFlow benchmark)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, channels, size, size, size, generator=g), torch.randn(batch, targets, generator=g)


# --- a byte-level GPT (hpf::zoo::Gpt, examples/03_language_model) -----------------------------
class PositionEmbedding(nn.Module):
    """hpf::PositionEmbedding: x + a learned [T, D] table (N(0, 1), as nn.Embedding's)."""

    def __init__(self, positions, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(positions, features))

    def forward(self, x):
        return x + self.weight


class SelfAttention(nn.MultiheadAttention):
    """hpf::MultiHeadAttention<Heads, Causal?, NoBias?>: attention of x to itself, with `causal` up
    to each position."""

    def __init__(self, features, heads, causal=True, bias=True):
        super().__init__(features, heads, bias=bias, batch_first=True)
        self.causal = causal

    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), diagonal=1) if self.causal else None
        return super().forward(x, x, x, attn_mask=mask, need_weights=False)[0]


class Residual(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


def gpt(blocks, features, heads, context, vocabulary):
    """hpf::zoo::Gpt<blocks, features, heads, context, vocabulary>: next-token logits [B, T, V]."""
    def block():
        attention = nn.Sequential(nn.LayerNorm(features), SelfAttention(features, heads))
        mlp_ = nn.Sequential(nn.LayerNorm(features), nn.Linear(features, 4 * features), nn.GELU(approximate="tanh"),
                             nn.Linear(4 * features, features))
        return nn.Sequential(Residual(attention), Residual(mlp_))
    return nn.Sequential(nn.Embedding(vocabulary, features), PositionEmbedding(context, features),
                         nn.Sequential(*[block() for _ in range(blocks)]), nn.LayerNorm(features),
                         nn.Linear(features, vocabulary))


def gpt_macs(blocks, features, context, vocabulary):
    """Forward MACs per sample of gpt(...), counted as hpf's LayerCost counts them: the projections
    and the MLP at every position, the causal attention's T(T+1)/2 query-key pairs twice (scores
    and values), the head."""
    t, d = context, features
    return blocks * (12 * t * d * d + t * (t + 1) * d) + t * d * vocabulary


def text_batch(batch, context):
    """One fixed batch of windows of a repeated phrase (train_throughput.cpp's), int64 [B, T] each."""
    text = bytes(b"the quick brown fox jumps "[i % 26] for i in range(batch * context + 1))
    return text_windows(text, context)


def text_windows(data, context):
    """hpf::data::text_windows: windows of context + 1 bytes starting every `context` bytes, as
    (inputs, next bytes), int64 [n, context] each."""
    count = (len(data) - 1) // context if len(data) > context else 0
    starts = np.arange(count) * context
    index = starts[:, None] + np.arange(context + 1)[None, :]
    windows = torch.from_numpy(np.frombuffer(data, dtype=np.uint8)[index].astype(np.int64))
    return windows[:, :-1], windows[:, 1:]
