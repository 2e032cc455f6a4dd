#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A minimal iperf-like TCP rate check between two emulated hosts (scripts/fabric/emulate.sh
`check`), for machines without iperf3 or nc: one connection, the sender writes 1 MiB blocks for
a fixed time, the receiver counts bytes from the first to the last and prints the rate.

  tcp_rate.py receive PORT [--timeout S]          prints "RESULT bytes=... seconds=... gbit_per_s=..."
  tcp_rate.py send ADDRESS PORT [--seconds S]     sends for S seconds (default 2), then closes

Both sides give up after --timeout seconds (default 30) without progress, so a broken fabric
cannot hang the check.
"""
import argparse
import socket
import sys
import time

BLOCK = 1 << 20


def receive(port, timeout):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("0.0.0.0", port))
        server.listen(1)
        server.settimeout(timeout)
        print("listening", flush=True)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(timeout)
            buffer = bytearray(BLOCK)
            total, start, last = 0, None, None
            while True:
                n = conn.recv_into(buffer)
                if n == 0:
                    break
                last = time.monotonic()
                start = start or last
                total += n
    seconds = (last - start) if start and last and last > start else float("nan")
    print(f"RESULT bytes={total} seconds={seconds:.3f} gbit_per_s={8e-9 * total / seconds:.3f}", flush=True)


def send(address, port, seconds, timeout):
    block = b"\0" * BLOCK
    deadline = time.monotonic() + timeout
    while True:  # the receiver may still be starting
        try:
            conn = socket.create_connection((address, port), timeout=timeout)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(block)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("receive")
    r.add_argument("port", type=int)
    s = sub.add_parser("send")
    s.add_argument("address")
    s.add_argument("port", type=int)
    s.add_argument("--seconds", type=float, default=2.0)
    for q in (r, s):
        q.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    if args.mode == "receive":
        receive(args.port, args.timeout)
    else:
        send(args.address, args.port, args.seconds, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
