"""The paper panels: the papers' stated values (a spec's `paper_values`) beside this scale's
values of the same quantity, and the times to a target accuracy."""

from __future__ import annotations

import itertools
import re
import textwrap

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator

from dlobd.results.figures.labels import Context, PAPER_COLOR, text_renderer, upright_lines
from dlobd.results.figures.values import ROW_X, label_of, ordered_values, run_rows, same, where
from dlobd.results import comparability
from dlobd.results.comparability import sample_extreme
from dlobd.spec import metrics
from dlobd.spec.claimlang import first_reached


def paper_points(ctx: Context) -> list[dict]:
    """Paper values that belong on the axes: only when the figure is at paper scale."""
    if ctx.scale_name != "paper":
        return []
    out = []
    for p in ctx.paper_values():
        if p.get("metric") not in (None, ctx.metric["name"]):
            continue
        out.append(p)
    return out


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


def not_counterpart(ctx: Context, p: dict) -> str:
    """Why this scale's value of a paper value's quantity is not its counterpart, '' when it is:
    the rule of every paper panel (absolute values, relations, times to a target, a table's rows),
    the verdicts' own (comparability.not_counterpart)."""
    return comparability.not_counterpart(ctx.spec, ctx.scale_name, p, ctx.cpus, ctx.scale)


def local_counterpart(ctx: Context, p: dict) -> tuple[float | None, str]:
    """This scale's value of the quantity a paper value states, in the same form, where it is
    the counterpart (not_counterpart), else None and why: it was not run, or is no counterpart."""
    if ctx.scale_name == "paper":
        return None, ""
    unlike = not_counterpart(ctx, p)
    if unlike == "another stack":
        return None, unlike
    here, why = _local_value(ctx, p)
    return (None, unlike) if unlike and here is not None else (here, why)


def _local_value(ctx: Context, p: dict) -> tuple[float | None, str]:
    """This scale's value of the quantity a paper value states, in the same form, and
    what was compared ('' when there is none, with the reason in its place)."""
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
    found, why = [], ""
    for choice in up_to_points(ctx, up_to):
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


def up_to_points(ctx: Context, up_to: str | None) -> list:
    """The values of an `up_to` axis to take the maximum over: the matrix's, or those of a
    dimension swept inside a run (message sizes), each point's relation taken at its own value."""
    if up_to in ctx.matrix:
        return list(ctx.matrix[up_to])
    if up_to in (ctx.spec.get("dimensions") or {}) and up_to in ctx.ok:
        return ordered_values({}, up_to, ctx.ok[up_to].dropna().unique())
    return [None]


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
    return [(point, next((float(p["at"][x]) for p in stated
                          if all(same(p["at"].get(k), v) for k, v in point.items())), None),
             *(_timed_counterpart(ctx, point) if ctx.scale_name != "paper" else (None, "")))
            for point in points]


