#!/bin/bash
# hpf-oracle calibrate into a copy of the profile: it must exit 0, say it calibrated, and leave a
# profile whose CNN units were timed again at the batches asked for, every time finite and not negative.
# usage: calibrate.sh HPF_ORACLE PROFILE PYTHON
set -euo pipefail
oracle=$1 profile=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$profile" "$work/profile.json"
"$oracle" calibrate --model cnn --batches 1,2 --profile "$work/profile.json" | tee "$work/out.txt"
grep -Eq 'calibrated cnn on fashion-mnist samples in [0-9.]+ s' "$work/out.txt" ||
  { echo "FAIL: no 'calibrated cnn' line"; exit 1; }
"$python" - "$profile" "$work/profile.json" <<'PY'
import json, math, sys
before, after = (json.load(open(p))["compute"]["units"] for p in sys.argv[1:3])
retimed = []
for name, unit in after.items():
    old = before.get(name)
    for b in (1, 2):
        if b not in unit["batch"]:
            continue
        k = unit["batch"].index(b)
        times = (unit["forward_s"][k], unit["backward_s"][k])
        if old is not None and b in old["batch"] and times == (old["forward_s"][old["batch"].index(b)],
                                                               old["backward_s"][old["batch"].index(b)]):
            continue  # not timed again (another model's unit, or the same value)
        # A pass may round to 0 (Flatten's backward), not both, and nothing may be negative or NaN.
        if not all(math.isfinite(t) and t >= 0 for t in times) or sum(times) <= 0:
            sys.exit(f"FAIL: {name} at batch {b}: times {times}")
        retimed.append(name)
conv = [n for n in set(retimed) if n.startswith("Conv2D")]
if not conv:
    sys.exit(f"FAIL: no convolution of the CNN was timed again (retimed: {sorted(set(retimed))})")
print(f"PASS: {len(set(retimed))} units timed again, {len(conv)} of them convolutions")
PY
