"""Labels and the drawing context: what a figure says on its face (titles, axis names, legends,
status notes) and the Context every drawing function reads."""

from __future__ import annotations

import functools
import itertools
import re
import textwrap

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dlobd.results import comparability
from dlobd.results.comparability import WORKLOAD_SETTINGS
from dlobd.results.figures.values import (
    as_number, label_of, ordered_values, point_values, same, value_label, where)
from dlobd.results.tidy import LAYOUT_COUNT, count_text
from dlobd.spec import expand, load_all, point_matches, substitutions


STATUS_MARK = {"failed": "failed", "hung": "hung", "not runnable": "n/r", "unparseable": "unparseable",
               "rehearsal": "rehearsal"}
PAPER_COLOR = "#c0392b"
# the axes that count machines in a paper; here they may count processes on fewer hosts, and
# what a layout's count names then ('worker' -> 'worker processes')
MACHINE_AXES = ("nodes", "workers", "gpus")
PROCESS_NAMES = {"worker": "worker processes", "collective worker": "collective worker processes",
                 "executor": "executors", "MPI rank": "MPI ranks", "process": "processes"}


def size_text(key: str, value, stated=None) -> str:
    """'8 train images', 'image size 64 (paper: 224)', 'pages huge 5000, bigdata 50000': a count
    (a plural setting) before its noun, another size after its name; the paper's number after."""
    name = key.replace("_", " ")
    if isinstance(value, dict):  # a size per data set or graph
        text = f"{name} " + ", ".join(f"{k} {label_of(v)}" for k, v in value.items())
    else:
        count = name if as_number(value) != 1 else name.rstrip("s")
        text = f"{label_of(value)} {count}" if key.endswith("s") else f"{name} {label_of(value)}"
    return text + (f" (paper: {label_of(stated)})" if as_number(stated) is not None else "")


def setting_pattern(key: str, value) -> re.Pattern:
    """A number with the setting it counts: '300 steps' for steps=300, '768 cores'."""
    noun = re.escape(key.replace("_", " ").rstrip("s"))
    return re.compile(rf"(?<![\w.]){re.escape(label_of(value))}\s+{noun}s?\b", re.IGNORECASE)