def _timed_counterpart(ctx: Context, point: dict) -> tuple[float | None, str]:
    """This scale's time to the target at a paper point where it is the counterpart: a time to
    the target grows with the work, so the rule of an absolute value (not_counterpart) holds."""
    here, why = time_to_target_at(ctx, point)
    unlike = not_counterpart(ctx, {})
    return (None, unlike) if unlike and here is not None else (here, why)


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
    unlike = one_reason(ctx, [{}])
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
        elif why and not ctx.not_run_reason and why != unlike:
            ax.annotate("\n".join(textwrap.wrap("local: " + why, 20)), (i + 0.2, 0.02),
                        xycoords=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                        color="#7f7f7f", rotation=90)
    ax.set_xticks(range(len(timed)), [point_text(ctx, t[0]) for t in timed], fontsize=7)
    ax.set_xlim(-0.6, len(timed) - 0.4)
    ax.tick_params(axis="y", labelsize=7)
    _log_y(ax)
    ax.set_ylabel(f"{target_text(ctx)} (s, log)", fontsize=7)
    ax.set_title(f"{target_text(ctx)}: paper hatched" + (
        f";\nnone here: {unlike}" if unlike else ", local solid\n(first validation at or past it)"
        if any(here is not None for _, _, here, _ in timed) else ""), fontsize=7.5, color=PAPER_COLOR)
    ax.margins(y=0.25)
    _fit_value_labels(ax.figure, ax)


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
        found = [local_counterpart(ctx, p) for p in group]
        unlike = one_reason(ctx, group)
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
            here, why = found[i]
            why = "" if why == unlike else why  # said once, in the panel's title
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
                ax.annotate("\n".join(textwrap.wrap(why, 18)), (i + 0.2, 0.02), xycoords=ax.get_xaxis_transform(),
                            ha="center", va="bottom", fontsize=7, color="#7f7f7f", rotation=90)
        crowded = len(group) > 3
        ax.set_xticks(range(len(group)), [_point_label(p) for p in group], fontsize=7,
                      rotation=30 if crowded else 0, ha="right" if crowded else "center")
        ax.set_xlim(-0.6, len(group) - 0.4)
        ax.tick_params(axis="y", labelsize=7)
        here_said = f", none here: {unlike}" if unlike else \
            ", here solid" if any(here is not None for here, _ in found) else ""
        if relation:
            shown = [implied_ratio(p) for p in group]
            if max(shown) / max(min(shown), 1e-9) > 20:   # shapes of very different size
                _log_y(ax)
            ax.axhline(1, color="#7f7f7f", lw=0.6, ls=":")
            ax.set_ylabel("y[at] / y[baseline]", fontsize=7)
            ax.set_title(f"each over its baseline: paper hatched{here_said}", fontsize=7.5, color=PAPER_COLOR)
        else:
            _log_y(ax)
            ax.set_ylabel(upright_lines(ax, stated_axis_label(ctx, group)), fontsize=7)
            ax.set_title(f"paper's stated values hatched{here_said}", fontsize=7.5, color=PAPER_COLOR)
        ax.margins(y=0.25)
        _fit_value_labels(fig, ax)


def one_reason(ctx: Context, group: list[dict]) -> str:
    """The counterpart rule's reason (not_counterpart) that holds for every value of a panel, said
    once in its title instead of beside each value; '' when it holds for none or some only."""
    reasons = {not_counterpart(ctx, p) for p in group} if ctx.scale_name != "paper" else {""}
    return reasons.pop() if len(reasons) == 1 else ""


def _log_y(ax) -> None:
    """A log y axis for a short panel: between decades only 2 and 5 are marked, and of them
    only 2 labelled, else the labels of 2, 3, 4 and 6 run into each other. It spans a decade at
    least: within one, matplotlib labels the ticks it adds there, and they run into each other."""
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(LogLocator(subs=(2, 5)))
    low, high = ax.get_ylim()
    if 0 < low and high / low < 10:
        ax.set_ylim(high / 10, high)


def _fit_value_labels(fig: Figure, ax) -> None:
    """Raise the top of an axis until the labels above its bars end inside it: past the top
    they would run into the panel's title."""
    renderer = text_renderer(fig)
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


def stated_axis_label(ctx: Context, group: list[dict]) -> str:
    """What a panel of stated values measures, with its units: 'GPU memory of the job (GB, log)',
    not only 'GB (log)'. A value's own `quantity`, else its metric's label in this figure (the
    plot's, or the one drawn beside it), else the metric's name; only the units where the
    panel's values measure several."""
    beside = ctx.plot.get("beside") or {}

    def quantity(p: dict) -> str:
        metric = p.get("metric") or ctx.metric["name"]
        # the plot's label as the figure words it: "8 steps (paper: 300)" at the local scale
        label = (p.get("quantity") or (ctx.y_label() if metric == ctx.metric["name"] else None)
                 or (beside.get("y_label") if metric == beside.get("metric") else None)
                 or metric.replace("_", " "))
        unit = get_unit(ctx, p)   # said once, after the names
        return re.sub(rf"\s*\({re.escape(unit)}\)", "", label) if unit else label

    names = set(quantity(p) for p in group)
    units = ", ".join([*sorted({u for u in (get_unit(ctx, p) for p in group) if u}), "log"])
    # several keep the units alone (the points under the bars tell them apart): their names beside
    # the axis ran into the next panel
    return f"{names.pop()} ({units})" if len(names) == 1 else f"({units})"


def get_unit(ctx: Context, paper_value: dict) -> str:
    if paper_value.get("metric") and paper_value["metric"] != ctx.metric["name"]:
        return metrics.get(paper_value["metric"]).unit
    return ctx.metric.get("unit", "")
