#!/bin/bash
# hpf-oracle calibrate --split filter:2 adds one member's part of the MLP's layers under keys of
# their own (" [filter:2 member]"), leaving the whole layers' as they were, and predict --split
# filter:2 then reads them: its step changes, and a member's Dense layer takes about as long as the
# whole layer or less (its absent peer's part is zeros, not stale values).
# usage: calibrate_split.sh HPF_ORACLE PROFILE PYTHON
set -euo pipefail
oracle=$1 profile=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$profile" "$work/profile.json"
calibrate() { "$oracle" calibrate --model mlp --batches 1,2,4,8,16,32 --profile "$work/profile.json" "$@"; }
step() {  # the predicted step of the MLP's filter split on 2 ranks, from the copy
  "$oracle" predict --model mlp --ranks 2 --batch 64 --stages 1 --micro-batches 1 --split filter:2 --json \
    --profile "$work/profile.json" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["time_s"])'
}
calibrate > /dev/null  # the whole layers, on this machine
cp "$work/profile.json" "$work/whole.json"
before=$(step)
calibrate --split filter:2 | tee "$work/out.txt"
grep -Eq "calibrated mlp \(one member's part of a filter split over 2\) on .* samples in [0-9.]+ s" "$work/out.txt" ||
  { echo "FAIL: no 'calibrated mlp (one member's part ...)' line"; exit 1; }
"$python" - "$work/whole.json" "$work/profile.json" <<'PY'
import json, math, sys
before, after = (json.load(open(p))["compute"]["units"] for p in sys.argv[1:3])
members = {n: u for n, u in after.items() if n.endswith(" [filter:2 member]")}
if not any(n.startswith("Dense") for n in members):
    sys.exit(f"FAIL: no member's Dense unit: {sorted(members)}")
for name, unit in members.items():
    times = unit["forward_s"] + unit["backward_s"]
    if not all(math.isfinite(t) and t >= 0 for t in times) or sum(times) <= 0:
        sys.exit(f"FAIL: {name}: times {times}")
changed = [n for n, u in before.items() if after.get(n) != u]
if changed:
    sys.exit(f"FAIL: the whole layers' units changed by a member's calibration: {changed}")
# Half the outputs of the 512 x 512 layer at 32 samples: below 1.5 x the whole layer's time (with
# stale values in the absent half it took 25 times as long).
name = "Dense(512 -> 512) @ 512"
at = lambda u: u["forward_s"][u["batch"].index(32)] + u["backward_s"][u["batch"].index(32)]
whole, member = at(after[name]), at(members[name + " [filter:2 member]"])
if member > 1.5 * whole:
    sys.exit(f"FAIL: {name}: a member took {member:.3g} s, the whole layer {whole:.3g} s")
print(f"PASS: {len(members)} member units, the whole layers' unchanged; {name}: member {member:.3g} s, whole {whole:.3g} s")
PY
after=$(step)
echo "filter:2 predicted $before s, then $after s"
[ "$after" != "$before" ] || { echo "FAIL: predict --split filter:2 did not read the member's calibration"; exit 1; }
echo "PASS: predict --split filter:2 read the member's calibration"
