"""Figures from tidy results: one drawing function per plot form of the specs.

Every figure names its scale, cluster and data on its face, marks the paper's stated
numbers (the spec's `paper_values`), labels emulated networks and synthetic data, and
shows points whose run did not end `ok` with their status. An experiment without `ok`
results still gets a figure that says why ("not run: <reason>"), so the report is
complete. Drawing uses matplotlib's object API (no pyplot state), so figures can be drawn
from the threads of one Snakemake process.
"""

from __future__ import annotations

import itertools
import math
import re
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# glyphs unhinted: FreeType's hinting of every glyph took a sixth of the drawing time, and at
# this resolution the hinted and unhinted texts look alike
matplotlib.rcParams["text.hinting"] = "no_hinting"
import matplotlib.lines  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import LogLocator, MaxNLocator  # noqa: E402

from dlobd.results.tidy import is_monitor, not_run_reason  # noqa: E402
from dlobd.spec import _matches, expand, metrics, substitutions  # noqa: E402
from dlobd.spec.claimlang import first_reached  # noqa: E402

ROW_X = ("step", "epoch", "wall_clock_s")
STATUS_MARK = {"failed": "failed", "hung": "hung", "not runnable": "n/r", "unparseable": "unparseable"}
FIGSIZE = (8.0, 5.0)
DPI = 100
# zlib's fastest level: these flat-coloured plots come out within 3% of the default level's
# size, compressed in half its time (compressing took two fifths of a save)
PNG_OPTIONS = {"dpi": DPI, "pil_kwargs": {"compress_level": 1}}
# the settings of a scale that size its work: one the paper leaves unstated, set at a scale, makes
# that scale's absolute times and rates another workload's
WORKLOAD_SETTINGS = ("batch", "epochs", "gradient_bytes", "image_size", "iterations", "model", "pages",
                     "steps", "test_images", "train_images")
PAPER_COLOR = "#c0392b"
PAPER_PANEL_IN = 2.8  # height the panel of the paper's values adds under the data


# ---------------------------------------------------------------- values


def _num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def same(a, b) -> bool:
    """Matrix values compare as numbers when both are numbers (2 == 2.0), else as text."""
    fa, fb = _num(a), _num(b)
    if fa is not None and fb is not None:
        return fa == fb
    return str(a) == str(b)


def where(frame: pd.DataFrame, column: str, value) -> pd.DataFrame:
    """Rows whose `column` equals `value` in the sense of `same`."""
    # an explicit bool mask: an empty object-typed one would select columns instead
    return frame.loc[frame[column].map(lambda x: same(x, value)).astype(bool)]


def label_of(v) -> str:
    f = _num(v)
    if f is not None and f.is_integer():
        return str(int(f))
    return str(v)


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


def point_values(table: pd.DataFrame, axes: list[str], metric: str, how: str,
                 over: str | None = None, only: dict | None = None, samples: bool = False) -> pd.DataFrame:
    """One value per run (its axes, run_id, status, value) for a metric, reduced by `how` over
    its rows (those with the values `only` gives, e.g. {'phase': 'training'}, if any); the
    monitor's samples among them with `samples`."""
    table = table if samples else run_rows(table)
    out = []
    if table.empty:
        return pd.DataFrame(columns=[*axes, "cluster", "run_id", "status", "reason", "value"])
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
        out.append(rec)
    return pd.DataFrame(out)


def ordered_values(spec_axes_values: dict, axis: str, present) -> list:
    """Values of an axis in the scale's matrix order, then any others found in the results."""
    order = list(spec_axes_values.get(axis, []))
    for v in present:
        if not any(same(v, o) for o in order):
            order.append(v)
    return order


def size_text(key: str, value, stated=None) -> str:
    """'8 train images', 'image size 64 (paper: 224)', 'pages huge 5000, bigdata 50000': a count
    (a plural setting) before its noun, another size after its name; the paper's number after."""
    name = key.replace("_", " ")
    if isinstance(value, dict):  # a size per data set or graph
        text = f"{name} " + ", ".join(f"{k} {label_of(v)}" for k, v in value.items())
    else:
        count = name if _num(value) != 1 else name.rstrip("s")
        text = f"{label_of(value)} {count}" if key.endswith("s") else f"{name} {label_of(value)}"
    return text + (f" (paper: {label_of(stated)})" if _num(stated) is not None else "")


def setting_pattern(key: str, value) -> re.Pattern:
    """A number with the setting it counts: '300 steps' for steps=300, '768 cores'."""
    noun = re.escape(key.replace("_", " ").rstrip("s"))
    return re.compile(rf"(?<![\w.]){re.escape(label_of(value))}\s+{noun}s?\b", re.IGNORECASE)


# ---------------------------------------------------------------- context


