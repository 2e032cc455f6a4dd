#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks a machine profile written by run_comm_benchmark.py: its format and version, and for
every primitive and rank count at least one regime whose alpha and beta are finite and positive,
with finite fit errors and contiguous, increasing size ranges (p2p_rested only where present: older
profiles lack it); a "link" object, where present, holds finite, non-negative numbers. Exits 1 and
lists the problems.

  /usr/bin/python3 benchmarks/comm/check_profile.py benchmarks/comm/profiles/local.json --ranks 2,4
"""
import argparse
import json
import math
import sys

FORMAT, VERSION = "hpf-machine-profile", 1
PRIMITIVES = ("p2p_latency", "p2p_bandwidth", "bibw", "allreduce", "buckets_ordered", "buckets_allreduce")
OPTIONAL = ("p2p_rested",)


def positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def problems(profile, ranks=()):
    """Everything wrong with `profile` (a parsed JSON object); empty when it is usable."""
    found = []
    if profile.get("format") != FORMAT or profile.get("version") != VERSION:
        found.append(f"format/version is {profile.get('format')!r}/{profile.get('version')!r}, "
                     f"expected {FORMAT!r}/{VERSION}")
    if "hosts_share_cores" in profile and not isinstance(profile["hosts_share_cores"], bool):
        found.append(f"hosts_share_cores is {profile['hosts_share_cores']!r}, expected true or false")
    comm = profile.get("comm")
    if not isinstance(comm, dict):
        return found + ["no 'comm' object"]
    link = profile.get("link")
    if link is not None:
        if not isinstance(link, dict):
            found.append(f"link is {link!r}, expected an object")
        else:
            for key in ("burst_bytes", "rested_alpha_s", "rested_beta_s_per_byte", "compute_s_per_byte"):
                value = link.get(key, 0)
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                    found.append(f"link.{key} = {value!r} is not finite and >= 0")
    for primitive in PRIMITIVES + tuple(p for p in OPTIONAL if p in comm):
        per_ranks = comm.get(primitive)
        if not isinstance(per_ranks, dict) or not per_ranks:
            found.append(f"{primitive}: missing")
            continue
        for r in ranks:
            if str(r) not in per_ranks:
                found.append(f"{primitive}: no fit for {r} ranks")
        for r, regimes in per_ranks.items():
            if not isinstance(regimes, list) or not regimes:
                found.append(f"{primitive} on {r} ranks: no regimes")
                continue
            previous_max = 0
            for i, regime in enumerate(regimes):
                where = f"{primitive} on {r} ranks, regime {i}"
                for key in ("alpha_s", "beta_s_per_byte"):
                    if not positive(regime.get(key)):
                        found.append(f"{where}: {key} = {regime.get(key)!r} is not finite and positive")
                for key in ("mean_rel_error", "max_rel_error"):
                    value = regime.get(key)
                    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                        found.append(f"{where}: {key} = {value!r} is not a finite error")
                low, high = regime.get("min_bytes"), regime.get("max_bytes")
                if not (positive(low) and positive(high) and previous_max < low <= high):
                    found.append(f"{where}: sizes {low!r}..{high!r} do not follow {previous_max}")
                else:
                    previous_max = high
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", help="machine profile JSON")
    p.add_argument("--ranks", default="", help="rank counts every primitive must have, e.g. 2,4")
    args = p.parse_args()
    try:
        with open(args.profile) as f:
            profile = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_profile: cannot read {args.profile}: {e}", file=sys.stderr)
        return 1
    ranks = [int(r) for r in args.ranks.split(",") if r]
    found = problems(profile, ranks)
    for problem in found:
        print(f"check_profile: {args.profile}: {problem}", file=sys.stderr)
    if not found:
        print(f"check_profile: {args.profile}: {len(PRIMITIVES)} primitives, every fit finite and positive")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
