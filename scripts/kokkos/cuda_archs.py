#!/usr/bin/python3
"""List the GPU architectures of the device code embedded in ELF files.

A stand-in for `cuobjdump --list-elf --list-ptx`, which this machine lacks.
Reads the `.nv_fatbin` section (and `__nv_relfatbin`, used for relocatable
device code) of executables, shared libraries and objects, or a bare
`.fatbin` file or a bare `.cubin`; static libraries (`.a`) are read member by member.
Prints one line per file:

    ./app: ELF sm_90 x15, PTX sm_90 x14

Exit status: 0 when every file was read (and, with --expect, every file holds
device code only for the expected architectures and for each of them); 1 when a
check fails; 2 on unreadable or malformed input.

Fatbin layout (reverse-engineered, little-endian; checked against nvcc 13.0):
  container header, 16 bytes:
    u32 magic 0xBA55ED50, u16 version (1), u16 header size (16),
    u64 size of the entries that follow
  entry header (64 bytes for cubins, 80 for PTX; the size is in the header):
    +0  u16 kind: 1 = PTX, 2 = ELF (cubin)
    +2  u16 (unknown, 0x0101)
    +4  u32 entry header size
    +8  u64 payload size (bytes after the entry header)
    +16 u32 compressed size (0 unless compressed)
    +20 u32 (unknown)
    +24 u16 minor, u16 major: version of the PTX ISA / cubin format
    +28 u32 arch: 90 for sm_90 / compute_90
    +32 u32 offset and +36 u32 length of an object name (0 if none)
    +40 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux, 0x2000 compressed
            (older nvcc, per public fatbin decompressors), 0x8000 compressed
            (zstd; nvcc 13 compresses PTX by default),
            0x100000 arch-specific target (sm_90a: same arch number 90)
    +48 u64 (zero)
    +56 u64 decompressed size
A section holds one container per translation unit (concatenated, 8-byte aligned). For uncompressed cubins the
embedded ELF header is read as a cross-check (EM_CUDA; CUDA 13 writes
ELFOSABI 0x41 with the SM number in e_flags bits 8..15); `-v` shows any
disagreement. PTX is listed as sm_XX, as cuobjdump does.
"""

import argparse
import re
import signal
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_NAMES = {1: "PTX", 2: "ELF"}
FLAG_COMPRESSED = 0x2000 | 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
EM_CUDA = 190
SECTIONS = (".nv_fatbin", "__nv_relfatbin")


class FormatError(Exception):
    pass


def elf_sections(data):
    """Yield (name, bytes) for each section of a 64-bit little-endian ELF."""
    if data[:4] != b"\x7fELF":
        raise FormatError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise FormatError("only 64-bit little-endian ELF is supported")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shnum == 0:
        return
    headers = []
    for i in range(shnum):
        name, stype, _flags, _addr, offset, size = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize)
        headers.append((name, stype, offset, size))
    strtab = headers[shstrndx]
    for name_off, stype, offset, size in headers:
        start = strtab[2] + name_off
        name = data[start:data.index(b"\0", start)].decode("ascii", "replace")
        body = b"" if stype == 8 else data[offset:offset + size]  # SHT_NOBITS
        yield name, body


def cubin_arch(payload):
    """sm_XX from an embedded cubin's ELF header, or None."""
    if len(payload) < 64 or payload[:4] != b"\x7fELF":
        return None
    if struct.unpack_from("<H", payload, 18)[0] != EM_CUDA:
        return None
    flags = struct.unpack_from("<I", payload, 48)[0]
    if payload[7] == 0x41:  # CUDA 13 (seen): SM number in bits 8..15
        return "sm_%d" % ((flags >> 8) & 0xFF)
    return "sm_%d" % (flags & 0xFF)  # older ABI: SM number in the low byte


def ptx_target(payload):
    m = re.search(rb"^\s*\.target\s+(sm_\w+)", payload[:4096], re.M)
    return m.group(1).decode() if m else None


def parse_fatbin(blob, where):
    """Yield one dict per entry of the containers in blob."""
    pos = 0
    while pos + 16 <= len(blob):
        magic, version, hsize, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            if blob[pos:pos + 8].strip(b"\0") == b"":  # alignment padding
                pos += 8
                continue
            raise FormatError("%s: bad fatbin magic 0x%08x at offset %d"
                              % (where, magic, pos))
        end = pos + hsize + size
        if end > len(blob):
            raise FormatError("%s: fatbin at offset %d overruns the section"
                              % (where, pos))
        entry = pos + hsize
        while entry + 64 <= end:
            (kind, _u1, ehsize, psize, csize, _u2, minor, major, arch,
             _noff, _nlen, flags) = struct.unpack_from("<HHIQIIHHIIIQ", blob, entry)
            if ehsize < 64 or entry + ehsize + psize > end:
                raise FormatError("%s: bad entry header at offset %d"
                                  % (where, entry))
            payload = blob[entry + ehsize:entry + ehsize + psize]
            compressed = bool(flags & FLAG_COMPRESSED) or csize != 0
            detail = None
            if not compressed:
                detail = cubin_arch(payload) if kind == 2 else ptx_target(payload)
            kind_name = KIND_NAMES.get(kind, "kind%d" % kind)
            name = "sm_%d%s" % (arch, "a" if flags & FLAG_ARCH_SPECIFIC else "")
            yield {
                "kind": kind_name, "arch": name,
                "detail": detail, "version": "%d.%d" % (major, minor),
                "size": psize, "compressed": compressed, "flags": flags,
            }
            entry += ehsize + psize
        pos = end