class Context:
    """Everything a drawing function needs besides the axes: spec, scale, labels."""

    def __init__(self, spec: dict, scale_name: str, scale: dict, table: pd.DataFrame,
                 not_run_reason: str | None = None, cpus: int | None = None):
        self.spec = spec
        self.cpus = cpus  # the cores the runs recorded, which the comparability rule weighs
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

    def values(self, metric: str, how: str, over: str | None = None, only: dict | None = None,
               samples: bool = False) -> pd.DataFrame:
        """point_values of this figure's table, each reduction computed once: the paper panel asks
        for the same one at every point it compares. Callers select from it, never change it."""
        key = (metric, how, over, repr(sorted((only or {}).items())), samples)
        if key not in self._values:
            self._values[key] = point_values(self.table, self.axes, metric, how, over, only, samples)
        return self._values[key]

    @functools.cached_property
    def ok(self) -> pd.DataFrame:
        """The rows with a value drawn (the table is the figure's, never changed: asked for often)."""
        t = self.table
        return t[(t["status"] == "ok") & t["value"].notna()] if not t.empty else t

    def y_label(self) -> str:
        label = self.local_text(self.plot["y_label"])
        unit = self.metric.get("unit")
        named = unit and re.search(rf"(^|[\s(/]){re.escape(unit)}($|[\s),])", label, re.IGNORECASE)
        return label if not unit or named else f"{label} ({unit})"

    def x_label(self) -> str:
        """The x axis's label; away from the paper's scale, with the paper's values the run's
        values stand for, e.g. 'CPU cores (paper: 96/192/384)', and an axis of machines that
        counts processes here named as them: 'worker processes on 1 host (paper: 2/4/8 nodes)'."""
        label = self._x_base()
        x = self.plot["x"]
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("matrix") or {}
        counted = self.counted(x)
        if counted:
            stated = " ".join(["/".join(label_of(v) for v in paper.get(x, [])), x.replace("gpus", "GPUs")])
            return f"{counted} on {self.hosts_text()} (paper: {stated.strip()})"
        if self.scale_name == "paper" or x not in paper:
            return label
        ran = [str(v) for v in self.matrix.get(x, [])]
        stated = [str(v) for v in paper[x]]
        if ran == stated:
            return label
        return f"{label} (paper: {'/'.join(label_of(v) for v in paper[x])})"

    def changed_settings(self) -> list[tuple[str, object, object]]:
        """(setting, the paper's value, this scale's) of each number the scale changes."""
        return comparability.changed_settings(self.spec, self.scale_name, self.scale)

    def other_workload(self) -> bool:
        """Whether this scale runs another workload than the paper's (comparability.other_workload)."""
        return comparability.other_workload(self.spec, self.scale_name, self.scale)

    def paper_only(self) -> list[str]:
        """`model=vgg16` for each named value of the plot's x axis and series that the paper ran and
        this scale's matrix has no point for, neither itself nor its axis_map stand-in: a bar or
        line that would otherwise vanish without a word. (Numbers of an axis the x label gives.)"""
        if self.scale_name == "paper":
            return []
        paper = ((self.spec.get("scales") or {}).get("paper") or {}).get("matrix") or {}
        mapping = self.scale.get("axis_map") or {}
        out = []
        for axis in dict.fromkeys([self.plot["x"], *(self.plot.get("series") or [])]):
            here = {label_of(v) for v in self.matrix.get(axis, [])}
            out += [f"{axis}={label_of(v)}" for v in paper.get(axis, []) if here and as_number(v) is None
                    and label_of((mapping.get(axis) or {}).get(v, v)) not in here]
        return out

    @functools.cached_property
    def ran(self) -> dict[str, dict[str, str]]:
        """axis_map column -> each local value of it -> '' where a run drew a value, else the marks
        of its runs ('n/r', 'failed') or 'not run': what the substitutions may name as run."""
        runs = self.table.drop_duplicates("run_id")
        out = {}
        for column in (self.scale.get("axis_map") or {}) if not runs.empty else ():
            if column not in runs:
                continue
            drawn = {label_of(v) for v in self.ok[column].dropna()}
            out[column] = {label_of(v): "" if label_of(v) in drawn else ", ".join(dict.fromkeys(
                STATUS_MARK.get(str(s), str(s)) for s in where(runs, column, v)["status"])) or "not run"
                for v in self.matrix.get(column, [])}
        return out

    def substitutions(self) -> list[str]:
        """What this scale stands in with, as it ran (substitutions.substitutions)."""
        return substitutions.substitutions(self.spec, self.scale_name, ran=self.ran)

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
        scale without GPUs, its nodes or workers the processes that ran on fewer hosts."""
        subs = substitutions.substitutions(self.spec, self.scale_name)
        if axis == "gpus" and any(s.startswith("CPU processes") for s in subs):
            return "CPU worker processes (paper: GPUs)"
        counted = self.counted(axis)
        return f"{counted} (paper: {axis})" if counted else axis

    @functools.cached_property
    def drawn_runs(self) -> pd.DataFrame:
        """One row per run with a value drawn: its axes and layout (hosts, processes, layout)."""
        t = self.table
        if t.empty or "run_id" not in t:
            return t
        # the first row of each run, without copying every drawn row of the table first
        drawn = t.loc[(t["status"] == "ok") & t["value"].notna(), "run_id"]
        return t.loc[drawn.drop_duplicates().index]

    def counted(self, axis: str) -> str | None:
        """What an axis of machines (nodes, workers, GPUs) counts where the drawn runs had more
        of them than hosts: the processes whose number is the axis's value in every run's layout,
        'worker processes' (2 workers + 1 PS + 1 chief on 1 host at nodes=2), 'executors'. A run of
        one process alone (rdmatf-fig1's single node: '1 process on 1 host') is its one worker."""
        return self._process_axes.get(axis)

    @functools.cached_property
    def _process_axes(self) -> dict[str, str]:
        runs = self.drawn_runs
        if "layout" not in runs or self.scale_name == "paper":
            return {}
        runs = runs[runs["layout"].notna()]
        counts = [{noun: n for n, noun in LAYOUT_COUNT.findall(text)} for text in runs["layout"]]
        nouns = list(dict.fromkeys(noun for c in counts for noun in c if noun in PROCESS_NAMES))
        nouns.sort(key=lambda noun: noun == "process")
        hosts = pd.to_numeric(runs["hosts"], errors="coerce")
        out = {}
        for axis in MACHINE_AXES:
            if axis in runs and (pd.to_numeric(runs[axis], errors="coerce") > hosts).any():
                out[axis] = next((PROCESS_NAMES[noun] for noun in nouns
                                  if all(same(c.get(noun, c.get("process")), v) for c, v in zip(counts, runs[axis]))),
                                 None)
        return {axis: name for axis, name in out.items() if name}

    def hosts_text(self) -> str:
        """The hosts the drawn runs ran on: '1 host', '1/3 hosts'."""
        hosts = sorted({int(h) for h in self.drawn_runs.get("hosts", pd.Series()).dropna()})
        return count_text("/".join(map(str, hosts)), "host") if hosts else ""

    @functools.cached_property
    def layout_here(self) -> str | None:
        """How the drawn runs were laid out (their results' `layout`), beside the paper's layout
        where its spec states one: 'n workers + 1 PS + 1 chief on 1 host, n on the x axis (paper:
        2/4/8 nodes)'."""
        runs = self.drawn_runs
        if "layout" not in runs or self.scale_name == "paper" or runs["layout"].isna().all():
            return None
        runs = runs[runs["layout"].notna()]
        shapes = runs["layout"].map(lambda text: LAYOUT_COUNT.sub(r"# \2", text))  # all but the counts
        texts = {shape: self._merged_counts(runs[shapes == shape]) for shape in dict.fromkeys(shapes)}
        text = self._side_by_side(runs, shapes, texts) if len(texts) > 1 else next(iter(texts.values()))
        paper = self.paper_layout()
        return f"{text} (paper: {paper})" if paper else text

    def _side_by_side(self, runs: pd.DataFrame, shapes: pd.Series, texts: dict[str, str]) -> str:
        """Unlike layouts, each after the value of the axis that tells them apart and their hosts
        said once: 'tensorflowonspark: 2 collective workers in 2 executors × 1 core / tensorflow:
        2 collective workers, on 1 host'."""
        axis = next((a for a in self.axes if a in runs and runs[a].nunique() == len(texts)
                     and runs.groupby(shapes)[a].nunique().eq(1).all()), None)
        if axis is None:
            return " / ".join(texts.values())
        order = [label_of(v) for v in ordered_values(self.matrix, axis, runs[axis].unique())]
        named = sorted(((label_of(runs.loc[shapes == shape, axis].iloc[0]), text) for shape, text in texts.items()),
                       key=lambda pair: order.index(pair[0]))
        hosts = {text.rsplit(" on ", 1)[-1] for _, text in named}
        if len(hosts) > 1:
            return " / ".join(f"{value}: {text}" for value, text in named)
        return " / ".join(f"{value}: {text.rsplit(' on ', 1)[0]}" for value, text in named) + f", on {hosts.pop()}"

    def _merged_counts(self, runs: pd.DataFrame) -> str:
        """The layouts of runs alike but for their counts as one: a count that follows an axis
        said as n, 'n workers + 1 PS + 1 chief on 1 host, n on the x axis'; one that varies
        otherwise with its values, '1/2 workers'."""
        counts = [LAYOUT_COUNT.findall(text) for text in runs["layout"]]
        position = itertools.count()
        follows = None  # the one axis n stands for

        def merged(match: re.Match) -> str:
            nonlocal follows
            i = next(position)
            values = [c[i][0] for c in counts]
            if len(set(values)) > 1:
                axis = next((a for a in ([follows] if follows else dict.fromkeys([self.plot["x"], *self.axes]))
                             if a in runs and all(same(n, v) for n, v in zip(values, runs[a]))), None)
                if axis:
                    follows = axis
                    return count_text("n", match[2])
            return count_text("/".join(dict.fromkeys(values)), match[2])

        text = LAYOUT_COUNT.sub(merged, runs["layout"].iloc[0])
        if follows:  # where the figure shows n
            text += ", n " + ("on the x axis" if follows == self.plot["x"] else "in the panel titles"
                              if follows in (self.plot.get("panels") or []) else "in the legend"
                              if follows in (self.plot.get("series") or []) else f"= {follows}")
        return text

    def paper_layout(self) -> str | None:
        """The paper's layout as its spec states it: '3 workers + 1 PS on 4 nodes', '2/4/8 nodes',
        '32 worker nodes', '160 processes'."""
        paper = (self.spec.get("scales") or {}).get("paper") or {}

        def stated(key: str, noun: str) -> str | None:
            values = (paper.get("matrix") or {}).get(key) or [(paper.get("fixed") or {}).get(key)]
            numbers = [label_of(v) for v in values if as_number(v) is not None]
            return count_text("/".join(numbers), noun) if numbers else None

        workers = stated("workers", "worker")
        tasks = [t for t in (workers, workers and stated("parameter_servers", "PS"),
                             stated("processes", "process")) if t]
        nodes = stated("nodes", "node") or stated("worker_nodes", "worker node")
        placed = " on ".join(filter(None, [" + ".join(tasks), nodes]))
        return ", ".join(filter(None, [placed, stated("gpus", "GPU")])) or None

    @functools.cached_property
    def same_runs(self) -> list[str]:
        """The other experiments whose figures at this scale draw this one's runs (same_runs)."""
        return same_runs(self.spec, self.scale_name) if not self.drawn_runs.empty else []

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

    def bars_text(self) -> str:
        """What a drawn mean and its bar cover, counted from the runs drawn: '3 runs a point:
        mean, bars min–max', or '1 run a point, 3 repeats in it' where a run repeats its
        measurement (TF-gRPC-Bench's `repeats`), which says the bars hold no run-to-run spread."""
        ok = self.ok
        axes = [a for a in self.matrix if a in ok.columns]
        counts = (ok.groupby(axes, dropna=False)["run_id"].nunique() if axes
                  else pd.Series([ok["run_id"].nunique()])) if not ok.empty else pd.Series([0])
        low, high = int(counts.min()), int(counts.max())
        runs = f"{low}–{high} runs" if low != high else f"{low} run{'s' if low != 1 else ''}"
        within = (self.scale.get("fixed") or {}).get("repeats")
        if within:
            inside = f"{label_of(within)} repeats in {'it' if high == 1 else 'each'}"
            return f"{runs} a point, {inside}: mean, bars min–max"
        return f"{runs} a point: mean{' of its values' if high == 1 else ''}, bars min–max"

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
        if int(self.scale.get("repeats", 1)) > 1:
            parts.append(self.bars_text())
        substituted = substitutions.footer(self.spec, self.scale_name, ran=self.ran)
        if substituted:
            parts.append(substituted)
        if self.same_runs:
            parts.append(f"same runs as {', '.join(self.same_runs)}")
        return "  ·  ".join(parts)

    def paper_values(self) -> list[dict]:
        """The numbers the paper states: this scale's, else the paper scale's."""
        own = self.scale.get("paper_values")
        if own:
            return list(own)
        return list(((self.spec.get("scales") or {}).get("paper") or {}).get("paper_values") or [])


@functools.cache
def _specs() -> dict:
    return load_all()


def same_runs(spec: dict, scale: str) -> list[str]:
    """The other experiments whose figures at `scale` draw the runs this spec's draws: a slide
    chart and the paper figure it shows (`data_from`), and specs whose scale takes another's runs
    (`runs_from`), either way round."""
    def owner(s) -> str:  # whose runs a spec draws at the scale
        return s.runs_from(scale) or s.source_spec.id

    own = ((spec.get("scales") or {}).get(scale) or {}).get("runs_from") or spec.get("data_from") or spec.get("id")
    return [i for i, s in _specs().items() if i != spec.get("id") and owner(s) == own]


def is_model(key: tuple) -> bool:
    """Whether a series is a cost model's prediction (an axis value `model-…`), not a run."""
    return any(str(v).startswith("model-") for v in key)


def legend_label(names: list[str], key: tuple) -> str:
    """A series' legend entry: its values; '' (no entry) for the one series of a figure without
    `series`, which a legend would name with a word that says nothing ('reproduced')."""
    label = ", ".join(f"{label_of(v)}" if len(names) == 1 else f"{n}={label_of(v)}"
                      for n, v in zip(names, key))
    return f"{label} (model)" if label and is_model(key) else label


# predictions dashed without markers, so they never read as measurements
MODEL_STYLE = {"ls": "--", "marker": None}


def legend_title(ctx: Context, series: list[str]) -> str | None:
    return ", ".join(ctx.axis_name(n) for n in series) if series else None


def select(frame: pd.DataFrame, names: list[str], key: tuple) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for n, v in zip(names, key):
        if n in frame.columns:
            mask &= frame[n].map(lambda x, v=v: same(x, v)).astype(bool)
        else:
            mask &= False
    return frame[mask]


def panel_keys(ctx: Context, frame: pd.DataFrame) -> list[tuple]:
    """The panels to draw: a panel without a value would show only notes, so it is left out
    and the footer says why (ctx.left_out); all are kept when none has a value."""
    names = list(ctx.plot.get("panels") or [])
    keys = ctx.series_keys(frame, names)
    cells = {key: select(frame, names, key) for key in keys}
    drawn = [key for key in keys if ((cells[key]["status"] == "ok") & cells[key]["value"].notna()).any()]
    if not drawn:
        return keys
    for key in keys:
        if key not in drawn:
            ctx.left_out.append(f"{panel_title(ctx, key)}: {_why_empty(cells[key])}")
    return drawn


def _why_empty(cell: pd.DataFrame) -> str:
    """The statuses of the runs of points without a value: 'n/r: needs multi-host', 'failed'."""
    runs = cell.drop_duplicates("run_id")
    return ", ".join(dict.fromkeys(status_text(run) for _, run in runs.iterrows())) or "no run"


def lines_left_out(ctx: Context, values: pd.DataFrame, pkeys: list[tuple], series: list[str]) -> set:
    """The (panel, series) of the lines without a value, said in the footer (ctx.no_line): their
    notes would stand at every x, across the other lines' points and error bars."""
    panels = list(ctx.plot.get("panels") or [])
    out = set()
    for pkey in pkeys if series else []:
        pframe = select(values, panels, pkey)
        for skey in ctx.series_keys(pframe, series):
            cell = select(pframe, series, skey)
            if not ((cell["status"] == "ok") & cell["value"].notna()).any():
                out.add((pkey, skey))
                where = ", ".join(f"{ctx.axis_name(n)}={label_of(v)}" for n, v in zip(series, skey))
                ctx.no_line.append(", ".join(filter(None, [panel_title(ctx, pkey), where]))
                                   + f": {_why_empty(cell)}")
    return out


def panel_title(ctx: Context, key: tuple) -> str:
    names = list(ctx.plot.get("panels") or [])
    rows = select(ctx.ok, names, key)
    return ", ".join(f"{ctx.axis_name(n)}={value_label(n, v, rows)}" for n, v in zip(names, key))


def axis_scales(ax, ctx: Context) -> None:
    if ctx.plot.get("log_x"):
        ax.set_xscale("log", base=2)
    if ctx.plot.get("log_y"):
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)


