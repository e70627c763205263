"""Claims evaluated over an experiment's tidy results (docs/runs-and-results.md): each check of
the claim language (dlobd/spec/claimlang.py) interpreted over the results, into a verdict
(dlobd/results/verdicts.py).

- ``evaluate_claim(claim, spec, results, scale, other_results=None, other_spec=None) -> Verdict``
- ``evaluate_spec(spec, results, scale, other_results=None, other_spec=None) -> [Verdict]``

Command: ``dlobd claims --results data/results/<scale> --scale <scale> [--experiments ...]``.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from dlobd import ROOT
from dlobd.results import comparability
from dlobd.results.findings import Gap, Wording
from dlobd.results.verdicts import (
    MISSING,
    SYMBOLS,
    VERDICTS,
    Part,
    Verdict,
    gaps_text,
    is_missing,
    metric_words,
    parts_text,
    quantity,
    significant,
    summary_text,
    unique_pairs,
    verdicts_frame,
)
from dlobd.spec import REPEAT, assumed_settings, metrics, same_value, substitutions
from dlobd.spec.claimlang import (
    ARITH,
    COMPARE,
    ROW_DIMENSIONS,
    SERIES_FUNCTIONS,
    TIME_COLUMNS,
    Arith,
    AxisOf,
    Call,
    CheckError,
    ClaimSyntaxError,
    Compare,
    Exists,
    Logic,
    Neg,
    Not,
    Num,
    Quant,
    RangeOf,
    Ref,
    SetOf,
    Slope,
    TimeTo,
    Word,
    first_reached,
    fmt,
    has_data,
    parse_check,
    show,
)

EXPERIMENTS_DIR = ROOT / "experiments"


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class _Bound:
    value: object
    local: bool     # a value of the scale (from results or its matrix), not a paper value


def _quoted(value) -> str:
    return f"'{value}'" if isinstance(value, str) else fmt(value)


def _matches(column: pd.Series, value) -> pd.Series:
    if isinstance(value, (int, float)):
        return pd.to_numeric(column, errors="coerce") == float(value)
    return column.astype(str) == str(value)


def _attempt(run_id) -> int:
    m = re.search(r"attempt-(\d+)$", str(run_id))
    return int(m.group(1)) if m else -1


class _Table:
    """One experiment's results at one scale, indexed by run (filtering a whole DataFrame per
    reference is too slow for a few hundred references)."""

    def __init__(self, results: pd.DataFrame | None, scale: str):
        self.frame = pd.DataFrame()
        self.runs: list[dict] = []             # first row of each run: its point, status, reason
        self.rows: dict[str, pd.DataFrame] = {}
        self.values: dict[tuple, pd.DataFrame] = {}   # (run id, metric) -> rows with values
        if results is None or results.empty:
            return
        lacking = {"metric", "value", "run_id", "status"} - set(results.columns)
        if lacking:
            raise ValueError(f"results table lacks column(s) {', '.join(sorted(lacking))}")
        frame = results
        if "scale" in frame.columns:
            frame = frame[frame["scale"].isna() | (frame["scale"].astype(str) == scale)]
        self.frame = frame.assign(value=pd.to_numeric(frame["value"], errors="coerce"))
        for run_id, rows in self.frame.groupby("run_id", sort=False):
            self.rows[run_id] = rows
            self.runs.append(rows.iloc[0].to_dict())
        valued = self.frame[self.frame["value"].notna()]
        self.values = dict(iter(valued.groupby(["run_id", "metric"], sort=False)))
        self.runs.sort(key=lambda r: _attempt(r["run_id"]))

    @property
    def software(self) -> str | None:
        """The profile whose software its ok runs ran: paper, else modern (runs recorded before
        the profile label were all modern); None without an ok run."""
        ok = [r for r in self.runs if r.get("status") == "ok"]
        if not ok:
            return None
        return "paper" if any(r.get("profile") == "paper" for r in ok) else "modern"

    @property
    def empty(self) -> bool:
        return self.frame.empty

    @property
    def columns(self):
        return self.frame.columns


def _scale_of(spec: dict, scale: str) -> dict:
    return (spec.get("scales") or {}).get(scale) or {}


def _load_spec(experiment: str) -> dict:
    path = EXPERIMENTS_DIR / f"{experiment}.yaml"
    if not path.exists():
        raise CheckError(f"no spec {path} for a reference to {experiment}")
    return yaml.safe_load(path.read_text())


def _effective_spec(spec: dict, other_spec) -> dict:
    """A `data_from` spec takes axes, dimensions and scales from the spec owning its data."""
    source = spec.get("data_from")
    if not source:
        return spec
    base = (other_spec or _load_spec)(source)
    merged = dict(spec)
    for key in ("axes", "dimensions", "scales"):
        merged.setdefault(key, base.get(key, {}))
    return merged


class _Context:
    """What the checks of one spec read: its results and, on demand, other experiments'
    (spec, results), each indexed once for all claims."""

    def __init__(self, spec: dict, results, scale: str, other_results, other_spec,
                 cpus: int | None = None):
        self.scale, self.cpus = scale, cpus
        self.other_results, self.other_spec = other_results, other_spec
        self.tables = {None: (spec, _Table(results, scale))}

    def table(self, experiment: str | None) -> tuple[dict, _Table]:
        if experiment not in self.tables:
            if self.other_results is None:
                raise CheckError(f"{experiment}: no results of other experiments were given")
            spec = _effective_spec((self.other_spec or _load_spec)(experiment), self.other_spec)
            self.tables[experiment] = (spec, _Table(self.other_results(experiment), self.scale))
        return self.tables[experiment]


# how a point the scale's `exclude` removes is named where a check needs it
EXCLUDED = " (excluded)"


class _Evaluator(Wording):
    """Evaluates one check over the results; records what it read and compared."""

    def __init__(self, context: _Context):
        self.scale = context.scale
        self.table = context.table
        self.missing: list[Gap] = []
        self.excluded_misses = 0     # how many of `missing` are points the scale excludes
        self.unreached: list[Gap] = []
        self.tests: list[tuple[str, bool]] = []
        self.parts: list[Part] = []          # the comparisons, in words
        self.picked: dict = {}               # (max/min node, env) -> the point it picked
        self.paper: list[tuple[str, object]] = []
        self.reproduced: list[tuple[str, object]] = []
        self.inputs: list[tuple[str, object]] = []
        self.substituted: list[str] = []     # paper selectors read at a local stand-in

    # -- tables and runs

    def _no_results(self, spec: dict) -> None:
        """The whole experiment has no results: one reason for all its selections."""
        scale = _scale_of(spec, self.scale)
        not_runnable = scale.get("runnable") is False
        why = f": not runnable ({scale['reason']})" if not_runnable else ""
        self.missing.append(Gap(f"no results for {spec.get('id', '?')} at `{self.scale}` scale{why}",
                                 f"{spec.get('id', '?')} has no results at the {self.scale} scale"
                                 + (": not runnable here (its page says why)" if not_runnable else "")))

    def _map(self, spec: dict, ref: Ref, env: dict) -> tuple[dict, bool]:
        """(selector column -> value at this scale, whether axis_map changed any value)."""
        axis_map = _scale_of(spec, self.scale).get("axis_map") or {}
        out, changed = {}, False
        for column, node in ref.selectors:
            if isinstance(node, Word) and not node.quoted and node.text in env:
                bound = env[node.text]
                value, local = bound.value, bound.local
            else:
                value, local = (node.value if isinstance(node, Num) else node.text), False
            if not local and column in axis_map:
                mapped = next((v for k, v in axis_map[column].items() if same_value(k, value)), value)
                if not same_value(mapped, value):
                    changed = True
                    self.substituted.append(substitutions.axis_substitution(column, value, mapped))
                value = mapped
            out[column] = value
        return out, changed

    def _split(self, spec: dict, table: pd.DataFrame, sels: dict, text: str):
        axes = set(spec.get("axes") or {}) | set(_scale_of(spec, self.scale).get("matrix") or {})
        known = axes | set(table.columns) | set(spec.get("dimensions") or {}) | ROW_DIMENSIONS
        for column in sels:
            if column not in known:
                raise CheckError(f"{text}: {column!r} is neither an axis of "
                                 f"{spec.get('id', '?')} nor a column of its results")
        point = {c: v for c, v in sels.items() if c in axes}
        rows = {c: v for c, v in sels.items() if c not in axes}
        return axes, point, rows

    def _outside_matrix(self, spec: dict, point: dict) -> str | None:
        scale = _scale_of(spec, self.scale)
        matrix = scale.get("matrix") or {}
        for axis, value in point.items():
            if axis in matrix and not any(same_value(value, v) for v in matrix[axis]):
                return f"{axis}={fmt(value)}"
        for ex in scale.get("exclude") or []:
            if all(a in point and same_value(point[a], v) for a, v in ex.items()):
                return ", ".join(f"{a}={fmt(v)}" for a, v in ex.items()) + EXCLUDED
        return None

    def _point_runs(self, spec: dict, table: _Table, point: dict, where: str, subject: str):
        """The runs (oldest attempt first, any status) of the points matching `point`, or
        None after recording why there are none (`subject`: the value sought, in words)."""
        for column in point:
            if column not in table.columns:
                raise CheckError(f"{where}: results of {spec.get('id', '?')} have no column {column!r}")
        runs = [r for r in table.runs if all(same_value(r[c], v) for c, v in point.items())]
        if not runs:
            outside = self._outside_matrix(spec, point)
            if outside and outside.endswith(EXCLUDED):
                self.excluded_misses += 1
            self.missing.append(
                Gap(f"{where}: point not in the `{self.scale}` matrix ({outside})",
                     f"{subject}: not in the {self.scale} matrix ({outside})") if outside
                else Gap(f"{where}: no run", f"{subject}: no run"))
            return None
        return runs

    def run_rows(self, ref: Ref, env: dict, text: str, repeats: bool = False):
        """(rows of the ref's metric in the newest ok run of its point, all rows of that run,
        run id, metric), or None after recording why it is missing. With `repeats`, a list
        of those, one per repeat of the point that has an ok run (the scale's `repeats`)."""
        spec, table = self.table(ref.experiment)
        if table.empty:
            self._no_results(spec)
            return None
        sels, changed = self._map(spec, ref, env)
        axes, point, row_sels = self._split(spec, table, sels, text)
        mapped = ", ".join(f"{c}={fmt(v)}" for c, v in sels.items())
        where = f"{text} (at `{self.scale}`: {mapped})" if changed else text
        subject = self.ref_words(ref, env, sels)
        runs = self._point_runs(spec, table, point, where, subject)
        if runs is None:
            return None
        open_axes = {}
        for axis in sorted((axes | {REPEAT}) - set(point)):
            values = {fmt(r[axis]) for r in runs if axis in r and not pd.isna(r[axis])}
            if len(values) > 1:
                open_axes[axis] = sorted(values)
        repeated = open_axes.pop(REPEAT, None)
        if open_axes:
            left = "; ".join(f"{a} ({', '.join(v)})" for a, v in open_axes.items())
            raise CheckError(f"ambiguous selection {where}: axes left open: {left}")
        if repeated and not repeats:
            raise CheckError(f"{where}: the point has {len(repeated)} repeats; name one "
                             f"(`{REPEAT}=N`) for a series or a time")
        groups = [[r for r in runs if fmt(r.get(REPEAT)) == v] for v in repeated or ()] or [runs]
        metric = spec["metric"]["name"] if ref.metric == "y" else ref.metric
        missing_before = len(self.missing)
        found = [f for f in (self._newest_ok(table, group, metric, row_sels, where, subject)
                             for group in groups) if f is not None]
        if not found:
            return None
        if len(groups) > 1:
            # repeats without a value: the others still give the point's value; say which
            self.inputs.extend((f"{where}: a repeat without a value", m.text)
                               for m in self.missing[missing_before:])
            del self.missing[missing_before:]
        return found if repeats else found[0]

    def _newest_ok(self, table: _Table, runs: list, metric: str, row_sels: dict, where: str,
                   subject: str):
        ok = [r for r in runs if r["status"] == "ok"]
        if not ok:
            last = runs[-1]
            reason = last.get("reason")
            because = f": {reason}" if isinstance(reason, str) and reason else ""
            # the first of a reason's parts ('needs infiniband: ...; needs rdma: ...') says enough
            first = f": {reason.split('; needs ')[0]}" if because else ""
            self.missing.append(Gap(f"{where}: run {last['run_id']} is {last['status']}{because}",
                                     f"{subject}: {last['status']}{first}"))
            return None
        run_id = ok[-1]["run_id"]
        run = table.rows[run_id]
        rows = table.values.get((run_id, metric), run.iloc[:0])
        for column, value in row_sels.items():
            rows = rows[_matches(rows[column], value)] if column in rows.columns else rows.iloc[:0]
        if rows.empty:
            self.missing.append(Gap(f"{where}: run {run_id} has no {metric} values"
                                     + (f" at {', '.join(f'{c}={fmt(v)}' for c, v in row_sels.items())}"
                                        if row_sels else ""),
                                     f"{subject}: its run has no {metric_words(metric)} values"))
            return None
        return rows, run, run_id, metric

    # -- values

    def ref_value(self, ref: Ref, env: dict):
        """The ref's metric reduced over its run; over a point's repeats, their median."""
        text = show(ref, env)
        found = self.run_rows(ref, env, text, repeats=True)
        if found is None:
            return self._input(text, MISSING)
        values = [self._reduced(ref, rows, run_id, metric, text, env)
                  for rows, _, run_id, metric in found]
        values = [v for v in values if not is_missing(v)]
        if not values:
            return self._input(text, MISSING)
        if len(found) > 1:
            median = float(pd.Series(values).median())
            self.inputs.append((f"{text} over {len(values)} repeats",
                                f"median {fmt(median)} (min {fmt(min(values))}, max {fmt(max(values))})"))
            return self._input(text, median)
        return self._input(text, values[0])

    def _reduced(self, ref: Ref, rows: pd.DataFrame, run_id: str, metric: str, text: str, env: dict):
        spec, _ = self.table(ref.experiment)
        if metric == spec["metric"]["name"]:
            how, over = spec["metric"]["reduce"], spec["metric"].get("over")
        else:
            try:
                how, over = metrics.get(metric).reducer, None
            except KeyError as e:
                raise CheckError(f"{text}: {e.args[0]}") from None
        if over:
            rows = rows[rows[over].notna()].sort_values(over, kind="stable") \
                if over in rows.columns else rows.iloc[:0]
            if rows.empty:
                self.missing.append(Gap(f"{text}: run {run_id} has no {metric} rows with {over}",
                                         f"{self.ref_words(ref, env)}: its run has no values by {over}"))
                return MISSING
        else:
            order = [c for c in ("epoch", "step") if c in rows.columns]
            if order:   # rows without epoch/step (run totals) come last
                rows = rows.sort_values(order, kind="stable", na_position="last")
        values = rows["value"]
        return float({"last": lambda: values.iloc[-1], "sum": values.sum, "mean": values.mean,
                      "median": values.median, "max": values.max, "min": values.min}[how]())

    def _input(self, text: str, value):
        self.inputs.append((text, value))
        return value

    def series(self, ref: Ref, env: dict):
        text = show(ref, env)
        found = self.run_rows(ref, env, text)
        return (None, text) if found is None else (found[0], text)

    def time_column(self, rows: pd.DataFrame, text: str, subject: str) -> pd.Series | None:
        for column in TIME_COLUMNS:
            if column in rows.columns and rows[column].notna().all():
                return rows[column].astype(float)
        self.missing.append(Gap(f"{text}: the rows have no sample time ({' or '.join(TIME_COLUMNS)})",
                                 f"{subject}: its samples have no time"))
        return None

    def time_to(self, node: TimeTo, env: dict):
        text = show(node, env)
        found = self.run_rows(node.ref, env, text)
        target = self.number(node.target, env)
        if found is None or is_missing(target):
            return self._input(text, MISSING)
        rows, run, run_id, metric = found
        subject = self.said(node, env).label
        times = self._times(rows, run, text, subject)
        if times is None:
            return self._input(text, MISSING)
        reached, best = first_reached(times, rows["value"], node.op, target)
        if reached is None:
            unit = self.said(node.ref, env).unit
            self.unreached.append(Gap(f"{text}: {metric} never reached {node.op} {fmt(target)} in "
                                       f"run {run_id} (best {fmt(best)})",
                                       f"{self.ref_words(node.ref, env)}: never reached "
                                       f"{SYMBOLS[node.op]} {quantity(target, unit)} "
                                       f"(best {quantity(best, unit)})"))
            return self._input(text, MISSING)
        return self._input(text, reached)

    def _times(self, rows: pd.DataFrame, run: pd.DataFrame, text: str, subject: str):
        """Elapsed time of each row: its own wall_clock_s, else the run's wall_clock_s rows
        at the same step, else the latest wall_clock_s of the same epoch."""
        if "wall_clock_s" in rows.columns and rows["wall_clock_s"].notna().all():
            return rows["wall_clock_s"].astype(float)
        clock = run[(run["metric"] == "wall_clock_s") & run["value"].notna()]
        for key in ("step", "epoch"):
            if key in rows.columns and rows[key].notna().all():
                times = rows[key].map(clock.groupby(key)["value"].max())
                if times.notna().any():
                    return times
        self.missing.append(Gap(f"{text}: no wall_clock_s for the rows of {rows['metric'].iloc[0]}",
                                 f"{subject}: its run recorded no time of its values"))
        return None

    def slope(self, node: Slope, env: dict):
        text = show(node, env)
        points = []
        ref = Ref(node.ref.metric, node.ref.experiment,
                  node.ref.selectors + ((node.axis, Word(node.axis)),))
        for value, _ in self.domain(AxisOf(node.axis), text, node.ref.experiment):
            y = self.ref_value(ref, {**env, node.axis: _Bound(value, True)})
            points.append((self._float(value, f"{node.axis}={fmt(value)}"), y))
        if any(is_missing(y) for _, y in points):
            return self._input(text, MISSING)
        if len(points) < 2:
            self.missing.append(Gap(f"{text}: needs at least two values of {node.axis}",
                                     f"{self.said(node, env).label}: needs at least two values of {node.axis}"))
            return self._input(text, MISSING)
        mx = sum(x for x, _ in points) / len(points)
        my = sum(y for _, y in points) / len(points)
        sxx = sum((x - mx) ** 2 for x, _ in points)
        sxy = sum((x - mx) * (y - my) for x, y in points)
        return self._input(text, sxy / sxx)

    def domain(self, domain, text: str, experiment: str | None = None) -> list[tuple[object, bool]]:
        """The values a quantifier ranges over, each with whether it is already a scale value
        (an axis name takes its values from `experiment`, default the claim's own)."""
        match domain:
            case SetOf(items):
                return [(i.value if isinstance(i, Num) else i.text, False) for i in items]
            case RangeOf(low, high):
                return [(float(v), False) for v in range(low, high + 1)]
            case AxisOf(name):
                spec, table = self.table(experiment)
                matrix = _scale_of(spec, self.scale).get("matrix") or {}
                if name in matrix:
                    values = list(matrix[name])
                elif table.empty:
                    self._no_results(spec)
                    return []
                elif name in table.columns or name in (spec.get("dimensions") or {}):
                    frame = table.frame
                    ok = frame[(frame["status"] == "ok") & frame["value"].notna()]
                    # numpy scalars -> Python values, so arithmetic and comparisons accept them
                    values = list(dict.fromkeys(v.item() if hasattr(v, "item") else v
                                                for v in ok[name].dropna())) \
                        if name in ok.columns else []
                else:
                    raise CheckError(f"{text}: {name!r} is not an axis of the `{self.scale}` "
                                     f"matrix nor a column of the results")
                if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                    values = sorted(values)
                if not values:
                    self.missing.append(Gap(f"{text}: no values of {name} in the results",
                                             f"no values of {name} in the results of {spec.get('id', '?')}"))
                return [(v, True) for v in values]
        raise TypeError(domain)

    @staticmethod
    def _float(value, text: str) -> float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise CheckError(f"{text}: {value!r} is not a number") from None

    def number(self, node, env: dict) -> float:
        value = self.evaluate(node, env)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CheckError(f"{show(node, env)} is {fmt(value)!r}, not a number")
        return float(value)

    def truth(self, node, env: dict) -> bool:
        value = self.evaluate(node, env)
        if is_missing(value):      # the gap is recorded; the verdict will be `not run`
            return False
        if not isinstance(value, bool):
            raise CheckError(f"{show(node, env)} is {fmt(value)!r}, not true/false")
        return value

    def _record(self, node, value, env) -> None:
        (self.reproduced if has_data(node) else self.paper).append((show(node, env), value))

    def evaluate(self, node, env: dict):
        match node:
            case Num(value, _):
                return value
            case Word(text, quoted):
                return env[text].value if not quoted and text in env else text
            case Ref():
                return self.ref_value(node, env)
            case Exists(selectors):
                return self.exists(Ref("y", None, selectors), env)
            case Neg(operand):
                return -self.number(operand, env)
            case Not(operand):
                return not self.truth(operand, env)
            case Arith(op, left, right):
                a, b = self.number(left, env), self.number(right, env)
                if is_missing(a) or is_missing(b):
                    return MISSING
                if op == "/" and b == 0:
                    raise CheckError(f"division by zero: {show(right, env)} is 0")
                return ARITH[op](a, b)
            case Logic(op, operands):
                values = [self.truth(o, env) for o in operands]    # all evaluated: all gaps named
                return all(values) if op == "and" else any(values)
            case Compare():
                return self.compare(node, env)
            case Call():
                return self.call(node, env)
            case TimeTo():
                return self.time_to(node, env)
            case Slope():
                return self.slope(node, env)
            case Quant():
                return self.quantify(node, env)
        raise TypeError(f"cannot evaluate {node!r}")

    def compare(self, node: Compare, env: dict) -> bool:
        values = [self.evaluate(o, env) for o in node.operands]
        if any(has_data(o) for o in node.operands):
            for operand, value in zip(node.operands, values):
                self._record(operand, value, env)
        result = True
        for op, a, b in zip(node.ops, values, values[1:]):
            if is_missing(a) or is_missing(b):
                result = False
                continue
            if isinstance(a, bool) or isinstance(b, bool):
                raise CheckError(f"{show(node, env)}: cannot compare true/false values")
            if isinstance(a, str) or isinstance(b, str):
                if not (isinstance(a, str) and isinstance(b, str)):
                    raise CheckError(f"{show(node, env)}: cannot compare {_quoted(a)} with {_quoted(b)}")
                if op not in ("==", "!="):
                    raise CheckError(f"{show(node, env)}: words compare only with == and !=")
            result = result and COMPARE[op](a, b)
        shown = " ".join([fmt(values[0])] + [f"{op} {fmt(v)}" for op, v in zip(node.ops, values[1:])])
        self.tests.append((f"{show(node, env)}: {shown}", result))
        self._say_compare(node, values, result, env)
        return result

    def call(self, node: Call, env: dict):
        name, args = node.name, node.args
        if name in SERIES_FUNCTIONS:
            rows, text = self.series(args[0], env)
            shown = show(node, env)
            if rows is None:
                return self._input(shown, MISSING)
            if name == "duration":
                times = self.time_column(rows, text, self.said(node, env).label)
                if times is None:
                    return self._input(shown, MISSING)
                return self._input(shown, float(times.max() - times.min()))
            values = rows["value"]
            return self._input(shown, float({"mean_over_time": values.mean, "max_over_time": values.max,
                                             "min_over_time": values.min}[name]()))
        values = [self.number(a, env) for a in args]
        if name == "approx":
            return self.approx(node, values, env)
        if any(is_missing(v) for v in values):
            return MISSING
        match name:
            case "abs":
                return abs(values[0])
            case "min":
                return min(values)
            case "max":
                return max(values)
            case "reduction" | "speedup_gain":
                base, new = values
                divisor = base if name == "reduction" else new
                if divisor == 0:
                    raise CheckError(f"division by zero in {show(node, env)}")
                return 1 - new / base if name == "reduction" else base / new - 1
        raise TypeError(name)

    def approx(self, node: Call, values, env: dict) -> bool:
        (a, b), tol = values, dict(node.kwargs)
        self._record(node.args[0], a, env)
        self._record(node.args[1], b, env)
        rtol = tol["rtol"].value if "rtol" in tol else 0.0
        atol = tol["atol"].value if "atol" in tol else 0.0
        tolerance = ", ".join(f"{k}={v.text}" for k, v in node.kwargs)
        if is_missing(a) or is_missing(b):
            result = False
        else:
            result = abs(a - b) <= atol + rtol * abs(b)
        self.tests.append((f"{show(node.args[0], env)} = {fmt(a)}, paper {fmt(b)} ({tolerance})",
                           result))
        said, where = self.said(node.args[0], env, self._common(node.args)), self._where(node.args, env)
        # how far apart the two are, then what the check allows: never the tolerance as the result
        apart = []
        if not (is_missing(a) or is_missing(b)):
            apart = [f"{significant(abs(a - b) / abs(b) * 100)}%"] if rtol and b else []
            apart += [quantity(abs(a - b), said.unit)] if atol or not apart else []
        allows = [f"{significant(rtol * 100)}%"] if rtol else []
        allows += [f"±{quantity(atol, said.unit)}"] if atol else []
        side = " ".join(filter(None, (said.label, quantity(a, said.unit), said.at)))
        gap = f", {' or '.join(apart)} apart" if apart else ""
        self.parts.append(Part(f"{said.label} ≈", side, where, result,
                               f"the paper: {quantity(b, said.unit)}{gap}; the check allows "
                               f"{' and '.join(allows) or 'no difference'}"))
        return result

    def exists(self, ref: Ref, env: dict) -> bool:
        text = show(Exists(ref.selectors), env)
        spec, table = self.table(None)
        if table.empty:
            self._no_results(spec)
            return self._input(text, MISSING)
        sels, _ = self._map(spec, ref, env)
        _, point, row_sels = self._split(spec, table, sels, text)
        subject = self.ref_words(ref, env, sels)
        attempted = self._point_runs(spec, table, point, text, subject)
        if attempted is None:       # never attempted: unknown, not absent
            return self._input(text, MISSING)
        found = False
        for run in attempted:
            rows = table.rows[run["run_id"]]
            rows = rows[(rows["status"] == "ok") & rows["value"].notna()]
            for column, value in row_sels.items():
                rows = rows[_matches(rows[column], value)] if column in rows.columns else rows.iloc[:0]
            found = found or not rows.empty
        self.reproduced.append((text, found))
        self.parts.append(Part(f"exists {subject}", f"{subject}: "
                               + ("a run finished with results" if found else "no run finished with results"),
                               "", found))
        return found

    def quantify(self, node: Quant, env: dict):
        text = show(node, env)
        values = self.domain(node.domain, text)
        if node.kind == "consecutive":
            ordered = sorted(values, key=lambda v: self._float(v[0], text))
            bindings = [dict(zip(node.names, (a, b))) for a, b in zip(ordered, ordered[1:])]
            if not bindings and values:     # e.g. a local matrix with one value of the axis
                self.missing.append(Gap(f"{text}: needs at least two values at `{self.scale}` scale",
                                         f"{self._axis_words(node)}: needs at least two values at the "
                                         f"{self.scale} scale"))
        else:
            bindings = [{node.names[0]: v} for v in values]
        results = []
        for binding in bindings:
            inner = {**env, **{k: _Bound(v, local) for k, (v, local) in binding.items()}}
            seen, excluded, said = len(self.missing), self.excluded_misses, len(self.parts)
            body = self.truth(node.body, inner) if node.kind in ("all", "any", "count", "consecutive") \
                else self.number(node.body, inner)
            # an axis ranges over the points the scale has: a value whose point the scale's
            # `exclude` removes (e.g. nodes=3 only on an emulated network) is not among them
            new = len(self.missing) - seen
            if isinstance(node.domain, AxisOf) and new and new == self.excluded_misses - excluded:
                del self.missing[seen:]
                del self.parts[said:]
                continue
            results.append((binding[node.names[0]][0], body))
        if not results:
            if bindings:
                self.missing.append(Gap(f"{text}: every point is excluded from the `{self.scale}` matrix",
                                         f"{self._axis_words(node)}: every point is excluded from the "
                                         f"{self.scale} matrix"))
            return MISSING         # no values: recorded as missing by domain()
        bodies = [b for _, b in results]
        if node.kind in ("all", "consecutive"):
            return all(bodies)
        if node.kind == "any":
            return any(bodies)
        if node.kind == "count":
            return float(sum(bodies))
        if any(is_missing(b) for b in bodies):
            return MISSING
        pick = {"max": max, "min": min, "argmax": max, "argmin": min}[node.kind]
        best = pick(results, key=lambda r: r[1])
        self.picked[(node, tuple(sorted(env.items())))] = best[0]
        return best[1] if node.kind in ("max", "min") else best[0]


def _evaluate_check(text: str, context: _Context) -> dict:
    ev = _Evaluator(context)
    try:
        check = parse_check(text)
        outcome = ev.truth(check.tree, {})
    except ClaimSyntaxError as e:
        return {"verdict": "not checkable", "reason": f"check does not parse: {e}",
                "finding": "the check does not parse (its error is under the check)"}
    except CheckError as e:
        return {"verdict": "not checkable", "reason": f"check error: {e}",
                "inputs": unique_pairs(ev.inputs),
                "finding": "the check cannot be evaluated as written (its error is under the check)"}
    values = {"paper_values": unique_pairs(ev.paper), "reproduced": unique_pairs(ev.reproduced),
              "inputs": unique_pairs(ev.inputs), "substituted": list(dict.fromkeys(ev.substituted))}
    if ev.missing:
        return {"verdict": "not run", "reason": summary_text([g.text for g in ev.missing]),
                "finding": gaps_text([g.words for g in ev.missing], "missing"), **values}
    if ev.unreached:
        return {"verdict": "differs", "reason": summary_text([g.text for g in ev.unreached]),
                "finding": gaps_text([g.words for g in ev.unreached], "short of their target"), **values}
    finding = parts_text(ev.parts, bool(outcome))
    if outcome:
        return {"verdict": "holds", "reason": summary_text([t for t, _ in ev.tests]),
                "finding": finding, **values}
    failed = [t for t, ok in ev.tests if not ok]
    return {"verdict": "differs", "reason": summary_text(failed) if failed else "the check is false",
            "finding": finding or "the check is false", **values}


def _context(spec: dict, results, scale: str, other_results, other_spec,
             cpus: int | None = None) -> _Context:
    spec = _effective_spec(spec, other_spec)
    if spec.get("data_from") and (results is None or results.empty) and other_results:
        results = other_results(spec["data_from"])
    return _Context(spec, results, scale, other_results, other_spec, cpus)


def _judged(claim: dict, spec: dict, context: _Context, check: str, base: dict) -> Verdict:
    """One check's verdict; `not comparable here` when the scale voids the claim's premise
    (dlobd/results/comparability.py), keeping the numbers read for the reader."""
    verdict = Verdict(check=check, **base, **_evaluate_check(check, context))
    if verdict.verdict == "not checkable":
        return verdict
    if verdict.verdict != "not run" and (guessed := assumed_settings(spec, context.scale)):
        # the points it read ran with settings the paper does not state
        verdict.finding += f" The points read ran with {'; '.join(guessed)}, not stated by the paper."
    void = comparability.premise_void(claim, spec, context.scale, verdict.substituted, context.cpus)
    if void:
        verdict.reason = f"{void}. Read here: {verdict.verdict}: {verdict.reason}"
        verdict.finding = f"{void}. Read here: {verdict.verdict}: {verdict.finding}"
        verdict.verdict = comparability.NOT_COMPARABLE
    return verdict


def _verdict(claim: dict, context: _Context) -> Verdict:
    spec = context.tables[None][0]
    base = {"claim_id": claim["id"], "experiment": spec.get("id"), "paper": spec.get("paper"),
            "kind": claim.get("kind"), "text": claim.get("text"), "scale": context.scale,
            "software": context.tables[None][1].software}
    if not claim.get("check"):
        reason = claim.get("not_checkable") or "the claim has no check"
        return Verdict(verdict="not checkable", reason=reason, finding=reason, **base)
    verdict = _judged(claim, spec, context, claim["check"], base)
    if claim.get("check_alt"):
        verdict.check_alt = claim["check_alt"]
        verdict.alt = _judged(claim, spec, context, claim["check_alt"], base)
    return verdict


def evaluate_claim(claim: dict, spec: dict, results: pd.DataFrame | None, scale: str,
                   other_results=None, other_spec=None, cpus: int | None = None) -> Verdict:
    """The verdict of one claim of `spec` over its results at `scale`.

    other_results(experiment_id) -> DataFrame serves `y@<experiment>` references (and the
    results of a `data_from` spec); other_spec(experiment_id) -> dict gives those
    experiments' specs (default: experiments/<id>.yaml); `cpus` is the cores the runs' hosts
    recorded (substitutions.run_cores), which the premise rules weigh.
    """
    return _verdict(claim, _context(spec, results, scale, other_results, other_spec, cpus))


def evaluate_spec(spec: dict, results: pd.DataFrame | None, scale: str, other_results=None,
                  other_spec=None, cpus: int | None = None) -> list[Verdict]:
    """The verdicts of every claim of `spec` (results indexed once for all of them)."""
    context = _context(spec, results, scale, other_results, other_spec, cpus)
    return [_verdict(c, context) for c in spec.get("claims") or []]


# ---------------------------------------------------------------- command


def register(parser) -> None:
    parser.add_argument("--results", required=True, type=Path,
                        help="directory of tidy results, data/results/<scale>")
    parser.add_argument("--scale", required=True, help="the scale the results belong to")
    parser.add_argument("--experiments", nargs="+", metavar="ID",
                        help="only these experiments (default: all specs and claims files)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="project root holding experiments/ and claims/")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the verdicts as JSON")
    parser.add_argument("--csv", type=Path, metavar="OUT", help="write the verdict table as CSV")


def _read_results(directory: Path, experiment: str) -> pd.DataFrame:
    path = directory / f"{experiment}.csv"
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def run(args) -> int:
    if not args.results.is_dir():
        print(f"dlobd claims: results directory {args.results} does not exist", file=sys.stderr)
        return 2
    specs = {}
    for path in sorted((args.root / "experiments").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        specs[data.get("id", path.stem)] = data
    for path in sorted((args.root / "claims").glob("*.yaml")):
        specs[f"claims/{path.stem}"] = {"id": f"claims/{path.stem}",
                                        **yaml.safe_load(path.read_text())}
    wanted = args.experiments or list(specs)
    unknown = [e for e in wanted if e not in specs]
    if unknown:
        print(f"dlobd claims: no spec for {', '.join(unknown)} under {args.root}", file=sys.stderr)
        return 2

    @functools.cache
    def other_results(experiment):
        return _read_results(args.results, experiment)

    def other_spec(experiment):
        if experiment not in specs:
            raise CheckError(f"no spec for {experiment}")
        return specs[experiment]

    verdicts = []
    for exp in wanted:
        verdicts += evaluate_spec(specs[exp], other_results(exp), args.scale, other_results,
                                  other_spec, comparability.recorded_cores(args.results, specs[exp]))
    frame = verdicts_frame(verdicts)
    if args.json:
        args.json.write_text(json.dumps([v.to_dict() for v in verdicts], indent=1) + "\n")
    if args.csv:
        frame.to_csv(args.csv, index=False)
    for v in verdicts:
        shown = f"{v.verdict} (alt: {v.alt_verdict})" if v.alt else v.verdict
        print(f"{v.claim_id:<11} {shown:<32} {v.reason}")
    counts = frame["verdict"].value_counts()
    print(", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS))
    return 0
