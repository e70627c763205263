"""Layout: the figure's areas and margins, its title and footer, and saving it."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from matplotlib.figure import Figure

from dlobd.results.figures.labels import Context, non_ok_summary
from dlobd.results.figures.paper import (
    get_unit, point_text, reaches_target, stated_text, target_text, timed_points)
from dlobd.results.figures.values import label_of
from dlobd.spec import assumed_settings


FIGSIZE = (8.0, 5.0)
DPI = 100
# zlib's fastest level: these flat-coloured plots come out within 3% of the default level's
# size, compressed in half its time (compressing took two fifths of a save)
PNG_OPTIONS = {"dpi": DPI, "pil_kwargs": {"compress_level": 1}}
PAPER_PANEL_IN = 2.8  # height the panel of the paper's values adds under the data


def _texts(ctx: Context) -> tuple[list[str], list[str]]:
    """The wrapped title lines and footer lines of a figure."""
    spec = ctx.spec
    if ctx.scale_name == "paper":
        title = textwrap.wrap(f"{spec['figure']} ({spec['paper']}): {spec['title']}", 95)
        assumed = assumed_settings(spec, ctx.scale_name)
        if assumed:   # what the runs ran with that the paper does not state
            title += textwrap.wrap("not stated by the paper: " + "; ".join(assumed), 95,
                                   break_on_hyphens=False)
    else:  # the title says what ran here; the paper's setting follows in a line of its own
        here = f"{ctx.y_label()} over {ctx.x_label().split(' (paper:')[0]}"
        # how the runs were laid out first: the processes and hosts that ran what follows
        subs = [s for s in [ctx.layout_here] if s] + ctx.settings_here(here) + ctx.substitutions()
        if subs:
            here += " — here: " + "; ".join(subs)
        done = "Not run" if ctx.not_run_reason else "Rerun"
        title = (textwrap.wrap(f"{done} at the {ctx.scale_name} scale: {here}", 95, break_on_hyphens=False)
                 + textwrap.wrap(f"paper: {spec['figure']} ({spec['paper']}): {spec['title']}", 95,
                                 break_on_hyphens=False))
    notes = [ctx.footer()]
    if not ctx.not_run_reason and non_ok_summary(ctx):
        notes[0] += "  ·  " + non_ok_summary(ctx)
    if ctx.left_out:
        notes[0] += "  ·  no panel for " + "; ".join(ctx.left_out)
    if ctx.no_line:
        notes[0] += "  ·  no line for " + "; ".join(ctx.no_line)
    if ctx.not_drawn:
        notes[0] += "  ·  runs not drawn: " + "; ".join(ctx.not_drawn)
    if paper_only := ctx.paper_only():
        notes[0] += f"  ·  the paper's, not in the {ctx.scale_name} matrix: " + ", ".join(paper_only)
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


def _margins(ctx: Context, texts: tuple[list[str], list[str]] | None = None) -> dict:
    """The figure's margins, made for its title and footer (`texts`, else those of now)."""
    title, footer = texts or _texts(ctx)
    height = ctx.height_in / FIGSIZE[1]  # text sizes are fixed; fractions shrink with height
    # long tick labels of the data need room under its axes: below the figure, or above the
    # paper's panel when it has one (main_area)
    bottom = (0.1 + 0.025 * len(footer) + (0.1 if ctx.paper_panel else ctx.extra_bottom)) / height
    top = 1 - (0.08 + 0.034 * len(title)) / height  # a 9.5 pt line and the panels' titles
    return {"left": 0.11, "right": ctx.right, "bottom": bottom, "top": top}


def decorate(fig: Figure, ctx: Context) -> None:
    title, footer = _texts(ctx)
    margins = _margins(ctx, (title, footer)) if ctx.outer is not None else {}
    if margins and margins != {k: getattr(ctx.outer, k) for k in margins}:
        # a note the form added while drawing (a line without a value) lengthened the footer
        # past the room made for it: the areas move to the final texts' room
        ctx.outer.update(**margins)
        for ax in fig.axes:
            if ax.get_subplotspec() is not None:
                ax.set_position(ax.get_subplotspec().get_position(fig))
    fig.suptitle("\n".join(title), fontsize=9.5, y=0.995, va="top")
    fig.text(0.01, 0.005, "\n".join(footer), fontsize=7, va="bottom", ha="left",
             color="#333333")


def reuse_axes(fig: Figure, ctx: Context, n: int) -> list:
    """The figure's plot axes, created on first use: one sub-plot per panel, beside the
    narrow panel of the paper's values when the figure has one."""
    if ctx.main_axes:
        return ctx.main_axes[:n]
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    if n > 1:
        fig.set_size_inches(max(4.2 * cols, FIGSIZE[0]),
                            FIGSIZE[1] + 2.6 * (rows - 1) + (PAPER_PANEL_IN if ctx.paper_panel else 0))
    area = main_area(fig, ctx)
    grid = area.subgridspec(rows, cols, hspace=0.45, wspace=0.3)
    axs = [fig.add_subplot(grid[i // cols, i % cols]) for i in range(n)]
    ctx.main_axes = axs
    return axs


def save(fig: Figure, out) -> None:
    """Save in the format the file name says: a PNG for the report, a PDF for print."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, **(PNG_OPTIONS if out.suffix == ".png" else {}))


def main_area(fig: Figure, ctx: Context):
    """The part of the figure for the reproduced data (all of it without paper panel)."""
    ctx.height_in = fig.get_figheight()
    # the times to the target accuracy of the paper panel; a panel of none is left out and the
    # footer, sized by the margins below, says why
    ctx.timed = timed_points(ctx) if ctx.paper_panel else []
    if ctx.timed and all(paper is None and here is None for _, paper, here, _ in ctx.timed):
        whys = [f"{point_text(ctx, point).replace(chr(10), ' ')}: {why}"
                for point, _, _, why in ctx.timed if why]
        ctx.left_out.append(f"{target_text(ctx)} (the paper states no time, only a relation"
                             + (f"; {'; '.join(whys)})" if whys else ")"))
        ctx.timed = []
    if not ctx.paper_panel:
        ctx.outer = fig.add_gridspec(1, 1, **_margins(ctx))
        return ctx.outer[0]
    ctx.outer = fig.add_gridspec(2, 1, height_ratios=[2.2, 1],
                                 hspace=0.6 + 2 * ctx.extra_bottom, **_margins(ctx))
    ctx.paper_area = ctx.outer[1]
    return ctx.outer[0]
