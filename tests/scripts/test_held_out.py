"""The published held-out figures of the oracle (RESULTS.md's `oracle-held-out` blocks of this host
and the emulated fabrics, the development block beside them, and the pooled ablation) were written by benchmarks/oracle/held_out.py from a fresh run of a
frozen oracle: the committed frozen record, measurements taken after the freeze by a run whose
include/ and tools/ were the frozen commit's (checked against git history), the frozen profile
unchanged, and every figure what the data file renders. Then each of those conditions broken on a
copy must fail the check: a re-priced run, one measured before the freeze, other sources, an
edited figure, and in runs that ran the canary before each run, a changed canary prediction."""
import argparse
import copy
import importlib.util
import json
import os
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "benchmarks", "oracle", "held_out.py")
spec = importlib.util.spec_from_file_location("held_out", script)
H = importlib.util.module_from_spec(spec)
spec.loader.exec_module(H)
results = os.path.join(root, "benchmarks", "RESULTS.md")
failures = []

with open(results) as f:
    text = f.read()
published = [which for which in H.SETS if f"<!-- {H.section_name('local', which)}:begin -->" in text]
if "held-out" not in published:
    failures.append("RESULTS.md has no oracle-held-out block")
# Every frozen oracle's published sets: this host's and the emulated fabrics'.
checked = []
for label in H.frozen_labels():
    for which in H.SETS:
        if f"<!-- {H.section_name(label, which)}:begin -->" in text:
            checked.append(H.section_name(label, which))
            failures += [f"{label} {which}: {problem}" for problem in H.check(label, which, results)]
pooled = H.check_pooled(results)
if pooled is not None:
    checked.append(H.POOLED_SECTION)
    failures += [f"pooled: {problem}" for problem in pooled]
    section = H.h.read_section(results, H.POOLED_SECTION)
    edited = section.replace("| closed form | ", "| closed form | 1", 1)
    if edited == section or not H.pooled_problems(edited, results):
        failures.append("the check passed an edited pooled ablation")

if "held-out" in published:
    path = H.data_path("local", "held-out")
    with open(path) as f:
        data = json.load(f)
    with open(H.frozen_path("local")) as f:
        frozen = json.load(f)
    section = H.h.read_section(results, H.section_name("local", "held-out"))

    def must_fail(what, change, text=section):
        broken = copy.deepcopy(data)
        change(broken)
        if not H.problems_of(broken, frozen, text, path):
            failures.append(f"the check passed {what}")

    must_fail("re-priced measurements", lambda d: d["run"].update(measured_afresh=False))
    must_fail("measurements from before the freeze", lambda d: d["run"].update(started_at="2000-01-01T00:00:00"))
    must_fail("a run with other sources", lambda d: d["run"].update(trees={"include": "0" * 40, "tools": "0" * 40}))
    must_fail("a frozen record that is not the committed one", lambda d: d["frozen"].update(commit="0" * 12))
    must_fail("a prediction changed after the run",
              lambda d: d["configurations"][0]["predicted"]["oracle"].update(time_s=123.0))
    measured = f"| {H.rows_of(data)[0]['measured_ms']:.1f} |"
    if measured not in section:
        failures.append(f"the first configuration's measured time {measured} is not in the section")
    must_fail("an edited figure", lambda d: None, section.replace(measured, measured.replace(" |", "1 |", 1), 1))

    # The section's command names an aging profile other than the default, which a rerun needs.
    for old_path, shown in ((H.DEFAULT_OLD_PROFILE, False), ("benchmarks/oracle/frozen/other.profile.json", True)):
        aged = copy.deepcopy(data)
        aged["old_profile"] = dict(aged.get("old_profile") or {"calibrated_at": "?", "machine": "?"}, path=old_path)
        aged.setdefault("canaries", {})
        if (f"--old-profile {old_path}" in H.report(aged)) != shown:
            failures.append(f"the command {'does not name' if shown else 'names'} the aging profile {old_path}")

