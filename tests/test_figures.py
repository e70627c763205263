"""Figures from tidy results (dlobd/results/figures/): what is drawn is what the results say."""

import copy

import pandas as pd
import pytest

from dlobd import ROOT, spec, stacks
from dlobd.execution import runs
from dlobd.results import figures, tidy as results
from dlobd.results.figures.values import window_means
from dlobd.spec import metrics
from rundirs import make_run, real_logs

SPEC = {
    "id": "dlobd-fig7b", "paper": "dlobd", "figure": "Fig. 7(b)",
    "title": "BigDL on CIFAR-10: accumulated epoch time over cores",
    "stack": "bigdl", "model": "vgg16", "dataset": "cifar10",
    "metric": {"name": "epoch_time_s", "unit": "s", "better": "lower", "reduce": "sum"},
    "plot": {"form": "grouped_bars", "x": "cores", "series": ["network"],
             "y_label": "Accumulated epoch time (s)"},
    "axes": {"network": {"description": "transport"}, "cores": {"description": "cores", "numeric": True}},
    "scales": {
        "paper": {"runnable": True, "cluster": "dlobd-cluster-B-comet",
                  "matrix": {"network": ["ipoib", "rdma"], "cores": [96, 384]},
                  "paper_values": [{"at": {"network": "ipoib", "cores": 384}, "value": 2372, "where": "Sec. 4.6"},
                                   {"at": {"network": "rdma", "cores": 384}, "value": 870, "where": "Sec. 4.6", "approx": True}]},
        "local": {"runnable": True, "matrix": {"network": ["loopback", "eth-100mbit-emulated"], "cores": [1, 2]},
                  "dataset": "cifar10-synthetic"},
    },
}


def _table(tmp_path, spec, scale, points, log, status_of=lambda p: ("ok", None)):
    parsed = []
    for i, point in enumerate(points):
        status, reason = status_of(point)
        make_run(tmp_path / "runs", spec, scale, point, {"stderr.log": log}, status=status, reason=reason)
        parsed.append(results.parse_point(runs.point_dir(tmp_path / "runs", "local", scale, spec["id"], point),
                                          tmp_path / "runs", spec["stack"]))
    results.write_results(spec["id"], list(spec["axes"]), parsed, tmp_path / "r.csv")
    return results.read_results(tmp_path / "r.csv")


@pytest.fixture
def log():
    return real_logs("bigdl", min_rows=5)[0]


def _rows(log, metric):
    return [r for r in stacks.get("bigdl").parse(stacks.read_log(log)).rows if r["metric"] == metric]


def _texts(fig):
    """Every text on the figure outside the axes, with wrapped lines joined again."""
    return " ".join([t.get_text() for t in fig.texts] + [fig._suptitle.get_text()]).replace("\n", " ")


