"""The plot forms: one drawing function per `plot.form` of the specs (FORMS)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from dlobd.results.figures.labels import (
    Context, MODEL_STYLE, PAPER_COLOR, axis_scales, dedupe_legend, empty_slot_note, is_model,
    legend_label, legend_title, lines_left_out, panel_keys, panel_title, select, status_note,
    status_text, text_renderer)
from dlobd.results.figures.layout import reuse_axes
from dlobd.results.figures.paper import paper_points, target_accuracy
from dlobd.results.figures.values import (
    ROW_X, as_number, label_of, ordered_values, reduce_values, run_rows, same, where,
    window_means)
from dlobd.results.tidy import is_monitor
from dlobd.spec import metrics


def grouped_bars(fig: Figure, ctx: Context, lines: bool = False) -> None:
    """Bars grouped by the x axis, one bar per series (the DLoBD paper's nodes/cores charts)."""
    x, series = ctx.plot["x"], list(ctx.plot.get("series") or [])
    values = ctx.values(ctx.metric["name"], ctx.metric["reduce"], ctx.metric.get("over"))
    pkeys = panel_keys(ctx, values)
    silent = lines_left_out(ctx, values, pkeys, series) if lines else set()
    fig_axes = reuse_axes(fig, ctx, len(pkeys))
    for ax, pkey in zip(fig_axes, pkeys):
        pframe = select(values, list(ctx.plot.get("panels") or []), pkey)
        xs = ordered_values(ctx.matrix, x, pframe[x].dropna().unique() if x in pframe else [])
        skeys = ctx.series_keys(pframe, series)
        width = 0.8 / max(len(skeys), 1)
        for i, skey in enumerate(skeys):
            if (pkey, skey) in silent:
                continue
            sframe = select(pframe, series, skey)
            ys, pos, spread = [], [], []
            for j, xv in enumerate(xs):
                cell = where(sframe, x, xv) if x in sframe else sframe
                if lines:
                    xpos = float(xv) if as_number(xv) is not None else j
                else:
                    xpos = j - 0.4 + width * (i + 0.5)
                okc = cell[cell["status"] == "ok"]
                if not okc.empty:
                    ys.append(float(okc["value"].astype(float).mean()))
                    spread.append((ys[-1] - okc["low"].astype(float).min(),
                                   okc["high"].astype(float).max() - ys[-1]))
                    pos.append(xpos)
                elif not cell.empty:
                    status_note(ax, xpos, cell)
                elif ctx.scale_name != "paper" and not ctx.not_run_reason:
                    point = dict(zip(list(ctx.plot.get("panels") or []), pkey))
                    empty_slot_note(ax, xpos, ctx, {**point, **dict(zip(series, skey)), x: xv})
            label = legend_label(series, skey)
            # the mean of a point's runs, and a bar from the lowest to the highest value it
            # stands for: the runs' values, or the repeats a run's mean is taken over
            yerr = list(zip(*spread)) if any(lo or hi for lo, hi in spread) else None
            if lines and pos:     # a series without data gets no legend entry
                style = MODEL_STYLE if is_model(skey) else {"marker": "o"}
                ax.errorbar(pos, ys, yerr=yerr, capsize=3, label=label, **style)
            elif pos:
                ax.bar(pos, ys, width=width * 0.95, yerr=yerr, capsize=3, label=label)
        for p in paper_points(ctx):
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
            xpos = float(xv) if lines and as_number(xv) is not None else match[0] - 0.4 + width * (i + 0.5)
            ax.plot([xpos], [p["value"]], marker="D", mfc="none", mec=PAPER_COLOR, ms=8, ls="none",
                    label="paper's value" if "paper's value" not in
                    ax.get_legend_handles_labels()[1] else None)
        if not lines:
            ax.set_xticks(range(len(xs)), [label_of(v) for v in xs])
            ax.set_xlim(-0.6, len(xs) - 0.4)  # slots without a bar keep their room and label
        elif all(as_number(v) is not None for v in xs) and xs:
            ticks = [float(v) for v in xs]
            ax.set_xticks(ticks, [label_of(v) for v in xs])
            if not ctx.plot.get("log_x"):
                # room for the status notes of points at the ends of the axis
                pad = 0.06 * (max(ticks) - min(ticks)) or 0.5
                ax.set_xlim(min(ticks) - pad, max(ticks) + pad)
        ax.set_xlabel(ctx.x_label())
        ax.set_ylabel(ctx.y_label())
        if pkey:
            ax.set_title(panel_title(ctx, pkey), fontsize=9)
        ok_runs = pframe[pframe["status"] == "ok"]
        if int(ctx.scale.get("repeats", 1)) <= 1 and (ok_runs["low"] < ok_runs["high"]).any():
            # (the footer says what the bars of repeated runs are)
            ax.set_title(ctx.bars_text(), fontsize=8, loc="right")
        axis_scales(ax, ctx)
        if ax.get_legend_handles_labels()[0]:
            ax.margins(y=0.3)  # headroom, so the legend does not cover the tallest bars
            ax.legend(fontsize=7, title=legend_title(ctx, series), title_fontsize=7)
        _value_axis(ax, ctx)


def scaling_lines(fig: Figure, ctx: Context) -> None:
    """Lines over a numeric scale axis (nodes, GPUs, cores), one line per series."""
    grouped_bars(fig, ctx, lines=True)


# drawn values whose highest is this many times their lowest span a decade: a linear axis
# would flatten the low ones against zero (RPC latencies of 128 KiB and 8 MiB payloads)
DECADE = 10.0
# units of a bounded scale, read on a linear axis whatever their span (accuracy from chance up)
BOUNDED_UNITS = ("fraction", "%")


def _drawn_values(ax) -> np.ndarray:
    """Every y an axes draws: its lines' points, its bars' bases and tops, its error bars' ends."""
    ys = [np.asarray(line.get_ydata(), float) for line in ax.lines]
    ys += [np.array([bar.get_y(), bar.get_y() + bar.get_height()]) for bar in ax.patches]
    ys += [np.asarray(segment)[:, 1] for coll in ax.collections for segment in coll.get_segments()
           if hasattr(coll, "get_segments")]
    ys = np.concatenate(ys) if ys else np.array([])
    return ys[np.isfinite(ys)]


def _value_axis(ax, ctx: Context, log_where_decades: bool = True) -> None:
    """A y axis fit for values that cannot be negative: logarithmic where the values span a
    decade (unless the spec says `log_y`; bars keep their linear length, fractions and percentages
    their bounded scale), and never below zero, where margins and error bars would push a linear
    one (a latency axis to -1,300 us)."""
    ys = _drawn_values(ax)
    if not len(ys) or ys.min() < 0:
        return
    if (log_where_decades and ctx.plot.get("log_y") is None and not ax.patches
            and ctx.metric.get("unit") not in BOUNDED_UNITS
            and ys.min() > 0 and ys.max() >= DECADE * ys.min()):
        ax.set_yscale("log")
    elif ax.get_yscale() == "linear" and ax.get_ylim()[0] < 0:
        ax.set_ylim(bottom=0)


def _paper_markers(ax, ctx: Context, x: str) -> None:
    """The paper's values at their x, as hollow diamonds (at the paper's scale only)."""
    for p in paper_points(ctx):
        if x in p["at"]:
            ax.plot([float(p["at"][x])], [p["value"]], marker="D", mfc="none",
                    mec=PAPER_COLOR, ms=8, ls="none", label="paper's value")


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


def _ranks(rows: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    """A run's rows by the rank (`task`) that logged them, each rank's its own line: joined in
    time order, two CaffeOnSpark executors' validations drew a fall from 0.560 to 0.459 at one
    iteration. One group, unnamed, where one rank or none logged them."""
    if "task" not in rows.columns or rows["task"].nunique() < 2:
        return [(None, rows)]
    return [(None if pd.isna(task) else str(task), part)
            for task, part in rows.groupby("task", sort=True, dropna=False)]


def _lines_over(fig: Figure, ctx: Context, xcol: str, per_x: bool = False) -> None:
    """One line per run and rank of the series; with `per_x`, the metric's reducer gives one
    value per x (e.g. the accumulated time at the end of each epoch), else every sample is drawn."""
    metric = ctx.metric["name"]
    ok = run_rows(ctx.ok)
    series = list(ctx.plot.get("series") or [])
    pkeys = panel_keys(ctx, ctx.table)
    y2 = ctx.plot.get("y2")
    plotted = [metric, y2] if y2 else [metric]
    y2_name = (ctx.plot.get("y2_label") or f"{y2} ({metrics.get(y2).unit})") if y2 else ""
    if y2:
        ctx.right = 0.9
    fig_axes = reuse_axes(fig, ctx, len(pkeys))
    for ax, pkey in zip(fig_axes, pkeys):
        pframe = select(ok, list(ctx.plot.get("panels") or []), pkey)
        twin = ax.twinx() if y2 else None
        drawn_by_series: dict[tuple, set] = {}
        for skey in ctx.series_keys(pframe, series):
            sframe = select(pframe, series, skey)
            drawn = drawn_by_series.setdefault(skey, set())
            for run_id, rows in sframe.groupby("run_id", sort=False):
                if xcol not in rows.columns:
                    continue
                for task, mine in _ranks(rows[rows["metric"].isin(plotted)]):
                    xs, ys = _curve(mine[mine["metric"] == metric], xcol,
                                    ctx.metric["reduce"] if per_x else None)
                    if not xs:
                        continue
                    drawn.add(run_id)
                    label = legend_label(series, skey)
                    (line,) = ax.plot(xs, ys, marker="o" if len(xs) < 40 else None, ms=4,
                                      label=f"{label} — {task}" if task else label)
                    if twin is not None:
                        xs2, ys2 = _curve(mine[mine["metric"] == y2], xcol,
                                          metrics.get(y2).reducer if per_x else None)
                        twin.plot(xs2, ys2, ls="--", marker="s", ms=3, color=line.get_color(),
                                  alpha=0.7,
                                  label=": ".join(filter(None, [line.get_label(), f"{y2_name} (dashed)"])))
        _runs_left_out(ctx, pkey, series, drawn_by_series)
        if twin is not None:
            twin.set_ylabel(f"{y2_name} (dashed)")
        _paper_markers(ax, ctx, xcol)
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
            ax.set_title(panel_title(ctx, pkey), fontsize=9)
        axis_scales(ax, ctx)
        _value_axis(ax, ctx)
        if twin is not None:
            _value_axis(twin, ctx, log_where_decades=False)
        dedupe_legend(ax, legend_title(ctx, series))


def _runs_left_out(ctx: Context, pkey: tuple, series: list[str], drawn: dict[tuple, set]) -> None:
    """Say in the footer which series of a panel got no line, or lines from some of their runs
    only, and why: the other runs failed, were not runnable or logged no sample."""
    runs = run_rows(select(ctx.table, list(ctx.plot.get("panels") or []), pkey)).drop_duplicates("run_id")
    for skey in ctx.series_keys(runs, series):
        cell = select(runs, series, skey)
        left = cell[~cell["run_id"].isin(drawn.get(skey, set()))]
        if left.empty:
            continue
        where = ", ".join(filter(None, [panel_title(ctx, pkey), *(
            f"{ctx.axis_name(n)}={label_of(v)}" for n, v in zip(series, skey))])) or "the runs"
        why = ", ".join(dict.fromkeys(status_text(r) if r["status"] != "ok" else "no sample"
                                      for _, r in left.iterrows()))
        if len(left) == len(cell):
            ctx.no_line.append(f"{where}: {why}")
        else:
            ctx.not_drawn.append(f"{where}: {len(left)} of {len(cell)} ({why})")


def lines_over_time(fig: Figure, ctx: Context) -> None:
    """Metric against elapsed training time (accuracy-over-time charts)."""
    _lines_over(fig, ctx, ctx.plot["x"] if ctx.plot["x"] in ROW_X else "wall_clock_s")
    _target_line(ctx)


def _target_line(ctx: Context) -> None:
    """The accuracy a time-to-accuracy figure times across its panels (the papers' '70% accuracy
    line'), with its legend entry."""
    target = target_accuracy(ctx)
    if target is None:
        return
    for ax in ctx.main_axes:
        ax.axhline(target, color=PAPER_COLOR, ls=":", lw=1.2, label=f"{target * 100:g}% top-1: the paper's target")
        dedupe_legend(ax, legend_title(ctx, list(ctx.plot.get("series") or [])))


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
    pkeys = panel_keys(ctx, ctx.table)
    for ax, pkey in zip(reuse_axes(fig, ctx, len(pkeys)), pkeys):
        pframe = select(ok, list(ctx.plot.get("panels") or []), pkey)
        for skey in ctx.series_keys(pframe, series):
            sframe = select(pframe, series, skey)
            if sframe.empty or x not in sframe.columns:
                continue
            # the mean at each x of the runs' values, and a bar over their range where they differ
            agg = sframe.groupby(x)["value"].agg(["mean", "min", "max"]).sort_index()
            spread = [agg["mean"] - agg["min"], agg["max"] - agg["mean"]]
            ax.errorbar(agg.index.astype(float), agg["mean"], capsize=3, label=legend_label(series, skey),
                        yerr=spread if (agg["max"] > agg["min"]).any() else None,
                        **(MODEL_STYLE if is_model(skey) else {"marker": "o"}))
        _paper_markers(ax, ctx, x)
        ax.set_xlabel(ctx.x_label())
        ax.set_ylabel(ctx.y_label())
        if pkey:
            ax.set_title(panel_title(ctx, pkey), fontsize=9)
        if ctx.plot.get("log_x", True):  # payload axes span bytes to megabytes
            ax.set_xscale("log", base=2)
        if ctx.plot.get("log_y"):
            ax.set_yscale("log")
        _value_axis(ax, ctx)
        ax.grid(True, alpha=0.3)
        dedupe_legend(ax, legend_title(ctx, series))


def breakdown_bars(fig: Figure, ctx: Context) -> None:
    """Stacked bars: one bar per x value (and series), segments by the `plot.stack` dimension."""
    x, stack_dim = ctx.plot["x"], ctx.plot.get("stack")
    t = run_rows(ctx.table)
    groups = [a for a in [x, *(ctx.plot.get("series") or [])] if a in t.columns]
    if t.empty or not groups:
        reuse_axes(fig, ctx, 1)
        return
    keys = ctx.series_keys(t, groups)
    # label bars by the axes that vary; a value every bar shares says nothing
    varying = [i for i in range(len(groups)) if len({label_of(k[i]) for k in keys}) > 1] or [0]
    labels = [", ".join(label_of(k[i]) for i in varying) for k in keys]
    crowded = len(keys) > 4 or max(len(lab) for lab in labels) > 14
    if crowded:
        ctx.extra_bottom = 0.012 * max(len(lab) for lab in labels)
    ax = reuse_axes(fig, ctx, 1)[0]
    ok = t[(t["status"] == "ok") & (t["metric"] == ctx.metric["name"])]
    parts = [None]
    if stack_dim and stack_dim in ok.columns:
        declared = ((ctx.spec.get("dimensions") or {}).get(stack_dim) or {}).get("values", [])
        present = ok[stack_dim].dropna().unique()
        parts = [p for p in ordered_values({stack_dim: declared}, stack_dim, present)
                 if any(same(p, q) for q in present)] or [None]
    for k_i, key in enumerate(keys):
        cell = select(t, groups, key)
        if not cell.empty and (cell["status"] != "ok").all():
            status_note(ax, k_i, cell)
    colors = matplotlib.colormaps["tab10"]
    bottoms = np.zeros(len(keys))
    for c_i, part in enumerate(parts):
        heights = []
        for key in keys:
            cell = select(ok, groups, key)
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
    axis_scales(ax, ctx)
    if ax.get_legend_handles_labels()[0]:
        # a fixed corner: 'best' would move the legend again once the top is raised
        ax.legend(fontsize=7, title=stack_dim, title_fontsize=7, loc="upper right")
        _room_for_legend(fig, ax)


def table(fig: Figure, ctx: Context) -> None:
    """The paper's tables: one row per matrix point with its value and status."""
    values = ctx.values(ctx.metric["name"], ctx.metric["reduce"], ctx.metric.get("over"))
    ax = reuse_axes(fig, ctx, 1)[0]
    ax.axis("off")
    if values.empty:
        return
    cols = [a for a in ctx.axes if a in values.columns]
    unit = ctx.metric.get("unit", "")
    # a column for each other quantity the paper's table states (scaffe-table2's aggregation times)
    stated = {(p["metric"], tuple(sorted((k, v) for k, v in p["at"].items() if k not in ctx.axes)))
              for p in ctx.paper_values() if p.get("metric") not in (None, ctx.metric["name"])}
    extra = [(", ".join([name, *(f"{k}={label_of(v)}" for k, v in only)]) + f" ({metrics.get(name).unit})",
              ctx.values(name, metrics.get(name).reducer, None, dict(only)).set_index("run_id")["value"])
             for name, only in sorted(stated)]
    cells = []
    for _, r in values.iterrows():
        vals = [r["value"], *(by_run.get(r["run_id"]) for _, by_run in extra)]
        cells.append([label_of(r[c]) for c in cols] + [
            "" if v is None or pd.isna(v) else f"{float(v):.4g}" for v in vals] + [str(r["status"])])
    head = cols + [f"{ctx.metric['name']} ({unit})", *(name for name, _ in extra), "status"]
    tab = ax.table(cellText=cells[:30], colLabels=head, loc="upper center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.auto_set_column_width(range(len(head)))  # each column as wide as its longest text
    tab.scale(1, 1.3)


def _utilisation_lines(ax, ctx: Context, mon: pd.DataFrame, metric: str, window_s: float | None) -> None:
    """One line per run, host and (for network) interface and direction, lines that coincide
    drawn once under one legend entry naming them all; with a window, the samples thin and their
    window means over them in the same colour."""
    series = list(ctx.plot.get("series") or [])
    mon = mon[mon["metric"] == metric]
    lines = [c for c in ("run_id", "host", "interface", "direction") if c in mon.columns]
    span = float(mon["value"].max() - mon["value"].min()) if not mon.empty else 0.0
    shrunk = False  # a run shorter than the window: one mean over the run
    for skey in ctx.series_keys(mon, series):
        sframe = select(mon, series, skey)
        if sframe.empty:
            continue
        # name only what tells the lines of one series apart
        varying = [c for c in lines[1:] if sframe[c].nunique() > 1]
        curves: list[tuple[pd.DataFrame, np.ndarray, np.ndarray, list[str]]] = []
        for key, rows in sframe.groupby(lines, sort=False, dropna=False):
            rows = rows.sort_values("wall_clock_s")
            parts = dict(zip(lines, key))
            # 'interface eth0': a bare 'loopback (eth0)' reads as if eth0 were the loopback
            extra = " ".join(f"interface {parts[c]}" if c == "interface" else str(parts[c]) for c in varying)
            x, y = rows["wall_clock_s"].to_numpy(float), rows["value"].to_numpy(float)
            under = next((c for c in curves if _coincide(c[1], c[2], x, y, span)), None)
            if under is None:
                curves.append((rows, x, y, [extra]))
            else:
                under[3].append(extra)
        for rows, x, y, extras in curves:
            extra = _names_of(extras)
            name = legend_label(series, skey)
            label = f"{name} — {extra}" if extra else name
            if window_s:
                (sampled,) = ax.plot(x, y, linewidth=0.9, alpha=0.5)
                xs, means, short_run = window_means(rows, window_s)
                shrunk |= short_run
                ax.plot(xs, means, marker="o", markersize=3, color=sampled.get_color(), label=label)
            else:
                ax.plot(x, y, label=label)
    if window_s:
        means = f"{window_s:g}-s window means, or a shorter run's mean" if shrunk else \
            f"{window_s:g}-s window means (the paper's)"
        ax.set_title(f"markers: {means}; thin: samples", fontsize=8, loc="right")
    # samples of an idle host or interface are 0: a log axis would leave them out
    _value_axis(ax, ctx, log_where_decades=False)
    ax.grid(True, alpha=0.3)
    dedupe_legend(ax, legend_title(ctx, series))


# lines whose samples differ by less than this share of the axis's span draw one curve (a pixel
# or so): an idle interface's line lies under another's, loopback's rx under its tx
COINCIDE = 0.005


def _coincide(x1: np.ndarray, y1: np.ndarray, x2: np.ndarray, y2: np.ndarray, span: float) -> bool:
    return len(x1) == len(x2) and np.allclose(x1, x2) and bool(np.all(np.abs(y1 - y2) <= COINCIDE * span))


def _names_of(extras: list[str]) -> str:
    """The names of coinciding lines, each last word after its shared head: 'interface lo rx/tx'."""
    heads: dict[str, list[str]] = {}
    for extra in extras:
        head, _, last = extra.rpartition(" ")
        heads.setdefault(head, []).append(last)
    return ", ".join(f"{head} {'/'.join(lasts)}".strip() for head, lasts in heads.items())


def utilisation(fig: Figure, ctx: Context) -> None:
    """A monitor metric over time (dlobd-fig8 style), with the spec's `beside` metric (GPU memory
    beside host memory) in a panel of its own where the runs sampled it."""
    t = ctx.table
    mon = t[is_monitor(t)]
    if not mon.empty:
        mon = mon[mon["status"] == "ok"]
    beside = ctx.plot.get("beside")
    drawn_beside = bool(beside) and not mon.empty and (mon["metric"] == beside["metric"]).any()
    # the series without samples (dlobd-fig8b's devices without their builds) named with their
    # marks in the footer, which the axes leave room for
    series = list(ctx.plot.get("series") or [])
    sampled = mon[mon["metric"] == ctx.metric["name"]] if not mon.empty else mon
    _runs_left_out(ctx, (), series, {skey: set(select(sampled, series, skey)["run_id"])
                                     for skey in ctx.series_keys(sampled, series)})
    axes = reuse_axes(fig, ctx, 2 if drawn_beside else 1)
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


def _room_for_legend(fig: Figure, ax) -> None:
    """Raise the top of an axis until the bars under its legend end below it: a bar as wide as
    the axes leaves it no place beside them."""
    renderer = text_renderer(fig)
    box, legend = ax.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)
    free = (legend.y0 - box.y0) / box.height - 0.03
    tallest = max((bar.get_y() + bar.get_height() for bar in ax.patches
                   if bar.get_window_extent(renderer).x1 > legend.x0), default=0)
    low, high = ax.get_ylim()
    if 0 < free and tallest > low + free * (high - low) and ax.get_yscale() == "linear":
        ax.set_ylim(low, low + (tallest - low) / free)
