"""`dlobd compare-profiles MODERN_RUNS PAPER_RUNS`: the same points run on the modern profile's
software and on the paper profile's (the papers' releases, 2017), their measured values side by
side.

Points are matched as compare-paths matches them (scale, experiment and point; each side's chosen
attempt). For every point `ok` on both sides, each side's attempt goes through its stack's parser
and the experiment's metric is shown per dimension value (a phase, a rank): the last epoch's or
step's value where the rows have epochs or steps, else the mean of the rows; then the ratio paper /
modern. The stack versions each side recorded come first. A point not `ok` on a side is listed
with its status and reason, not compared. Every number here is local scale on this machine's
hardware: the profiles differ in software only.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlobd import spec
from dlobd.execution import runs
from dlobd.results import comparepaths, tidy

# the software a side's run.json names, in this order
SOFTWARE = ("java", "hadoop", "spark", "tensorflow", "tensorflowonspark", "bigdl")


@dataclass
class Value:
    label: str          # the metric and its dimension values, e.g. time_breakdown_s[phase=training]
    modern: float | None
    paper: float | None

    @property
    def ratio(self) -> float | None:
        if self.modern in (None, 0) or self.paper is None:
            return None
        return self.paper / self.modern


def summary(frame: pd.DataFrame, metric: str, dimensions: list[str]) -> dict[str, float]:
    """The metric's value per value of the spec's dimensions (a phase, a rank) in one parsed point:
    the last epoch's (or step's) where the rows have them, else their mean."""
    rows = frame[frame["metric"] == metric].assign(value=lambda f: pd.to_numeric(f["value"], errors="coerce"))
    rows = rows.dropna(subset=["value"])
    dims = [d for d in dimensions if d in rows and rows[d].notna().any()]
    out = {}
    groups = rows.groupby(dims, dropna=False) if dims else [((), rows)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = metric + (f"[{', '.join(f'{d}={v}' for d, v in zip(dims, key))}]" if dims else "")
        order = [c for c in ("epoch", "step") if c in group and group[c].notna().any()]
        out[label] = float(group.sort_values(order)["value"].iloc[-1] if order else group["value"].mean())
    return out


def parsed(attempt: runs.Attempt, runs_dir: Path, stack_name: str) -> pd.DataFrame:
    return tidy.parse_point(attempt.path.parent, runs_dir, stack_name)


def compare_point(row: comparepaths.Row, modern_dir: Path, paper_dir: Path, specs: dict) -> list[Value]:
    scale, experiment, _ = row.key
    this = specs[experiment]
    metric = this.data["metric"]["name"]
    stack_name = this.point_stack(scale, row.a.record.get("point", {}))
    dimensions = sorted(this.dimensions())
    sides = [parsed(row.a, modern_dir, stack_name), parsed(row.b, paper_dir, stack_name)]
    unread = [f"{side} {frame['status'].iloc[0]}: {frame['reason'].iloc[0]}"
              for side, frame in zip(("modern", "paper"), sides) if frame["status"].iloc[0] != "ok"]
    if unread:
        raise ValueError("; ".join(unread))
    modern, paper = (summary(frame, metric, dimensions) for frame in sides)
    return [Value(label, modern.get(label), paper.get(label)) for label in sorted(set(modern) | set(paper))]


def versions(attempt: runs.Attempt) -> str:
    found = attempt.record.get("versions") or {}
    named = [f"{name} {found[name]}" for name in SOFTWARE if found.get(name)]
    return ", ".join(named) or "not recorded"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def report(rows: list[comparepaths.Row], modern_dir: Path, paper_dir: Path, specs: dict) -> str:
    lines = [f"modern: {modern_dir}", f"paper:  {paper_dir}",
             "local scale on this machine for both: the profiles differ in software only"]
    compared = 0
    for row in rows:
        if row.key[1] not in specs:
            continue
        head = "/".join(row.key)
        if row.status_a != "ok" or row.status_b != "ok":
            lines.append(f"{head}: modern {row.status_a} | paper {row.status_b}  not compared")
            for side, attempt in (("modern", row.a), ("paper", row.b)):
                if attempt and attempt.record["status"] != "ok":
                    lines.append(f"    {side} reason: {attempt.record.get('reason')}")
            continue
        try:
            values = compare_point(row, modern_dir, paper_dir, specs)
        except ValueError as exc:  # a log its parser cannot read: said, not compared
            lines.append(f"{head}: not compared: {exc}")
            continue
        compared += 1
        lines.append(f"{head}:")
        lines.append(f"    modern software: {versions(row.a)}")
        lines.append(f"    paper software:  {versions(row.b)}")
        for value in values:
            ratio = "" if value.ratio is None else f"  (paper/modern {value.ratio:.3g})"
            lines.append(f"    {value.label}: modern {_number(value.modern)} | paper {_number(value.paper)}{ratio}")
    lines.append(f"points: {len(rows)}, compared (ok on both): {compared}")
    return "\n".join(lines)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("modern_runs", type=Path, help="runs on the modern profile (e.g. data/reference)")
    parser.add_argument("paper_runs", type=Path, help="runs on the paper profile (e.g. data/reference-paper)")
    parser.add_argument("--experiment", action="append", default=None,
                        help="only this experiment (repeatable; default: every one the paper runs have)")


def run(args) -> int:
    try:
        rows = comparepaths.compare(args.modern_runs, args.paper_runs)
    except runs.RunError as exc:
        print(f"compare-profiles: {exc}")
        return 2
    specs = spec.load_all()
    # the paper runs say which experiments this profile ran: the modern side's others are not listed
    wanted = set(args.experiment or []) or {r.key[1] for r in rows if r.b is not None}
    unknown = sorted(wanted - set(specs))
    if unknown:
        print(f"compare-profiles: no experiment spec {', '.join(unknown)} under experiments/")
        return 2
    print(report([r for r in rows if r.key[1] in wanted], args.modern_runs, args.paper_runs, specs))
    return 0
