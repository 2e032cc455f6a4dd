#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch loads the language model examples/03_language_model trained (gpt.safetensors, with
load_state_dict(strict=True) into the same GPT built from torch.nn layers) and computes the same
held-out bits per byte as hpf reported (the file's metadata), within --tolerance (relative).

  check_language_model.py --model language-model/gpt.safetensors [--text a.txt,b.txt] [--held-out 0.05]
"""
import argparse
import math
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "benchmarks"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from compare_pytorch import read_safetensors  # noqa: E402
from pytorch_language_model import DEFAULT_TEXT  # noqa: E402
from torch_reference import gpt, text_windows  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--text", default=DEFAULT_TEXT)
    p.add_argument("--held-out", type=float, default=0.05)
    p.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args()
    tensors, metadata = read_safetensors(args.model)
    model = gpt(4, 64, 4, 64, 256)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    model.eval()
    text = b"".join(open(path, "rb").read() for path in args.text.split(","))
    x, y = text_windows(text[len(text) - int(args.held_out * len(text)):], 64)
    total = 0.0
    with torch.no_grad():
        for first in range(0, len(x), 256):
            logits = model(x[first:first + 256])
            total += F.cross_entropy(logits.reshape(-1, 256), y[first:first + 256].reshape(-1), reduction="sum").item()
    ours, theirs = total / y.numel() / math.log(2), float(metadata["held_out_bits_per_byte"])
    difference = abs(ours - theirs) / theirs
    print(f"held-out bits per byte: hpf {theirs:.7f}, PyTorch from hpf's weights {ours:.7f} (relative difference "
          f"{difference:.2e}, tolerance {args.tolerance:.0e})")
    if difference > args.tolerance:
        print("FAIL: PyTorch computes another held-out loss from hpf's model")
        return 1
    print("OK: PyTorch loads hpf's GPT (strict) and reproduces its held-out loss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
