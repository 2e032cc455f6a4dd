#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch's side of the language-model comparison: examples/03_language_model's GPT (4 blocks of 4
heads, 64 features, 64 bytes of context) built from torch.nn layers and trained with its settings
(Adam lr 3e-3, batch 32, the first 95 % of the text's bytes in windows of 65, reshuffled each
epoch, 300 steps), then the bits per byte on the held-out 5 %, per seed, on one thread; with
--precision bf16 the forward passes run under torch.autocast("cpu", dtype=torch.bfloat16), the
loss in float.

  /usr/bin/python3 benchmarks/pytorch_language_model.py --seeds 0 1 2 3 4 [--precision bf16]
"""
import argparse
import math
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_reference import gpt, text_windows  # noqa: E402

FORTUNES = "/usr/share/games/fortunes"
DEFAULT_TEXT = ",".join(os.path.join(FORTUNES, n) for n in
                        ("fortunes", "literature", "wisdom", "people", "science", "songs-poems"))


def bits_per_byte(seed, args):
    bf16 = args.precision == "bf16"
    torch.manual_seed(seed)
    text = b"".join(open(path, "rb").read() for path in args.text.split(","))
    split = len(text) - int(args.held_out * len(text))
    train_x, train_y = text_windows(text[:split], args.context)
    test_x, test_y = text_windows(text[split:], args.context)
    model = gpt(4, 64, 4, args.context, 256)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    model.train()
    order, step = torch.randperm(len(train_x)), 0
    while step < args.steps:
        for first in range(0, len(order) - args.batch + 1, args.batch):
            if step == args.steps:
                break
            rows = order[first:first + args.batch]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(train_x[rows])
            loss = F.cross_entropy(logits.float().reshape(-1, 256), train_y[rows].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        order = torch.randperm(len(train_x))
    model.eval()
    total = 0.0
    with torch.no_grad():
        for first in range(0, len(test_x), 256):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(test_x[first:first + 256])
            total += F.cross_entropy(logits.float().reshape(-1, 256), test_y[first:first + 256].reshape(-1), reduction="sum").item()
    return total / test_y.numel() / math.log(2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--text", default=DEFAULT_TEXT, help="comma-separated text files (the example's default)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--held-out", type=float, default=0.05)
    p.add_argument("--precision", default="float", choices=["float", "bf16"],
                   help="bf16: forward passes under torch.autocast('cpu', dtype=torch.bfloat16)")
    args = p.parse_args()
    torch.set_num_threads(1)
    for seed in args.seeds:
        print(f"RESULT framework=pytorch seed={seed} precision={args.precision} "
              f"bits_per_byte={bits_per_byte(seed, args):.6f}", flush=True)


if __name__ == "__main__":
    main()