class Context:
    """Everything a drawing function needs besides the axes: spec, scale, labels."""

    def __init__(self, spec: dict, scale_name: str, scale: dict, table: pd.DataFrame,
                 not_run_reason: str | None = None):
        self.spec = spec
        self.scale_name = scale_name
        self.scale = scale or {}
        self.table = table
        self.not_run_reason = not_run_reason
        self.plot = spec["plot"]
        self.metric = spec["metric"]
        self.matrix = self.scale.get("matrix") or {}
        self.axes = list(spec.get("axes") or self.matrix)
        for col in table.columns:
            if col in self.matrix and col not in self.axes:
                self.axes.append(col)
        # beside results of another scale, or no results, the paper's numbers get a panel
        self.paper_panel = bool(self.paper_values()) and (scale_name != "paper"
                                                          or bool(not_run_reason))
        self.main_axes: list = []
        self.extra_bottom = 0.0  # room for long tick labels, set by a form before its axes
        self.right = 0.98  # less when a form draws a right-hand axis
        self.paper_area = None
        self.outer = None
        self.left_out: list[str] = []  # panels without a value, and why: '<panel>: <statuses>'
        self.no_line: list[str] = []  # lines without a value, and why: '<series>: <statuses>'
        # a series drawn from some of its runs only: '<series>: 1 of 3 (failed)'
        self.not_drawn: list[str] = []
        self.timed: list[tuple] = []  # the paper panel's times to a target accuracy (main_area)
        self._values: dict[tuple, pd.DataFrame] = {}

    def main_area(self, fig: Figure):
        """The part of the figure for the reproduced data (all of it without paper panel)."""
        self.height_in = fig.get_figheight()
        # the times to the target accuracy of the paper panel; a panel of none is left out and the
        # footer, sized by the margins below, says why
        self.timed = timed_points(self) if self.paper_panel else []
        if self.timed and all(paper is None and here is None for _, paper, here, _ in self.timed):
            whys = [f"{point_text(self, point).replace(chr(10), ' ')}: {why}"
                    for point, _, _, why in self.timed if why]
            self.left_out.append(f"{target_text(self)} (the paper states no time, only a relation"
                                 + (f"; {'; '.join(whys)})" if whys else ")"))
            self.timed = []
        if not self.paper_panel:
            self.outer = fig.add_gridspec(1, 1, **_margins(self))
            return self.outer[0]
        self.outer = fig.add_gridspec(2, 1, height_ratios=[2.2, 1],
                                      hspace=0.6 + 2 * self.extra_bottom, **_margins(self))
        self.paper_area = self.outer[1]
        return self.outer[0]

    def values(self, metric: str, how: str, over: str | None = None, only: dict | None = None,
               samples: bool = False) -> pd.DataFrame:
        """point_values of this figure's table, each reduction computed once: the paper panel asks
        for the same one at every point it compares. Callers select from it, never change it."""
        key = (metric, how, over, repr(sorted((only or {}).items())), samples)
        if key not in self._values:
            self._values[key] = point_values(self.table, self.axes, metric, how, over, only, samples)
        return self._values[key]

    @property
    def ok(self) -> pd.DataFrame:
        t = self.table
        return t[(t["status"] == "ok") & t["value"].notna()] if not t.empty else t

    def y_label(self) -> str:
        label = self.local_text(self.plot["y_label"])
        unit = self.metric.get("unit")
        named = unit and re.search(rf"(^|[\s(/]){re.escape(unit)}($|[\s),])", label, re.IGNORECASE)
        return label if not unit or named else f"{label} ({unit})"

    def x_label(self) -> str:
        """The x axis's label; away from the paper's scale, with the paper's values the run's
        values stand for, e.g. 'CPU cores (paper: 96/192/384)'."""
        label = self._x_base()
        x = self.plot["x"]
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("matrix") or {}
        if self.scale_name == "paper" or x not in paper:
            return label
        ran = [str(v) for v in self.matrix.get(x, [])]
        stated = [str(v) for v in paper[x]]
        if ran == stated:
            return label
        return f"{label} (paper: {'/'.join(label_of(v) for v in paper[x])})"

    def changed_settings(self) -> list[tuple[str, object, object]]:
        """(setting, the paper's value, this scale's) of each number the scale changes."""
        if self.scale_name == "paper":
            return []
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("fixed") or {}
        here = self.scale.get("fixed") or {}
        return [(k, v, here[k]) for k, v in paper.items() if k in here and _num(v) is not None
                and _num(here[k]) is not None and not same(v, here[k])]

    def other_workload(self) -> bool:
        """Whether this scale runs another workload than the paper's (other step counts or sizes,
        a size the paper does not state, another model or data set): its absolute times and
        rates are not the paper's quantity."""
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("fixed") or {}
        unstated = [k for k in WORKLOAD_SETTINGS if k in (self.scale.get("fixed") or {}) and k not in paper]
        return bool(self.changed_settings() or unstated) or any(
            s.startswith(("model ", "data ")) for s in substitutions.substitutions(self.spec, self.scale_name))

    def local_text(self, text: str) -> str:
        """A spec label with the paper's numbers this scale changes put as they ran here:
        'Elapsed time of 300 steps' -> 'Elapsed time of 8 steps (paper: 300)'."""
        for key, stated, ran in self.changed_settings():
            found = setting_pattern(key, stated).search(text)
            if found:
                text = text.replace(found[0], found[0].replace(label_of(stated), label_of(ran), 1)) \
                    + f" (paper: {label_of(stated)})"
        return text

    def settings_here(self, said: str = "") -> list[str]:
        """What ran here that the title has to name besides `said` (its axes' labels): the changed
        numbers the spec's title names, '2 cores (paper: 768)', and each size of the work this scale
        sets otherwise than the paper, '8 train images', 'image size 64 (paper: 224)'."""
        named = [(key, stated, ran) for key, stated, ran in self.changed_settings()
                 if setting_pattern(key, stated).search(self.spec["title"])]
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("fixed") or {}
        # the model is named by the substitutions
        sizes = [(key, paper.get(key), ran) for key, ran in (self.scale.get("fixed") or {}).items()
                 if key in WORKLOAD_SETTINGS and key != "model" and key not in {k for k, _, _ in named}
                 and not same(paper.get(key), ran) and not setting_pattern(key, ran).search(said)]
        return [size_text(key, ran, stated) for key, stated, ran in named + sizes]

    def axis_name(self, axis: str) -> str:
        """What an axis's values count here: the paper's GPUs are CPU worker processes at a
        scale without GPUs, its nodes executors on fewer hosts."""
        subs = substitutions.substitutions(self.spec, self.scale_name)
        if axis == "gpus" and any(s.startswith("CPU processes") for s in subs):
            return "CPU worker processes (paper: GPUs)"
        if axis == "nodes" and any(s.startswith("processes on") for s in subs):
            return "executors (paper: nodes)"
        return axis

    def _x_base(self) -> str:
        x = self.plot["x"]
        if self.plot.get("x_label"):
            label = self.local_text(self.plot["x_label"])
            if self.axis_name(x) != x:
                label = re.sub(r"\bnodes\b|\bGPUs\b", "executors" if x == "nodes" else "CPU worker processes",
                               label, flags=re.IGNORECASE)
            return label
        desc = (self.spec.get("axes") or {}).get(x) or (self.spec.get("dimensions") or {}).get(x)
        unit = (desc or {}).get("unit")
        defaults = {"wall_clock_s": "Training time (s)", "epoch": "Epoch", "step": "Iteration"}
        base = defaults.get(x, self.axis_name(x).replace("_", " "))
        return f"{base} ({unit})" if unit else base

    def series_keys(self, frame: pd.DataFrame, names: list[str]) -> list[tuple]:
        values = [ordered_values(self.matrix, n, frame[n].dropna().unique() if n in frame else [])
                  for n in names]
        return list(itertools.product(*values)) if names else [()]

    def clusters(self) -> list[str]:
        t = self.table
        return sorted({str(c) for c in t["cluster"].dropna()}) if "cluster" in t else []

    def data_labels(self) -> list[str]:
        t = self.table
        found = sorted({str(d) for d in t["data_label"].dropna()}) if "data_label" in t else []
        return found or [str(self.scale.get("dataset") or self.spec.get("dataset"))]

    def paper_software(self) -> bool:
        """Whether a drawn point ran the paper profile's software."""
        return "profile" in self.ok and (self.ok["profile"] == "paper").any()

    def emulated(self) -> bool:
        """Whether a drawn point ran on an emulated network (a failed one draws no data)."""
        t = self.ok
        cols = [c for c in ("network",) if c in t.columns]
        vals = {str(v) for c in cols for v in t[c].dropna().unique()}
        return any("emulated" in v for v in vals)

    def footer(self) -> str:
        cluster_spec = self.scale.get("cluster")
        ran_on = self.clusters()
        cluster = ", ".join(ran_on) if ran_on else (cluster_spec or "(no runs)")
        data = ", ".join(self.data_labels())
        parts = [f"scale: {self.scale_name}", f"cluster: {cluster}", f"data: {data}"]
        if self.paper_software():
            parts.insert(0, "PAPER SOFTWARE (the papers' releases), local hardware")
        if any("synthetic" in d for d in self.data_labels()):
            parts.append("SYNTHETIC DATA")
        if self.emulated():
            parts.append("EMULATED NETWORK (shaped veth links, not IPoIB/RDMA)")
        repeats = int(self.scale.get("repeats", 1))
        if repeats > 1:
            parts.append(f"{repeats} repeats a point: mean, bars min–max")
        substituted = substitutions.footer(self.spec, self.scale_name)
        if substituted:
            parts.append(substituted)
        return "  ·  ".join(parts)

    def paper_values(self) -> list[dict]:
        """The numbers the paper states: this scale's, else the paper scale's."""
        own = self.scale.get("paper_values")
        if own:
            return list(own)
        return list(((self.spec.get("scales") or {}).get("paper") or {}).get("paper_values") or [])


# ---------------------------------------------------------------- helpers


def _texts(ctx: Context) -> tuple[list[str], list[str]]:
    """The wrapped title lines and footer lines of a figure."""
    spec = ctx.spec
    if ctx.scale_name == "paper":
        title = textwrap.wrap(f"{spec['figure']} ({spec['paper']}): {spec['title']}", 95)
    else:  # the title says what ran here; the paper's setting follows in a line of its own
        here = f"{ctx.y_label()} over {ctx.x_label().split(' (paper:')[0]}"
        subs = ctx.settings_here(here) + substitutions.substitutions(spec, ctx.scale_name)
        if subs:
            here += " — here: " + "; ".join(subs)
        done = "Not run" if ctx.not_run_reason else "Rerun"
        title = (textwrap.wrap(f"{done} at the {ctx.scale_name} scale: {here}", 95, break_on_hyphens=False)
                 + textwrap.wrap(f"paper: {spec['figure']} ({spec['paper']}): {spec['title']}", 95,
                                 break_on_hyphens=False))
    notes = [ctx.footer()]
    if not ctx.not_run_reason and _non_ok_summary(ctx):
        notes[0] += "  ·  " + _non_ok_summary(ctx)
    if ctx.left_out:
        notes[0] += "  ·  no panel for " + "; ".join(ctx.left_out)
    if ctx.no_line:
        notes[0] += "  ·  no line for " + "; ".join(ctx.no_line)
    if ctx.not_drawn:
        notes[0] += "  ·  runs not drawn: " + "; ".join(ctx.not_drawn)
    pv = ctx.paper_values()
    if ctx.paper_panel:
        texts = []
        for p in pv:
            at = ", ".join(f"{k}={label_of(v)}" for k, v in p["at"].items())
            if p.get("over"):
                at += " over " + ", ".join(f"{k}={label_of(v)}" for k, v in p["over"].items())
            if p.get("up_to"):
                at += f", max over {p['up_to']}"
            if p.get("stack"):
                at += f", {p['stack']}"
            what = f"{p['quantity']} " if p.get("quantity") else ""
            stated = stated_text(p, get_unit(ctx, p))
            if reaches_target(ctx, p):  # drawn as the time it states, so said as that time
                at = ", ".join(f"{k}={label_of(v)}" for k, v in p["at"].items() if k != ctx.plot["x"])
                stated = f"{stated} reached at {p['at'][ctx.plot['x']]:g} s"
            texts.append(f"[{at}] {what}{stated} ({p['where']})")
        notes.append("paper's stated values (paper's cluster, lower panel): " + "; ".join(texts))
    footer = []
    for note in notes:
        footer.extend(textwrap.wrap(note, 140, break_on_hyphens=False))
    return title, footer


def _margins(ctx: Context) -> dict:
    title, footer = _texts(ctx)
    height = ctx.height_in / FIGSIZE[1]  # text sizes are fixed; fractions shrink with height
    # long tick labels of the data need room under its axes: below the figure, or above the
    # paper's panel when it has one (main_area)
    bottom = (0.1 + 0.025 * len(footer) + (0.1 if ctx.paper_panel else ctx.extra_bottom)) / height
    top = 1 - (0.08 + 0.034 * len(title)) / height  # a 9.5 pt line and the panels' titles
    return {"left": 0.11, "right": ctx.right, "bottom": bottom, "top": top}