def ar_members(data):
    """Yield (name, bytes) for each member of a System V / GNU ar archive."""
    pos, longnames = 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii", "replace").rstrip()
        size = int(header[48:58].decode("ascii").strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name == "//":
            longnames = body
        elif name in ("/", "/SYM64/"):
            continue  # symbol tables
        else:
            if name.startswith("/") and name[1:].isdigit():
                start = int(name[1:])
                name = longnames[start:longnames.index(b"/\n", start)].decode()
            yield name.rstrip("/"), body


def elf_entries(data, where):
    arch = cubin_arch(data)
    if arch:  # a bare cubin (nvcc -cubin): the file itself is the device code
        return [{"kind": "ELF", "arch": arch, "detail": arch, "version": "-", "size": len(data),
                 "compressed": False, "flags": 0}]
    found = []
    for name, body in elf_sections(data):
        if name in SECTIONS:
            found.extend(parse_fatbin(body, "%s:%s" % (where, name)))
    return found


def entries_of(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == struct.pack("<I", FATBIN_MAGIC):
        return list(parse_fatbin(data, path))
    if data[:8] == b"!<arch>\n":  # static library: every ELF member
        found = []
        for name, body in ar_members(data):
            if body[:4] == b"\x7fELF":
                found.extend(elf_entries(body, "%s(%s)" % (path, name)))
        return found
    return elf_entries(data, path)


def summary(entries):
    counts = {}
    for e in entries:
        key = (e["kind"], e["arch"])
        counts[key] = counts.get(key, 0) + 1
    def key(k):
        number = int(re.match(r"sm_(\d+)", k[1]).group(1))
        return (k[0] != "ELF", number, k[1])
    order = sorted(counts, key=key)
    return ", ".join("%s %s x%d" % (k[0], k[1], counts[k]) for k in order)


def normalise(arch):
    arch = arch.strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+[a-z]?)", arch)
    if not m:
        raise argparse.ArgumentTypeError("bad architecture %r (want e.g. sm_90)" % arch)
    return "sm_" + m.group(1)


def main(argv):
    ap = argparse.ArgumentParser(
        description="List the SM architectures of the cubins and PTX embedded "
                    "in ELF files (.nv_fatbin), static libraries or bare fatbin files.")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--expect", action="append", type=normalise, default=[],
                    metavar="SM",
                    help="fail unless each file has device code and all of it "
                         "is for these architectures (sm_90 or 90; repeatable)")
    ap.add_argument("--allow-empty", action="store_true",
                    help="with --expect, accept files without any device code")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every fatbin entry")
    args = ap.parse_args(argv)

    status = 0
    expected = set(args.expect)
    for path in args.files:
        try:
            entries = entries_of(path)
        except (OSError, FormatError, struct.error, ValueError) as e:
            print("%s: error: %s" % (path, e), file=sys.stderr)
            status = max(status, 2)
            continue
        print("%s: %s" % (path, summary(entries) if entries else "no device code"))
        if args.verbose:
            for e in entries:
                print("  %-3s %-8s version %-5s %9d bytes%s%s" % (
                    e["kind"], e["arch"], e["version"], e["size"],
                    " compressed" if e["compressed"] else "",
                    "" if not e["detail"] or e["arch"].startswith(e["detail"])
                    else " (payload says %s)" % e["detail"]))
        if not expected:
            continue
        if not entries:
            if not args.allow_empty:
                print("%s: FAIL: no device code" % path, file=sys.stderr)
                status = max(status, 1)
            continue
        # sm_90 matches cubins for sm_90 and PTX for compute_90; sm_90a is distinct
        archs = {e["arch"] for e in entries}
        foreign = sorted(archs - expected)
        missing = sorted(expected - archs)
        if foreign or missing:
            print("%s: FAIL:%s%s" % (
                path,
                " unexpected " + ",".join(foreign) if foreign else "",
                " missing " + ",".join(missing) if missing else ""),
                file=sys.stderr)
            status = max(status, 1)
    return status


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    sys.exit(main(sys.argv[1:]))
