"""Figures from tidy results: one drawing function per plot form of the specs.

Every figure names its scale, cluster and data on its face, marks the paper's stated
numbers (the spec's `paper_values`), labels emulated networks and synthetic data, and
shows points whose run did not end `ok` with their status. An experiment without `ok`
results still gets a figure that says why ("not run: <reason>"), so the report is
complete. Drawing uses matplotlib's object API (no pyplot state), so figures can be drawn
from the threads of one Snakemake process.

The package, one module per job, each importing only those above it:

- `values`: data selection and reduction (the rows drawn, one value per run or point);
- `labels`: the drawing context and what a figure says on its face;
- `paper`: the paper panels, the papers' stated values beside this scale's;
- `layout`: areas, margins, title and footer, saving;
- `forms`: the plot forms (`plot.form` of the specs);
- `utilisation`: the resource-use figure of every experiment's monitor samples.

This module draws one experiment's figure from them.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
# glyphs unhinted: FreeType's hinting of every glyph took a sixth of the drawing time, and at
# this resolution the hinted and unhinted texts look alike
matplotlib.rcParams["text.hinting"] = "no_hinting"
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from dlobd.results import comparability  # noqa: E402
from dlobd.results.figures.forms import FORMS  # noqa: E402
from dlobd.results.figures.labels import WORKLOAD_SETTINGS, Context, reason_box, setting_pattern  # noqa: E402
from dlobd.results.figures.layout import DPI, FIGSIZE, PAPER_PANEL_IN, decorate, main_area, save  # noqa: E402
from dlobd.results.figures.paper import implied_ratio, local_counterpart, paper_panel, stated_text  # noqa: E402
from dlobd.results.figures.utilisation import draw_utilisation, render_utilisation  # noqa: E402
from dlobd.results.figures.values import label_of, same  # noqa: E402
from dlobd.results.tidy import not_run_reason  # noqa: E402

# what the pipeline, the report and the tests call by name
__all__ = ["FORMS", "WORKLOAD_SETTINGS", "Context", "build", "draw", "draw_utilisation", "implied_ratio",
           "label_of", "local_counterpart", "render", "render_utilisation", "same", "setting_pattern",
           "stated_text"]


def build(spec: dict, scale_name: str, scale: dict | None, table: pd.DataFrame,
          not_run: str | None = None, cpus: int | None = None) -> Figure:
    """One experiment's figure in its spec's plot form, not saved (tests read its texts); `cpus`:
    the cores its runs recorded (comparability.recorded_cores)."""
    ctx = Context(spec, scale_name, scale, table, not_run, cpus)
    # a figure that only says why it is empty needs less room, unless it shows the paper's values
    short = not_run and not ctx.paper_panel
    height = 3.4 if short else FIGSIZE[1] + (PAPER_PANEL_IN if ctx.paper_panel else 0)
    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI)
    if not_run:
        ax = fig.add_subplot(main_area(fig, ctx))
        reason_box(ax, f"not run: {not_run}")
        ax.text(0.5, 0.12, f"plot form: {spec['plot']['form']}  ·  metric: "
                f"{spec['metric']['name']} ({spec['metric']['unit']})",
                ha="center", va="center", fontsize=8, color="#555555")
    else:
        FORMS[spec["plot"]["form"]](fig, ctx)
    if ctx.paper_panel:
        paper_panel(fig, ctx)
    decorate(fig, ctx)
    return fig


def draw(spec: dict, scale_name: str, scale: dict | None, table: pd.DataFrame,
         out, not_run: str | None = None, cpus: int | None = None) -> Figure:
    """Draw one experiment's figure in its spec's plot form and save it (PNG or PDF, by name)."""
    fig = build(spec, scale_name, scale, table, not_run, cpus)
    save(fig, out)
    return fig


def render(spec: dict, scale_name: str, scale: dict | None, results_csv, out,
           runs_dir=None) -> str | None:
    """Draw one experiment from its results CSV; returns why it was not run, if it was not."""
    table = pd.read_csv(results_csv)
    reason = not_run_reason(spec, scale_name, scale, table, runs_dir)
    draw(spec, scale_name, scale, table, out, not_run=reason,
         cpus=comparability.recorded_cores(Path(results_csv).parent, spec))
    return reason
