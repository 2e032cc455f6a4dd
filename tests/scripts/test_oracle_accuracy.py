"""The ranking statistics of benchmarks/oracle/run_oracle_accuracy.py on made-up numbers whose
answers are worked out by hand: Kendall's tau-b, the measured order of two configurations that
counts a pair as a tie where their runs disagree, the cause given for a missed recommendation, and
the noise floor (an exact oracle against the measurements drawn again)."""
import importlib.util
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("run_oracle_accuracy",
                                              os.path.join(root, "benchmarks", "oracle", "run_oracle_accuracy.py"))
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)

failures = []


def check(what, got, expected, tolerance=1e-12):
    same = got == expected if expected is None or got is None else abs(got - expected) <= tolerance
    if not same:
        failures.append(f"{what}: got {got!r}, expected {expected!r}")


def configuration(run_medians, blocks_per_run=3):
    """A measured configuration whose runs have these medians (each run's blocks spread around it)."""
    blocks = [b for m in run_medians for b in (m - 0.001, m, m + 0.001)[:blocks_per_run]]
    return {"meas": {"runs": len(run_medians), "blocks": blocks}, "measured_s": sorted(blocks)[len(blocks) // 2]}


# tau-b: identical and reversed orders, one swapped pair of four (5 concordant, 1 discordant of 6).
check("tau-b, same order", runner.kendall_tau_b([1, 2, 3], [10, 20, 30])[0], 1.0)
check("tau-b, reversed", runner.kendall_tau_b([1, 2, 3], [30, 20, 10])[0], -1.0)
tau, discordant = runner.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4])
check("tau-b, one swap of four", tau, 4 / 6)
check("discordant pairs, one swap of four", discordant, 1)
# Ties in y: (concordant - discordant) / sqrt((pairs - ties in x) * (pairs - ties in y)).
check("tau-b, a tie in y", runner.kendall_tau_b([1, 2, 3], [1, 1, 2])[0], 2 / 6 ** 0.5)
check("tau-b, no variation", runner.kendall_tau_b([1, 2], [5, 5])[0], None)

# Per-run medians and their spread.
a = configuration([0.100, 0.104, 0.102])
check("run medians", sum(runner.run_medians(a["meas"])), 0.306)
check("run spread", runner.run_spread(a["meas"]), 0.004 / 0.102)

# Runs that overlap are a tie; runs apart are ordered; one run per side is ordered by its median.
b = configuration([0.103, 0.110, 0.108])  # overlaps a (0.103 <= 0.104)
c = configuration([0.120, 0.125, 0.121])  # above both
check("overlapping runs tie", runner.run_order(a, b), 0)
check("separate runs order", runner.run_order(a, c), -1)
check("separate runs order, reversed", runner.run_order(c, b), 1)
check("single runs", runner.run_order(configuration([0.2]), configuration([0.1])), 1)

# tau-b with the runs' order: predicted a < b < c; measured a ~ b < c gives 2 concordant pairs of 3,
# one measured tie: 2 / sqrt(3 * 2).
rows = [a, b, c]
tau, _ = runner.kendall_tau_b([1, 2, 3], [r["measured_s"] for r in rows],
                              lambda i, j: runner.run_order(rows[i], rows[j]))
check("tau-b with the runs' ties", tau, 2 / 6 ** 0.5)
# The plain measured medians order a < b, so the plain tau-b is 1.
check("tau-b on medians", runner.kendall_tau_b([1, 2, 3], [r["measured_s"] for r in rows])[0], 1.0)

# A missed recommendation's cause: runs that overlap are a measured tie; runs apart are a
# misprediction, blamed on the configuration that ran further from its prediction.
def judged(run_medians_ms, predicted_ms, ranks=1):
    """A configuration as the runner reads it from its CSV: blocks in ms, times in seconds."""
    row = configuration(run_medians_ms)
    row["measured_s"] /= 1e3
    row["config"] = runner.Config("cnn", ranks, 1, 1, "1f1b")
    row["pred"] = {"time_s": predicted_ms / 1e3}
    return row


