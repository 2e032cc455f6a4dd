#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch's Fashion-MNIST test accuracy after E epochs over several seeds, with the settings of
docs/reference.md (x/255, torch.randperm per epoch, last partial batch kept, SGD lr 0.05 momentum
0.9, PyTorch's default init), on one thread. The spread over seeds is what an accuracy check of
hpf must allow for: one seed's figure (88.6 % for the CNN) is one draw of it.

  /usr/bin/python3 benchmarks/pytorch_accuracy.py --model cnn --seeds 0 1 2 3 4
  /usr/bin/python3 benchmarks/pytorch_accuracy.py --model cnn --precision bf16   # under autocast
  /usr/bin/python3 benchmarks/pytorch_accuracy.py --model resnet20 --seeds 0
"""
import argparse
import os
import statistics

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402

from torch_reference import CifarResNet, cnn, mlp, read_idx  # noqa: E402


def load(data_dir, split):
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    return torch.from_numpy(images.copy()).unsqueeze(1).float().div_(255.0), torch.from_numpy(labels.astype("int64"))


def accuracy_after(model_name, seed, epochs, data_dir, bf16=False):
    torch.manual_seed(seed)
    model = {"mlp": mlp, "cnn": cnn, "resnet20": lambda: CifarResNet(20, in_channels=1)}[model_name]()
    batch = 128 if model_name == "mlp" else 64
    x, y = load(data_dir, "train")
    tx, ty = load(data_dir, "t10k")
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(x.shape[0], generator=order)
        for i in range(0, x.shape[0], batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = model(x[idx])
            torch.nn.functional.cross_entropy(out.float(), y[idx]).backward()
            opt.step()
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for i in range(0, tx.shape[0], 1000):  # in pieces: a ResNet's activations of 10,000 images take GiBs
            correct += (model(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum().item()
    return correct / tx.shape[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="cnn", choices=["mlp", "cnn", "resnet20"],
                   help="resnet20: ResNet-20's layers on the 1x28x28 images, as hpf_fashion_mnist --model resnet20")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--precision", default="float", choices=["float", "bf16"],
                   help="bf16: forward passes under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--data-dir", default=os.environ.get("HPF_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    torch.set_num_threads(1)
    results = []
    for seed in args.seeds:
        results.append(accuracy_after(args.model, seed, args.epochs, args.data_dir, args.precision == "bf16"))
        print(f"RESULT framework=pytorch model={args.model} epochs={args.epochs} seed={seed} "
              f"precision={args.precision} test_accuracy={100 * results[-1]:.2f}", flush=True)
    if len(results) > 1:
        print(f"pytorch {args.model} after {args.epochs} epoch(s): mean {100 * statistics.mean(results):.2f} %, "
              f"min {100 * min(results):.2f}, max {100 * max(results):.2f}, stdev {100 * statistics.stdev(results):.2f}")


if __name__ == "__main__":
    main()
