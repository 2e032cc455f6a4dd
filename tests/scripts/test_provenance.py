"""Every generated block (`<!-- NAME:begin -->` ... `<!-- NAME:end -->` in README.md, docs/*.md and
benchmarks/RESULTS.md, wherever a block has moved) states when, at which commit and on which
machine its numbers were measured, and that statement is its data file's provenance record
(benchmarks/provenance.py): a block without a known data file, a data file without a record, or a
stated value that differs from the record fails, naming the block and both values."""
import importlib.util
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("provenance", os.path.join(root, "benchmarks", "provenance.py"))
P = importlib.util.module_from_spec(spec)
spec.loader.exec_module(P)

FIELDS = {"at": "measured at", "commit": "commit", "machine": "machine", "priced_at": "priced again at",
          "priced_commit": "priced again at commit", "priced_machine": "priced again on"}


def problems(path, name, body):
    where = f"{os.path.relpath(path, root)}: block '{name}'"
    if name in P.DERIVED:
        return []  # made from the other blocks and their records; checked by its own script's test
    if name not in P.BLOCK_DATA:
        return [f"{where}: no known data file (add it to BLOCK_DATA in benchmarks/provenance.py)"]
    found, stated = [], P.stated(body)
    for data in P.data_paths(name):
        record_path = os.path.relpath(P.sidecar(data), root)
        record = P.read(data)
        if not record:
            found.append(f"{where}: its data {os.path.relpath(data, root)} has no provenance record {record_path}")
            continue
        says = stated.get(record_path)
        if says is None:
            found.append(f"{where}: states no provenance from {record_path} (a line 'Provenance (`{record_path}`): "
                         "measured ...')")
            continue
        wanted = P.expected(record)
        found += [f"{where}: {what} stated {says[field]!r}, {record_path} holds {wanted[field]!r}"
                  for field, what in FIELDS.items() if says[field] != wanted[field]]
    return found


def main():
    seen, failures = [], []
    for path, name, body in P.blocks():
        seen.append(name)
        failures += problems(path, name, body)
    for message in failures:
        print("FAIL " + message)
    print(f"{len(seen)} blocks checked, {len(failures)} problem(s)")
    return 1 if failures or not seen else 0


if __name__ == "__main__":
    sys.exit(main())
