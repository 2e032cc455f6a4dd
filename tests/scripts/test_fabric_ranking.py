"""benchmarks/oracle/fabric_ranking.py against what RESULTS.md publishes: the section it renders
from the committed oracle CSVs must be the committed `oracle-fabrics` section, word for word, and
its closing count must be the table's own count of agreeing rows. A changed CSV, a changed rule
or a hand-edited figure fails here (the test once passed on any 'agrees in N of 12')."""
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
results = os.path.join(root, "benchmarks", "RESULTS.md")
script = os.path.join(root, "benchmarks", "oracle", "fabric_ranking.py")
sys.path.insert(0, os.path.join(root, "benchmarks"))
import bench_harness as h  # noqa: E402

rendered = subprocess.run([sys.executable, script, "--no-write"], check=True, capture_output=True, text=True).stdout
committed = h.read_section(results, "oracle-fabrics")
if not committed:
    sys.exit(f"FAILED: no 'oracle-fabrics' section in {results}")
failures = []
if rendered.rstrip() != committed.rstrip():
    rendered_lines, committed_lines = rendered.rstrip().splitlines(), committed.rstrip().splitlines()
    for k, (a, b) in enumerate(zip(rendered_lines, committed_lines)):
        if a != b:
            failures.append(f"line {k + 1} differs:\n  rendered:  {a}\n  committed: {b}")
            break
    else:
        failures.append(f"{len(rendered_lines)} lines rendered, {len(committed_lines)} committed")
rows = [line for line in committed.splitlines() if line.startswith("| ") and not line.startswith(("| model", "| ---"))]
agreeing = sum(line.rstrip().endswith("| yes |") for line in rows)
count = re.search(r"agrees in \*\*(\d+) of (\d+)\*\*", committed)
if not count:
    failures.append("no 'agrees in **N of M**' line")
elif (int(count.group(1)), int(count.group(2))) != (agreeing, len(rows)):
    failures.append(f"'agrees in {count.group(1)} of {count.group(2)}', but {agreeing} of the table's "
                    f"{len(rows)} rows agree")
for f in failures:
    print("FAILED:", f)
if failures:
    sys.exit(1)
print(f"fabric ranking: the committed section is what the CSVs give ({agreeing} of {len(rows)} agree)")
