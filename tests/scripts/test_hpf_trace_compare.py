"""`hpf-trace compare` on the MPI timeline test's trace (CNN, Cuts<3>, 2 x 2, 4 micro-batches,
1F1B) against `hpf-oracle predict --json` for the same run: both must exit 0, and every row of the
table must hold the prediction's own figures and the trace's own (read independently, from the
prediction JSON and from `hpf-trace summary --json`), each term no larger than its step.
  usage: test_hpf_trace_compare.py HPF_ORACLE PROFILE TRACE"""
import json
import os
import re
import subprocess
import sys

oracle, profile, trace = sys.argv[1:4]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tool = os.path.join(root, "scripts", "hpf-trace")
prediction_path = os.path.abspath("hpf_trace_compare_prediction.json")
run = lambda *args: subprocess.run(list(args), check=True, capture_output=True, text=True).stdout
with open(prediction_path, "w") as f:
    f.write(run(oracle, "predict", "--model", "cnn", "--ranks", "4", "--batch", "32", "--stages", "2", "--cuts", "3",
                "--micro-batches", "4", "--schedule", "1f1b", "--profile", profile, "--json"))
prediction = json.load(open(prediction_path))
summary = json.loads(run(sys.executable, tool, "summary", "--json", trace))
table = run(sys.executable, tool, "compare", trace, prediction_path)
print(table)
rows = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4)))
        for m in re.finditer(r"^\| ([a-z][^|]*?) \| ([-0-9.]+) \| ([-0-9.]+) \| ([-+0-9.]+) \|$", table, re.M)}
ranks = summary["per_rank"].values()
busiest = max(ranks, key=lambda r: r["compute"])
expected = {"step": (1e3 * prediction["time_s"], max(r["step"] for r in ranks) / 1e3),
            "compute (busiest rank)": (1e3 * prediction["compute_s"], busiest["compute"] / 1e3)}
failures = []
for term, (predicted, measured) in expected.items():
    if term not in rows:
        failures.append(f"no row '{term}'")
        continue
    got = rows[term]
    if abs(got[0] - predicted) > 0.006 or abs(got[1] - measured) > 0.006 or abs(got[2] - (got[1] - got[0])) > 0.011:
        failures.append(f"{term}: table {got}, expected predicted {predicted:.2f}, measured {measured:.2f}")
for term, (predicted, measured, _) in rows.items():
    if term != "step" and (predicted > rows["step"][0] + 0.01 or measured > rows["step"][1] + 0.01):
        failures.append(f"{term} ({predicted}, {measured}) exceeds the step {rows['step'][:2]}")
if len(rows) != 5:
    failures.append(f"{len(rows)} rows, expected 5: {sorted(rows)}")
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