def _decorate(fig: Figure, ctx: Context) -> None:
    title, footer = _texts(ctx)
    fig.suptitle("\n".join(title), fontsize=9.5, y=0.995, va="top")
    fig.text(0.01, 0.005, "\n".join(footer), fontsize=7, va="bottom", ha="left",
             color="#333333")


def is_model(key: tuple) -> bool:
    """Whether a series is a cost model's prediction (an axis value `model-…`), not a run."""
    return any(str(v).startswith("model-") for v in key)


def _legend_label(names: list[str], key: tuple) -> str:
    label = ", ".join(f"{label_of(v)}" if len(names) == 1 else f"{n}={label_of(v)}"
                      for n, v in zip(names, key)) or "reproduced"
    return f"{label} (model)" if is_model(key) else label


# predictions dashed without markers, so they never read as measurements
MODEL_STYLE = {"ls": "--", "marker": None}


def _legend_title(ctx: Context, series: list[str]) -> str | None:
    return ", ".join(ctx.axis_name(n) for n in series) if series else None


def _select(frame: pd.DataFrame, names: list[str], key: tuple) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for n, v in zip(names, key):
        if n in frame.columns:
            mask &= frame[n].map(lambda x, v=v: same(x, v)).astype(bool)
        else:
            mask &= False
    return frame[mask]


def _panel_keys(ctx: Context, frame: pd.DataFrame) -> list[tuple]:
    """The panels to draw: a panel without a value would show only notes, so it is left out
    and the footer says why (ctx.left_out); all are kept when none has a value."""
    names = list(ctx.plot.get("panels") or [])
    keys = ctx.series_keys(frame, names)
    cells = {key: _select(frame, names, key) for key in keys}
    drawn = [key for key in keys if ((cells[key]["status"] == "ok") & cells[key]["value"].notna()).any()]
    if not drawn:
        return keys
    for key in keys:
        if key not in drawn:
            ctx.left_out.append(f"{_panel_title(ctx, key)}: {_why_empty(cells[key])}")
    return drawn


def _why_empty(cell: pd.DataFrame) -> str:
    """The statuses of the runs of points without a value: 'n/r: needs multi-host', 'failed'."""
    runs = cell.drop_duplicates("run_id")
    return ", ".join(dict.fromkeys(_status_text(run) for _, run in runs.iterrows())) or "no run"


def _lines_left_out(ctx: Context, values: pd.DataFrame, pkeys: list[tuple], series: list[str]) -> set:
    """The (panel, series) of the lines without a value, said in the footer (ctx.no_line): their
    notes would stand at every x, across the other lines' points and error bars."""
    panels = list(ctx.plot.get("panels") or [])
    out = set()
    for pkey in pkeys if series else []:
        pframe = _select(values, panels, pkey)
        for skey in ctx.series_keys(pframe, series):
            cell = _select(pframe, series, skey)
            if not ((cell["status"] == "ok") & cell["value"].notna()).any():
                out.add((pkey, skey))
                where = ", ".join(f"{ctx.axis_name(n)}={label_of(v)}" for n, v in zip(series, skey))
                ctx.no_line.append(", ".join(filter(None, [_panel_title(ctx, pkey), where]))
                                   + f": {_why_empty(cell)}")
    return out


def _panel_title(ctx: Context, key: tuple) -> str:
    names = list(ctx.plot.get("panels") or [])
    return ", ".join(f"{ctx.axis_name(n)}={label_of(v)}" for n, v in zip(names, key))


def _axis_scales(ax, ctx: Context) -> None:
    if ctx.plot.get("log_x"):
        ax.set_xscale("log", base=2)
    if ctx.plot.get("log_y"):
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)


def _paper_points(ctx: Context, extra_where: dict | None = None) -> list[dict]:
    """Paper values that belong on the axes: only when the figure is at paper scale."""
    if ctx.scale_name != "paper":
        return []
    out = []
    for p in ctx.paper_values():
        if p.get("metric") not in (None, ctx.metric["name"]):
            continue
        out.append(p)
    return out


def _status_note(ax, x, cell: pd.DataFrame) -> None:
    """Say at the foot of the axes why a point has no value: its status and, for a point
    not runnable here, the capabilities it needs (e.g. 'n/r: needs multi-host')."""
    ax.annotate(_status_text(cell.iloc[0]), (x, 0.02), xycoords=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7, color="#7f7f7f", rotation=90)


def _status_text(run: pd.Series) -> str:
    """A run's status as a note says it: 'failed', 'n/r: needs multi-host, eth-10g-emulated'."""
    status = str(run["status"])
    text = STATUS_MARK.get(status, status)
    reason = str(run["reason"]) if pd.notna(run.get("reason")) else ""
    needs = list(dict.fromkeys(re.findall(r"needs ([\w+-]+):", reason)))
    if status == "not runnable" and needs:
        text += ": needs " + ", ".join(needs)
    return text


def _empty_slot_note(ax, x, ctx: Context, point: dict) -> None:
    """Say why a point of this scale has no run in the set drawn: the capabilities its
    point_needs names (e.g. a tier only an emulated cluster has), or that it was not run."""
    full = {k: v for k, v in point.items() if k in ctx.matrix}
    if not any(_matches(p, full) for _, p in expand(ctx.scale)):
        return      # excluded from this scale's matrix: no slot to explain
    needs = [n for pn in ctx.scale.get("point_needs", []) if _matches(full, pn["at"]) for n in pn["needs"]]
    text = ("no run: needs " + ", ".join(dict.fromkeys(needs))) if needs else "no run in this set"
    ax.annotate(text, (x, 0.02), xycoords=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7, color="#7f7f7f", rotation=90)


def _non_ok_summary(ctx: Context) -> str | None:
    t = ctx.table
    if t.empty:
        return None
    bad = t[t["status"] != "ok"].drop_duplicates("run_id")
    if bad.empty:
        return None
    counts = bad["status"].value_counts()
    return "runs not ok: " + ", ".join(f"{n} {s}" for s, n in counts.items())


# ---------------------------------------------------------------- plot forms


def grouped_bars(fig: Figure, ctx: Context, lines: bool = False) -> None:
    """Bars grouped by the x axis, one bar per series (the DLoBD paper's nodes/cores charts)."""
    x, series = ctx.plot["x"], list(ctx.plot.get("series") or [])
    values = ctx.values(ctx.metric["name"], ctx.metric["reduce"], ctx.metric.get("over"))
    pkeys = _panel_keys(ctx, values)
    silent = _lines_left_out(ctx, values, pkeys, series) if lines else set()
    fig_axes = _reuse_axes(fig, ctx, len(pkeys))
    for ax, pkey in zip(fig_axes, pkeys):
        pframe = _select(values, list(ctx.plot.get("panels") or []), pkey)
        xs = ordered_values(ctx.matrix, x, pframe[x].dropna().unique() if x in pframe else [])
        skeys = ctx.series_keys(pframe, series)
        width = 0.8 / max(len(skeys), 1)
        for i, skey in enumerate(skeys):
            if (pkey, skey) in silent:
                continue
            sframe = _select(pframe, series, skey)
            ys, pos, spread = [], [], []
            for j, xv in enumerate(xs):
                cell = where(sframe, x, xv) if x in sframe else sframe
                if lines:
                    xpos = float(xv) if _num(xv) is not None else j
                else:
                    xpos = j - 0.4 + width * (i + 0.5)
                okc = cell[cell["status"] == "ok"]
                if not okc.empty:
                    cell_values = okc["value"].astype(float)
                    ys.append(float(cell_values.mean()))
                    spread.append((ys[-1] - cell_values.min(), cell_values.max() - ys[-1]))
                    pos.append(xpos)
                elif not cell.empty:
                    _status_note(ax, xpos, cell)
                elif ctx.scale_name != "paper" and not ctx.not_run_reason:
                    point = dict(zip(list(ctx.plot.get("panels") or []), pkey))
                    _empty_slot_note(ax, xpos, ctx, {**point, **dict(zip(series, skey)), x: xv})
            label = _legend_label(series, skey)
            # repeats of a point: the mean, and a bar from the lowest to the highest run
            yerr = list(zip(*spread)) if any(lo or hi for lo, hi in spread) else None
            if lines and pos:     # a series without data gets no legend entry
                style = MODEL_STYLE if is_model(skey) else {"marker": "o"}
                ax.errorbar(pos, ys, yerr=yerr, capsize=3, label=label, **style)
            elif pos:
                ax.bar(pos, ys, width=width * 0.95, yerr=yerr, capsize=3, label=label)
        for p in _paper_points(ctx):
            at = p["at"]
            if not all(same(pkey_v, at.get(n, pkey_v)) for n, pkey_v in
                       zip(ctx.plot.get("panels") or [], pkey)):
                continue
            xv = at.get(x)
            match = [j for j, v in enumerate(xs) if xv is not None and same(v, xv)]
            if not match:
                continue
            skey = tuple(at.get(s) for s in series)
            i = next((k for k, sk in enumerate(skeys) if all(same(a, b) for a, b in zip(sk, skey))), 0)
            xpos = float(xv) if lines and _num(xv) is not None else match[0] - 0.4 + width * (i + 0.5)
            ax.plot([xpos], [p["value"]], marker="D", mfc="none", mec=PAPER_COLOR, ms=8, ls="none",
                    label="paper's value" if "paper's value" not in
                    ax.get_legend_handles_labels()[1] else None)
        if not lines:
            ax.set_xticks(range(len(xs)), [label_of(v) for v in xs])
            ax.set_xlim(-0.6, len(xs) - 0.4)  # slots without a bar keep their room and label
        elif all(_num(v) is not None for v in xs) and xs:
            ticks = [float(v) for v in xs]
            ax.set_xticks(ticks, [label_of(v) for v in xs])
            if not ctx.plot.get("log_x"):
                # room for the status notes of points at the ends of the axis
                pad = 0.06 * (max(ticks) - min(ticks)) or 0.5
                ax.set_xlim(min(ticks) - pad, max(ticks) + pad)
        ax.set_xlabel(ctx.x_label())
        ax.set_ylabel(ctx.y_label())
        if pkey:
            ax.set_title(_panel_title(ctx, pkey), fontsize=9)
        _axis_scales(ax, ctx)
        if ax.get_legend_handles_labels()[0]:
            ax.margins(y=0.3)  # headroom, so the legend does not cover the tallest bars
            ax.legend(fontsize=7, title=_legend_title(ctx, series), title_fontsize=7)