def test_grouped_bars_draw_the_reduced_values(tmp_path, log):
    points = [{"network": "loopback", "cores": 1}, {"network": "loopback", "cores": 2},
              {"network": "eth-100mbit-emulated", "cores": 1}]
    table = _table(tmp_path, SPEC, "local", points, log,
                   lambda p: ("hung", "killed after 900 s") if p["cores"] == 2 else ("ok", None))
    png = tmp_path / "f.png"
    fig = figures.draw(SPEC, "local", SPEC["scales"]["local"], table, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = sum(r["value"] for r in _rows(log, "epoch_time_s"))
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([expected, expected])  # two ok runs, one hung
    assert ax.get_ylabel() == "Accumulated epoch time (s)"
    assert ax.get_xlabel() == "cores (paper: 96/384)"  # what ran, and what it stands for
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
    notes = [t.get_text() for t in ax.texts]
    assert "hung" in notes  # the hung point is shown with its status, not dropped
    text = _texts(fig)
    for part in ("scale: local", "cluster: local", "data: synthetic", "SYNTHETIC DATA",
                 "EMULATED NETWORK", "runs not ok: 1 hung", "Rerun at the local scale: ", "paper: Fig. 7(b) (dlobd)"):
        assert part in text


def test_runs_of_the_paper_profile_say_so_in_the_footer(tmp_path, log):
    table = _table(tmp_path, SPEC, "local", [{"network": "loopback", "cores": 1}], log)
    assert "PAPER SOFTWARE" not in _texts(figures.draw(SPEC, "local", SPEC["scales"]["local"], table,
                                                       tmp_path / "modern.png"))
    table["profile"] = "paper"
    text = _texts(figures.draw(SPEC, "local", SPEC["scales"]["local"], table, tmp_path / "paper.png"))
    assert "PAPER SOFTWARE (the papers' releases), local hardware" in text


def test_paper_values_get_their_own_panel_at_local_scale(tmp_path, log):
    table = _table(tmp_path, SPEC, "local", [{"network": "loopback", "cores": 1}], log)
    fig = figures.draw(SPEC, "local", SPEC["scales"]["local"], table, tmp_path / "f.png")
    # the paper's points (384 cores) have no counterpart in the local matrix: no solid bar, none promised
    panel = [a for a in fig.axes if a.get_title() == "paper's stated values hatched"]
    assert len(panel) == 1
    assert [b.get_height() for b in panel[0].patches if b.get_hatch()] == [2372, 870]
    assert panel[0].get_yscale() == "log"   # the paper's cluster and this one differ by orders
    assert "[network=rdma, cores=384] ≈870 s (Sec. 4.6)" in _texts(fig)


def test_paper_values_are_marked_on_the_axes_at_paper_scale(tmp_path, log):
    points = [{"network": "ipoib", "cores": 384}, {"network": "rdma", "cores": 384}]
    table = _table(tmp_path, SPEC, "paper", points, log)
    fig = figures.draw(SPEC, "paper", SPEC["scales"]["paper"], table, tmp_path / "f.png")
    ax = fig.axes[0]
    marked = [line for line in ax.get_lines() if line.get_label() == "paper's value"
              or line.get_marker() == "D"]
    assert sorted(float(v) for line in marked for v in line.get_ydata()) == [870.0, 2372.0]
    assert not [a for a in fig.axes if a.get_title().startswith("paper's stated values")]


def test_lines_over_time_follow_the_logged_samples(tmp_path, log):
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "loss", "unit": "1", "better": "lower", "reduce": "last"}
    spec["plot"] = {"form": "lines_over_time", "x": "wall_clock_s", "series": ["network"],
                    "y_label": "Training loss"}
    table = _table(tmp_path, spec, "local", [{"network": "loopback", "cores": 1}], log)
    fig = figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / "f.png")
    line = fig.axes[0].get_lines()[0]
    rows = sorted(_rows(log, "loss"), key=lambda r: r["wall_clock_s"])
    assert list(line.get_xdata()) == pytest.approx([r["wall_clock_s"] for r in rows])
    assert list(line.get_ydata()) == pytest.approx([r["value"] for r in rows])
    assert fig.axes[0].get_xlabel() == "Training time (s)"
    assert fig.axes[0].get_ylabel() == "Training loss (1)"


def test_not_run_figure_says_why(tmp_path):
    empty = results.assemble(SPEC["id"], list(SPEC["axes"]), [])
    scale = {"runnable": False, "reason": "needs InfiniBand: no HCA on this machine"}
    reason = results.not_run_reason(SPEC, "local", scale, empty)
    assert reason == "needs InfiniBand: no HCA on this machine"
    fig = figures.draw(SPEC, "local", scale, empty, tmp_path / "f.pdf", not_run=reason)
    shown = "\n".join(t.get_text() for ax in fig.axes for t in ax.texts).replace("\n", " ")
    assert "not run: needs InfiniBand: no HCA on this machine" in shown
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"
    assert results.not_run_reason(SPEC, "local", SPEC["scales"]["local"], empty, "data/runs") == \
        "no runs under data/runs at scale local"


