#!/usr/bin/env python3
"""Writes Fashion-MNIST-named IDX files, one kind of damage per directory, for the example's
bad-input tests: usage make_bad_files.py OUT CASE, CASE one of
  wrong-magic      the training images start with a label file's magic number
  truncated        the training images stop in the middle of the pixels
  corrupt          the training images' gzip stream is damaged
  count-mismatch   100 training images but 99 labels
  label-range      a training label of 12 (Fashion-MNIST has 10 classes)
"""
import gzip
import os
import struct
import sys


def images(n, magic=0x00000803):
    return struct.pack(">IIII", magic, n, 28, 28) + bytes((i * 7) % 256 for i in range(n * 28 * 28))


def labels(n, top=9):
    return struct.pack(">II", 0x00000801, n) + bytes(min(i % 10, top) for i in range(n))


def main():
    out, case = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    files = {
        "train-images-idx3-ubyte.gz": gzip.compress(images(100)),
        "train-labels-idx1-ubyte.gz": gzip.compress(labels(100)),
        "t10k-images-idx3-ubyte.gz": gzip.compress(images(20)),
        "t10k-labels-idx1-ubyte.gz": gzip.compress(labels(20)),
    }
    train = "train-images-idx3-ubyte.gz"
    if case == "wrong-magic":
        files[train] = gzip.compress(images(100, magic=0x00000801))
    elif case == "truncated":
        files[train] = gzip.compress(images(100)[: 16 + 50 * 784 + 100])
    elif case == "corrupt":
        data = bytearray(files[train])
        for k in range(len(data) // 2, len(data) // 2 + 16):
            data[k] ^= 0xA5
        files[train] = bytes(data)
    elif case == "count-mismatch":
        files["train-labels-idx1-ubyte.gz"] = gzip.compress(labels(99))
    elif case == "label-range":
        data = bytearray(labels(100))
        data[8 + 3] = 12
        files["train-labels-idx1-ubyte.gz"] = gzip.compress(bytes(data))
    else:
        sys.exit(f"unknown case {case}")
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