def status_note(ax, x, cell: pd.DataFrame) -> None:
    """Say at the foot of the axes why a point has no value: its status and, for a point
    not runnable here, the capabilities it needs (e.g. 'n/r: needs multi-host')."""
    ax.annotate(upright_lines(ax, status_text(cell.iloc[0])), (x, 0.02), xycoords=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7, color="#7f7f7f", rotation=90)


def upright_lines(ax, text: str, points: float = 7) -> str:
    """A note turned upright, wrapped to end inside its axes: one line of it ran out of a short
    panel's top ('n/r: needs infiniband, rdma, gpu, caffeonspark-gpu')."""
    room_pt = ax.get_position().height * ax.figure.get_figheight() * 72 * 0.9
    # a character of DejaVu Sans is about 0.55 of the font size wide
    return "\n".join(textwrap.wrap(text, max(int(room_pt / (0.55 * points)), 12), break_on_hyphens=False))


def status_text(run: pd.Series) -> str:
    """A run's status as a note says it: 'failed', 'n/r: needs multi-host, eth-10g-emulated'."""
    status = str(run["status"])
    text = STATUS_MARK.get(status, status)
    reason = str(run["reason"]) if pd.notna(run.get("reason")) else ""
    needs = list(dict.fromkeys(re.findall(r"needs ([\w+-]+):", reason)))
    if status == "not runnable" and needs:
        text += ": needs " + ", ".join(needs)
    return text


