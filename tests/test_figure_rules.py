"""The figure rules of issue #32, read from the Figure objects of every local experiment of
the reference runs (data/reference) before they are saved: a figure says what ran here, its
footer and legend name only what is plotted, models look unlike measurements, and no text
is too small to read at 100%."""

import copy
import itertools
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.figure
import matplotlib.text
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import Container

from dlobd import spec
from dlobd.results import figures, tidy as results
from dlobd.results.figures.values import reduce_values
from dlobd.spec import substitutions

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "data" / "reference"
SPECS = spec.load_all(ROOT)
SCALE = "local"
MIN_POINTS = 7


def merged(experiment: str) -> dict:
    """The spec as the pipeline draws it: with the axes and scales of the spec owning its data."""
    own = SPECS[experiment]
    src = own.source_spec.data
    return {**own.data, "axes": src.get("axes", {}), "scales": src.get("scales", {}),
            "dimensions": own.dimensions()}


def csv_of(results_dir: Path, experiment: str) -> Path:
    return results_dir / SCALE / f"{SPECS[experiment].source_spec.id}.csv"


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    """The results CSVs of the reference runs: the checkout's when `make figures
    RUNS=data/reference` wrote them, else the pipeline's results step into a scratch directory."""
    here = ROOT / "data" / "results"
    if all(csv_of(here, e).is_file() for e in SPECS):
        return here
    tmp = tmp_path_factory.mktemp("results")
    snakemake = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))
    targets = sorted({str(csv_of(tmp / "results", e)) for e in SPECS})
    proc = subprocess.run([snakemake, "--profile", "profiles/local", "--config",
                           f"runs_dir={REFERENCE}", f"state_dir={tmp / 'state'}",
                           f"results_dir={tmp / 'results'}", f"figures_dir={tmp / 'figures'}",
                           f"report_dir={tmp / 'report'}", "--", *targets],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / "results"


@pytest.fixture(scope="module")
def drawn(results_dir):
    """experiment -> (spec, table, Figure) for every experiment, as `figures.render` builds it."""
    out = {}
    for e in sorted(SPECS):
        data, scale = merged(e), SPECS[e].scale(SCALE)
        table = results.read_results(csv_of(results_dir, e))
        reason = results.not_run_reason(data, SCALE, scale, table, REFERENCE)
        out[e] = (data, table, figures.build(data, SCALE, scale, table, not_run=reason))
    return out


def labels(fig) -> dict[str, tuple[str, str]]:
    """Title, axis labels, panel and legend titles by where they are: (text, what stands
    beside it for the values it names; an axis's tick labels)."""
    out = {"title": (fig._suptitle.get_text().replace("\n", " "), "")}
    for i, ax in enumerate(fig.axes):
        ticks = " ".join(t.get_text() for t in ax.get_xticklabels())
        out[f"axes {i} x"] = (ax.get_xlabel(), ticks)
        out[f"axes {i} y"] = (ax.get_ylabel(), "")
        out[f"axes {i} title"] = (ax.get_title(), "")
        if ax.get_legend():  # (its entries are the data's own values)
            out[f"axes {i} legend title"] = (ax.get_legend().get_title().get_text(), "")
    return {k: v for k, v in out.items() if v[0]}


def footer(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts).replace("\n", " ")


def value_word(value) -> re.Pattern:
    return re.compile(rf"(?<![\w.-]){re.escape(figures.label_of(value))}(?![\w.-])", re.IGNORECASE)


def paper_part(text: str) -> tuple[str, str]:
    """(the text without what it marks as the paper's, what it marks so): 'paper: …' runs
    to the end of a title, '(paper: …)' to its parenthesis; 'x=16 (here: 4)' names both."""
    marked = re.findall(r"\S+ \(here: [^()]*\)|\(paper: [^()]*\)|paper: .*$", text)
    rest = text
    for m in marked:
        rest = rest.replace(m, " ")
    return rest, " ".join(marked)


def without_sizes(text: str, fixed: dict) -> str:
    """The text without the phrases that name a size set at the scale ('8 steps', 'image size
    32'): their numbers count that setting, not a paper's axis value."""
    for key, value in fixed.items():
        noun = re.escape(key.replace("_", " ").rstrip("s"))
        for v in value.values() if isinstance(value, dict) else [value]:
            number = re.escape(figures.label_of(v))
            text = re.sub(rf"\b{number} {noun}s?\b|\b{noun}s? {number}\b", " ", text, flags=re.IGNORECASE)
    return text


def test_a_paper_setting_on_the_figure_has_its_local_counterpart_beside_it(drawn):
    wrong = []
    for e, (data, _, fig) in drawn.items():
        local = data["scales"].get(SCALE) or {}
        ctx = figures.Context(data, SCALE, local, pd.DataFrame(columns=["status", "value"]))
        # a changed number with the setting it counts ('300 steps'), and the axis_map's values
        pairs = [(figures.setting_pattern(k, v), f"{figures.label_of(r)} {k.replace('_', ' ')}")
                 for k, v, r in ctx.changed_settings()]
        pairs += [(value_word(pv), figures.label_of(lv)) for m in (local.get("axis_map") or {}).values()
                  for pv, lv in m.items() if not figures.same(pv, lv)]
        subs = substitutions.substitutions(data, SCALE)
        for where, (text, beside) in labels(fig).items():
            rest, marked = paper_part(text)
            rest = without_sizes(rest, local.get("fixed") or {})
            for stated, ran in pairs:
                # unmarked, a paper's value reads as what ran; marked, what ran must be beside it
                if stated.search(rest) or (stated.search(marked) and ran.split()[0] not in text + beside):
                    wrong.append(f"{e} {where}: {stated.pattern} without {ran}: {text!r}")
            if any(s.startswith("CPU processes") for s in subs) and \
                    re.search(r"\bgpus?\b", rest, re.IGNORECASE) and "CPU" not in rest:
                wrong.append(f"{e} {where}: GPUs that are CPU processes here: {text!r}")
            if any(s.startswith("processes on") for s in subs) and \
                    re.search(r"\bnodes\b", rest) and not re.search(r"executors|processes", rest):
                wrong.append(f"{e} {where}: nodes that are executors here: {text!r}")
    assert not wrong, "\n".join(wrong)


def test_the_title_says_what_ran_here_and_the_papers_setting_after_it(drawn):
    for e, (data, table, fig) in drawn.items():
        title = fig._suptitle.get_text()
        here = " ".join(title.split("\npaper: ")[0].split("\n"))
        assert re.search(f"(Rerun|Not run) at the {SCALE} scale", here) and "\npaper: " in title, (e, title)
        for sub in figures.Context(data, SCALE, SPECS[e].scale(SCALE), table).substitutions():
            assert sub in here, (e, sub, title)


def test_the_title_names_each_size_of_the_work_set_otherwise_than_the_papers(drawn):
    # rule 1: shrunk (or unstated) steps, epochs, images and sizes are in the title, e.g. the
    # 8 training images of dlobd-fig7b's local epochs
    missing = []
    for e, (data, _, fig) in drawn.items():
        paper = (data["scales"].get("paper") or {}).get("fixed") or {}
        here = fig._suptitle.get_text().split("\npaper: ")[0].replace("\n", " ")
        for key, ran in ((SPECS[e].scale(SCALE) or {}).get("fixed") or {}).items():
            if key not in figures.WORKLOAD_SETTINGS or key == "model" or figures.same(paper.get(key), ran):
                continue
            noun = key.replace("_", " ").rstrip("s")
            values = ran.values() if isinstance(ran, dict) else [ran]
            if noun not in here.lower() or not all(value_word(v).search(here) for v in values):
                missing.append(f"{e}: {key}={ran} not in {here!r}")
    assert not missing, "\n".join(missing)


def ok_values(table: pd.DataFrame, column: str) -> set[str]:
    ok = table[(table["status"] == "ok") & table["value"].notna()] if not table.empty else table
    return {str(v) for v in ok[column].dropna()} if column in ok.columns else set()


def test_the_footer_names_only_networks_and_data_of_plotted_runs(drawn):
    for e, (_, table, fig) in drawn.items():
        text = footer(fig)
        if "EMULATED NETWORK" in text:
            assert any("emulated" in v for v in ok_values(table, "network")), (e, text)
        if "SYNTHETIC DATA" in text:
            assert any("synthetic" in v for v in ok_values(table, "data_label")) or \
                "synthetic" in str(SPECS[e].scale(SCALE).get("dataset")), (e, text)


def has_data(handle) -> bool:
    if isinstance(handle, Container):
        return any(has_data(child) for child in handle.get_children())
    if hasattr(handle, "get_xdata"):
        return len(handle.get_xdata()) > 0
    return True  # a bar or patch is only drawn with its data


def test_every_legend_entry_has_data(drawn):
    empty = [(e, label) for e, (_, _, fig) in drawn.items() for ax in fig.axes
             for handle, label in zip(*ax.get_legend_handles_labels()) if not has_data(handle)]
    assert not empty


def lines_of(handle):
    return [c for c in handle.get_children() if hasattr(c, "get_linestyle")] \
        if isinstance(handle, Container) else [handle]


def test_models_are_drawn_unlike_measurements(drawn):
    seen = 0
    for e, (_, _, fig) in drawn.items():
        for ax in fig.axes:
            handles, names = ax.get_legend_handles_labels()
            model = {ln.get_linestyle() for h, n in zip(handles, names) if "(model)" in n
                     for ln in lines_of(h)[:1]}
            measured = {ln.get_linestyle() for h, n in zip(handles, names)
                        if "(model)" not in n and n != "paper's value" for ln in lines_of(h)[:1]}
            assert not model & measured, (e, model, measured)
            assert not [n for n in names if n.startswith("model-") and "(model)" not in n], (e, names)
            seen += bool(model)
    assert seen, "no figure of the reference runs draws a model: the rule is not exercised"


def test_no_text_is_below_7_points(drawn):
    small = [(e, t.get_text()[:40], t.get_fontsize()) for e, (_, _, fig) in drawn.items()
             for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_POINTS]
    assert not small


def test_no_panel_is_empty_but_for_a_note(drawn):
    # rule 6: every panel with axes draws something (bars, lines, markers); a panel of points
    # that did not run here (slides-resnet50's nodes=3: its points need a multi-host cluster) is
    # left out and the footer says why
    empty = [(e, ax.get_title(), [t.get_text() for t in ax.texts]) for e, (_, _, fig) in drawn.items()
             for ax in fig.axes if ax.axison and not (ax.lines or ax.patches or ax.collections or ax.images)]
    assert not empty
    assert "no panel for worker processes (paper: nodes)=3: n/r: needs multi-host" in \
        footer(drawn["slides-resnet50"][2])


def test_a_line_without_a_value_is_said_in_the_footer_not_at_each_x(drawn):
    # rule 6: rdmatf-fig6's emulated 1G network needs several hosts; its notes at each x stood
    # across the loopback line's error bars
    fig = drawn["rdmatf-fig6"][2]
    assert "no line for network=eth-1g-emulated: n/r: needs multi-host" in footer(fig)
    assert not [t for ax in fig.axes for t in ax.texts if "eth-1g-emulated" in t.get_text()]


@pytest.fixture(scope="module")
def utilisation(results_dir, tmp_path_factory):
    """experiment -> its resource-use Figure, for each experiment owning results."""
    tmp = tmp_path_factory.mktemp("utilisation")
    return {e: figures.draw_utilisation(merged(e), SCALE, results.read_results(csv_of(results_dir, e)),
                                        tmp / f"{e}.png")
            for e in sorted({SPECS[e].source_spec.id for e in SPECS})}


def test_no_utilisation_figure_has_empty_panels(utilisation):
    # an experiment without monitor samples (not run here, or run without the monitor) says
    # why in a box; every panel that is drawn has lines
    empty = []
    for e, fig in utilisation.items():
        shown = [ax for ax in fig.axes if ax.axison]
        boxed = [t.get_text() for ax in fig.axes if not ax.axison for t in ax.texts]
        if any(not ax.lines for ax in shown) or not (shown or boxed):
            empty.append(e)
    assert not empty


def test_no_absolute_value_of_another_workload_stands_beside_the_papers(drawn):
    # rule 4: where the local scale runs another workload (fewer steps, smaller images, another
    # model or data set), the paper's absolute times and rates get no local bar beside them
    checked, wrong = [], []
    for e, (data, table, fig) in drawn.items():
        if not figures.Context(data, SCALE, SPECS[e].scale(SCALE), table).other_workload():
            continue
        for ax in fig.axes:
            if ax.get_title().startswith("paper's stated values"):
                checked.append(e)
                if any(bar.get_facecolor()[3] > 0 for bar in ax.patches):
                    wrong.append(e)
    assert checked and not wrong


def test_the_phase_shares_the_paper_states_are_computed_from_the_local_phases(drawn):
    # rule 4: a value the local runs give is computed, e.g. dlobd-fig9's shares of YARN scheduling
    # and Spark jobs in TensorFlowOnSpark's time (its one local network), from the runs' phase rows
    _, table, fig = drawn["dlobd-fig9"]
    phases = table[(table["metric"] == "time_breakdown_s") & (table["status"] == "ok")
                   & (table["framework"] == "tensorflowonspark")]
    assert phases["network"].nunique() == 1
    ax = next(ax for ax in fig.axes if ax.get_title().startswith("each over its baseline"))
    solid = [bar.get_height() for bar in ax.patches if bar.get_facecolor()[3] > 0]
    for phase in ("yarn_scheduling", "spark_jobs"):
        share = phases.loc[phases["phase"] == phase, "value"].sum() / phases["value"].sum()
        assert any(math.isclose(h, share, rel_tol=1e-6) for h in solid), (phase, share, solid)


def _time_panel(fig):
    return next(ax for ax in fig.axes if ax.get_title().startswith("time to 70% top-1"))


def papers_workload(data: dict) -> tuple[dict, dict]:
    """(spec, local scale) of an experiment as if its local scale ran the paper's workload: the
    paper's model and data set, and the local sizes stated as the paper's."""
    data = copy.deepcopy(data)
    local, paper = data["scales"][SCALE], data["scales"]["paper"]
    local.setdefault("fixed", {})["model"] = data["model"]
    local["dataset"] = data["dataset"].split()[0]
    paper["fixed"] = {**(paper.get("fixed") or {}), **local["fixed"]}
    return data, local


def test_the_time_to_70_percent_of_another_model_is_no_counterpart_of_the_papers(drawn):
    # rule 4, like with like: dlobd-fig6c's local LeNet-5 on 2,560 MNIST images reaches 70% in
    # 15.0 s; beside the paper's 4,337 s of VGG-16 on CIFAR-10 it read as a 260-fold speed-up
    _, _, fig = drawn["dlobd-fig6c"]
    ax = _time_panel(fig)
    assert not [bar for bar in ax.patches if bar.get_facecolor()[3] > 0]
    assert sorted(bar.get_height() for bar in ax.patches if bar.get_hatch()) == [2132, 4337]
    assert ax.get_title() == "time to 70% top-1: paper hatched;\nnone here: another model and data set"
    assert {t.get_text() for t in ax.texts} == {"paper 4337 s", "paper 2132 s", "local: not run here"}


def test_the_time_to_70_percent_is_drawn_as_a_time_beside_the_papers(drawn):
    # rule 4: had dlobd-fig6c's local run trained the paper's workload, its time to 70% would stand
    # beside the paper's: its run (data/reference, network-loopback/attempt-001/stderr.log)
    # validated 0.6885 after epoch 4 ('[Wall Clock 12.86916343s]') and 0.7355 after epoch 5
    # ('[Wall Clock 15.336037631s]'): its time to 70% is epoch 5's, beside the paper's 4337 s
    # (IPoIB, which loopback stands for here) and 2132 s (RDMA, not run here)
    data, table, _ = drawn["dlobd-fig6c"]
    data, local = papers_workload(data)
    fig = figures.build(data, SCALE, local, table)
    ax = _time_panel(fig)
    solid = [bar.get_height() for bar in ax.patches if bar.get_facecolor()[3] > 0]
    assert solid == [pytest.approx(15.336037631)]
    assert ax.get_ylabel() == "time to 70% top-1 (s, log)"
    assert {t.get_text() for t in ax.texts} == {"paper 4337 s", "paper 2132 s", "local 15.3 s",
                                                 "local: not run here"}


def test_the_time_to_70_percent_is_the_first_validation_past_it_of_any_executor(drawn):
    # dlobd-fig6a's two CaffeOnSpark executors validate at iterations 50 and 100 below 70% and at
    # iteration 150 past it: 0.776 at 68.11333 s (rank 0) and 0.762 at 68.151465 s (rank 1); the
    # run reached 70% at the former (drawn where the local run trains the paper's workload)
    data, table, _ = drawn["dlobd-fig6a"]
    data, local = papers_workload(data)
    ax = _time_panel(figures.build(data, SCALE, local, table))
    assert [bar.get_height() for bar in ax.patches if bar.get_facecolor()[3] > 0] == [
        pytest.approx(68.11333, abs=1e-4)]


def test_a_run_that_never_reaches_70_percent_says_so(drawn):
    # dlobd-fig6b's GoogLeNet-mini first validates past 70% at iteration 350 (0.716, rank 1) of 400;
    # without its validations after iteration 250 (best 0.498) it is a run that never reached
    # it. The paper states only a relation of the times: no panel of times, and the footer says why
    data, table, fig = drawn["dlobd-fig6b"]
    assert "not reached" not in footer(fig)
    accuracy = table["metric"] == "top1_accuracy"
    assert table.loc[accuracy & (table["step"] <= 250), "value"].max() == 0.498
    short = table[~accuracy | (table["step"] <= 250)]
    fig = figures.build(data, SCALE, SPECS["dlobd-fig6b"].scale(SCALE), short)
    assert not [ax for ax in fig.axes if ax.get_title().startswith("time to 70% top-1")]
    assert "here: loopback: not reached in 400 iterations (best 0.498)" in footer(fig)


def test_no_paper_value_is_left_not_computed(drawn):
    # rule 4: a value the local runs give is computed, and one they do not says what is missing
    said = [(e, t.get_text()) for e, (_, _, fig) in drawn.items() for ax in fig.axes for t in ax.texts
            if "not computed here" in t.get_text()]
    assert said == []


def test_a_paper_value_of_another_metric_is_computed_by_its_reducer(drawn):
    # scaffe-table2 states aggregation times (time_breakdown_s) beside total times: the local
    # aggregation is the sum of the runs' aggregation rows, as the claims reduce it. (Read as if
    # the runs had recorded 16 cores: on the 2 they recorded, the 8 ranks of the unchunked
    # baseline are oversubscribed and the ratio is no counterpart, as test_substitutions shows.)
    data, table, _ = drawn["scaffe-table2"]
    ctx = figures.Context(data, SCALE, SPECS["scaffe-table2"].scale(SCALE), table, cpus=16)
    rows = table[(table["metric"] == "time_breakdown_s") & (table["phase"] == "aggregation")]
    none, cc8 = (rows.loc[rows["algorithm"] == a, "value"].sum() for a in ("none", "cc-8"))
    ratio = next(p for p in ctx.paper_values() if p.get("over") == {"algorithm": "cc-8", "phase": "aggregation"})
    assert figures.local_counterpart(ctx, ratio) == (pytest.approx(none / cc8), "")
    assert none / cc8 > 1  # the paper's direction: hierarchical reduce aggregates faster


def test_no_value_label_of_a_paper_panel_runs_into_its_title(drawn):
    # rule 6: the labels over the paper panels' bars end inside their axes, under the title
    crossing = []
    for e, (_, _, fig) in drawn.items():
        renderer = FigureCanvasAgg(fig).get_renderer()
        for ax in fig.axes:
            if ax.get_title().startswith(("paper's stated values", "each over its baseline")):
                top = ax.get_window_extent(renderer).y1
                crossing += [(e, t.get_text()) for t in ax.texts if t.xycoords == "data"
                             and t.get_window_extent(renderer).y1 > top + 0.5]
    assert not crossing


# rule 6: how far (pixels) two boxes may touch before they overlap: glyph boxes include some
# spacing above and below the letters
TOUCH_PX = 1.5


def text_boxes(fig, renderer) -> list[tuple[str, object, object, list]]:
    """(what, its axes or None, window extent, corners) of every drawn text of a figure: title,
    footer, panel titles, axis labels, tick labels, notes and legends (a legend as one box)."""
    out = [("title" if t is fig._suptitle else "footer", None, t) for t in fig.texts]
    out += [("legend", None, legend) for legend in fig.legends]
    for i, ax in enumerate(fig.axes):
        shown = [("panel title", t) for t in (ax.title, ax._left_title, ax._right_title)]
        shown += [("note", t) for t in ax.texts]
        # (a twin's shared axis, and the axes of a table or a reason's box, are not drawn)
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)) if ax.axison else ():
            if not axis.get_visible():
                continue
            shown += [(f"{name} label", axis.label), (f"{name} offset", axis.get_offset_text())]
            low, high = sorted(axis.get_view_interval())
            shown += [(f"{name} tick", label) for tick in axis.get_major_ticks() + axis.get_minor_ticks()
                      if low <= tick.get_loc() <= high for label in (tick.label1, tick.label2)]
        out += [(f"axes {i} {what}", ax, t) for what, t in shown]
        if ax.get_legend():
            out.append((f"axes {i} legend", ax, ax.get_legend()))
    boxes = []
    for what, ax, artist in out:
        text = artist.get_text() if hasattr(artist, "get_text") else None
        if artist.get_visible() and (text is None or text.strip()):
            box = artist.get_window_extent(renderer)
            boxes.append((what if text is None else f"{what} {text[:30]!r}", ax, box,
                          corners(box, artist.get_rotation() if text is not None else 0)))
    return boxes


