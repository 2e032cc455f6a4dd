#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of hpf's fuzz targets: tests/fuzz/corpus/<target>/seed-*, small valid
files as users have them (IDX images and labels, raw and gzip; safetensors files as hpf and
PyTorch write them; JSON headers and checkpoint index files). Reproducible byte for byte (gzip
with mtime 0). Other files there (the inputs of fixed findings, regress-*) are left alone.

    /usr/bin/python3 tests/fuzz/make_corpus.py [--check]

--check: write nothing, fail if a committed seed differs from what this script makes.
"""
import gzip
import json
import struct
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def idx(dims, data):
    """An IDX file of unsigned bytes: 0, 0, 0x08, rank, big-endian dims, data."""
    assert len(data) == _product(dims)
    return bytes([0, 0, 0x08, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def _product(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def npy(descr, shape, data, version=1):
    """A .npy file as numpy's writer lays it out: magic, version, header length (2 bytes for
    version 1, else 4), the dict padded with spaces and a newline to a multiple of 64, data."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    prefix = 10 if version == 1 else 12
    text += " " * ((64 - (prefix + len(text) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text.encode() + data


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, raw bytes)] in data order; header as hpf's save() writes it
    (compact JSON padded with spaces to a multiple of 8) or as PyTorch's writer does (pad=False)."""
    header, offset, data = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def seeds():
    pattern = [(7 * i + i // 13) % 256 for i in range(64)]
    yield "idx", "seed-images-3x4x4.idx", idx([3, 4, 4], pattern[:48])
    yield "idx", "seed-labels-5.idx", idx([5], [3, 1, 4, 1, 5])
    yield "idx", "seed-images-2x3x3.idx.gz", gz(idx([2, 3, 3], pattern[:18]))
    yield "idx", "seed-labels-4.idx.gz", gz(idx([4], [9, 0, 2, 7]))
    yield "idx", "seed-rank4-2x2x2x2.idx", idx([2, 2, 2, 2], pattern[:16])

    f32 = struct.pack("<6f", 0.5, -1.25, 3.0, 0.0, 1e-3, -7.5)
    yield "npy", "seed-f4-3x2.npy", npy("<f4", [3, 2], f32)
    yield "npy", "seed-i8-labels-4.npy", npy("<i8", [4], struct.pack("<4q", 3, 0, 9, 1))
    yield "npy", "seed-u1-2x2x2x3-v2.npy", npy("|u1", [2, 2, 2, 3], bytes(pattern[:24]), version=2)
    yield "npy", "seed-f8-scalar-v3.npy", npy("<f8", [], struct.pack("<d", 2.5), version=3)
    yield "npy", "seed-b1-empty.npy", npy("|b1", [0, 5], b"")
    i64 = struct.pack("<3q", 1, -2, 1 << 40)
    yield "safetensors", "seed-f32-i64-metadata.safetensors", safetensors(
        [("layer.0.weight", "F32", [2, 3], f32), ("layer.1.num_batches_tracked", "I64", [3], i64)],
        metadata={"format": "pt", "hpf.step": "7"})
    yield "safetensors", "seed-pytorch-unpadded.safetensors", safetensors(
        [("bias", "F64", [2], struct.pack("<2d", 0.25, -4.0)), ("mask", "BOOL", [3], b"\x01\x00\x01")], pad=False)
    yield "safetensors", "seed-scalar-empty-bf16.safetensors", safetensors(
        [("empty", "U8", [0, 4], b""), ("scalar", "F32", [], struct.pack("<f", 2.0)),
         ("half", "BF16", [2], b"\x80\x3f\x00\x40"), ("\u00e9t\u00e9", "I16", [1], b"\xff\x7f")],
        metadata={})
    yield "safetensors", "seed-ints.safetensors", safetensors(
        [("a", "I8", [2], b"\x80\x7f"), ("b", "U16", [1], b"\x01\x02"), ("c", "I32", [1, 1], b"\x01\x00\x00\x80"),
         ("d", "U32", [1], b"\xff\xff\xff\xff"), ("e", "U64", [1], b"\x01" * 8), ("f", "F16", [1], b"\x00\x3c")])

    index = {"metadata": {"total_size": 1234, "format": "hpf"},
             "weight_map": {"a.weight": "stage-0.safetensors", "a.bias": "stage-0.safetensors",
                            "b.weight": "stage-1.safetensors"}}
    yield "json", "seed-index.json", json.dumps(index, indent=2).encode()
    checkpoint_index = {
        "metadata": {"format": "hpf-checkpoint", "format_version": 1, "total_size": 24, "model": "hpf::Sequential<...>"},
        "weight_map": {"0.weight": "model-00001-of-00002.safetensors", "2.bias": "model-00002-of-00002.safetensors"},
        "optimizer_map": {"0.weight.exp_avg": "optimizer-00001-of-00002.safetensors"},
        "files": {"model-00001-of-00002.safetensors": {"bytes": 16, "crc32": 3632233996},
                  "model-00002-of-00002.safetensors": {"bytes": 8, "crc32": 0},
                  "optimizer-00001-of-00002.safetensors": {"bytes": 16, "crc32": 1},
                  "training_state.json": {"bytes": 250, "crc32": 4294967295}}}
    yield "json", "seed-checkpoint-index.json", json.dumps(checkpoint_index, indent=2).encode()
    state = {"format": "hpf-checkpoint", "format_version": 1, "epoch": 2, "step": 5, "global_step": 37,
             "samples": 4736, "optimizer": "adam(learning_rate=0.001)", "optimizer_steps": 37, "data_shards": 2,
             "data_seed": 42, "stages": 2}
    yield "json", "seed-training-state.json", json.dumps(state, indent=2).encode()
    yield "json", "seed-safetensors-header.json", b'{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],' \
                                                  b'"data_offsets":[0,24]}}'
    yield "json", "seed-strings.json", '["plain", "esc \\" \\\\ \\/ \\b \\f \\n \\r \\t", "\\u00e9\\u20ac", ' \
                                       '"\\ud83d\\ude00", "raw \u00fc\u6f22"]'.encode()
    yield "json", "seed-numbers.json", b"[0, -0, 7, -12, 3.25, -0.5e+3, 1E9, 2e-7, 18446744073709551615, " \
                                       b"18446744073709551616]"
    yield "json", "seed-literals-nesting.json", b' \t\n{"a": [true, false, null, {}, []], "b": {"c": [[[1]]]}} \r\n'


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for target, name, data in seeds():
        path = CORPUS / target / name
        if check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if stale:
        sys.exit("make_corpus.py: these seeds differ from what the script makes: " + ", ".join(stale))


if __name__ == "__main__":
    main()