tie = runner.miss_cause(judged([103, 110, 108], 100), judged([100, 104, 102], 101))
check("overlapping runs: a measured tie", tie.startswith("a measured tie"), True)
check("the tie names both ranges", "103.00-110.00 ms against 100.00-104.00 ms" in tie, True)
# Recommended predicted 100 ms (1 % ahead of 101 ms), ran 121 ms (+21 %); the fastest ran 102 ms (+1 %).
wrong = runner.miss_cause(judged([120, 125, 121], 100), judged([100, 104, 102], 101))
check("runs apart: a misprediction", wrong.startswith("a misprediction"), True)
check("the margin the oracle saw", "recommended 1.0 % ahead" in wrong, True)
check("the recommended erred more", "the recommended ran further" in wrong and "(the recommended +21 %, "
      "the fastest +1 %)" in wrong, True)
cores = os.cpu_count() or 1
crowded = runner.miss_cause(judged([120, 125, 121], 100, cores + 1), judged([100, 104, 102], 101, cores + 1))
check("ranks above the cores name time slicing", "time slicing" in crowded, True)
check("ranks within the cores do not", "time slicing" in wrong, False)

# The noise floor. Two runs of 10 and 14 ms redrawn twice with replacement: both the first (1/4),
# one of each (1/2, the median of 10, 10, 10, 14, 14, 14 is 12), both the second (1/4).
def measured(model, ranks, stages, run_ms):
    blocks = [ms for m in run_ms for ms in (m, m, m)]
    return {"config": runner.Config(model, ranks, stages, 1, "-" if stages == 1 else "1f1b"),
            "meas": {"runs": len(run_ms), "blocks": blocks}}


noisy = measured("cnn", 2, 1, [10, 14])
redrawn = sorted(runner.redrawn_medians(noisy["meas"]), key=lambda o: o[1])
check("redrawn medians: outcomes", len(redrawn), 3)
for (p, x), (p0, x0) in zip(redrawn, [(0.25, 10), (0.5, 12), (0.25, 14)]):
    check(f"redrawn median {x0}", x, x0)
    check(f"its probability {p0}", p, p0)
check("one run is not redrawn", runner.redrawn_medians(measured("cnn", 2, 1, [11])["meas"]) == [(1.0, 11)], True)
# The exact oracle predicts 12 ms: 1 - 2/10 = 0.8 with a quarter, 1 with a half, 1 - 2/14 with a quarter;
# below 90 % in half the draws. Beside it a noiseless 11 ms run: the truly fastest. It is within 5 % of
# the fastest redrawn unless the noisy one draws 10 ms (11 > 10.5): a hit in 3/4 of the draws; the
# truth orders the pair 12 > 11, a draw of 10 reverses it (tau-b -1), one of 12 or 14 keeps it (+1).
steady = measured("cnn", 2, 2, [11])
floor = runner.exact_oracle([noisy, steady], [{"model": "cnn", "ranks": 2}])
check("floor: configurations", floor["configurations"], 2)
check("floor: mean accuracy", floor["mean"], (0.25 * 0.8 + 0.5 + 0.25 * (1 - 2 / 14) + 1) / 2)
check("floor: data parallel", floor["by_kind"]["data"], 0.25 * 0.8 + 0.5 + 0.25 * (1 - 2 / 14))
check("floor: pipeline", floor["by_kind"]["pipeline"], 1.0)
check("floor: expected below 90 %", floor["below"], 0.5)
check("floor: none below", floor["none_below"], 0.5)
check("floor: cases", floor["cases"], 1)
# Estimated from 2000 seeded draws: three standard errors, sqrt(3/4 * 1/4 / 2000) = 0.0097 for the
# hits and twice that for tau-b (+1 or -1 per draw).
check("floor: recommendation (2000 draws)", floor["hits"], 0.75, 0.03)
check("floor: tau-b (2000 draws)", floor["tau"], 0.5, 0.06)
# Without noise the exact oracle is exact: every figure at its best.
calm = runner.exact_oracle([measured("mlp", 1, 1, [5, 5, 5]), measured("mlp", 1, 1, [7, 7])],
                           [{"model": "mlp", "ranks": 1}])
check("noiseless floor: accuracy", calm["mean"], 1.0)
check("noiseless floor: below", calm["below"], 0.0)
check("noiseless floor: none below", calm["none_below"], 1.0)
check("noiseless floor: recommendation", calm["hits"], 1.0)
check("noiseless floor: tau-b", calm["tau"], 1.0)
if "noise floor" not in runner.floor_line(floor) or "0.5 configurations below 90 %" not in runner.floor_line(floor):
    failures.append(f"floor line: {runner.floor_line(floor)!r}")

for failure in failures:
    print("FAILED:", failure)
print(f"{'FAILED' if failures else 'passed'}: oracle accuracy statistics")
sys.exit(1 if failures else 0)