def test_not_run_reason_summarises_failed_runs(tmp_path, log):
    table = _table(tmp_path, SPEC, "local", [{"network": "loopback", "cores": 1}], log,
                   lambda p: ("failed", "exit status 1"))
    reason = results.not_run_reason(SPEC, "local", SPEC["scales"]["local"], table)
    assert reason.startswith("no run ended ok (1 failed)")
    assert reason.endswith("exit status 1")


def test_table_form_lists_every_point_with_status(tmp_path, log):
    spec = copy.deepcopy(SPEC)
    spec["plot"]["form"] = "table"
    points = [{"network": "loopback", "cores": 1}, {"network": "loopback", "cores": 2}]
    table = _table(tmp_path, spec, "local", points, log,
                   lambda p: ("failed", "exit 1") if p["cores"] == 2 else ("ok", None))
    fig = figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / "f.png")
    cells = [c.get_text().get_text() for c in fig.axes[0].tables[0].get_celld().values()]
    expected = sum(r["value"] for r in _rows(log, "epoch_time_s"))
    assert f"{expected:.4g}" in cells and "failed" in cells and "epoch_time_s (s)" in cells


def _synthetic_table(rows, axes):
    """A results table from rows given here (for forms no real log of this machine has)."""
    frame = pd.DataFrame(rows)
    for col, val in (("status", "ok"), ("reason", None), ("cluster", "local"),
                     ("scale", "local"), ("data_label", "synthetic")):
        frame[col] = val
    return frame


def test_breakdown_bars_stack_the_phases():
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "time_breakdown_s", "unit": "s", "better": "lower", "reduce": "sum"}
    spec["axes"] = {"system": {"description": "TFoS or native TF"}}
    spec["dimensions"] = {"phase": {"description": "phase", "values": list(metrics.PHASES)}}
    spec["plot"] = {"form": "breakdown_bars", "x": "system", "series": [], "stack": "phase",
                    "y_label": "Time (s)"}
    spec["scales"]["local"] = {"runnable": True, "matrix": {"system": ["tfos", "native"]}}
    rows = []
    for system, phases in (("tfos", {"yarn_scheduling": 4.0, "training": 10.0}),
                           ("native", {"training": 8.0})):
        for phase, value in phases.items():
            rows.append({"system": system, "run_id": system,
                         **metrics.row("time_breakdown_s", value, phase=phase)})
    fig = figures.draw(spec, "local", spec["scales"]["local"], _synthetic_table(rows, ["system"]),
                       "/dev/null")
    ax = fig.axes[0]
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert tops == {0: 14.0, 1: 8.0}
    assert ax.get_legend().get_title().get_text() == "phase"


def test_payload_curves_are_log_scaled_means_per_payload():
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "latency_us", "unit": "us", "better": "lower", "reduce": "mean"}
    spec["axes"] = {"channel": {"description": "gRPC channel"}}
    spec["dimensions"] = {"payload_bytes": {"description": "payload", "unit": "bytes"}}
    spec["plot"] = {"form": "payload_curves", "x": "payload_bytes", "series": ["channel"],
                    "y_label": "Latency (us)"}
    spec["scales"]["local"] = {"runnable": True, "matrix": {"channel": ["tcp"]}}
    rows = [{"channel": "tcp", "run_id": "r", **metrics.row("latency_us", v, payload_bytes=p)}
            for p, v in ((64, 100.0), (64, 120.0), (65536, 400.0))]
    fig = figures.draw(spec, "local", spec["scales"]["local"], _synthetic_table(rows, ["channel"]),
                       "/dev/null")
    ax = fig.axes[0]
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [64, 65536] and list(line.get_ydata()) == [110.0, 400.0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "payload bytes (bytes)"


def test_utilisation_draws_monitor_samples(tmp_path, log):
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "cpu_util_pct", "unit": "%", "better": "lower", "reduce": "mean"}
    spec["plot"] = {"form": "utilisation", "x": "wall_clock_s", "series": ["network"],
                    "y_label": "CPU utilisation"}
    point = {"network": "loopback", "cores": 1}
    monitor = "time_s,host,cpu_util_pct,rss_mb\n0,vm,12.5,100\n1,vm,80,150\n2,vm,75,160\n"
    make_run(tmp_path / "runs", spec, "local", point, {"stderr.log": log, "monitor/vm.csv": monitor})
    parsed = results.parse_point(runs.point_dir(tmp_path / "runs", "local", "local", spec["id"], point), tmp_path / "runs", "bigdl")
    table = results.assemble(spec["id"], list(spec["axes"]), [parsed])
    fig = figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / "f.png")
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_ydata()) == [80.0, 75.0]  # (the first sample is psutil's first call)
    assert fig.axes[0].get_ylabel() == "CPU utilisation (%)"


