"""The HTML report (dlobd/report.py + templates/report.html.j2)."""

import base64
import html
import json
import re

import pandas as pd
import pytest

from dlobd import figures, report, results, runs
from rundirs import make_run, real_logs

RUN_SPEC = {
    "id": "dlobd-fig7a", "paper": "dlobd", "figure": "Fig. 7(a)", "title": "BigDL accuracy over time",
    "stack": "bigdl", "model": "vgg16", "dataset": "cifar10",
    "metric": {"name": "top1_accuracy", "unit": "fraction", "better": "higher", "reduce": "max"},
    "plot": {"form": "lines_over_time", "x": "wall_clock_s", "series": ["network"], "y_label": "Top-1 accuracy"},
    "axes": {"network": {"description": "transport"}},
    "scales": {"local": {"runnable": True, "matrix": {"network": ["loopback"]}, "dataset": "cifar10-synthetic"}},
}
IB_SPEC = {
    "id": "scaffe-fig8", "paper": "scaffe", "figure": "Fig. 8", "title": "S-Caffe scaling on GPUs",
    "stack": "scaffe", "model": "alexnet", "dataset": "imagenet",
    "metric": {"name": "images_per_s", "unit": "images/s", "better": "higher", "reduce": "mean"},
    "plot": {"form": "scaling_lines", "x": "gpus", "series": [], "y_label": "Images/s"},
    "axes": {"gpus": {"description": "GPUs"}},
    "scales": {"local": {"runnable": False, "reason": "needs GPUs and InfiniBand (MVAPICH2-GDR)"}},
}


@pytest.fixture
def built(tmp_path):
    """Results, figures and verdicts of two experiments, laid out as the pipeline does."""
    log = real_logs("bigdl", min_rows=5)[0]
    runs_dir, res, figs = tmp_path / "runs", tmp_path / "results", tmp_path / "figures"
    point = {"network": "loopback"}
    make_run(runs_dir, RUN_SPEC, "local", point, {"stderr.log": log}, status="failed",
             reason="exit status 1")
    make_run(runs_dir, RUN_SPEC, "local", point, {"stderr.log": log})
    parsed = tmp_path / "parsed.csv"
    results.write_parsed(runs.point_dir(runs_dir, "local", "local", "dlobd-fig7a", point), runs_dir,
                         "bigdl", parsed)
    for spec, inputs in ((RUN_SPEC, [parsed]), (IB_SPEC, [])):
        table = results.write_results(spec["id"], list(spec["axes"]), inputs,
                                      res / "local" / f"{spec['id']}.csv",
                                      res / "local" / "runs" / f"{spec['id']}.json", runs_dir, "local")
        scale = spec["scales"]["local"]
        reason = figures.not_run_reason(spec, "local", scale, table, runs_dir)
        figures.draw(spec, "local", scale, table, figs / "local" / f"{spec['id']}.png",
                     figs / "local" / f"{spec['id']}.pdf", not_run=reason)
    verdicts = res / "local" / "verdicts"
    verdicts.mkdir(parents=True)
    pd.DataFrame([
        {"paper": "dlobd", "experiment": "dlobd-fig7a", "claim_id": "dlobd-c30", "kind": "quantitative",
         "scale": "local", "verdict": "differs", "reason": "0.31 is not within 3% of 0.7",
         "paper_values": "0.7", "reproduced": "top1 = 0.31", "check": "approx(y, 0.7, rtol=0.03)",
         "text": "RDMA reaches 70% <sooner>"},
    ]).to_csv(verdicts / "dlobd-fig7a.csv", index=False)
    pd.DataFrame([
        {"paper": "scaffe", "experiment": "scaffe-fig8", "claim_id": "scaffe-c01", "kind": "trend",
         "scale": "local", "verdict": "not run", "reason": "no ok result for y[gpus=160]",
         "paper_values": "", "reproduced": "", "check": "y[gpus=160] > y[gpus=80]", "text": "scales"},
    ]).to_csv(verdicts / "scaffe-fig8.csv", index=False)
    out = tmp_path / "report" / "index.html"
    report.write_report(out, specs={"dlobd-fig7a": RUN_SPEC, "scaffe-fig8": IB_SPEC}, scales=["local"],
                        figures_dir=figs, results_dir=res, verdict_ids=["dlobd-fig7a", "scaffe-fig8"],
                        data_ids={}, runs_dir=runs_dir)
    return out, figs