# Runs that ran the canary before each run: its predictions are figures of the section, so a canary
# prediction changed after the run must fail the check too.
canaried = []
for label, which in ((label, which) for label in H.frozen_labels() for which in H.SETS):
    path = H.data_path(label, which)
    if not os.path.exists(path):
        continue
    with open(path) as f:
        data = json.load(f)
    if not all(H.canary_runs(entry["runs"]) for entry in data["configurations"]):
        continue
    canaried.append(f"{label} {which}")
    with open(H.frozen_path(label)) as f:
        frozen = json.load(f)
    section = H.h.read_section(results, H.section_name(label, which))
    if "| accuracy (canary) |" not in section:
        failures.append(f"{label} {which}: the section does not show the predictions of the canary before each run")
    broken = copy.deepcopy(data)
    broken["configurations"][0]["runs"][0]["canary"]["time_s"] *= 1.5
    if not H.problems_of(broken, frozen, section, path):
        failures.append(f"{label} {which}: the check passed a canary prediction changed after the run")
    # Runs that canaried on every rank: each rule's prediction is a figure too, and so is each rank's ratio.
    rules = data["configurations"][0]["runs"][0]["canary"].get("rules", {})
    for rule in rules:
        broken = copy.deepcopy(data)
        broken["configurations"][0]["runs"][0]["canary"]["rules"][rule] *= 1.5
        if not H.problems_of(broken, frozen, section, path):
            failures.append(f"{label} {which}: the check passed the canary's '{rule}' prediction changed after the run")
    if rules:
        broken = copy.deepcopy(data)
        broken["configurations"][-1]["runs"][-1]["canary"]["ratios"][-1] = 99.0
        if not H.problems_of(broken, frozen, section, path):
            failures.append(f"{label} {which}: the check passed a rank's canary ratio changed after the run")

# A freeze refuses a profile measured on another machine (its communication would price this
# host's runs), and takes this host's own.
with tempfile.TemporaryDirectory() as scratch:
    for name, description in (("other", "No CPU, family 0 model 0, 1 MHz (as reported), 1 vCPU, 1 GiB, Linux 0, no AVX2"),
                              ("here", H.h.machine_description())):
        with open(os.path.join(scratch, name + ".json"), "w") as f:
            json.dump({"host": {"description": description}}, f)
    if "was measured on: No CPU" not in H.h.profile_of_other_machine(os.path.join(scratch, "other.json"), root):
        failures.append("a profile of another machine was not refused")
    if H.h.profile_of_other_machine(os.path.join(scratch, "here.json"), root):
        failures.append("this host's own profile was refused")

# A label frozen in bf16 runs everything in bf16: its calibrations, canaries, predictions and runs
# take --precision bf16, and its section says so; a float label's take none.
one = H.config("gpt", 2, 2, 2, "1f1b")
for precision, words in (("float", []), ("bf16", ["--precision", "bf16"])):
    run_args = argparse.Namespace(precision=precision, block_seconds=3.0, mpiexec="mpiexec", mpiexec_flags="",
                                  hpf="hpf_bench_parallel_throughput", blocks=2)
    cmd = H.bench_cmd(run_args, one, 0.02)
    runs_so = cmd[-2:] == words if words else "--precision" not in cmd
    if H.h.precision_words(run_args) != words or not runs_so:
        failures.append(f"a {precision} label's runs do not take {words or 'no precision'}")
if "held-out" in published:
    bf16 = copy.deepcopy(data)
    bf16["frozen"]["precision"] = "bf16"
    if "bf16 products" not in H.report(bf16).splitlines()[0] or "bf16 products" in H.report(data):
        failures.append("the section does not say that a bf16 label's products were bf16 (or a float one's say so)")

for f in failures:
    print("FAILED:", f)
print(f"checked: {', '.join(checked) or 'nothing'}; with the canary before each run: {', '.join(canaried) or 'none'}")
sys.exit(1 if failures else 0)