@pytest.mark.parametrize("form", sorted(figures.FORMS))
def test_every_form_draws_png_and_pdf(tmp_path, log, form):
    spec = copy.deepcopy(SPEC)
    spec["plot"]["form"] = form
    table = _table(tmp_path, spec, "local", [{"network": "loopback", "cores": 1}], log)
    for name in ("f.png", "f.pdf"):    # the format the file name says
        figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / name)
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "f.png").stat().st_size > 5000
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


def test_network_utilisation_has_a_line_per_interface_and_direction(tmp_path, log):
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "net_mb_per_s", "unit": "MB/s", "better": "lower", "reduce": "mean"}
    spec["plot"] = {"form": "utilisation", "x": "wall_clock_s", "series": ["network"],
                    "y_label": "Network throughput"}
    point = {"network": "loopback", "cores": 1}
    monitor = ("time_s,host,net_lo_rx_bytes,net_lo_tx_bytes,net_eth0_rx_bytes,net_eth0_tx_bytes\n"
               "0,vm,0,0,0,0\n1,vm,1000000,3000000,0,0\n2,vm,2000000,6000000,500000,0\n")
    make_run(tmp_path / "runs", spec, "local", point, {"stderr.log": log, "monitor/vm.csv": monitor})
    parsed = results.parse_point(runs.point_dir(tmp_path / "runs", "local", "local", spec["id"], point), tmp_path / "runs", "bigdl")
    table = results.assemble(spec["id"], list(spec["axes"]), [parsed])
    fig = figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / "f.png")
    got = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].get_lines()}
    assert got == {"loopback — interface lo rx": [1.0, 1.0], "loopback — interface lo tx": [3.0, 3.0],
                   "loopback — interface eth0 rx": [0.0, 0.5], "loopback — interface eth0 tx": [0.0, 0.0]}
    assert fig.axes[0].get_ylabel() == "Network throughput (MB/s)"


