"""RESULTS.md's `summary` block against benchmarks/summary.py: the committed block must be what the
script renders now from the sections' own text and their provenance records (`--check`), so a
hand-edited figure, a section measured again or a record changed without the summary fails here.
And a row whose section no longer has what it looks for must fail, not print an old value: checked
on a copy of RESULTS.md whose compile-time line no longer says 'within the budget'."""
import importlib.util
import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "benchmarks", "summary.py")
failures = []

check = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
print((check.stdout + check.stderr).strip())
if check.returncode != 0:
    failures.append("the committed summary block is not what benchmarks/summary.py renders (see above)")

spec = importlib.util.spec_from_file_location("summary", script)
S = importlib.util.module_from_spec(spec)
spec.loader.exec_module(S)
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "RESULTS.md")
    with open(S.RESULTS) as f:
        text = f.read()
    with open(copy, "w") as f:
        f.write(text.replace("peak: within the budget of", "peak: over the budget of"))
    S.RESULTS = copy
    try:
        S.render()
        failures.append("a compile-flat section without its 'within the budget' line still rendered a summary")
    except S.Stale as e:
        if "compile-flat" not in str(e):
            failures.append(f"the missing compile-flat line failed naming another block: {e}")

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