def scaling_lines(fig: Figure, ctx: Context) -> None:
    """Lines over a numeric scale axis (nodes, GPUs, cores), one line per series."""
    grouped_bars(fig, ctx, lines=True)


def _curve(rows: pd.DataFrame, xcol: str, how: str | None) -> tuple[list, list]:
    """x and y of one run's line: every sample, or with `how` one value per x (per epoch)."""
    rows = rows.dropna(subset=[xcol])
    if how is None:
        rows = rows.sort_values(xcol, kind="stable")
        return list(rows[xcol].astype(float)), list(rows["value"].astype(float))
    xs, ys = [], []
    for xv, group in rows.groupby(xcol, sort=True):
        value = reduce_values(group, how)
        if value is not None:
            xs.append(float(xv))
            ys.append(value)
    return xs, ys


def _lines_over(fig: Figure, ctx: Context, xcol: str, per_x: bool = False) -> None:
    """One line per run of the series; with `per_x`, the metric's reducer gives one value per
    x (e.g. the accumulated time at the end of each epoch), else every sample is drawn."""
    metric = ctx.metric["name"]
    ok = run_rows(ctx.ok)
    series = list(ctx.plot.get("series") or [])
    pkeys = _panel_keys(ctx, ctx.table)
    y2 = ctx.plot.get("y2")
    if y2:
        ctx.right = 0.9
    fig_axes = _reuse_axes(fig, ctx, len(pkeys))
    for ax, pkey in zip(fig_axes, pkeys):
        pframe = _select(ok, list(ctx.plot.get("panels") or []), pkey)
        twin = ax.twinx() if y2 else None
        drawn_by_series: dict[tuple, set] = {}
        for skey in ctx.series_keys(pframe, series):
            sframe = _select(pframe, series, skey)
            drawn = drawn_by_series.setdefault(skey, set())
            for run_id, rows in sframe.groupby("run_id", sort=False):
                if xcol not in rows.columns:
                    continue
                mine = rows[rows["metric"] == metric]
                xs, ys = _curve(mine, xcol, ctx.metric["reduce"] if per_x else None)
                if not xs:
                    continue
                drawn.add(run_id)
                (line,) = ax.plot(xs, ys, marker="o" if len(xs) < 40 else None, ms=4,
                                  label=_legend_label(series, skey))
                if twin is not None:
                    xs2, ys2 = _curve(rows[rows["metric"] == y2], xcol,
                                      metrics.get(y2).reducer if per_x else None)
                    twin.plot(xs2, ys2, ls="--", marker="s", ms=3, color=line.get_color(),
                              alpha=0.7)
        _runs_left_out(ctx, pkey, series, drawn_by_series)
        if twin is not None:
            twin.set_ylabel(ctx.plot.get("y2_label") or f"{y2} ({metrics.get(y2).unit}, dashed)")
        for p in _paper_points(ctx):
            if xcol in p["at"]:
                ax.plot([float(p["at"][xcol])], [p["value"]], marker="D", mfc="none",
                        mec=PAPER_COLOR, ms=8, ls="none", label="paper's value")
        ax.set_xlabel(ctx.x_label())
        ax.set_ylabel(ctx.y_label())
        if xcol in ("epoch", "step") and ax.get_lines():
            # whole epochs only, and room around a run that logged a single one
            top = max(max(line.get_xdata(), default=1) for line in ax.get_lines())
            ax.set_xlim(0.5, max(float(top), 1.0) + 0.5)
            if top <= 20:
                ax.set_xticks(range(1, int(max(top, 1)) + 1))
            else:
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if pkey:
            ax.set_title(_panel_title(ctx, pkey), fontsize=9)
        _axis_scales(ax, ctx)
        _dedupe_legend(ax, _legend_title(ctx, series))


def _runs_left_out(ctx: Context, pkey: tuple, series: list[str], drawn: dict[tuple, set]) -> None:
    """Say in the footer which series of a panel got no line, or lines from some of their runs
    only, and why: the other runs failed, were not runnable or logged no sample."""
    runs = run_rows(_select(ctx.table, list(ctx.plot.get("panels") or []), pkey)).drop_duplicates("run_id")
    for skey in ctx.series_keys(runs, series):
        cell = _select(runs, series, skey)
        left = cell[~cell["run_id"].isin(drawn.get(skey, set()))]
        if left.empty:
            continue
        where = ", ".join(filter(None, [_panel_title(ctx, pkey), *(
            f"{ctx.axis_name(n)}={label_of(v)}" for n, v in zip(series, skey))])) or "the runs"
        why = ", ".join(dict.fromkeys(_status_text(r) if r["status"] != "ok" else "no sample"
                                      for _, r in left.iterrows()))
        if len(left) == len(cell):
            ctx.no_line.append(f"{where}: {why}")
        else:
            ctx.not_drawn.append(f"{where}: {len(left)} of {len(cell)} ({why})")


def _dedupe_legend(ax, title: str | None) -> None:
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    if seen:
        ax.legend(list(seen.values()), list(seen.keys()), fontsize=7, title=title, title_fontsize=7)


def lines_over_time(fig: Figure, ctx: Context) -> None:
    """Metric against elapsed training time (accuracy-over-time charts)."""
    _lines_over(fig, ctx, ctx.plot["x"] if ctx.plot["x"] in ROW_X else "wall_clock_s")


def lines_over_epoch(fig: Figure, ctx: Context) -> None:
    """The metric reduced per epoch (or iteration, if the spec's x is `step`), a point each."""
    _lines_over(fig, ctx, ctx.plot["x"] if ctx.plot["x"] in ROW_X else "epoch", per_x=True)


def payload_curves(fig: Figure, ctx: Context) -> None:
    """Latency/bandwidth against payload size, one curve per series (log-scaled payload)."""
    x = ctx.plot["x"]
    if x in ctx.axes:
        return grouped_bars(fig, ctx, lines=True)
    ok = run_rows(ctx.ok)
    ok = ok[ok["metric"] == ctx.metric["name"]] if not ok.empty else ok
    series = list(ctx.plot.get("series") or [])
    pkeys = _panel_keys(ctx, ctx.table)
    for ax, pkey in zip(_reuse_axes(fig, ctx, len(pkeys)), pkeys):
        pframe = _select(ok, list(ctx.plot.get("panels") or []), pkey)
        for skey in ctx.series_keys(pframe, series):
            sframe = _select(pframe, series, skey)
            if sframe.empty or x not in sframe.columns:
                continue
            agg = sframe.groupby(x)["value"].mean().sort_index()
            ax.plot(agg.index.astype(float), agg.values, label=_legend_label(series, skey),
                    **(MODEL_STYLE if is_model(skey) else {"marker": "o"}))
        for p in _paper_points(ctx):
            if x in p["at"]:
                ax.plot([float(p["at"][x])], [p["value"]], marker="D", mfc="none",
                        mec=PAPER_COLOR, ms=8, ls="none", label="paper's value")
        ax.set_xlabel(ctx.x_label())
        ax.set_ylabel(ctx.y_label())
        if pkey:
            ax.set_title(_panel_title(ctx, pkey), fontsize=9)
        if ctx.plot.get("log_x", True):  # payload axes span bytes to megabytes
            ax.set_xscale("log", base=2)
        if ctx.plot.get("log_y"):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        _dedupe_legend(ax, _legend_title(ctx, series))