def corners(box, rotation: float) -> list[tuple[float, float]]:
    """The corners of a text turned by `rotation` degrees inside its window extent: a slanted
    tick label's extent is far larger than its letters."""
    theta = math.radians(rotation % 90)
    c, s = math.cos(theta), math.sin(theta)
    if s < 1e-6 or abs(c - s) < 1e-3:  # upright, or too near 45° to tell the sides apart
        return [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]
    w = (box.width * c - box.height * s) / (c * c - s * s)
    h = (box.height * c - box.width * s) / (c * c - s * s)
    return [(box.x0 + h * s, box.y0), (box.x1, box.y0 + w * s), (box.x1 - h * s, box.y1),
            (box.x0, box.y0 + h * c)]


def crossing(a: list, b: list) -> bool:
    """Whether two convex outlines overlap by more than TOUCH_PX along every separating axis."""
    for poly in (a, b):
        for (x0, y0), (x1, y1) in zip(poly, poly[1:] + poly[:1]):
            nx, ny = y0 - y1, x1 - x0
            norm = math.hypot(nx, ny) or 1
            pa = [(x * nx + y * ny) / norm for x, y in a]
            pb = [(x * nx + y * ny) / norm for x, y in b]
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= TOUCH_PX:
                return False
    return True


def data_paths(ax):
    """(display path, whether its inside counts, marker radius in points, whether its line is
    drawn) of what an axes plots on its data: lines with their markers, error bars, bars (not
    reference lines across it)."""
    for line in ax.lines:
        if line.get_transform() == ax.transData:
            marker = line.get_marker() not in (None, "None", "none", "")
            yield (line.get_transform().transform_path(line.get_path()), False,
                   line.get_markersize() / 2 if marker else 0,
                   line.get_linestyle() not in ("None", "none", ""))
    for coll in ax.collections:
        for path in coll.get_paths():
            yield coll.get_transform().transform_path(path), False, 0, True
    for patch in ax.patches:
        yield patch.get_transform().transform_path(patch.get_path()), True, 0, True