def test_every_experiment_gets_a_resource_use_figure_of_its_runs(tmp_path, log):
    point = {"network": "loopback", "cores": 1}
    monitor = ("time_s,host,cpu_util_pct,rss_mb,net_lo_rx_bytes,net_lo_tx_bytes,net_eth0_rx_bytes,"
               "net_eth0_tx_bytes\n0,vm,10,100,0,0,0,0\n1,vm,90,300,2000000,2000000,0,0\n"
               "2,vm,50,200,4000000,2000000,0,0\n")
    make_run(tmp_path / "runs", SPEC, "local", point, {"stderr.log": log, "monitor/vm.csv": monitor})
    parsed = results.parse_point(runs.point_dir(tmp_path / "runs", "local", "local", SPEC["id"], point), tmp_path / "runs", "bigdl")
    table = results.assemble(SPEC["id"], list(SPEC["axes"]), [parsed])
    fig = figures.draw_utilisation(SPEC, "local", table, tmp_path / "u.png")
    cpu, mem, net = fig.axes[:3]
    assert [list(line.get_ydata()) for line in cpu.get_lines()] == [[90.0, 50.0]]
    assert [list(line.get_ydata()) for line in mem.get_lines()] == [[100.0, 300.0, 200.0]]
    # the idle interface is left out; lo's two directions are drawn
    assert sorted(line.get_label() for line in net.get_lines()) == [
        "cores=1, network=loopback vm lo rx", "cores=1, network=loopback vm lo tx"]
    assert (tmp_path / "u.png").stat().st_size > 5000
    empty = figures.draw_utilisation(SPEC, "local", table.iloc[0:0], tmp_path / "e.png")
    assert empty.get_suptitle().endswith("no monitor samples")
    # no empty panels: the reason, boxed
    assert [ax.axison for ax in empty.axes] == [False]
    assert [t.get_text() for t in empty.axes[0].texts] == ["no monitor samples: no runs at scale local"]
    unsampled = table[~results.is_monitor(table)]
    assert [t.get_text() for t in figures.draw_utilisation(
        SPEC, "local", unsampled, tmp_path / "n.png").axes[0].texts] == [
        "no monitor samples: its runs recorded none"]


# a GPU host's monitor columns, with the H200's values under load (tests/data/gpu-h200)
GPU_MONITOR = ("time_s,host,cpu_util_pct,rss_mb,gpu0_util_pct,gpu0_mem_mib,gpu_job_mem_mib\n"
               "0,gpu1,10,100,0,0,0\n10,gpu1,12,700,100,6863,3992\n20,gpu1,12,709,100,6863,3992\n"
               "30,gpu1,12,709,100,6863,3992\n")


def _gpu_table(tmp_path, log, spec):
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path / "runs", spec, "local", point, {"stderr.log": log, "monitor/gpu1.csv": GPU_MONITOR})
    parsed = results.parse_point(runs.point_dir(tmp_path / "runs", "local", "local", spec["id"], point), tmp_path / "runs", "bigdl")
    return results.assemble(spec["id"], list(spec["axes"]), [parsed])


def test_a_gpu_runs_resource_use_has_gpu_panels(tmp_path, log):
    table = _gpu_table(tmp_path, log, SPEC)
    fig = figures.draw_utilisation(SPEC, "local", table, tmp_path / "u.png")
    assert [ax.get_ylabel() for ax in fig.axes[:5]] == [
        "Host CPU (%)", "Memory of the job (MB)", "Network (MB/s)", "GPU busy (%)", "GPU memory of the job (GB)"]
    busy, memory = fig.axes[3:5]
    assert [list(line.get_ydata()) for line in busy.get_lines()] == [[0.0, 100.0, 100.0, 100.0]]
    assert busy.get_lines()[0].get_label().endswith("gpu1 GPU 0")
    assert [round(v, 3) for v in memory.get_lines()[0].get_ydata()] == [0.0, 4.186, 4.186, 4.186]
    # a run without GPU samples gets no GPU panel
    cpu_only = figures.draw_utilisation(SPEC, "local", table[~table["metric"].str.startswith("gpu")],
                                        tmp_path / "c.png")
    assert len([ax for ax in cpu_only.axes if ax.get_ylabel()]) == 3