def breakdown_bars(fig: Figure, ctx: Context) -> None:
    """Stacked bars: one bar per x value (and series), segments by the `plot.stack` dimension."""
    x, stack_dim = ctx.plot["x"], ctx.plot.get("stack")
    t = run_rows(ctx.table)
    groups = [a for a in [x, *(ctx.plot.get("series") or [])] if a in t.columns]
    if t.empty or not groups:
        _reuse_axes(fig, ctx, 1)
        return
    keys = ctx.series_keys(t, groups)
    # label bars by the axes that vary; a value every bar shares says nothing
    varying = [i for i in range(len(groups)) if len({label_of(k[i]) for k in keys}) > 1] or [0]
    labels = [", ".join(label_of(k[i]) for i in varying) for k in keys]
    crowded = len(keys) > 4 or max(len(lab) for lab in labels) > 14
    if crowded:
        ctx.extra_bottom = 0.012 * max(len(lab) for lab in labels)
    ax = _reuse_axes(fig, ctx, 1)[0]
    ok = t[(t["status"] == "ok") & (t["metric"] == ctx.metric["name"])]
    parts = [None]
    if stack_dim and stack_dim in ok.columns:
        declared = ((ctx.spec.get("dimensions") or {}).get(stack_dim) or {}).get("values", [])
        present = ok[stack_dim].dropna().unique()
        parts = [p for p in ordered_values({stack_dim: declared}, stack_dim, present)
                 if any(same(p, q) for q in present)] or [None]
    for k_i, key in enumerate(keys):
        cell = _select(t, groups, key)
        if not cell.empty and (cell["status"] != "ok").all():
            _status_note(ax, k_i, cell)
    colors = matplotlib.colormaps["tab10"]
    bottoms = np.zeros(len(keys))
    for c_i, part in enumerate(parts):
        heights = []
        for key in keys:
            cell = _select(ok, groups, key)
            if part is not None:
                cell = where(cell, stack_dim, part)
            value = reduce_values(cell, ctx.metric["reduce"], ctx.metric.get("over")) \
                if not cell.empty else None
            heights.append(value or 0.0)
        ax.bar(range(len(keys)), heights, bottom=bottoms, color=colors(c_i % 10),
               label=label_of(part) if part is not None else ctx.metric["name"])
        bottoms += np.array(heights)
    ax.set_xticks(range(len(keys)), labels, rotation=30 if crowded else 0,
                  ha="right" if crowded else "center", fontsize=8)
    ax.set_xlabel(" / ".join(ctx.axis_name(groups[i]) for i in varying))
    ax.set_ylabel(ctx.y_label())
    ax.margins(y=0.08)
    _axis_scales(ax, ctx)
    if ax.get_legend_handles_labels()[0]:
        # a fixed corner: 'best' would move the legend again once the top is raised
        ax.legend(fontsize=7, title=stack_dim, title_fontsize=7, loc="upper right")
        _room_for_legend(fig, ax)