def runs_over_data(box, paths, dpi: float) -> bool:
    """Whether a box, less TOUCH_PX, meets a line, a marker or the inside of a bar."""
    inner = box.padded(-TOUCH_PX)
    for path, filled, marker_pt, drawn in paths:
        if drawn and path.intersects_bbox(inner, filled=filled):
            return True
        if marker_pt and any(inner.padded(marker_pt * dpi / 72).contains(x, y) for x, y in path.vertices):
            return True
    return False


def overlaps(fig) -> list[str]:
    """Pairs of texts of a figure that run over each other, texts cut off at its edge, and
    notes and legends that run over data (of their axes and any twin drawn in the same place)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = text_boxes(fig, renderer)
    out = [f"{a} × {b}" for (a, _, ba, ca), (b, _, bb, cb) in itertools.combinations(boxes, 2)
           if ba.overlaps(bb) and crossing(ca, cb)]
    page = fig.bbox.padded(TOUCH_PX)
    out += [f"{what} past the edge" for what, _, box, _ in boxes
            if not (page.contains(box.x0, box.y0) and page.contains(box.x1, box.y1))]
    for ax in fig.axes:
        paths = [p for other in fig.axes if other.get_position().bounds == ax.get_position().bounds
                 for p in data_paths(other)]
        out += [f"{what} over data" for what, owner, box, _ in boxes if owner is ax
                and (" note " in what or what.endswith("legend")) and runs_over_data(box, paths, fig.dpi)]
    return out


def test_no_text_runs_over_another_or_a_note_over_data(drawn, utilisation):
    # rule 6: readable at 100%; e.g. rdmatf-fig6's notes of a network that did not run here stood
    # across the other network's error bars, and a short log panel's 2, 3, 4 and 6 ran together
    figs = [(e, fig) for e, (_, _, fig) in drawn.items()] + [(f"{e} resource use", fig)
                                                             for e, fig in utilisation.items()]
    found = [f"{e}: {pair}" for e, fig in figs for pair in overlaps(fig)]
    assert not found, f"{len(found)} overlaps:\n" + "\n".join(found)


def test_the_overlap_check_sees_crossing_texts_and_notes_over_data():
    # slanted labels whose upright extents overlap but whose letters do not pass; slanted
    # labels that touch, a note across a line and labels that run into each other do not
    fig = matplotlib.figure.Figure(figsize=(4, 3), dpi=100)
    ax = fig.add_axes((0.3, 0.35, 0.65, 0.6))
    ax.plot([0, 1], [0, 1])
    ax.set_xticks([0, 0.2], ["a long label", "another long one"], rotation=30, ha="right")
    assert overlaps(fig) == []
    ax.set_xticks([0, 0.1], ["a long label", "another long one"], rotation=30, ha="right")
    assert overlaps(fig) == ["axes 0 x tick 'a long label' × axes 0 x tick 'another long one'"]
    ax.set_xticks([0, 1], ["a", "b"])
    ax.annotate("a note across the line", (0.5, 0.5), ha="center")
    ax.set_yticks([0, 0.02], ["zero", "almost zero"])
    assert sorted(overlaps(fig)) == ["axes 0 note 'a note across the line' over data",
                                     "axes 0 y tick 'zero' × axes 0 y tick 'almost zero'"]


def test_a_lowest_utilisation_is_the_lowest_sample_and_its_bar_says_so(drawn):
    # rdmatf-fig5 states the lowest CPU utilisation at eth-1g; its stand-in (eth-1g-emulated) needs
    # several hosts, so the check reads it at the loopback run: every monitor sample of the run,
    # every host's, its minimum (as the claim's min_over_time), not the figure's own reduction
    data, table, _ = drawn["rdmatf-fig5"]
    data = copy.deepcopy(data)
    data["scales"][SCALE]["axis_map"]["network"]["eth-1g"] = "loopback"
    scale = data["scales"][SCALE]
    ctx = figures.Context(data, SCALE, scale, table)
    lowest = next(p for p in ctx.paper_values() if p.get("quantity", "").startswith("lowest"))
    samples = table[(table["metric"] == "cpu_util_pct") & (table["network"] == "loopback")]
    assert results.is_monitor(samples).all() and len(samples) > 3
    value, why = figures.local_counterpart(ctx, lowest)
    assert (value, why) == (pytest.approx(samples["value"].astype(float).min()), "")
    assert value < samples["value"].astype(float).mean()
    fig = figures.build(data, SCALE, scale, table)
    bar_labels = [t.get_text() for ax in fig.axes for t in ax.texts if "lowest sample" in t.get_text()]
    assert bar_labels == [f"{float(f'{value:.3g}'):g} %\nlowest sample of\nthe run\nhere: loopback"], bar_labels


def test_a_line_form_says_which_series_has_no_line_or_lines_of_some_runs_only(drawn):
    # dlobd-fig7a's rdma point is not runnable here: its footer names the series and the needs
    data, table, fig = drawn["dlobd-fig7a"]
    footer = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "no line for network=rdma: n/r: needs infiniband, rdma, rdma-spark" in footer
    # a second loopback run that failed: the loopback line stands, and the footer says one of
    # its two runs is not drawn
    failed = table[table["run_id"] == table.loc[table["network"] == "loopback", "run_id"].iloc[0]].head(1)
    failed = failed.assign(run_id="local/local/dlobd-fig7a/network-loopback/attempt-009", status="failed",
                           reason="exit status 1", metric=None, value=None)
    spec_scale = SPECS["dlobd-fig7a"].scale(SCALE)
    fig = figures.build(data, SCALE, spec_scale, pd.concat([table, failed], ignore_index=True))
    footer = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "runs not drawn: network=loopback: 1 of 2 (failed)" in footer


# issue #47: sampling and rank artefacts are not drawn as results

ROW_X = ("wall_clock_s", "epoch", "step")


def test_no_line_joins_the_values_of_two_ranks(drawn):
    # dlobd-fig6b's two CaffeOnSpark executors validate every 50 iterations: at iteration 300,
    # 0.560 (rank:0, 184.16 s) and 0.459 (rank:1, 184.58 s); one line through both drew a fall.
    # A line's points are found among the rows (x and value) and must share the rank logging them.
    checked, joined = set(), []
    for e, (data, table, fig) in drawn.items():
        x = data["plot"]["x"]
        if x not in ROW_X or x not in table.columns or "task" not in table.columns:
            continue
        rows = table[(table["status"] == "ok") & table["task"].notna() & table[x].notna()]
        xs, values = rows[x].astype(float).to_numpy(), rows["value"].astype(float).to_numpy()
        for ax in fig.axes:
            for line in ax.lines:
                ranks = [set(rows["task"][np.isclose(xs, xv) & np.isclose(values, yv)])
                         for xv, yv in zip(line.get_xdata(), line.get_ydata())]
                ranks = [r for r in ranks if r]
                if len(ranks) < 2:
                    continue
                checked.add(e)
                if not set.intersection(*ranks):
                    joined.append(f"{e}: {line.get_label()}: {[sorted(r) for r in ranks]}")
    assert not joined, "\n".join(joined)
    assert {"dlobd-fig6a", "dlobd-fig6b"} <= checked


def _raw_monitor(table: pd.DataFrame) -> list[pd.DataFrame]:
    """The raw monitor files of the table's runs."""
    return [pd.read_csv(path) for run_id in table.loc[results.is_monitor(table), "run_id"].unique()
            for path in (REFERENCE / run_id / "monitor").glob("*.csv")]


