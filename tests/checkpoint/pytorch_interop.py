#!/usr/bin/env python3
"""hpf checkpoints and PyTorch, both ways (tests/checkpoint/train_checkpointed.cpp's CNN):
  1. hpf trains and checkpoints; PyTorch loads the checkpoint (the index's weight_map over the
     stage files) into the equivalent nn.Module with load_state_dict(strict=True) and gets the
     same test accuracy and loss;
  2. PyTorch trains its own weights; hpf loads them (a safetensors file of the state_dict) and
     gets the same test accuracy and loss.
usage: pytorch_interop.py DRIVER WORKDIR   (run with an interpreter that has torch and numpy)
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
from compare_pytorch import read_safetensors  # noqa: E402


def model():
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(256, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))


def evaluate(net, images, labels):
    net.eval()
    with torch.no_grad():
        out = net(images)
        loss = torch.nn.functional.cross_entropy(out, labels, reduction="mean").item()
        accuracy = (out.argmax(1) == labels).double().mean().item()
    return accuracy, loss


def hpf_result(output):
    line = [l for l in output.splitlines() if l.startswith("test accuracy")][-1].split()
    return float(line[2]), float(line[4])


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        a = t.detach().numpy()
        dtype = {np.float32: "F32", np.int64: "I64"}[a.dtype.type]
        data = a.tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def check(what, ours, theirs):
    (a1, l1), (a2, l2) = ours, theirs
    ok = a1 == a2 and abs(l1 - l2) <= 1e-5 * max(1.0, abs(l1))
    print(f"{'ok' if ok else 'FAIL'}: {what}: accuracy {a1:.4f} vs {a2:.4f}, loss {l1:.7f} vs {l2:.7f}")
    return ok


def main():
    driver, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    test_file = os.path.join(work, "test.safetensors")
    run = subprocess.run([driver, "--layout", "trainer", "--dir", os.path.join(work, "ckpt"), "--export-test", test_file],
                         capture_output=True, text=True, check=True, timeout=300)
    hpf_trained = hpf_result(run.stdout)
    test, _ = read_safetensors(test_file)
    images, labels = torch.from_numpy(test["images"].copy()), torch.from_numpy(test["labels"].copy())

    checkpoint = os.path.join(work, "ckpt", "step-00000024")
    with open(os.path.join(checkpoint, "model.safetensors.index.json")) as f:
        index = json.load(f)
    state = {}
    for shard in sorted(set(index["weight_map"].values())):
        tensors, _ = read_safetensors(os.path.join(checkpoint, shard))
        state.update({name: torch.from_numpy(a.copy()) for name, a in tensors.items()})
    net = model()
    net.load_state_dict(state, strict=True)
    ok = check("hpf checkpoint evaluated in PyTorch", hpf_trained, evaluate(net, images, labels))

    torch.manual_seed(0)
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    net.train()
    for step in range(30):  # PyTorch's own training, on the test images (any data will do)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(images), labels).backward()
        optimizer.step()
    torch_trained = evaluate(net, images, labels)
    weights = os.path.join(work, "pytorch.safetensors")
    write_safetensors(weights, net.state_dict())
    run = subprocess.run([driver, "--layout", "trainer", "--evaluate-weights", weights], capture_output=True, text=True,
                         check=True, timeout=300)
    ok &= check("PyTorch-trained weights evaluated in hpf", torch_trained, hpf_result(run.stdout))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
