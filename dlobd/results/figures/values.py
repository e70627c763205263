"""Data selection and reduction: the rows a figure draws and one value per run or point."""

from __future__ import annotations

import math

import pandas as pd

from dlobd.results.tidy import is_monitor


ROW_X = ("step", "epoch", "wall_clock_s")


def as_number(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def same(a, b) -> bool:
    """Matrix values compare as numbers when both are numbers (2 == 2.0), else as text."""
    fa, fb = as_number(a), as_number(b)
    if fa is not None and fb is not None:
        return fa == fb
    return str(a) == str(b)


def where(frame: pd.DataFrame, column: str, value) -> pd.DataFrame:
    """Rows whose `column` equals `value` in the sense of `same`."""
    # an explicit bool mask: an empty object-typed one would select columns instead
    return frame.loc[frame[column].map(lambda x: same(x, value)).astype(bool)]


def label_of(v) -> str:
    f = as_number(v)
    if f is not None and f.is_integer():
        return str(int(f))
    return str(v)


# the matrix axis whose values name a data set (CIFAR-10, MNIST)
DATA_AXIS = "workload"


def value_label(axis: str, value, rows: pd.DataFrame) -> str:
    """A matrix value as a figure names it; a data set its runs generated reads
    `cifar10 (synthetic)`, since the name alone reads as the real data set."""
    synthetic = (axis == DATA_AXIS and "data_label" in rows and not rows.empty
                 and (rows["data_label"].astype(str) == "synthetic").all())
    return label_of(value) + (" (synthetic)" if synthetic else "")


def reduce_values(rows: pd.DataFrame, how: str, over: str | None = None) -> float | None:
    vals = rows
    order = [c for c in ([over] if over else []) + ["epoch", "step", "wall_clock_s"]
             if c and c in rows.columns and rows[c].notna().any()]
    if order:
        vals = rows.sort_values(order[0], kind="stable")
    series = pd.to_numeric(vals["value"], errors="coerce").dropna()
    if series.empty:
        return None
    return float({"last": series.iloc[-1], "sum": series.sum(), "mean": series.mean(),
                  "median": series.median(), "max": series.max(), "min": series.min()}[how])


def run_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of the stack's own logs (monitor samples excluded)."""
    return table[~is_monitor(table)]


# reductions that stand for a run's repeated values: a figure draws the repeats' range with them
CENTRES = ("mean", "median")


def point_values(table: pd.DataFrame, axes: list[str], metric: str, how: str,
                 over: str | None = None, only: dict | None = None, samples: bool = False) -> pd.DataFrame:
    """One value per run (its axes, run_id, status, value) for a metric, reduced by `how` over
    its rows (those with the values `only` gives, e.g. {'phase': 'training'}, if any); the
    monitor's samples among them with `samples`. `low` and `high`: the lowest and highest of
    the rows a mean or median stands for (a run's `repeats`), else the value."""
    table = table if samples else run_rows(table)
    out = []
    if table.empty:
        return pd.DataFrame(columns=[*axes, "cluster", "run_id", "status", "reason", "value", "low", "high"])
    for run_id, rows in table.groupby("run_id", sort=False):
        first = rows.iloc[0]
        rec = {a: first[a] for a in axes if a in rows.columns}
        rec.update(cluster=first.get("cluster"), run_id=run_id, status=first["status"],
                   reason=first.get("reason"), value=None)
        if first["status"] == "ok":
            sel = rows[rows["metric"] == metric]
            for col, val in (only or {}).items():
                if col in sel.columns:
                    sel = where(sel, col, val)
            rec["value"] = reduce_values(sel, how, over)
            if rec["value"] is None:
                rec["status"], rec["reason"] = "no value", f"no {metric} rows in the run's logs"
            elif how in CENTRES:
                repeats = pd.to_numeric(sel["value"], errors="coerce")
                rec["low"], rec["high"] = float(repeats.min()), float(repeats.max())
        rec.setdefault("low", rec["value"])
        rec.setdefault("high", rec["value"])
        out.append(rec)
    return pd.DataFrame(out)


def ordered_values(spec_axes_values: dict, axis: str, present) -> list:
    """Values of an axis in the scale's matrix order, then any others found in the results."""
    order = list(spec_axes_values.get(axis, []))
    for v in present:
        if not any(same(v, o) for o in order):
            order.append(v)
    return order


def window_means(rows: pd.DataFrame, window_s: float) -> tuple[list, list, bool]:
    """Means of one line's samples over consecutive windows of `window_s` seconds from its first
    sample, each at the middle of the part of its window the samples cover: the paper's
    "average per time window" reduction, over whole windows only. The samples (each standing for
    the median spacing after it) fill a run's duration; a last window the run does not fill gives
    no mean: its samples are the run's end, not a window's average. A run shorter than one window
    gets one mean over the whole run, at its middle, and the third value (shrunk) says so."""
    t, v = rows["wall_clock_s"].astype(float), rows["value"].astype(float)
    spacing = float(t.diff().median()) if len(t) > 1 else 0.0
    whole = int((t.max() - t.min() + spacing) // window_s)
    if whole == 0:
        return [(t.min() + t.max()) / 2], [float(v.mean())], True
    bins = (t - t.min()) // window_s
    means = v[bins < whole].groupby(bins[bins < whole].to_numpy()).mean()
    starts = [t.min() + b * window_s for b in means.index]
    return [(a + min(a + window_s, t.max())) / 2 for a in starts], means.tolist(), False