def test_no_trace_draws_the_samples_that_measure_no_job(drawn, utilisation):
    # the sampler's first CPU value would be psutil's first cpu_percent, over the milliseconds
    # since it started (the monitor leaves that cell empty), and its closing sample, after the
    # job exited, reads 0 MB: no memory trace ends at 0 after a non-zero sample, and no CPU
    # trace starts at the first sample
    traces = [(e, "host_mem_mb", ax) for e, fig in utilisation.items() for ax in fig.axes
              if ax.get_ylabel().startswith("Memory of the job")]
    traces += [(e, "cpu_util_pct", ax) for e, fig in utilisation.items() for ax in fig.axes
               if ax.get_ylabel().startswith("Host CPU")]
    traces += [(e, data["metric"]["name"], fig.axes[0]) for e, (data, _, fig) in drawn.items()
               if data["metric"]["name"] in ("host_mem_mb", "cpu_util_pct") and fig.axes[0].lines]
    wrong, raws, lines = [], {}, 0
    for e, metric, ax in traces:
        if e not in raws:
            raws[e] = _raw_monitor(drawn[e][1])
        firsts = {float(raw["time_s"].iloc[0]) for raw in raws[e]}
        for line in ax.lines:
            lines += 1
            xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
            if metric == "host_mem_mb" and ys[-1] == 0 and (ys[:-1] > 0).any():
                wrong.append(f"{e}: {line.get_label()} ends at 0 MB at {xs[-1]} s")
            if metric == "cpu_util_pct" and xs[0] in firsts:
                wrong.append(f"{e}: {line.get_label()} starts at the first sample, {ys[0]} %")
    assert not wrong, "\n".join(wrong)
    # (the rule is exercised: the raw files keep the closing sample, and the first CPU cell empty)
    files = [raw for found in raws.values() for raw in found]
    assert lines > 100 and sum(raw["rss_mb"].iloc[-1] == 0 for raw in files) > 50
    assert all(pd.isna(raw["cpu_util_pct"].iloc[0]) for raw in files)


