"""The resource-use figure every experiment gets from its runs' monitor samples."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import matplotlib.lines
import pandas as pd
from matplotlib.figure import Figure

from dlobd.results.figures.labels import reason_box
from dlobd.results.figures.values import value_label
from dlobd.results.figures.layout import DPI, FIGSIZE, save
from dlobd.results.tidy import is_monitor, not_run_reason
from dlobd.spec import point_id


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


def _run_labels(spec: dict, scale_name: str, mon: pd.DataFrame) -> dict[str, str]:
    """`mpi_impl=hr, repeat=1` for each run: the pairs of its point directory (point_id's
    `axis-value` joined by _), each axis named as the spec names it and its value as the run's
    rows hold it (a point directory writes mpi_impl as mpi-impl)."""
    axes = [*(((spec.get("scales") or {}).get(scale_name) or {}).get("matrix") or {}), "repeat"]
    out = {}
    for run_id, rows in mon.groupby("run_id"):
        pairs = []
        for pair in Path(str(run_id)).parts[3].split("_"):
            axis = next((a for a in sorted(axes, key=len, reverse=True) if pair.startswith(point_id({a: ""}))), None)
            ran = rows[axis].dropna() if axis in rows else ()
            value = value_label(axis, ran.iloc[0], rows) if len(ran) else pair[len(point_id({axis: ""})):] if axis else ""
            pairs.append(f"{axis}={value}" if axis else pair.replace("-", "=", 1))
        out[run_id] = ", ".join(pairs)
    return out


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
        reason_box(fig.add_subplot(), f"no monitor samples: {reason}")
        fig.suptitle(f"{title}: no monitor samples", fontsize=10)
        save(fig, out_png)
        return fig
    run_ids = sorted(mon["run_id"].unique())
    labels = _run_labels(spec, scale_name, mon)
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
                    label=" ".join([labels[parts["run_id"]]] + [_line_part(c, parts[c]) for c in keys[1:]]))
            if varying:     # which host, GPU or interface, at the line's peak
                peak = line["value"].astype(float).idxmax()
                ax.annotate(" ".join(_line_part(c, parts[c]) for c in varying),
                            (float(line.loc[peak, "wall_clock_s"]), float(line.loc[peak, "value"])),
                            fontsize=7, color=colours[parts["run_id"]])
        lowest = min((line["value"].astype(float).min() for _, line in drawn), default=0.0)
        if lowest >= 0 and ax.get_ylim()[0] < 0:
            ax.set_ylim(bottom=0)  # the margin under an idle sample: no quantity here goes below 0
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    if "direction" in mon.columns and mon["direction"].notna().any():
        axes[-1].set_title("received solid, sent dashed", fontsize=8, loc="right")
    axes[-1].set_xlabel("Time since the run started (s)")
    handles = [matplotlib.lines.Line2D([], [], color=colours[r], linewidth=2) for r in run_ids]
    fig.legend(handles, [labels[r] for r in run_ids], loc="lower center",
               bbox_to_anchor=(0.5, 0.08 / height), ncols=2, fontsize=8, title="run (matrix point)",
               title_fontsize=8)
    fig.suptitle(title, fontsize=10, y=1 - 0.08 / height, va="top")
    save(fig, out_png)
    return fig


def render_utilisation(spec: dict, scale_name: str, results_csv, out_png) -> bool:
    """draw_utilisation from a results CSV; returns whether there were samples to draw."""
    fig = draw_utilisation(spec, scale_name, pd.read_csv(results_csv), out_png)
    return any(ax.lines for ax in fig.axes)
