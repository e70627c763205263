"""The paper's stated numbers (`paper_values` of the specs) reach the figures: every number a
quantitative claim states is recorded in its experiment's spec, and a figure draws every
recorded number beside this scale's value of the same quantity."""

import pandas as pd
import pytest

from dlobd import ROOT, spec
from dlobd.results import figures


def _stated_numbers(claim: dict) -> list[tuple[float, ...]]:
    """The numbers of a catalog claim's `value`, each with its readings: a percentage is a
    fraction in a relation (63% -> 0.63) and itself in a metric of percent (CPU 10%)."""
    value = claim.get("value")
    items = value.values() if isinstance(value, dict) else [value]
    percent = str(claim.get("unit", "")).startswith("%")
    return [(float(v), float(v) * 0.01) if percent else (float(v),)
            for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _recorded(s: spec.Spec) -> list[float]:
    out = []
    for pv in s.paper_values():
        out += [pv["value"], pv.get("high")]
        out += [v for v in pv["at"].values() if isinstance(v, (int, float))]
    return [float(v) for v in out if v is not None]


def test_every_number_a_claim_states_is_a_paper_value(catalog):
    specs = spec.load_all(ROOT)
    missing = []
    for claim in catalog[1].values():
        s = specs.get(claim.get("experiment_id"))
        own = next((c for c in s.claims if c["id"] == claim["id"]), None) if s else None
        if claim["kind"] != "quantitative" or own is None or "check" not in own:
            continue    # text-only and not checkable numbers have no point of a figure
        recorded = _recorded(s)
        for readings in _stated_numbers(claim):
            if not any(abs(n - r) <= 1e-9 * max(1, abs(n)) for n in readings for r in recorded):
                missing.append(f"{claim['id']} ({s.id}): {readings[0]:g}")
    assert missing == []


def test_plan_counts_specs_with_paper_values(capsys):
    import argparse

    from dlobd.execution import plan
    parser = argparse.ArgumentParser()
    plan.register(parser)  # the command's own options and defaults
    plan.run(parser.parse_args(["--root", str(ROOT), "--scale", "local", "--quiet"]))
    specs = spec.load_all(ROOT)
    n = sum(1 for s in specs.values() if s.paper_values())
    assert f"paper values: {n} of 55 specs carry numbers their paper states" in capsys.readouterr().out
    assert n >= 45


def test_figure_draws_every_paper_value_with_the_local_counterpart(tmp_path):
    s = spec.load_all(ROOT)["dlobd-fig7b"]
    pvs = s.data["scales"]["paper"]["paper_values"]
    # constructed rows (not measurements): 18-epoch times at the two local core counts
    table = pd.DataFrame([
        {"network": "loopback", "cores": c, "metric": "wall_clock_s", "value": v, "status": "ok",
         "run_id": f"local/local/dlobd-fig7b/network=loopback,cores={c}/attempt-001", "reason": None,
         "cluster": "local", "epoch": 18, "step": None, "wall_clock_s": v}
        for c, v in ((1, 30.0), (2, 24.0))])
    fig = figures.draw(s.data, "local", s.data["scales"]["local"], table, tmp_path / "f.png")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for p in pvs:
        assert figures.stated_text(p, "s") in texts, p
    # the ratio is drawn as y[ipoib]/y[rdma]; rdma has no run here, so the slot says why
    assert "not run here" in texts
    hatched = [b for ax in fig.axes for b in ax.patches if b.get_hatch()]
    assert sorted(round(b.get_height(), 3) for b in hatched) == [2.7, 870, 2372]
    # the local epochs train 8 images, another workload: the paper's absolute times get no local
    # bar (24 s at 2 cores would stand for ipoib at 384), and their panel says why
    assert not [t for t in texts if t.startswith("24 s")]
    assert [ax.get_title() for ax in fig.axes if ax.get_title().startswith("paper's stated values")] == [
        "paper's stated values hatched, none here: another workload"]
    # the slots of the rdma points, which have no rows here, say what they need
    assert texts.count("no run: needs infiniband, rdma, rdma-spark") == 2


def test_x_label_names_the_paper_values_the_run_stands_for():
    s = spec.load_all(ROOT)["dlobd-fig7b"]
    ctx = figures.Context(s.data, "local", s.data["scales"]["local"], pd.DataFrame())
    assert ctx.x_label() == "CPU cores (paper: 96/192/384)"


def test_stated_text_reads_as_the_paper_states_it():
    at, over = {"network": "rdma"}, {"network": "ipoib"}
    assert figures.stated_text({"at": at, "over": over, "as": "reduction", "value": 0.63}) == "−63%"
    assert figures.stated_text({"at": at, "over": over, "as": "gain", "value": 0.3, "high": 0.4}) == "+30–40%"
    assert figures.stated_text({"at": at, "over": over, "as": "ratio", "value": 133, "up_to": "m"}) == "up to 133×"
    assert figures.stated_text({"at": at, "value": 10, "bound": "upper"}, "%") == "below 10 %"
    assert figures.implied_ratio({"as": "reduction", "value": 0.63}) == pytest.approx(0.37)


def test_an_empty_slot_says_what_its_point_needs(tmp_path):
    s = spec.load_all(ROOT)["rdmatf-fig1"]
    # constructed rows (not measurements): loopback points only; the emulated tier's are absent
    table = pd.DataFrame([
        {"network": "loopback", "workers": w, "metric": "train_time_s", "value": 3.0 - w / 2, "status": "ok",
         "run_id": f"local/local/rdmatf-fig1/network-loopback_workers-{w}/attempt-001", "reason": None,
         "cluster": "local", "epoch": None, "step": None, "wall_clock_s": None}
        for w in (1, 2, 3)])
    fig = figures.draw(s.data, "local", s.data["scales"]["local"], table, tmp_path / "f.png")
    notes = [t.get_text() for t in fig.axes[0].texts]
    assert notes == ["no run: needs multi-host, eth-1g-emulated"] * 3


def test_a_number_of_another_stack_has_no_counterpart_in_this_figures_runs(tmp_path):
    s = spec.load_all(ROOT)["dlobd-fig8b"]
    # constructed rows (not measurements): GPU memory samples of the local CaffeOnSpark gpu point
    table = pd.DataFrame([
        {"device": "gpu", "metric": "gpu_mem_gb", "value": v, "status": "ok", "host": "vm",
         "log": "monitor/vm.csv", "run_id": "local/local/dlobd-fig8b/device-gpu/attempt-001", "reason": None,
         "cluster": "local", "epoch": None, "step": None, "wall_clock_s": t}
        for t, v in ((1.0, 1.2), (2.0, 1.4))])
    fig = figures.draw(s.data, "local", s.data["scales"]["local"], table, tmp_path / "f.png")
    panel = next(ax for ax in fig.axes if ax.get_title().startswith("paper's stated values"))
    # TensorFlowOnSpark's 10.9 GB is not set beside CaffeOnSpark's gpu run: its slot says why
    assert [t.get_text() for t in panel.texts if t.get_text() in ("another stack", "1.4 GB")] == ["another stack"]
    assert [tick.get_text() for tick in panel.get_xticklabels()] == ["gpu-cudnn", "gpu, tensorflowonspark"]


def test_a_ratio_up_to_a_swept_size_is_the_largest_ratio_at_one_size(tmp_path):
    # scaffe-fig12 states 'up to 133x' over message sizes: the local bar is the largest of the
    # ratios at each size (here 30 / 10 = 3 at 4 bytes), not the ratio of the means over all
    # sizes ((30 + 400) / (10 + 390) = 1.075)
    s = spec.load_all(ROOT)["scaffe-fig12"]
    data = {**s.data, "dimensions": s.dimensions()}
    # constructed rows (not measurements): one run per reduce, two message sizes
    table = pd.DataFrame([
        {"mpi_impl": impl, "message_bytes": size, "metric": "latency_us", "value": v, "status": "ok",
         "run_id": f"local/local/scaffe-fig12/mpi_impl-{impl}/attempt-001", "reason": None, "cluster": "local",
         "epoch": None, "step": None, "wall_clock_s": None}
        for impl, values in (("openmpi", (30.0, 400.0)), ("hr", (10.0, 390.0)), ("mpich", (20.0, 20.0)))
        for size, v in zip((4, 1024), values)])
    ctx = figures.Context(data, "local", data["scales"]["local"], table)
    openmpi = next(p for p in ctx.paper_values() if p["at"] == {"mpi_impl": "openmpi"})
    assert figures.local_counterpart(ctx, openmpi) == (pytest.approx(3.0), "")