def test_report_embeds_every_figure_and_links_the_pdfs(built):
    out, figs = built
    page = out.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2
    embedded = {base64.b64decode(i) for i in images}
    assert embedded == {(figs / "local" / f"{e}.png").read_bytes() for e in ("dlobd-fig7a", "scaffe-fig8")}
    assert 'href="../figures/local/dlobd-fig7a.pdf"' in page


def test_report_is_self_contained(built):
    page = built[0].read_text()
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="(https?:)?//', page)
    assert "<script>" in page  # the filter is inline


def test_verdict_table_rows_carry_paper_and_verdict_for_the_filter(built):
    page = built[0].read_text()
    rows = re.findall(r'<tr data-paper="([^"]+)" data-verdict="([^"]+)" data-scale="local">', page)
    assert sorted(rows) == [("dlobd", "differs"), ("scaffe", "not run")]
    assert 'id="f-paper"' in page and 'id="f-verdict"' in page
    assert '<option value="not checkable">' in page
    # claim text is escaped, not interpreted
    assert "RDMA reaches 70% &lt;sooner&gt;" in page
    assert "0.31 is not within 3% of 0.7" in page


def test_experiment_without_runs_says_not_run_with_the_reason(built):
    page = html.unescape(built[0].read_text())
    section = page[page.index('id="scaffe-fig8-local"'):]
    assert "not run</b>: needs GPUs and InfiniBand (MVAPICH2-GDR)" in section


def test_per_run_provenance_lists_every_attempt(built):
    page = html.unescape(built[0].read_text())
    section = page[page.index('id="dlobd-fig7a-local"'):page.index('id="scaffe-fig8-local"')]
    assert "local/local/dlobd-fig7a/network-loopback/attempt-001" in section
    assert "local/local/dlobd-fig7a/network-loopback/attempt-002" in section
    assert "superseded" in section  # the failed first attempt is shown, not used
    assert "exit status 1" in section
    assert "spark-submit --class test" in section
    assert "python:" in section and "cpu_model:" in section
    assert "synthetic" in section


def test_summary_counts(built):
    page = built[0].read_text()
    start = page.index('id="summary-counts"')
    summary = page[start:page.index("</table>", start)]
    cells = re.findall(r"<td[^>]*>(\d+)</td>", summary)
    # 2 experiments, 1 with results, 1 not run; verdicts holds, differs, not comparable here,
    # not run, not checkable
    assert cells == ["2", "1", "1", "0", "1", "0", "1", "0"]


def test_runs_summary_json_marks_the_used_attempt(built, tmp_path):
    summary = json.loads((tmp_path / "results" / "local" / "runs" / "dlobd-fig7a.json").read_text())
    assert [(r["status"], r["used"]) for r in summary] == [("failed", False), ("ok", True)]


def test_hardware_lines_name_cpu_cores_memory_links_and_the_fabric():
    runs_list = [
        {"used": True, "system": {"cpu_model": "AMD EPYC", "cpus": 2, "memory_mb": 24105},
         "hosts": [{"name": "w1", "address": "10.77.0.2", "link": "emulated eth-1g"}],
         "fabric": {"hca": "none"}},
        {"used": False, "system": {"cpu_model": "other", "cpus": 64}},      # superseded: not shown
    ]
    [line] = report.hardware(runs_list)
    assert line == ('AMD EPYC, 2 cores, 24 GiB; 1 host(s); links: emulated eth-1g; '
                    'fabric: {"hca": "none"}')
    assert sorted(["dlobd-fig11", "dlobd-fig4a"], key=report.natural_key) == ["dlobd-fig4a", "dlobd-fig11"]