def _means(data: dict, table: pd.DataFrame) -> list[tuple[str, float, float, float]]:
    """(point, mean, lowest, highest) of each point whose drawn value is a mean of several values:
    its runs' values, or the repeats a run's mean or median is over."""
    metric = data["metric"]
    rows = table[(table["status"] == "ok") & (table["metric"] == metric["name"]) & ~results.is_monitor(table)]
    keys = [k for k in dict.fromkeys([*data["axes"], data["plot"]["x"]]) if k in rows.columns]
    out = []
    for key, cell in rows.groupby(keys, dropna=False) if keys and not rows.empty else ():
        runs = [reduce_values(r, metric["reduce"], metric.get("over")) for _, r in cell.groupby("run_id")]
        spread = cell["value"].astype(float) if metric["reduce"] in ("mean", "median") else pd.Series(runs)
        if spread.max() > spread.min():
            out.append((str(key), float(np.mean(runs)), float(spread.min()), float(spread.max())))
    return out


def _error_bars(ax) -> list[tuple[float, float, float]]:
    """(x, bottom, top) of the vertical segments an axes draws: its error bars."""
    return [(seg[0][0], min(seg[0][1], seg[1][1]), max(seg[0][1], seg[1][1]))
            for coll in ax.collections if hasattr(coll, "get_segments")
            for seg in map(np.asarray, coll.get_segments()) if len(seg) == 2 and seg[0][0] == seg[1][0]]