def empty_slot_note(ax, x, ctx: Context, point: dict) -> None:
    """Say why a point of this scale has no run in the set drawn: the capabilities its
    point_needs names (e.g. a tier only an emulated cluster has), or that it was not run."""
    full = {k: v for k, v in point.items() if k in ctx.matrix}
    if not any(point_matches(p, full) for _, p in expand(ctx.scale)):
        return      # excluded from this scale's matrix: no slot to explain
    needs = [n for pn in ctx.scale.get("point_needs", []) if point_matches(full, pn["at"]) for n in pn["needs"]]
    text = ("no run: needs " + ", ".join(dict.fromkeys(needs))) if needs else "no run in this set"
    ax.annotate(upright_lines(ax, text), (x, 0.02), xycoords=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=7, color="#7f7f7f", rotation=90)


def non_ok_summary(ctx: Context) -> str | None:
    t = ctx.table
    if t.empty:
        return None
    bad = t[t["status"] != "ok"].drop_duplicates("run_id")
    if bad.empty:
        return None
    counts = bad["status"].value_counts()
    return "runs not ok: " + ", ".join(f"{n} {s}" for s, n in counts.items())


def dedupe_legend(ax, title: str | None) -> None:
    """One legend entry per label, for the lines of the axes and of its twins (a right-hand axis's
    dashed lines), drawn on the twin drawn last so that no line of it crosses the legend."""
    twins = [a for a in ax.get_shared_x_axes().get_siblings(ax)
             if a is not ax and a.get_position().bounds == ax.get_position().bounds]
    seen = {}
    for shown in [ax, *twins]:
        for h, lab in zip(*shown.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        (twins or [ax])[-1].legend(list(seen.values()), list(seen.keys()), fontsize=7, title=title,
                                   title_fontsize=7)


def text_renderer(fig: Figure):
    """The renderer that measures the texts of a figure not yet drawn."""
    return fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else \
        FigureCanvasAgg(fig).get_renderer()


def reason_box(ax, text: str) -> None:
    """Why there is nothing to draw, boxed in place of the data (no empty axes)."""
    ax.axis("off")
    ax.text(0.5, 0.55, "\n".join(textwrap.wrap(text, 70)),
            ha="center", va="center", fontsize=11, color="#7f2704",
            bbox={"boxstyle": "round", "fc": "#fdf2e9", "ec": "#e59866"})
