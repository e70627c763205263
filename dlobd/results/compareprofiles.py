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


@dataclass
class Point:
    """One point under both profiles: its values side by side, or why they are not compared."""
    key: tuple[str, str, str]           # scale, experiment, point
    statuses: tuple[str, str]           # modern, paper
    software: tuple[str, str]           # what each side's run.json names
    values: list[Value]
    reasons: dict[str, str]             # side -> its reason, for a side not ok
    unparsed: str | None = None         # why a log of a side that is ok could not be read

    @property
    def not_compared(self) -> str | None:
        if self.statuses != ("ok", "ok"):
            if self.statuses[0] == self.statuses[1] and self.reasons.get("modern") == self.reasons.get("paper"):
                return f"both {self.statuses[0]}: {self.reasons.get('paper') or 'no run'}"
            return "; ".join(f"{side} {status}: {self.reasons.get(side) or 'no run'}"
                             for side, status in zip(("modern", "paper"), self.statuses) if status != "ok")
        return self.unparsed


def points(rows: list[comparepaths.Row], modern_dir: Path, paper_dir: Path, specs: dict) -> list[Point]:
    out = []
    for row in rows:
        if row.key[1] not in specs:
            continue
        software = tuple(versions(a) if a else "" for a in (row.a, row.b))
        statuses = (row.status_a, row.status_b)
        reasons = {side: a.record.get("reason") for side, a in (("modern", row.a), ("paper", row.b))
                   if a and a.record["status"] != "ok"}
        if statuses != ("ok", "ok"):
            out.append(Point(row.key, statuses, software, [], reasons))
            continue
        try:
            out.append(Point(row.key, statuses, software, compare_point(row, modern_dir, paper_dir, specs), reasons))
        except ValueError as exc:  # a log its parser cannot read: said, not compared
            out.append(Point(row.key, statuses, software, [], reasons, str(exc)))
    return out


COLUMNS = ["scale", "experiment", "point", "modern_status", "paper_status", "modern_software",
           "paper_software", "quantity", "modern", "paper", "ratio", "not_compared"]


def frame(found: list[Point]) -> pd.DataFrame:
    """One row per compared value, one per point not compared (the report's table)."""
    rows = []
    for p in found:
        head = [*p.key, *p.statuses, *p.software]
        rows += ([head + [v.label, v.modern, v.paper, v.ratio, None] for v in p.values]
                 or [head + [None, None, None, None, p.not_compared]])
    return pd.DataFrame(rows, columns=COLUMNS)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def report(found: list[Point], modern_dir: Path, paper_dir: Path) -> str:
    lines = [f"modern: {modern_dir}", f"paper:  {paper_dir}",
             "local scale on this machine for both: the profiles differ in software only"]
    for p in found:
        head = "/".join(p.key)
        if p.statuses != ("ok", "ok"):
            lines.append(f"{head}: modern {p.statuses[0]} | paper {p.statuses[1]}  not compared")
            lines += [f"    {side} reason: {reason}" for side, reason in p.reasons.items()]
            continue
        if p.not_compared:
            lines.append(f"{head}: not compared: {p.not_compared}")
            continue
        lines.append(f"{head}:")
        lines.append(f"    modern software: {p.software[0]}")
        lines.append(f"    paper software:  {p.software[1]}")
        for value in p.values:
            ratio = "" if value.ratio is None else f"  (paper/modern {value.ratio:.3g})"
            lines.append(f"    {value.label}: modern {_number(value.modern)} | paper {_number(value.paper)}{ratio}")
    compared = sum(1 for p in found if p.values)
    lines.append(f"points: {len(found)}, compared (ok on both): {compared}")
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
    found = points([r for r in rows if r.key[1] in wanted], args.modern_runs, args.paper_runs, specs)
    print(report(found, args.modern_runs, args.paper_runs))
    return 0
