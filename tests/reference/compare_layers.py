#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Agreement of each layer with PyTorch in double: repeats every case of layer_reference (one
forward and one backward of a single hpf layer from random parameters and inputs) with the
torch.nn module PyTorch users would write, from the same parameters, inputs and output
gradient, and compares

    the output, the input's gradient, every parameter's gradient and every buffer after the
    pass (BatchNorm's running statistics), each within 1e-12 of PyTorch's largest magnitude in
    that tensor (max |hpf - torch| / max |torch|),

after loading hpf's parameters into the module by name with strict=True (so the names are
PyTorch's). Dropout's mask is derived here from its specification (hpf::detail::DropoutMask:
splitmix-mixed hashes of the seed, the layer's name, the step and the sample's global index),
and PyTorch applies it as nn.Dropout does: x * (mask / (1 - p)).

    compare_layers.py --driver build/tests/reference/hpf_layer_reference --work DIR

Run with Debian's /usr/bin/python3 (python3-torch, python3-numpy); exits non-zero on any case
beyond the tolerance, or when a case of the driver has no PyTorch counterpart here (or the reverse).
"""
import argparse
import os
import subprocess
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import read_safetensors  # noqa: E402  (exits with a message without torch)
from torch_reference import PositionEmbedding, SelfAttention  # noqa: E402  (compare_pytorch put it on the path)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TOLERANCE = 1e-12
MASK64 = (1 << 64) - 1
# The tensors of a case file that are not the layer's state.
PASS_TENSORS = ("x", "y", "dy", "dx", "labels", "loss")


# --- layouts: hpf's activations are [C][N][spatial...] -------------------------------------------

def to_torch(a):
    """hpf's [C][N] / [D][N][T] / [C][N][H][W] / [C][N][D][H][W] as PyTorch's [N][C] / [N][T][D] /
    [N][C][H][W] / [N][C][D][H][W]."""
    t = torch.from_numpy(np.array(a))
    if t.dim() == 2:
        return t.t().contiguous()
    if t.dim() == 3:
        return t.permute(1, 2, 0).contiguous()
    return t.transpose(0, 1).contiguous()


# --- Dropout's mask, from its specification ------------------------------------------------------

def fnv1a(text):
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & MASK64
    return h


def hash_combine(a, b):
    z = a ^ ((b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2)) & MASK64)
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK64
    return z ^ (z >> 31)


def dropout_mask(meta, scope, numerator, denominator, channels, spatial):
    """[N][C][S]: 1 where value e = c * S + s of each sample is kept."""
    stream = hash_combine(hash_combine(int(meta["seed"]), fnv1a(scope)), int(meta["step"]))
    threshold = (numerator * (1 << 53) + denominator - 1) // denominator  # ceil(p * 2^53)
    samples = [int(s) for s in meta["samples"].split(",")]
    keep = [[[(hash_combine(hash_combine(stream, sample), c * spatial + s) >> 11) >= threshold
              for s in range(spatial)] for c in range(channels)] for sample in samples]
    return torch.tensor(keep, dtype=torch.float64)


class DropoutWithMask(nn.Module):
    """nn.Dropout's arithmetic (input * noise, noise = bernoulli(1 - p) / (1 - p)) with hpf's mask."""

    def __init__(self, mask, p):
        super().__init__()
        self.noise = mask.div(1 - p)

    def forward(self, x):
        # noise is [N][D][T] as hpf counts a sample's values; x is [N][T][D].
        return x * self.noise.transpose(1, 2)


class Lambda(nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


def attention(heads, causal, bias=True):
    """nn.MultiheadAttention as self-attention on [N, T, D] (the benchmarks' and GPT's module)."""
    return lambda x: SelfAttention(x.shape[2], heads, causal=causal, bias=bias)


# case: a function of the input (PyTorch layout) giving the module (PyTorch's default
# initialisation; every parameter is then overwritten with hpf's).
CASES = {
    "mha": attention(3, causal=False),
    "mha_causal": attention(3, causal=True),
    "mha_causal_nobias": attention(2, causal=True, bias=False),
    "layer_norm_sequence": lambda x: nn.LayerNorm(10),
    "layer_norm_vector": lambda x: nn.LayerNorm(10),
    "layer_norm_image": lambda x: nn.LayerNorm([3, 4, 5]),
    "embedding": lambda x: nn.Embedding(20, 6),
    "position_embedding": lambda x: PositionEmbedding(9, 6),
    "gelu_sequence": lambda x: nn.GELU(),
    "gelu_tanh_sequence": lambda x: nn.GELU(approximate="tanh"),
    "dense_sequence": lambda x: nn.Linear(8, 6),
    "dropout_sequence": None,  # built in run_case: its mask needs the metadata
    "flatten_sequence": lambda x: nn.Flatten(),
    "global_avg_pool_sequence": lambda x: Lambda(lambda v: v.mean(dim=1)),
    "softmax_cross_entropy_sequence": lambda x: nn.Softmax(dim=-1),  # the loss: see run_case
    "conv3d_stride2_pad1": lambda x: nn.Conv3d(2, 3, 3, stride=2, padding=1),
    "conv3d_nobias": lambda x: nn.Conv3d(2, 4, 2, bias=False),
    "max_pool3d": lambda x: nn.MaxPool3d(2),
    "max_pool3d_stride2_pad1": lambda x: nn.MaxPool3d(3, stride=2, padding=1),
    "avg_pool3d": lambda x: nn.AvgPool3d(2),
    "avg_pool3d_stride2_pad1": lambda x: nn.AvgPool3d(3, stride=2, padding=1),
    "batch_norm_volume": lambda x: nn.BatchNorm3d(3),
    "global_avg_pool_volume": lambda x: Lambda(lambda v: v.mean(dim=(2, 3, 4))),
}


def difference(hpf_value, torch_value):
    """max |hpf - torch| / max |torch| (absolute where torch's tensor is all zeros)."""
    a = np.asarray(hpf_value, dtype=np.float64).reshape(-1)
    b = torch_value.detach().numpy().astype(np.float64).reshape(-1)
    if a.shape != b.shape:
        return float("inf")
    scale = np.abs(b).max() if b.size else 0.0
    return float(np.abs(a - b).max() / scale) if scale > 0 else float(np.abs(a - b).max(initial=0.0))


def run_case(name, tensors, meta):
    """[(what, difference)] of one case."""
    x_hpf = tensors["x"]
    tokens = name == "embedding"
    x = to_torch(x_hpf)
    x = x.long() if tokens else x.double().requires_grad_(True)
    if name == "dropout_sequence":
        channels, n, spatial = x_hpf.shape
        layer = DropoutWithMask(dropout_mask(meta, "0.", 25, 100, channels, spatial), 0.25)
    else:
        layer = CASES[name](x)
    model = nn.Sequential(layer).double().train()

    # hpf's parameters by name, strictly; buffers start as PyTorch's (hpf's are after the pass).
    state = model.state_dict()
    hpf_state = {k: v for k, v in tensors.items() if k not in PASS_TENSORS and not k.startswith("grad.")}
    if set(state) != set(hpf_state):
        raise ValueError(f"state names differ: PyTorch {sorted(state)}, hpf {sorted(hpf_state)}")
    parameters = {k for k, _ in model.named_parameters()}
    model.load_state_dict({k: torch.from_numpy(np.array(hpf_state[k])) if k in parameters else v
                           for k, v in state.items()}, strict=True)

    y = model(x)
    results = [("y", difference(to_torch(tensors["y"]), y))]
    if name == "softmax_cross_entropy_sequence":
        labels = torch.from_numpy(np.array(tensors["labels"]))
        loss = F.cross_entropy(x.reshape(-1, x.shape[-1]), labels.reshape(-1))  # the mean over all positions
        loss.backward()
        results.append(("loss", difference(tensors["loss"], loss.reshape(1))))
    else:
        y.backward(to_torch(tensors["dy"]))
    if not tokens:
        results.append(("dx", difference(to_torch(tensors["dx"]), x.grad)))
    for k, p in model.named_parameters():
        results.append((f"grad.{k}", difference(tensors["grad." + k], p.grad)))
    for k, b in model.named_buffers():
        results.append((k, difference(hpf_state[k], b)))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--driver", required=True, help="the hpf_layer_reference executable")
    parser.add_argument("--work", required=True, help="directory for the driver's files")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    result = subprocess.run([args.driver, "--out", args.work])
    if result.returncode != 0:
        sys.exit(f"FAIL: the hpf driver exited with status {result.returncode}")

    written = sorted(f[:-len(".safetensors")] for f in os.listdir(args.work) if f.endswith(".safetensors"))
    failures = []
    if set(written) != set(CASES):
        failures.append(f"cases differ: driver only {sorted(set(written) - set(CASES))}, "
                        f"here only {sorted(set(CASES) - set(written))}")
    print(f"{'case':<32}{'layer':<52}{'worst':>10}  of")
    for name in sorted(set(written) & set(CASES)):
        tensors, meta = read_safetensors(os.path.join(args.work, name + ".safetensors"))
        results = run_case(name, tensors, meta)
        what, worst = max(results, key=lambda r: r[1])
        print(f"{name:<32}{meta['layer']:<52}{worst:>10.1e}  {what} ({len(results)} tensors)")
        failures += [f"{name}: {w} differs by {d:.2e} > {TOLERANCE:.0e}" for w, d in results if not d <= TOLERANCE]
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(1)
    print(f"PASS: {len(written)} layers within {TOLERANCE:.0e} of PyTorch in double")


if __name__ == "__main__":
    main()
