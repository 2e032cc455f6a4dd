#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes tests/data/npy/*.npy with numpy itself (numpy.save and numpy.lib.format.write_array),
so that test_npy.cpp checks hpf's reader against files numpy wrote, not only against its own
writer. Small and committed, so the tests need no Python.

    /usr/bin/python3 tests/data/make_npy_files.py [--check]

--check: write nothing, fail if a committed file differs from what this numpy writes.
"""
import io
import sys
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

OUT = Path(__file__).resolve().parent / "npy"


def saved(array, version=None):
    out = io.BytesIO()
    if version is None:
        np.save(out, array)
    else:
        npy_format.write_array(out, array, version=version)
    return out.getvalue()


def files():
    # The values test_npy.cpp expects: inputs[i][j] = i + j / 4 (exact in float32), labels 3 1 4 1 5.
    inputs = np.array([[i + j / 4 for j in range(3)] for i in range(5)], dtype=np.float32)
    yield "inputs-f4-5x3.npy", saved(inputs)
    yield "labels-i8-5.npy", saved(np.array([3, 1, 4, 1, 5], dtype=np.int64))
    yield "images-u1-4x2x3x3.npy", saved(np.arange(72, dtype=np.uint8).reshape(4, 2, 3, 3))
    yield "inputs-f8-v2.npy", saved(inputs.astype(np.float64), version=(2, 0))
    yield "labels-b1-v3.npy", saved(np.array([True, False, True]), version=(3, 0))
    yield "fortran-f4.npy", saved(np.asfortranarray(inputs))
    yield "big-endian-f4.npy", saved(inputs.astype(">f4"))
    yield "float16.npy", saved(inputs.astype(np.float16))


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    OUT.mkdir(exist_ok=True)
    for name, data in files():
        path = OUT / name
        if check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(str(path))
        else:
            path.write_bytes(data)
    if stale:
        sys.exit("make_npy_files.py: these files differ from what numpy " + np.__version__ + " writes: " + ", ".join(stale))


if __name__ == "__main__":
    main()