def table(fig: Figure, ctx: Context) -> None:
    """The paper's tables: one row per matrix point with its value and status."""
    values = ctx.values(ctx.metric["name"], ctx.metric["reduce"], ctx.metric.get("over"))
    ax = _reuse_axes(fig, ctx, 1)[0]
    ax.axis("off")
    if values.empty:
        return
    cols = [a for a in ctx.axes if a in values.columns]
    unit = ctx.metric.get("unit", "")
    cells = []
    for _, r in values.iterrows():
        val = "" if r["value"] is None or pd.isna(r["value"]) else f"{float(r['value']):.4g}"
        cells.append([label_of(r[c]) for c in cols] + [val, str(r["status"])])
    head = cols + [f"{ctx.metric['name']} ({unit})", "status"]
    tab = ax.table(cellText=cells[:30], colLabels=head, loc="upper center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.3)


def window_means(rows: pd.DataFrame, window_s: float) -> tuple[list, list]:
    """Means of one line's samples over consecutive windows of `window_s` seconds from its first
    sample, each at the middle of the part of its window the samples cover: the paper's
    "average per time window" reduction."""
    t, v = rows["wall_clock_s"].astype(float), rows["value"].astype(float)
    means = v.groupby(((t - t.min()) // window_s).to_numpy()).mean()
    starts = [t.min() + b * window_s for b in means.index]
    return [(a + min(a + window_s, t.max())) / 2 for a in starts], means.tolist()


def _utilisation_lines(ax, ctx: Context, mon: pd.DataFrame, metric: str, window_s: float | None) -> None:
    """One line per run, host and (for network) interface and direction; with a window, the
    samples thin and their window means over them in the same colour."""
    series = list(ctx.plot.get("series") or [])
    mon = mon[mon["metric"] == metric]
    lines = [c for c in ("run_id", "host", "interface", "direction") if c in mon.columns]
    for skey in ctx.series_keys(mon, series):
        sframe = _select(mon, series, skey)
        if sframe.empty:
            continue
        # name only what tells the lines of one series apart
        varying = [c for c in lines[1:] if sframe[c].nunique() > 1]
        for key, rows in sframe.groupby(lines, sort=False, dropna=False):
            rows = rows.sort_values("wall_clock_s")
            parts = dict(zip(lines, key))
            # 'interface eth0': a bare 'loopback (eth0)' reads as if eth0 were the loopback
            extra = " ".join(f"interface {parts[c]}" if c == "interface" else str(parts[c]) for c in varying)
            name = _legend_label(series, skey)
            label = f"{name} — {extra}" if extra else name
            x, y = rows["wall_clock_s"].astype(float), rows["value"].astype(float)
            if window_s:
                (sampled,) = ax.plot(x, y, linewidth=0.9, alpha=0.5)
                ax.plot(*window_means(rows, window_s), marker="o", markersize=3,
                        color=sampled.get_color(), label=label)
            else:
                ax.plot(x, y, label=label)
    if window_s:
        ax.set_title(f"markers: {window_s:g}-s window means (the paper's); thin: samples",
                     fontsize=8, loc="right")
    ax.grid(True, alpha=0.3)
    _dedupe_legend(ax, _legend_title(ctx, series))


def utilisation(fig: Figure, ctx: Context) -> None:
    """A monitor metric over time (dlobd-fig8 style), with the spec's `beside` metric (GPU memory
    beside host memory) in a panel of its own where the runs sampled it."""
    t = ctx.table
    mon = t[is_monitor(t)]
    if not mon.empty:
        mon = mon[mon["status"] == "ok"]
    beside = ctx.plot.get("beside")
    drawn_beside = bool(beside) and not mon.empty and (mon["metric"] == beside["metric"]).any()
    axes = _reuse_axes(fig, ctx, 2 if drawn_beside else 1)
    _utilisation_lines(axes[0], ctx, mon, ctx.metric["name"], ctx.plot.get("window_s"))
    axes[0].set_ylabel(ctx.y_label())
    if drawn_beside:
        _utilisation_lines(axes[1], ctx, mon, beside["metric"], beside.get("window_s"))
        axes[1].set_ylabel(beside["y_label"])
    elif beside:
        axes[0].set_title(f"{beside['y_label']}: no run sampled it", fontsize=8, loc="left")
    for ax in axes:
        ax.set_xlabel("Time (s)")


FORMS = {
    "grouped_bars": grouped_bars,
    "lines_over_time": lines_over_time,
    "lines_over_epoch": lines_over_epoch,
    "scaling_lines": scaling_lines,
    "breakdown_bars": breakdown_bars,
    "payload_curves": payload_curves,
    "table": table,
    "utilisation": utilisation,
}


def _reuse_axes(fig: Figure, ctx: Context, n: int) -> list:
    """The figure's plot axes, created on first use: one sub-plot per panel, beside the
    narrow panel of the paper's values when the figure has one."""
    if ctx.main_axes:
        return ctx.main_axes[:n]
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    if n > 1:
        fig.set_size_inches(max(4.2 * cols, FIGSIZE[0]),
                            FIGSIZE[1] + 2.6 * (rows - 1) + (PAPER_PANEL_IN if ctx.paper_panel else 0))
    area = ctx.main_area(fig)
    grid = area.subgridspec(rows, cols, hspace=0.45, wspace=0.3)
    axs = [fig.add_subplot(grid[i // cols, i % cols]) for i in range(n)]
    ctx.main_axes = axs
    return axs


def stated_text(p: dict, unit: str = "") -> str:
    """A paper value as the text states it: '2.7×', '−63%', '+8%', 'up to 133×', '≈870 s'."""
    def rng(f):
        return f"{f(p['value'])}–{f(p['high'])}" if p.get("high") is not None else f(p["value"])
    kind = p.get("as")
    if kind == "ratio" and str(p.get("quantity", "")).startswith("share"):
        text = rng(lambda v: f"{v * 100:.5g}") + "%"
    elif kind == "ratio":
        text = rng(lambda v: f"{v:g}") + "×"
    elif kind in ("reduction", "gain"):
        text = ("−" if kind == "reduction" else "+") + rng(lambda v: f"{v * 100:.5g}") + "%"
    else:
        text = rng(lambda v: f"{v:g}") + (f" {unit}" if unit else "")
    if p.get("bound"):
        text = ("below " if p["bound"] == "upper" else "above ") + text
    return ("up to " if p.get("up_to") else "") + ("≈" if p.get("approx") else "") + text


def implied_ratio(p: dict, value: float | None = None) -> float:
    """y[at] / y[over] that a relation (ratio, reduction or gain) of `value` means."""
    v = p["value"] if value is None else value
    return {"ratio": v, "reduction": 1 - v, "gain": 1 + v}[p["as"]]


def _relation_of(kind: str, a: float, b: float) -> float:
    return {"ratio": a / b, "reduction": 1 - a / b, "gain": a / b - 1}[kind]


def local_point(ctx: Context, point: dict) -> dict | None:
    """The point of this scale that stands for a paper point (through the scale's
    axis_map), or None when an axis value has no counterpart here."""
    amap = ctx.scale.get("axis_map") or {}
    out = {}
    for axis, value in point.items():
        hit = next((lv for pv, lv in (amap.get(axis) or {}).items() if same(pv, value)), None)
        if hit is None and axis in ctx.matrix and not any(same(value, o) for o in ctx.matrix[axis]):
            return None
        out[axis] = value if hit is None else hit
    return out


def target_accuracy(ctx: Context) -> float | None:
    """The accuracy a time-to-accuracy figure times: the scale's target_accuracy, else the paper's."""
    for scale in (ctx.scale, (ctx.spec.get("scales") or {}).get("paper") or {}):
        target = (scale.get("fixed") or {}).get("target_accuracy")
        if target is not None:
            return float(target)
    return None


def is_time_to_target(ctx: Context, p: dict) -> bool:
    """Whether a paper value states a time to the figure's target accuracy ('time to 70% top-1')."""
    return str(p.get("quantity", "")).startswith("time to") and target_accuracy(ctx) is not None


def run_length(ctx: Context, rows: pd.DataFrame) -> str:
    """How long a run trained: the scale's epochs or iterations, else its last validation's."""
    fixed = ctx.scale.get("fixed") or {}
    for key, unit in (("epochs", "epochs"), ("iterations", "iterations")):
        if fixed.get(key):
            return f"{fixed[key]} {unit}"
    for key, unit in (("epoch", "epochs"), ("step", "iterations")):
        if key in rows and rows[key].notna().all():
            return f"{int(rows[key].max())} {unit}"
    return f"{len(rows)} validations"


def time_to_target_at(ctx: Context, point: dict) -> tuple[float | None, str]:
    """Wall-clock time at which this scale's run at a paper point (through the axis_map) first
    validates at or past the target accuracy, mean over its runs; else why there is none. The
    first validation at or past the target, not an interpolation between two: the time the run
    is known to have reached it, as the claims' time_to reads it."""
    mapped = local_point(ctx, point)
    if mapped is None:
        return None, "no counterpart here"
    target, metric = target_accuracy(ctx), ctx.metric["name"]
    rows = run_rows(ctx.ok)
    rows = rows[(rows["metric"] == metric) & rows["wall_clock_s"].notna()] if not rows.empty else rows
    for axis, v in mapped.items():
        rows = where(rows, axis, v) if axis in rows else rows.iloc[0:0]
    if rows.empty:
        return None, "not run here"
    times = []
    for _, run in rows.groupby("run_id", sort=False):
        reached, best = first_reached(run["wall_clock_s"].astype(float), run["value"].astype(float), ">=", target)
        if reached is None:
            return None, f"not reached in {run_length(ctx, run)} (best {best:.3g})"
        times.append(reached)
    return sum(times) / len(times), ""


# a paper value of a metric's extreme sample ("lowest CPU utilisation during training"): the
# reduction of every sample of the run (every host's, the whole run, as the claims' min_over_time
# and max_over_time take them) and the label its local bar carries
SAMPLE_EXTREMES = {"lowest": ("min", "lowest sample of the run"),
                   "highest": ("max", "highest sample of the run"),
                   "peak": ("max", "highest sample of the run")}


def sample_extreme(p: dict) -> tuple[str, str] | None:
    words = str(p.get("quantity", "")).split()
    return SAMPLE_EXTREMES.get(words[0]) if words else None


def local_counterpart(ctx: Context, p: dict) -> tuple[float | None, str]:
    """This scale's value of the quantity a paper value states, in the same form, and
    what was compared ('' when there is none, with the reason in its place)."""
    if ctx.scale_name == "paper":
        return None, ""
    if p.get("stack") not in (None, ctx.spec["stack"]):
        return None, "another stack"
    timed = is_time_to_target(ctx, p)
    # another metric (a phase's time) is reduced as the claims reduce it, by its own reducer
    name = p.get("metric") or ctx.metric["name"]
    how, over = ((ctx.metric["reduce"], ctx.metric.get("over")) if name == ctx.metric["name"]
                 else (metrics.get(name).reducer, None))
    extreme = sample_extreme(p)
    if extreme:
        how, over = extreme[0], None
    dimensions = set(ctx.spec.get("dimensions") or {})

    def at(point):
        if timed:
            return time_to_target_at(ctx, point)
        mapped = local_point(ctx, {k: v for k, v in point.items() if k not in dimensions})
        if mapped is None:
            return None, "no counterpart here"
        values = ctx.values(name, how, over, {k: v for k, v in point.items() if k in dimensions},
                            samples=bool(extreme))
        for axis, v in mapped.items():
            values = where(values, axis, v) if axis in values else values.iloc[0:0]
        cell = values[values["status"] == "ok"]
        if cell.empty:
            return None, f"no {name} rows here" if (values["status"] == "no value").any() else "not run here"
        return float(cell["value"].astype(float).mean()), ""

    # another quantity of the metric has no reduction here; a share is the relation itself, e.g.
    # one phase's time over the total
    if p.get("quantity") and not str(p["quantity"]).startswith("share") and not timed and not extreme:
        _, why = at(p["at"])
        return None, why or f"{p['quantity']}: no reduction of the {name} samples to it here"

    up_to = p.get("up_to")
    choices = ctx.matrix.get(up_to, [None]) if up_to in ctx.matrix else [None]
    found, why = [], ""
    for choice in choices:
        extra = {up_to: choice} if choice is not None else {}
        a, why_a = at({**p["at"], **extra})
        if "over" not in p:
            found += [a] if a is not None else []
            why = why or why_a
            continue
        b, why_b = at({**p["over"], **extra})
        if a is not None and b:
            found.append(_relation_of(p["as"], a, b))
        why = why or why_a or why_b
    if not found:
        return None, why or "not run here"
    return max(found), ""


def stand_in(ctx: Context, p: dict) -> str:
    """What a paper value's points are here when the scale's axis_map substitutes any of
    them ('mpich / hr'), else ''."""
    mapped = {key: local_point(ctx, p[key]) for key in ("at", "over") if key in p}
    if any(m is None for m in mapped.values()) or all(mapped[k] == p[k] for k in mapped):
        return ""
    return "here: " + _point_label({**p, **mapped}).replace("\n", " ")


def _point_label(p: dict) -> str:
    """'ipoib / rdma, 384' for a relation; 'ipoib, 384' for a value (the axes' values)."""
    at, over = p["at"], p.get("over") or {}
    differ = [k for k in at if k in over and not same(at[k], over[k])]
    # a row column (a time on a curve) keeps its name: '2132' alone would not say what it is
    common = [f"{k}={label_of(v)}" if k in ROW_X else label_of(v) for k, v in at.items() if k not in differ]
    head = " / ".join("/".join(label_of(d[k]) for k in differ) for d in (at, over)) if differ else ""
    parts = ([head] if head else []) + common
    if p.get("up_to"):
        parts.append(f"max over {p['up_to']}")
    if p.get("stack"):
        parts.append(p["stack"])
    return "\n".join(textwrap.wrap(", ".join(parts), 22))


def reaches_target(ctx: Context, p: dict) -> bool:
    """Whether a paper value is a curve reaching the target accuracy at a time ('70% at 2132 s')."""
    target = target_accuracy(ctx)
    return (target is not None and ctx.plot.get("x") in p["at"] and not p.get("as")
            and p.get("metric") in (None, ctx.metric["name"]) and p["value"] >= target)


def timed_points(ctx: Context) -> list[tuple[dict, float | None, float | None, str]]:
    """The paper's points of a time-to-accuracy figure, each with the time the paper states it
    reached the target (None when it states only a relation of the times) and this scale's time
    to it, or why there is none."""
    if target_accuracy(ctx) is None or not any(
            reaches_target(ctx, p) or is_time_to_target(ctx, p) for p in ctx.paper_values()):
        return []
    x = ctx.plot["x"]
    matrix = ((ctx.spec.get("scales") or {}).get("paper") or {}).get("matrix") or ctx.matrix
    points = [dict(zip(matrix, combo)) for combo in itertools.product(*matrix.values())]
    stated = [p for p in ctx.paper_values() if reaches_target(ctx, p)]
    local = ctx.scale_name != "paper"
    return [(point, next((float(p["at"][x]) for p in stated
                          if all(same(p["at"].get(k), v) for k, v in point.items())), None),
             *(time_to_target_at(ctx, point) if local else (None, "")))
            for point in points]


def target_text(ctx: Context) -> str:
    return f"time to {target_accuracy(ctx) * 100:g}% top-1"


def point_text(ctx: Context, point: dict) -> str:
    """'ipoib' and, at a scale that substitutes it, 'here: loopback' under it."""
    label = ", ".join(label_of(v) for v in point.values())
    substituted = stand_in(ctx, {"at": point}) if ctx.scale_name != "paper" else ""
    return "\n".join([label, *textwrap.wrap(substituted, 18)])


def time_to_target_panel(ax, ctx: Context, timed: list[tuple[dict, float | None, float | None, str]]) -> None:
    """Time to the target accuracy at each of the paper's points, as a time: the paper's stated
    time hatched, this scale's run solid (its first validation at or past the target)."""
    for i, (_, paper, here, why) in enumerate(timed):
        if paper is not None:
            ax.bar(i - 0.2, paper, width=0.38, fc="none", ec=PAPER_COLOR, hatch="///", lw=1)
            ax.annotate(f"paper {paper:g} s", (i - 0.2, paper), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7, color=PAPER_COLOR)
        else:
            ax.annotate("paper: no time stated", (i - 0.2, 0.02), xycoords=ax.get_xaxis_transform(),
                        ha="center", va="bottom", fontsize=7, color=PAPER_COLOR, rotation=90)
        if here is not None:
            ax.bar(i + 0.2, here, width=0.38, color="#1f77b4")
            ax.annotate(f"local {here:.3g} s", (i + 0.2, here), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7, color="#1f77b4")
        elif why and not ctx.not_run_reason:
            ax.annotate("\n".join(textwrap.wrap("local: " + why, 20)), (i + 0.2, 0.02),
                        xycoords=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                        color="#7f7f7f", rotation=90)
    ax.set_xticks(range(len(timed)), [point_text(ctx, t[0]) for t in timed], fontsize=7)
    ax.set_xlim(-0.6, len(timed) - 0.4)
    ax.tick_params(axis="y", labelsize=7)
    _log_y(ax)
    ax.set_ylabel(f"{target_text(ctx)} (s, log)", fontsize=7)
    ax.set_title(f"{target_text(ctx)}: paper hatched, local solid\n(first validation at or past it)",
                 fontsize=7.5, color=PAPER_COLOR)
    ax.margins(y=0.25)


def paper_panel(fig: Figure, ctx: Context) -> None:
    """The paper's stated values beside this scale's values of the same quantity, under the
    reproduced data: hatched hollow bars the paper's, solid bars ours (at the point the
    scale's axis_map maps the paper's point to). Relations (ratios, reductions, gains) are
    drawn as y[at] / y[over], so each pair is its series over its baseline and shapes
    compare across scales; absolute values get a log axis of their own, and times to a target
    accuracy a panel of times."""
    timed = ctx.timed
    # a time at which a curve reaches the target is drawn as that time, in the panel of times
    pvs = [p for p in ctx.paper_values() if not reaches_target(ctx, p)]
    groups = [g for g in ([p for p in pvs if p.get("as")], [p for p in pvs if not p.get("as")]) if g]
    # a panel of one or two values still needs the width of its title
    widths = [max(len(g), 3) for g in groups] + ([max(len(timed), 3)] if timed else [])
    area = ctx.paper_area.subgridspec(1, len(widths), wspace=0.25, width_ratios=widths)
    if timed:
        time_to_target_panel(fig.add_subplot(area[len(groups)]), ctx, timed)
    for k, group in enumerate(groups):
        ax = fig.add_subplot(area[k])
        relation = bool(group[0].get("as"))
        shown_here = 0
        for i, p in enumerate(group):
            unit = get_unit(ctx, p)
            paper = implied_ratio(p) if relation else p["value"]
            ax.bar(i - 0.2, paper, width=0.38, fc="none", ec=PAPER_COLOR, hatch="///", lw=1)
            top = paper
            if p.get("high") is not None:
                hi = implied_ratio(p, p["high"]) if relation else p["high"]
                ax.plot([i - 0.2, i - 0.2], sorted([paper, hi]), color=PAPER_COLOR, lw=2)
                top = max(paper, hi)  # the label above the range's line, not across it
            ax.annotate(stated_text(p, unit), (i - 0.2, max(top, 0)), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7,
                        color=PAPER_COLOR, rotation=90 if len(group) > 4 else 0)
            here, why = local_counterpart(ctx, p)
            if here is not None and not relation and ctx.other_workload() and not sample_extreme(p):
                # an absolute time or rate of another workload is no counterpart (the panel's title
                # says so); relations and a utilisation's extreme sample still compare
                here, why = None, ""
            shown_here += here is not None
            if here is not None:
                shown = implied_ratio(p, here) if relation else here
                ax.bar(i + 0.2, shown, width=0.38, color="#1f77b4")
                text = stated_text({**p, "value": float(f"{here:.3g}"), "approx": False, "high": None,
                                    "up_to": None, "bound": None}, unit)
                # which reduction of the samples the bar is, where it is not the figure's own
                reduction = sample_extreme(p)
                notes = [w for w in (reduction[1] if reduction else "", stand_in(ctx, p)) if w]
                ax.annotate("\n".join([text, *(line for w in notes for line in textwrap.wrap(w, 18))]),
                            (i + 0.2, max(shown, 0)), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, color="#1f77b4",
                            rotation=90 if len(group) > 4 else 0)
            elif why and not ctx.not_run_reason:
                ax.annotate(why, (i + 0.2, 0.02), xycoords=ax.get_xaxis_transform(), ha="center",
                            va="bottom", fontsize=7, color="#7f7f7f", rotation=90)
        crowded = len(group) > 3
        ax.set_xticks(range(len(group)), [_point_label(p) for p in group], fontsize=7,
                      rotation=30 if crowded else 0, ha="right" if crowded else "center")
        ax.set_xlim(-0.6, len(group) - 0.4)
        ax.tick_params(axis="y", labelsize=7)
        if relation:
            shown = [implied_ratio(p) for p in group]
            if max(shown) / max(min(shown), 1e-9) > 20:   # shapes of very different size
                _log_y(ax)
            ax.axhline(1, color="#7f7f7f", lw=0.6, ls=":")
            ax.set_ylabel("y[at] / y[baseline]", fontsize=7)
            ax.set_title("each over its baseline: paper hatched, here solid", fontsize=7.5,
                         color=PAPER_COLOR)
        else:
            _log_y(ax)
            units = {get_unit(ctx, p) for p in group}
            ax.set_ylabel(", ".join(sorted(u for u in units if u)) + " (log)", fontsize=7)
            ax.set_title("paper's stated values hatched" + (
                ", here solid" if not ctx.other_workload() else
                ", here solid;\nno times of another workload" if shown_here else
                ", none here: another workload"), fontsize=7.5, color=PAPER_COLOR)
        ax.margins(y=0.25)
        _fit_value_labels(fig, ax)


def _log_y(ax) -> None:
    """A log y axis for a short panel: between decades only 2 and 5 are marked, and of them
    only 2 labelled, else the labels of 2, 3, 4 and 6 run into each other. It spans a decade at
    least: within one, matplotlib labels the ticks it adds there, and they run into each other."""
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(LogLocator(subs=(2, 5)))
    low, high = ax.get_ylim()
    if 0 < low and high / low < 10:
        ax.set_ylim(high / 10, high)


def _renderer(fig: Figure):
    """The renderer that measures the texts of a figure not yet drawn."""
    return fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else \
        FigureCanvasAgg(fig).get_renderer()


def _fit_value_labels(fig: Figure, ax) -> None:
    """Raise the top of an axis until the labels above its bars end inside it: past the top
    they would run into the panel's title."""
    renderer = _renderer(fig)
    labels = [t for t in ax.texts if getattr(t, "xycoords", None) == "data"]
    for _ in range(6):
        box = ax.get_window_extent(renderer)
        over = max((t.get_window_extent(renderer).y1 for t in labels), default=box.y1) - box.y1
        if over <= 0:
            return
        share = 1.15 * over / box.height   # of the axis's height, a little spare
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * (high / low) ** share if ax.get_yscale() == "log"
                    else high + (high - low) * share)


def _room_for_legend(fig: Figure, ax) -> None:
    """Raise the top of an axis until the bars under its legend end below it: a bar as wide as
    the axes leaves it no place beside them."""
    renderer = _renderer(fig)
    box, legend = ax.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)
    free = (legend.y0 - box.y0) / box.height - 0.03
    tallest = max((bar.get_y() + bar.get_height() for bar in ax.patches
                   if bar.get_window_extent(renderer).x1 > legend.x0), default=0)
    low, high = ax.get_ylim()
    if 0 < free and tallest > low + free * (high - low) and ax.get_yscale() == "linear":
        ax.set_ylim(low, low + (tallest - low) / free)


def get_unit(ctx: Context, paper_value: dict) -> str:
    if paper_value.get("metric") and paper_value["metric"] != ctx.metric["name"]:
        return metrics.get(paper_value["metric"]).unit
    return ctx.metric.get("unit", "")


# ---------------------------------------------------------------- entry


def _reason_box(ax, text: str) -> None:
    """Why there is nothing to draw, boxed in place of the data (no empty axes)."""
    ax.axis("off")
    ax.text(0.5, 0.55, "\n".join(textwrap.wrap(text, 70)),
            ha="center", va="center", fontsize=11, color="#7f2704",
            bbox={"boxstyle": "round", "fc": "#fdf2e9", "ec": "#e59866"})


def build(spec: dict, scale_name: str, scale: dict | None, table: pd.DataFrame,
          not_run: str | None = None) -> Figure:
    """One experiment's figure in its spec's plot form, not saved (tests read its texts)."""
    ctx = Context(spec, scale_name, scale, table, not_run)
    # a figure that only says why it is empty needs less room, unless it shows the paper's values
    short = not_run and not ctx.paper_panel
    height = 3.4 if short else FIGSIZE[1] + (PAPER_PANEL_IN if ctx.paper_panel else 0)
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI)
    if not_run:
        ax = fig.add_subplot(ctx.main_area(fig))
        _reason_box(ax, f"not run: {not_run}")
        ax.text(0.5, 0.12, f"plot form: {spec['plot']['form']}  ·  metric: "
                f"{spec['metric']['name']} ({spec['metric']['unit']})",
                ha="center", va="center", fontsize=8, color="#555555")
    else:
        FORMS[spec["plot"]["form"]](fig, ctx)
    if ctx.paper_panel:
        paper_panel(fig, ctx)
    _decorate(fig, ctx)
    return fig


def save(fig: Figure, out) -> None:
    """Save in the format the file name says: a PNG for the report, a PDF for print."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, **(PNG_OPTIONS if out.suffix == ".png" else {}))


def draw(spec: dict, scale_name: str, scale: dict | None, table: pd.DataFrame,
         out, not_run: str | None = None) -> Figure:
    """Draw one experiment's figure in its spec's plot form and save it (PNG or PDF, by name)."""
    fig = build(spec, scale_name, scale, table, not_run)
    save(fig, out)
    return fig


def render(spec: dict, scale_name: str, scale: dict | None, results_csv, out,
           runs_dir=None) -> str | None:
    """Draw one experiment from its results CSV; returns why it was not run, if it was not."""
    table = pd.read_csv(results_csv)
    reason = not_run_reason(spec, scale_name, scale, table, runs_dir)
    draw(spec, scale_name, scale, table, out, not_run=reason)
    return reason



# The resource-use figure every experiment gets from its runs' monitor samples; the GPU panels
# only where a run sampled a GPU.
UTILISATION_PANELS = (
    ("cpu_util_pct", "Host CPU (%)"),
    ("host_mem_mb", "Memory of the job (MB)"),
    ("net_mb_per_s", "Network (MB/s)"),
)
GPU_PANELS = (
    ("gpu_util_pct", "GPU busy (%)"),
    ("gpu_mem_gb", "GPU memory of the job (GB)"),
)
PANEL_IN = 2.1  # height of one panel
# interfaces that moved less than this are left out of the network panel
QUIET_INTERFACE_MB_S = 0.01
# the legend under the panels: its title and frame, and a row per two runs (8 pt)
UTILISATION_LEGEND_IN = 0.3
UTILISATION_LEGEND_ROW_IN = 0.15


def _run_label(run_id: str) -> str:
    """`gpus=1, workload=cifar10` from a run id's point directory (axis-value pairs joined by _)."""
    point = Path(str(run_id)).parts[3]
    return ", ".join(pair.replace("-", "=", 1) for pair in point.split("_"))


def _line_part(column: str, value) -> str:
    """A line's host, GPU or interface as its label names it (a GPU index reads back as a number)."""
    return f"GPU {int(float(value))}" if column == "gpu" else str(value)


def draw_utilisation(spec: dict, scale_name: str, table: pd.DataFrame, out_png) -> Figure:
    """CPU, memory of the job's processes and network over time, one colour per run (the
    same in every panel, named once in a legend under the panels), host and interface named
    where they vary, received traffic solid and sent dashed; from the `monitor/<host>.csv`
    rows of an experiment's results. Without samples, why not, boxed in place of the panels."""
    mon = table[is_monitor(table) & (table["status"] == "ok")] if not table.empty else table
    title = f"{spec['id']} ({scale_name} scale): resource use of its runs"
    if mon.empty:
        fig = Figure(figsize=(FIGSIZE[0], 3.4), dpi=DPI)
        reason = (not_run_reason(spec, scale_name, (spec.get("scales") or {}).get(scale_name), table)
                  or "its runs recorded none")
        _reason_box(fig.add_subplot(), f"no monitor samples: {reason}")
        fig.suptitle(f"{title}: no monitor samples", fontsize=10)
        save(fig, out_png)
        return fig
    run_ids = sorted(mon["run_id"].unique())
    colours = {r: matplotlib.colormaps["tab10" if len(run_ids) <= 10 else "tab20"](i % 20)
               for i, r in enumerate(run_ids)}
    panels = UTILISATION_PANELS + tuple(p for p in GPU_PANELS if (mon["metric"] == p[0]).any())
    legend_in = UTILISATION_LEGEND_IN + UTILISATION_LEGEND_ROW_IN * math.ceil(len(run_ids) / 2)
    height = 0.7 + PANEL_IN * len(panels) + legend_in
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI)
    # margins in inches, not a layout engine's: measuring every label twice more made these
    # figures a third dearer, and their labels are of a known size (percent, MB, MB/s; the
    # figure tests check that none is cut off)
    fig.subplots_adjust(left=0.95 / FIGSIZE[0], right=1 - 0.15 / FIGSIZE[0], top=1 - 0.4 / height,
                        bottom=(legend_in + 0.65) / height, hspace=0.2)
    axes = fig.subplots(len(panels), 1, sharex=True)
    for ax, (metric, label) in zip(axes, panels):
        rows = mon[mon["metric"] == metric]
        keys = [c for c in ("run_id", "host", "gpu", "interface", "direction")
                if c in rows.columns and rows[c].notna().any()]
        drawn = [(dict(zip(keys, key)), line) for key, line in
                 (rows.groupby(keys, sort=True, dropna=False) if not rows.empty else [])
                 if metric != "net_mb_per_s"
                 or line["value"].astype(float).max() >= QUIET_INTERFACE_MB_S]
        varying = [c for c in keys[1:] if c != "direction" and len({str(p[c]) for p, _ in drawn}) > 1]
        for parts, line in drawn:
            line = line.sort_values("wall_clock_s")
            ax.plot(line["wall_clock_s"].astype(float), line["value"].astype(float),
                    color=colours[parts["run_id"]], linewidth=1,
                    linestyle="--" if parts.get("direction") == "tx" else "-",
                    label=" ".join([_run_label(parts["run_id"])] + [_line_part(c, parts[c]) for c in keys[1:]]))
            if varying:     # which host, GPU or interface, at the line's peak
                peak = line["value"].astype(float).idxmax()
                ax.annotate(" ".join(_line_part(c, parts[c]) for c in varying),
                            (float(line.loc[peak, "wall_clock_s"]), float(line.loc[peak, "value"])),
                            fontsize=7, color=colours[parts["run_id"]])
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    if "direction" in mon.columns and mon["direction"].notna().any():
        axes[-1].set_title("received solid, sent dashed", fontsize=8, loc="right")
    axes[-1].set_xlabel("Time since the run started (s)")
    handles = [matplotlib.lines.Line2D([], [], color=colours[r], linewidth=2) for r in run_ids]
    fig.legend(handles, [_run_label(r) for r in run_ids], loc="lower center",
               bbox_to_anchor=(0.5, 0.08 / height), ncols=2, fontsize=8, title="run (matrix point)",
               title_fontsize=8)
    fig.suptitle(title, fontsize=10, y=1 - 0.08 / height, va="top")
    save(fig, out_png)
    return fig


def render_utilisation(spec: dict, scale_name: str, results_csv, out_png) -> bool:
    """draw_utilisation from a results CSV; returns whether there were samples to draw."""
    fig = draw_utilisation(spec, scale_name, pd.read_csv(results_csv), out_png)
    return any(ax.lines for ax in fig.axes)
