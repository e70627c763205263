"""`dlobd compare-paths RUNS_A RUNS_B`: the same points run through two execution paths (say
the local path and a Slurm job), side by side.

Points are matched by scale, experiment and point, whatever the cluster name; each side's chosen
attempt is the one the results use (its newest `ok`, else its newest). A point whose statuses
differ is a mismatch; so is a point only one side ran. The provenance fields that differ are
listed for information (the execution path always does).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from dlobd.execution import runs

# run.json fields whose difference between two paths is worth a line
PROVENANCE_FIELDS = (("execution", "path"), ("versions", "hadoop"), ("versions", "spark"),
                     ("versions", "tensorflow"), ("versions", "tensorflowonspark"), ("versions", "java"),
                     ("git", "commit"))


@dataclass
class Row:
    key: tuple[str, str, str]         # scale, experiment, point
    a: runs.Attempt | None
    b: runs.Attempt | None

    @property
    def status_a(self) -> str:
        return self.a.record["status"] if self.a else "absent"

    @property
    def status_b(self) -> str:
        return self.b.record["status"] if self.b else "absent"

    @property
    def mismatch(self) -> bool:
        return self.status_a != self.status_b

    def differing(self) -> list[str]:
        if not (self.a and self.b):
            return []
        out = []
        for section, name in PROVENANCE_FIELDS:
            va = (self.a.record.get(section) or {}).get(name)
            vb = (self.b.record.get(section) or {}).get(name)
            if va != vb:
                out.append(f"{section}.{name}: {va} | {vb}")
        return out


def chosen_attempts(runs_dir: Path, only: tuple[str, str] | None = None) -> dict[tuple[str, str, str], runs.Attempt]:
    """The chosen attempt of every point under a runs directory (only those of one
    (scale, experiment), if given), by (scale, experiment, point)."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise runs.RunError(f"{runs_dir}: not a directory of runs")
    found = [runs.read_attempt(a, runs_dir) for a in runs.all_attempts(runs_dir)
             if only is None or a.relative_to(runs_dir).parts[1:3] == only]
    chosen = {}
    for attempt in runs.select(found):
        _cluster, scale, experiment, point = Path(attempt.run_id).parts[:4]
        chosen[(scale, experiment, point)] = attempt
    return chosen


def compare(runs_a: Path, runs_b: Path, only: tuple[str, str] | None = None) -> list[Row]:
    a, b = chosen_attempts(runs_a, only), chosen_attempts(runs_b, only)
    return [Row(key, a.get(key), b.get(key)) for key in sorted(set(a) | set(b))]


def report(rows: list[Row], runs_a: Path, runs_b: Path) -> str:
    lines = [f"A: {runs_a}", f"B: {runs_b}"]
    for row in rows:
        mark = "MISMATCH" if row.mismatch else "same"
        lines.append(f"{'/'.join(row.key)}: {row.status_a} | {row.status_b}  {mark}")
        for side, attempt in (("A", row.a), ("B", row.b)):
            if attempt and attempt.record["status"] != "ok":
                lines.append(f"    {side} reason: {attempt.record.get('reason')}")
        lines += [f"    {d}" for d in row.differing()]
    mismatches = sum(r.mismatch for r in rows)
    lines.append(f"points: {len(rows)}, status mismatches: {mismatches}")
    return "\n".join(lines)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs_a", type=Path, help="a directory of runs (e.g. data/runs)")
    parser.add_argument("runs_b", type=Path, help="another one (e.g. a Slurm job's runs)")


def run(args) -> int:
    try:
        rows = compare(args.runs_a, args.runs_b)
    except runs.RunError as exc:
        print(f"compare-paths: {exc}")
        return 2
    print(report(rows, args.runs_a, args.runs_b))
    return 1 if any(r.mismatch for r in rows) else 0