def test_host_memory_beside_gpu_memory_in_their_windows(tmp_path, log):
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "host_mem_mb", "unit": "MB", "better": "lower", "reduce": "mean"}
    spec["plot"] = {"form": "utilisation", "x": "wall_clock_s", "series": ["network"],
                    "y_label": "Host memory used", "window_s": 20,
                    "beside": {"metric": "gpu_mem_gb", "y_label": "GPU memory (GB)", "window_s": 10}}
    table = _gpu_table(tmp_path, log, spec)
    fig = figures.draw(spec, "local", spec["scales"]["local"], table, tmp_path / "f.png")
    host, gpu = fig.axes[:2]
    samples, means = host.get_lines()
    assert list(samples.get_ydata()) == [100.0, 700.0, 709.0, 709.0]
    # 0-20 s: 100 and 700; 20-30 s (the samples end at 30): 709 twice
    assert (list(means.get_xdata()), list(means.get_ydata())) == ([10.0, 25.0], [400.0, 709.0])
    assert host.get_title(loc="right") == "markers: 20-s window means (the paper's); thin: samples"
    assert gpu.get_ylabel() == "GPU memory (GB)"
    assert [round(v, 3) for v in gpu.get_lines()[1].get_ydata()] == [0.0, 4.186, 4.186, 4.186]
    # no GPU samples: one panel, and it says so
    no_gpu = figures.draw(spec, "local", spec["scales"]["local"],
                          table[~table["metric"].astype(str).str.startswith("gpu")], tmp_path / "g.png")
    assert no_gpu.axes[0].get_title(loc="left") == "GPU memory (GB): no run sampled it"
    assert not any(ax.get_ylabel() == "GPU memory (GB)" for ax in no_gpu.axes)


def test_repeats_of_a_point_are_drawn_as_mean_with_their_spread(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["scales"]["local"]["repeats"] = 3
    rows = []
    for repeat, value in ((1, 90.0), (2, 120.0), (3, 105.0)):
        point = {"network": "loopback", "cores": 1, "repeat": repeat}
        rows.append({"experiment": SPEC["id"], **point, "metric": "epoch_time_s", "value": value,
                     "unit": "s", "run_id": f"local/local/{SPEC['id']}/r{repeat}/attempt-001",
                     "status": "ok", "cluster": "local", "scale": "local", "data_label": "synthetic"})
    fig = figures.draw(spec, "local", spec["scales"]["local"], pd.DataFrame(rows), tmp_path / "f.png")
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([105.0])
    (bar,) = [c for c in ax.collections if c.get_segments()]      # the error bar's line
    (segment,) = bar.get_segments()
    assert [y for _, y in segment] == pytest.approx([90.0, 120.0])
    assert "3 runs a point: mean, bars min–max" in _texts(fig)


def test_a_paper_scale_figure_names_what_its_runs_assumed():
    s = spec.load_all(ROOT)["dlobd-fig7b"]
    empty = pd.DataFrame(columns=["status", "value", "run_id", "metric"])
    fig = figures.build(s.data, "paper", s.data["scales"]["paper"], empty, not_run="no runs")
    title = fig._suptitle.get_text().replace("\n", " ")
    assert "not stated by the paper: batch=768 assumed (Fig. 7(a)" in title


def test_window_means_cover_whole_windows_or_say_the_run_was_shorter(tmp_path, log):
    rows = pd.DataFrame({"wall_clock_s": [0.0, 1, 2, 3, 4, 5, 6], "value": [10.0, 10, 10, 20, 20, 20, 2]})
    # two whole 3-s windows; the last sample (the run's end, 2) starts a window the run does not fill
    assert window_means(rows, 3) == ([1.5, 4.5], [10.0, 20.0], False)
    # a run shorter than its window: one mean over the run, at its middle
    assert window_means(rows, 60) == ([3.0], [pytest.approx(92 / 7)], True)
    spec = copy.deepcopy(SPEC)
    spec["metric"] = {"name": "host_mem_mb", "unit": "MB", "better": "lower", "reduce": "mean"}
    spec["plot"] = {"form": "utilisation", "x": "wall_clock_s", "series": ["network"],
                    "y_label": "Memory of the job", "window_s": 60}
    fig = figures.draw(spec, "local", spec["scales"]["local"], _gpu_table(tmp_path, log, spec), tmp_path / "f.png")
    assert fig.axes[0].get_title(loc="right") == \
        "markers: 60-s window means, or a shorter run's mean; thin: samples"