def test_every_mean_drawn_has_its_spread(drawn):
    # a point's mean of several values (repeated runs, or TF-gRPC-Bench's 3 repeats a run: 1,828,
    # 1,871 and 3,024 us for tfgrpc-fig8's random payloads, drawn 2,241) stands with an error bar
    # from their lowest to their highest: a bar or line point at the mean has a vertical segment at
    # its x over that range; the paper's time windows of resource use are drawn over their
    # samples, thin, in their colour
    bare, checked = [], set()
    for e, (data, table, fig) in drawn.items():
        if data["plot"]["form"] not in ("grouped_bars", "scaling_lines", "payload_curves"):
            continue
        for point, mean, low, high in _means(data, table):
            for ax in fig.axes:
                points = [(bar.get_x() + bar.get_width() / 2, bar.get_height()) for bar in ax.patches]
                points += [xy for line in ax.lines for xy in zip(line.get_xdata(), line.get_ydata())]
                for x, y in points:
                    if not math.isclose(y, mean, rel_tol=1e-9):
                        continue
                    checked.add(e)
                    if not any(math.isclose(bx, x) and math.isclose(lo, low, rel_tol=1e-9)
                               and math.isclose(hi, high, rel_tol=1e-9) for bx, lo, hi in _error_bars(ax)):
                        bare.append(f"{e} {point}: mean {mean:.4g} without its range {low:.4g}–{high:.4g}")
    for e, (data, _, fig) in drawn.items():
        if not data["plot"].get("window_s"):
            continue
        checked.add(e)
        lines = fig.axes[0].lines
        samples = [s for s in lines if s.get_marker() in ("None", None, "")]
        for means in (line for line in lines if line not in samples):
            if not any(s.get_color() == means.get_color() and len(s.get_xdata()) > len(means.get_xdata())
                       for s in samples):
                bare.append(f"{e}: window means {means.get_label()} without their samples")
    assert not bare, "\n".join(bare)
    assert {"tfgrpc-fig8", "tfgrpc-fig11", "slides-rdma-grpc-latency-large", "rdmatf-fig6",
            "dlobd-fig8b"} <= checked


def _drawn_ys(ax) -> np.ndarray:
    ys = [np.asarray(line.get_ydata(), float) for line in ax.lines]
    ys += [np.array([bar.get_y(), bar.get_y() + bar.get_height()]) for bar in ax.patches]
    ys += [bottom_top for _, *bottom_top in _error_bars(ax)]
    ys = np.concatenate([np.ravel(y) for y in ys]) if ys else np.array([])
    return ys[np.isfinite(ys)]


def test_no_axis_of_values_none_below_zero_runs_below_zero(drawn, utilisation):
    # latencies, times, rates, memory: none negative; margins and error bars took a latency axis
    # to -1,300 us (slides-rdma-grpc-latency-large) and a memory axis to -57 MB (dlobd-fig8b)
    figs = [(e, fig) for e, (_, _, fig) in drawn.items()] + [(f"{e} resource use", fig)
                                                             for e, fig in utilisation.items()]
    below = [f"{e} axes {i} {ax.get_ylabel()!r}: from {ax.get_ylim()[0]:.4g}" for e, fig in figs
             for i, ax in enumerate(fig.axes) if ax.axison and ax.get_yscale() == "linear"
             and len(ys := _drawn_ys(ax)) and ys.min() >= 0 and ax.get_ylim()[0] < 0]
    assert not below, "\n".join(below)


def test_values_that_span_a_decade_have_a_log_axis(drawn):
    # slides-rdma-grpc-latency-large's RPC latencies run from 200 us (128 KiB) to 5,200 us (8 MiB):
    # on a linear axis the small payloads' points lay flat on the floor; bars keep a linear axis
    # (their length is their value), and so do samples over time, which include idle zeros
    flat = []
    for e, (data, _, fig) in drawn.items():
        if data["plot"]["form"] in ("utilisation", "breakdown_bars", "table"):
            continue
        for i, ax in enumerate(fig.axes):
            ys = _drawn_ys(ax)
            if ax.axison and not ax.patches and len(ys) and ys.min() > 0 and ys.max() >= 10 * ys.min():
                if ax.get_yscale() != "log":
                    flat.append(f"{e} axes {i}: {ys.min():.4g} to {ys.max():.4g} on a linear axis")
    assert not flat, "\n".join(flat)
    assert drawn["slides-rdma-grpc-latency-large"][2].axes[0].get_yscale() == "log"


def paper_nodes(data: dict) -> int | None:
    """The most nodes the paper's setting names: its nodes (or worker nodes), else its workers
    and parameter servers, one a node."""
    paper = data["scales"].get("paper") or {}

    def most(key: str) -> int:
        values = (paper.get("matrix") or {}).get(key) or [(paper.get("fixed") or {}).get(key)]
        return max([int(v) for v in values if isinstance(v, (int, float))], default=0)

    return most("nodes") or most("worker_nodes") or (most("workers") + most("parameter_servers")) or None


def drawn_runs(table: pd.DataFrame) -> pd.DataFrame:
    return table[(table["status"] == "ok") & table["value"].notna()].drop_duplicates("run_id")


def test_a_figure_of_runs_on_fewer_hosts_than_the_papers_nodes_names_the_hosts(drawn):
    # issue #47: dlobd-fig11's and rdmatf-fig6's 'nodes' were worker processes on one 2-core host
    checked, missing = [], []
    for e, (data, table, fig) in drawn.items():
        runs = drawn_runs(table)
        nodes = paper_nodes(data)
        if runs.empty or not nodes:
            continue
        assert "hosts" in runs and runs["hosts"].notna().all(), f"{e}: runs without their hosts"
        hosts = int(runs["hosts"].max())
        if hosts >= nodes:
            continue
        checked.append(e)
        said = " ".join(text for text, _ in labels(fig).values())
        if not re.search(rf"\bon {hosts} hosts?\b", paper_part(said)[0]):
            missing.append(f"{e}: {hosts} host(s) for the paper's {nodes} nodes, not said: {said!r}")
    assert {"dlobd-fig11", "rdmatf-fig6", "rdmatf-fig1", "dlobd-fig9", "slides-pagerank-32nodes"} <= set(checked)
    assert not missing, "\n".join(missing)


def test_an_axis_of_nodes_or_workers_that_counts_processes_on_fewer_hosts_says_so(drawn):
    # 'nodes', 'Workers (nodes)' and 'Nodes' read as machines where they were processes on one host
    checked, wrong = [], []
    for e, (data, table, fig) in drawn.items():
        x = data["plot"]["x"]
        runs = drawn_runs(table)
        if x not in ("nodes", "workers") or runs.empty or not (runs[x] > runs["hosts"]).any():
            continue
        checked.append(e)
        for ax in fig.axes:
            here = paper_part(ax.get_xlabel())[0]
            if ax.get_xlabel() and (re.search(r"\bnodes?\b", here, re.IGNORECASE) or "host" not in here):
                wrong.append(f"{e}: {ax.get_xlabel()!r}")
    assert {"dlobd-fig11", "rdmatf-fig6", "rdmatf-fig1", "dlobd-fig4a"} <= set(checked)
    assert not wrong, "\n".join(wrong)
    assert drawn["dlobd-fig11"][2].axes[0].get_xlabel() == "worker processes on 1 host (paper: 2/4/8 nodes)"


def title_here(fig) -> str:
    return fig._suptitle.get_text().split("\npaper: ")[0].replace("\n", " ")


