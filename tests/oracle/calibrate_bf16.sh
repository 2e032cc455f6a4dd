#!/bin/bash
# hpf-oracle with --precision bf16: a profile without bf16 calibration is refused, naming the bf16
# key it lacks; calibrate --precision bf16 adds the model's units under their bf16 keys, beside the
# float ones (left as they were), with the copies their products staged (the memory model's), and
# predict --precision bf16 then reads them.
# usage: calibrate_bf16.sh HPF_ORACLE PROFILE PYTHON
set -euo pipefail
oracle=$1 profile=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$profile" "$work/profile.json"
predict=(predict --model cnn --ranks 2 --batch 64 --stages 1 --micro-batches 1 --precision bf16 --profile "$work/profile.json")
if "$oracle" "${predict[@]}" > "$work/refused.txt" 2>&1; then
  echo "FAIL: predict --precision bf16 ran on a profile without bf16 calibration"; exit 1
fi
grep -q "has no calibration of 'Conv2D.*\[bf16 products\]'" "$work/refused.txt" ||
  { echo "FAIL: the refusal does not name a bf16 key:"; cat "$work/refused.txt"; exit 1; }
"$oracle" calibrate --model cnn --batches 1,2 --precision bf16 --profile "$work/profile.json" | tee "$work/out.txt"
grep -q '\[bf16 products\]' "$work/out.txt" || { echo "FAIL: calibrate printed no bf16 unit"; exit 1; }
"$python" - "$profile" "$work/profile.json" <<'PY'
import json, math, sys
before, after = (json.load(open(p))["compute"]["units"] for p in sys.argv[1:3])
bf16 = {n: u for n, u in after.items() if n.endswith(" [bf16 products]")}
if not any(n.startswith("Conv2D") for n in bf16) or not any(n.startswith("Dense") for n in bf16):
    sys.exit(f"FAIL: no bf16 convolution or dense unit: {sorted(bf16)}")
for name, unit in bf16.items():
    times = unit["forward_s"] + unit["backward_s"]
    if not all(math.isfinite(t) and t >= 0 for t in times) or sum(times) <= 0:
        sys.exit(f"FAIL: {name}: times {times}")
    staged = [unit.get(k) for k in ("bf16_rounded_a", "bf16_rounded_b", "bf16_bits")]
    if any(s is None or len(s) != len(unit["batch"]) for s in staged):
        sys.exit(f"FAIL: {name}: no staged copies per batch size: {staged}")
    if name.startswith("Dense") and not all(a + b + h > 0 for a, b, h in zip(*staged)):
        sys.exit(f"FAIL: {name}: a Dense layer's products staged nothing: {staged}")
changed = [n for n, u in before.items() if after.get(n) != u]
if changed:
    sys.exit(f"FAIL: float units changed by a bf16 calibration: {changed}")
print(f"PASS: {len(bf16)} bf16 units, float units unchanged")
PY
"$oracle" "${predict[@]}" | tee "$work/predicted.txt"
grep -q "bf16 products" "$work/predicted.txt" || { echo "FAIL: predict does not say it priced bf16 products"; exit 1; }
echo "PASS: predict --precision bf16 read the bf16 calibration"
