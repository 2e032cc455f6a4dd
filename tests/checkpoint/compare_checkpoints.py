#!/usr/bin/env python3
"""Compares two hpf checkpoints tensor by tensor, bit for bit, whatever layouts wrote them.

usage: compare_checkpoints.py A B
Every model and optimizer tensor named in either index must be in both, with the same dtype,
shape and bytes; the training states must agree on where training stands. Exit 1 otherwise,
naming the first differences. Standard library only.
"""
import json
import os
import struct
import sys


def tensors(directory):
    with open(os.path.join(directory, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    headers = {}
    for name, file in list(index["weight_map"].items()) + list(index["optimizer_map"].items()):
        path = os.path.join(directory, file)
        if path not in headers:
            with open(path, "rb") as f:
                (length,) = struct.unpack("<Q", f.read(8))
                headers[path] = (json.loads(f.read(length)), 8 + length)
        header, start = headers[path]
        entry = header[name]
        begin, end = entry["data_offsets"]
        with open(path, "rb") as f:
            f.seek(start + begin)
            out[name] = (entry["dtype"], tuple(entry["shape"]), f.read(end - begin))
    return out


def main():
    a, b = sys.argv[1], sys.argv[2]
    ta, tb = tensors(a), tensors(b)
    problems = []
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            problems.append(f"{name}: only in {a if name in ta else b}")
        elif ta[name] != tb[name]:
            problems.append(f"{name}: differs ({ta[name][0]} {ta[name][1]} vs {tb[name][0]} {tb[name][1]})")
    keys = ["epoch", "step", "global_step", "samples", "optimizer_steps", "optimizer"]
    sa, sb = (json.load(open(os.path.join(d, "training_state.json"))) for d in (a, b))
    for k in keys:
        if sa[k] != sb[k]:
            problems.append(f"training state {k}: {sa[k]} vs {sb[k]}")
    if problems:
        print(f"checkpoints differ ({len(problems)} problems):")
        for p in problems[:20]:
            print("  " + p)
        return 1
    print(f"identical: {len(ta)} tensors, bit for bit; step {sa['global_step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