def test_dlobd_fig9_says_its_2_collective_workers_stand_for_the_papers_3_workers_and_a_ps(drawn):
    # no parameter server at local scale (TFoS 2.2.5's MultiWorkerMirroredStrategy has none): both
    # frameworks ran 2 collective workers, TFoS's one in each of 2 Spark executors
    title = title_here(drawn["dlobd-fig9"][2])
    assert ("tensorflowonspark: 2 collective workers in 2 executors × 1 core / tensorflow: 2 collective "
            "workers, on 1 host (paper: 3 workers + 1 PS on 4 nodes)") in title, title


def test_the_pagerank_charts_say_how_their_2_cores_split_into_executors(drawn):
    # the 32- and 64-node charts' local runs differ only in that split, on the same 2-core host
    for e, layout in (("slides-pagerank-32nodes", "1 executor × 2 cores on 1 host (paper: 32 worker nodes)"),
                      ("slides-pagerank-64nodes", "2 executors × 1 core on 1 host (paper: 64 worker nodes)")):
        assert layout in title_here(drawn[e][2]), (e, title_here(drawn[e][2]))


def test_two_figures_drawn_from_the_same_runs_both_say_so(drawn):
    # e.g. slides-inception3-4nodes and -8nodes: two workers and a PS stand for 4 and 8 nodes alike
    runs = {e: set(drawn_runs(table)["run_id"]) for e, (_, table, _) in drawn.items()}
    pairs = [(a, b) for a, b in itertools.permutations(sorted(runs), 2) if runs[a] & runs[b]]
    assert ("slides-inception3-4nodes", "slides-inception3-8nodes") in pairs
    assert ("dlobd-fig11", "slides-resnet50") in pairs
    unsaid = [(a, b) for a, b in pairs if not re.search(rf"same runs as [\w, -]*\b{b}\b", footer(drawn[a][2]))]
    assert not unsaid, unsaid
    said = [(e, footer(fig)) for e, (_, _, fig) in drawn.items()
            if "same runs as" in footer(fig) and not any(a == e for a, _ in pairs)]
    assert not said, said


# issue #47: like with like, labels only for what is drawn, every promised element drawn

def ok_labels(table: pd.DataFrame, column: str) -> set[str]:
    """The values of a column, as the figures write them, at rows that drew a value."""
    return {figures.label_of(v) for v in ok_values(table, column)}


def test_a_title_names_a_stand_in_that_did_not_run_only_with_its_mark(drawn):
    # rdmatf-fig1's title said 'network=eth-1g (here: eth-1g-emulated)' where every emulated point
    # was not runnable, and never named the loopback bars drawn in its place
    checked, wrong = [], []
    for e, (_, table, fig) in drawn.items():
        title = fig._suptitle.get_text().replace("\n", " ")
        for column, here in re.findall(r"(\w+)=\S+ \(here: ([^()]*)\)", title):
            if column not in table.columns:
                continue
            checked.append(e)
            for part in here.split("; "):
                name, _, mark = part.partition(" ")
                # named bare or as the stand-in, its runs drew a value; named with a mark, none did
                if (mark in ("", "stands in")) != (name in ok_labels(table, column)):
                    wrong.append(f"{e}: {part!r} of {column}: drawn {sorted(ok_labels(table, column))}")
    assert "rdmatf-fig1" in checked and not wrong, "\n".join(wrong)
    title = drawn["rdmatf-fig1"][2]._suptitle.get_text().replace("\n", " ")
    assert "network=eth-1g (here: loopback stands in; eth-1g-emulated n/r)" in title


# legend entries that name no series: a paper's marker, the target accuracy line
NOT_SERIES = re.compile(r"^paper's value$|the paper's target$")


def test_a_legend_names_only_series_that_drew(drawn):
    # rdmatf-fig5's one series of bars was named 'reproduced'; an entry names the series' values
    # (the values of its `series` or `stack` columns) at rows that drew a value
    wrong = []
    for e, (data, table, fig) in drawn.items():
        columns = [c for c in [*(data["plot"].get("series") or []), data["plot"].get("stack")] if c]
        for ax in fig.axes:
            for text in [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []:
                if NOT_SERIES.search(text):
                    continue
                head = re.split(r" — |: ", text)[0].removesuffix(" (model)")
                for part in head.split(", "):
                    column, _, value = part.rpartition("=")
                    if not any(value in ok_labels(table, c) for c in ([column] if column else columns)):
                        wrong.append(f"{e}: legend entry {text!r}")
    assert not wrong, "\n".join(wrong)


def test_no_two_legend_entries_name_one_curve(drawn):
    # dlobd-fig8a's eight entries (interfaces eth0, ifb0, ifb1 and lo, rx and tx) named two visible
    # curves: idle interfaces under one another, loopback's rx under its tx
    same = []
    for e, (_, _, fig) in drawn.items():
        for ax in fig.axes:
            low, high = ax.get_ylim()
            entries = [(label, h) for h, label in zip(*ax.get_legend_handles_labels()) if hasattr(h, "get_ydata")]
            for (a, ha), (b, hb) in itertools.combinations(entries, 2):
                xa, ya, xb, yb = (np.asarray(d, float) for d in (ha.get_xdata(), ha.get_ydata(),
                                                                  hb.get_xdata(), hb.get_ydata()))
                if len(xa) > 1 and xa.shape == xb.shape and np.allclose(xa, xb) and \
                        np.all(np.abs(ya - yb) <= 0.005 * (high - low)):
                    same.append(f"{e}: {a!r} and {b!r}")
    assert not same, "\n".join(same)
    assert len(drawn["dlobd-fig8a"][2].axes[0].get_legend().get_texts()) == 2


def test_a_series_that_did_not_run_is_named_with_its_mark(drawn):
    # a line form has no slot to mark: the footer names each series without a line, e.g.
    # dlobd-fig8b's two GPU devices, whose CaffeOnSpark builds this machine lacks
    checked, unmarked = [], []
    for e, (data, table, fig) in drawn.items():
        series = data["plot"].get("series") or []
        if data["plot"]["form"] in ("grouped_bars", "breakdown_bars", "table") or len(series) != 1 \
                or series[0] not in table.columns or table.empty:
            continue
        column = series[0]
        for value in {figures.label_of(v) for v in table[column].dropna()} - ok_labels(table, column):
            checked.append(f"{e} {value}")
            if not re.search(rf"\b{re.escape(column)}={re.escape(value)}: (n/r|failed|hung|unparseable)",
                             footer(fig)):
                unmarked.append(f"{e}: {column}={value}")
    assert not unmarked, "\n".join(unmarked)
    assert {"dlobd-fig8b gpu", "dlobd-fig8b gpu-cudnn"} <= set(checked)


PAPER_PANELS = ("paper's stated values", "each over its baseline", "time to ")


def test_every_local_bar_beside_a_papers_value_is_of_the_papers_workload(drawn):
    # one rule for every paper panel: a local bar stands beside the paper's value only where the
    # local runs train the paper's model on its data; a value that grows with the work (a time, a
    # rate, a time to the target) also needs its sizes, while a relation of two local points and
    # a utilisation's extreme sample (a percentage) do not
    checked, wrong = set(), []
    for e, (data, table, fig) in drawn.items():
        swapped = [s for s in substitutions.substitutions(data, SCALE) if s.startswith(("model ", "data "))]
        other = figures.Context(data, SCALE, SPECS[e].scale(SCALE), table).other_workload()
        for ax in fig.axes:
            if not ax.get_title().startswith(PAPER_PANELS):
                continue
            solid = [bar for bar in ax.patches if bar.get_facecolor()[3] > 0]
            extremes = [t for t in ax.texts if "sample of" in t.get_text()]
            grows = not ax.get_title().startswith("each over its baseline") and len(extremes) < len(solid)
            checked.add(e)
            if solid and (swapped or (grows and other)):
                wrong.append(f"{e} {ax.get_title()!r}: {swapped or 'other sizes'}")
    assert {"dlobd-fig6a", "dlobd-fig6c", "scaffe-fig12", "scaffe-table2"} <= checked
    assert not wrong, "\n".join(wrong)


def test_a_ratio_labelled_max_is_the_largest_of_the_ratios_at_each_point(drawn):
    # scaffe-fig12's 'max over message_bytes' bar was the ratio of the mean latencies over all
    # sizes (8.32x) where mpich over hr at one size is three orders of magnitude
    checked = []
    for e, (data, table, fig) in drawn.items():
        scale = SPECS[e].scale(SCALE)
        amap = scale.get("axis_map") or {}
        ctx = figures.Context(data, SCALE, scale, table)
        ax = next((a for a in fig.axes if a.get_title().startswith("each over its baseline")), None)
        rows = table[(table["status"] == "ok") & (table["metric"] == data["metric"]["name"])]
        for i, p in enumerate(p for p in ctx.paper_values() if p.get("as")):
            solid = [bar for bar in (ax.patches if ax else []) if bar.get_facecolor()[3] > 0
                     and math.isclose(bar.get_x() + bar.get_width() / 2, i + 0.2)]
            if p["as"] != "ratio" or not p.get("up_to") or p.get("quantity") or not solid:
                continue
            assert f"max over {p['up_to']}" in ax.get_xticklabels()[i].get_text().replace("\n", " ")

            def mean_at(point, x):
                cell = rows[rows[p["up_to"]].map(lambda v: figures.same(v, x))]
                for key, value in point.items():
                    local = amap.get(key, {}).get(value, value)
                    cell = cell[cell[key].map(lambda v, local=local: figures.same(v, local))]
                runs = [reduce_values(r, data["metric"]["reduce"]) for _, r in cell.groupby("run_id")]
                return sum(runs) / len(runs) if runs else None

            ratios = [a / b for a, b in (
                (mean_at(p["at"], x), mean_at(p["over"], x)) for x in rows[p["up_to"]].dropna().unique())
                if a is not None and b]
            assert solid[0].get_height() == pytest.approx(max(ratios)), (e, p)
            checked.append(e)
    # Open MPI over HR; its two MVAPICH2 ratios have no counterpart here (MPICH stands in for the
    # baseline, as scaffe-c02 and c03's verdicts say)
    assert checked.count("scaffe-fig12") == 1


def test_every_element_a_figure_promises_is_drawn(drawn):
    # the slides' '70% accuracy line' and dlobd-fig6's '(time to 70%)' have that line across the
    # data, with its legend entry; every dashed line of data (dlobd-fig7a's accuracy on its
    # right-hand axis) has its entry; a table has a column for each quantity the paper's table
    # states (scaffe-table2's aggregation times)
    promised, dashed = [], []
    for e, (data, table, fig) in drawn.items():
        entries = {t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
        title = fig._suptitle.get_text().replace("\n", " ")
        target = re.search(r"(\d+)% accuracy line|time to (\d+)%", title)
        if target and fig.axes[0].axison:
            level = float(target[1] or target[2]) / 100
            lines = [ln for ln in fig.axes[0].lines if list(ln.get_ydata()) == [level, level]]
            assert lines and lines[0].get_label() in entries, (e, title)
            promised.append(e)
        for ax in fig.axes:
            # an error bar's line is named by its container
            named = {id(c.lines[0]) for c in ax.containers if hasattr(c, "lines") and c.get_label() in entries}
            dashed += [f"{e}: {ln.get_label()!r}" for ln in ax.lines if ln.get_linestyle() in ("--", ":", "-.")
                       and ln.get_transform() == ax.transData and ln.get_label() not in entries
                       and id(ln) not in named]
    assert not dashed, "\n".join(dashed)
    assert {"dlobd-fig6a", "dlobd-fig6b", "dlobd-fig6c", "slides-acc-alexnet-cos",
            "slides-acc-googlenet-cos", "slides-acc-vgg-bigdl"} <= set(promised)
    data, table, fig = drawn["scaffe-table2"]
    cells = {(r, c): cell.get_text().get_text() for (r, c), cell in fig.axes[0].tables[0].get_celld().items()}
    column = next(c for (r, c), text in cells.items() if r == 0 and text.startswith("time_breakdown_s"))
    row = next(r for (r, c), text in cells.items() if c == 0 and text == "none")
    aggregation = table[(table["metric"] == "time_breakdown_s") & (table["phase"] == "aggregation")
                        & (table["algorithm"] == "none")]["value"].sum()
    assert cells[0, column] == "time_breakdown_s, phase=aggregation (s)"
    assert float(cells[row, column]) == pytest.approx(aggregation, rel=1e-3)


def test_no_note_runs_out_of_its_axes(drawn):
    # dlobd-fig5a's 'n/r: needs infiniband, rdma, gpu, caffeonspark-gpu' ran out of its axes' top
    out = []
    for e, (_, _, fig) in drawn.items():
        renderer = FigureCanvasAgg(fig).get_renderer()
        for ax in fig.axes:
            box = ax.get_window_extent(renderer).padded(TOUCH_PX)
            out += [f"{e}: {t.get_text()!r}" for t in ax.texts if ax.axison and t.get_rotation() == 90
                    and not (box.contains(*t.get_window_extent(renderer).p0)
                             and box.contains(*t.get_window_extent(renderer).p1))]
    assert not out, "\n".join(out)


def test_a_resource_use_legend_names_each_run_s_point_as_the_spec_does(utilisation):
    # a point directory writes mpi_impl=hr as mpi-impl-hr; the legend keeps the axis's name
    legend = [t.get_text() for t in utilisation["scaffe-fig12"].legends[0].get_texts()]
    assert sorted(legend) == ["mpi_impl=hr", "mpi_impl=mpich", "mpi_impl=openmpi"]
    legend = [t.get_text() for t in utilisation["dlobd-fig11"].legends[0].get_texts()]
    assert "network=loopback, nodes=1, repeat=1" in legend


def test_a_paper_series_the_local_matrix_lacks_is_named_not_dropped(drawn):
    # tfgrpc-fig4 has no paper panel: VGG-16, which the paper ran, would vanish without a word
    for e, missing in (("tfgrpc-fig4", "model=vgg16"), ("tfgrpc-fig10", "network=rdma")):
        footer = " ".join(t.get_text() for t in drawn[e][2].texts).replace("\n", " ")
        assert f"the paper's, not in the local matrix: {missing}" in footer, e
