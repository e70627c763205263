"""The HTML report (dlobd/results/report.py + templates/*.html.j2): index and experiment pages."""

import html
import json
import re

import pandas as pd
import pytest
import yaml

from dlobd import ROOT
from dlobd.cluster import fabric, provenance
from dlobd.execution import runs
from dlobd.results import expected, figures, report, tidy as results
from rundirs import LOGS, make_run, real_logs
from test_expected import IB

# what `make calibrate` recorded on this machine (tests/data/logs/README.md, calibrate/)
CALIBRATION = json.loads((LOGS / "calibrate" / "calibration.json").read_text())

RUN_SPEC = {
    "id": "dlobd-fig7a", "paper": "dlobd", "figure": "Fig. 7(a)", "title": "BigDL accuracy over time",
    "stack": "bigdl", "model": "vgg16", "dataset": "cifar10",
    "metric": {"name": "top1_accuracy", "unit": "fraction", "better": "higher", "reduce": "max"},
    "plot": {"form": "lines_over_time", "x": "wall_clock_s", "series": ["network"], "y_label": "Top-1 accuracy"},
    "axes": {"network": {"description": "transport"}},
    "scales": {"local": {"runnable": True, "matrix": {"network": ["loopback"]}, "dataset": "cifar10-synthetic"},
               "paper": {"cluster": "dlobd-cluster-B-comet", "runnable": True, "matrix": {"network": ["ipoib", "rdma"]}}},
}
IB_SPEC = {
    "id": "scaffe-fig8", "paper": "scaffe", "figure": "Fig. 8", "title": "S-Caffe scaling on GPUs",
    "stack": "scaffe", "model": "alexnet", "dataset": "imagenet",
    "metric": {"name": "images_per_s", "unit": "images/s", "better": "higher", "reduce": "mean"},
    "plot": {"form": "scaling_lines", "x": "gpus", "series": [], "y_label": "Images/s"},
    "axes": {"gpus": {"description": "GPUs"}},
    "scales": {"local": {"runnable": False, "reason": "needs GPUs and InfiniBand (MVAPICH2-GDR)"}},
}


def no_hca_fingerprint(tmp_path) -> dict:
    """A host without HCA or GPU, as the detector records one (an empty sysfs, no commands)."""
    return fabric.detect(tmp_path / "empty-sys", fabric.Tools(), host="vm")


@pytest.fixture
def built(tmp_path, monkeypatch):
    """Results, figures and verdicts of two experiments, laid out as the pipeline does; the runs
    carry the fingerprint and calibration of a prefix of their own."""
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc/fabric.json").write_text(json.dumps(no_hca_fingerprint(tmp_path)))
    (prefix / "etc/calibration.json").write_text(json.dumps(CALIBRATION))
    monkeypatch.setattr(provenance, "prefix", lambda: prefix)
    monkeypatch.setattr(provenance, "prefix_env", lambda: {})
    log = real_logs("bigdl", min_rows=5)[0]
    # the figures in the report's own folder, where the pipeline links them (rule report_figures)
    runs_dir, res, figs = tmp_path / "runs", tmp_path / "results", tmp_path / "report" / "figures"
    point = {"network": "loopback"}
    make_run(runs_dir, RUN_SPEC, "local", point, {"stderr.log": log}, status="failed",
             reason="exit status 1")
    make_run(runs_dir, RUN_SPEC, "local", point, {"stderr.log": log})
    parsed = results.parse_point(runs.point_dir(runs_dir, "local", "local", "dlobd-fig7a", point), runs_dir,
                                 "bigdl")
    for spec, inputs in ((RUN_SPEC, [parsed]), (IB_SPEC, [])):
        table = results.write_results(spec["id"], list(spec["axes"]), inputs,
                                      res / "local" / f"{spec['id']}.csv",
                                      res / "local" / "runs" / f"{spec['id']}.json", runs_dir, "local")
        scale = spec["scales"]["local"]
        reason = results.not_run_reason(spec, "local", scale, table, runs_dir)
        figures.draw(spec, "local", scale, table, figs / "local" / f"{spec['id']}.png", not_run=reason)
    verdicts = res / "local" / "verdicts"
    verdicts.mkdir(parents=True)
    pd.DataFrame([
        {"paper": "dlobd", "experiment": "dlobd-fig7a", "claim_id": "dlobd-c30", "kind": "quantitative",
         "scale": "local", "verdict": "differs", "reason": "0.31 is not within 3% of 0.7",
         "paper_values": "0.7", "reproduced": "top1 = 0.31", "check": "approx(y, 0.7, rtol=0.03)",
         "text": "RDMA reaches 70% <sooner>", "finding": "top-1 accuracy 31% (the paper: 70%, within 3%)"},
    ]).to_csv(verdicts / "dlobd-fig7a.csv", index=False)
    pd.DataFrame([
        {"paper": "scaffe", "experiment": "scaffe-fig8", "claim_id": "scaffe-c01", "kind": "trend",
         "scale": "local", "verdict": "not run", "reason": "no ok result for y[gpus=160]",
         "paper_values": "", "reproduced": "", "check": "y[gpus=160] > y[gpus=80]", "text": "scales"},
    ]).to_csv(verdicts / "scaffe-fig8.csv", index=False)
    out = tmp_path / "report" / "index.html"

    def write(**options):
        report.write_report(out, specs={"dlobd-fig7a": RUN_SPEC, "scaffe-fig8": IB_SPEC}, scales=["local"],
                            figures_dir=figs, results_dir=res, verdict_ids=["dlobd-fig7a", "scaffe-fig8"],
                            data_ids={}, runs_dir=runs_dir, **options)
    write()
    # the report again, as it is written when the figures' PDFs are drawn beside it (pdf: true)
    return out, figs, write


def experiment_page(index, experiment: str) -> str:
    return html.unescape((index.parent / "experiments" / f"{experiment}-local.html").read_text())


def test_index_links_every_figure_and_each_experiment_page_its_figure(built):
    out, figs, _ = built
    page = out.read_text()
    # thumbnails: the figure files themselves, loaded lazily, each linking to its page
    thumbs = re.findall(r'<a href="experiments/([^"]+)-local\.html">\s*<img src="([^"]+)" loading="lazy"', page)
    assert thumbs == [(e, f"figures/local/{e}.png") for e in ("dlobd-fig7a", "scaffe-fig8")]
    assert all((out.parent / src).resolve() == (figs / "local" / f"{e}.png").resolve() for e, src in thumbs)
    assert "data:image" not in page
    own = experiment_page(out, "dlobd-fig7a")
    assert '<img src="../figures/local/dlobd-fig7a.png"' in own
    assert 'href="../index.html"' in own
    # built without PDFs: the page says how to get one instead of linking a missing file
    assert ".pdf" not in own and "as a vector PDF: <code>make figures-pdf</code>" in own


def test_pages_link_the_pdfs_drawn_with_the_report_only(built):
    out, figs, write = built
    pdf = figs / "local" / "dlobd-fig7a.pdf"
    pdf.write_bytes(b"%PDF-1.4 left by an earlier build")
    write()
    # a PDF left from an earlier build may show other runs: not linked
    assert ".pdf" not in experiment_page(out, "dlobd-fig7a")
    # drawn with the report (the pipeline draws them beside it, so none need be there yet)
    write(pdfs=True)
    assert 'href="../figures/local/dlobd-fig7a.pdf"' in experiment_page(out, "dlobd-fig7a")
    assert 'href="../figures/local/scaffe-fig8.pdf"' in experiment_page(out, "scaffe-fig8")


def test_report_is_self_contained(built):
    for page in [built[0], *built[0].parent.glob("experiments/*.html")]:
        text = page.read_text()
        assert not re.search(r'<(script|link|img)[^>]+(src|href)="(https?:)?//', text), page
        assert not re.search(r'(src|href)="/', text), page  # relative links only: no server
    assert "<script>" in built[0].read_text()  # the filter is inline


def test_verdict_table_rows_carry_paper_and_verdict_for_the_filter(built):
    page = built[0].read_text()
    rows = re.findall(r'<tr data-paper="([^"]+)" data-verdict="([^"]+)" data-scale="local">', page)
    assert sorted(rows) == [("dlobd", "differs"), ("scaffe", "not run")]
    assert 'id="f-paper"' in page and 'id="f-verdict"' in page
    assert '<option value="not checkable">' in page
    # claim text is escaped, not interpreted
    assert "RDMA reaches 70% &lt;sooner&gt;" in page
    # the finding in the table; the evaluated values and the reason under the check
    assert '<td class="finding"><div class="clip">top-1 accuracy 31% (the paper: 70%, within 3%)' in page
    fold = page[page.index('<details class="check"><summary>check</summary><code>approx(y, 0.7, rtol=0.03)'):]
    fold = fold[:fold.index("</details>")]
    assert "evaluated: top1 = 0.31" in fold and "differs: 0.31 is not within 3% of 0.7" in fold


def test_headers_and_thumbnails_name_what_ran_beside_the_paper_s_model_and_stack(built):
    """The spec's model and stack are the paper's; the scale's own model and the version the runs
    recorded are what ran."""
    spec = {**RUN_SPEC, "scales": {**RUN_SPEC["scales"], "local": {**RUN_SPEC["scales"]["local"],
                                                                  "fixed": {"model": "lenet5"}}}}
    ran = report.what_ran(spec, spec["scales"]["local"], [
        {"used": True, "status": "ok", "versions": {"stack": "bigdl 2.4.0"}},
        {"used": False, "status": "ok", "versions": {"stack": "bigdl 0.3.0"}}])
    assert ran == {"ran": True, "model": "lenet5", "data": "cifar10-synthetic", "stack": "bigdl 2.4.0",
                   "paper": "vgg16, bigdl"}
    # a bare version takes the stack's name: the stack axis' value where the spec has one
    assert report.what_ran({"model": "m", "stack": "tensorflowonspark", "stack_axis": "framework"}, {}, [
        {"used": True, "status": "ok", "point": {"framework": "tensorflow"}, "versions": {"stack": "2.15.1"}},
    ])["stack"] == "tensorflow 2.15.1"
    # the fixture's experiment ran the paper's model and stack: no paper part; not run: says so
    own = experiment_page(built[0], "dlobd-fig7a")
    assert "ran: <b>vgg16</b> on cifar10-synthetic with <b>bigdl" in own and "(paper:" not in own
    assert "set for the local scale, not run: <b>alexnet</b> on imagenet with <b>scaffe</b>" \
        in experiment_page(built[0], "scaffe-fig8")


def test_experiment_without_runs_says_not_run_with_the_reason(built):
    section = experiment_page(built[0], "scaffe-fig8")
    assert "not run</b>: needs GPUs and InfiniBand (MVAPICH2-GDR)" in section


def test_per_run_provenance_lists_every_attempt(built):
    section = experiment_page(built[0], "dlobd-fig7a")
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


def test_hardware_lines_name_cpu_cores_memory_links_and_the_fabric(tmp_path):
    ib = json.loads(json.dumps(no_hca_fingerprint(tmp_path)))
    ib["infiniband"]["hcas"] = [{"device": "mlx5_0", "ports": [
        {"port": 1, "state": "ACTIVE", "rate_gbps": 100.0, "link_layer": "InfiniBand", "netdev": "ib0",
         "ipv4": ["192.168.100.2"]}]}]
    runs_list = [
        {"used": True, "system": {"cpu_model": "AMD EPYC", "cpu_isa": ["sse4_2", "avx", "avx2", "fma"],
                                  "cpus": 2, "memory_mb": 24105},
         "hosts": [{"name": "w1", "address": "10.77.0.2", "link": "emulated eth-1g"}],
         "fabric": {"vm": no_hca_fingerprint(tmp_path), "node02": ib, "node03": ib, "node04": None}},
        {"used": False, "system": {"cpu_model": "other", "cpus": 64}},      # superseded: not shown
    ]
    [line] = report.hardware(runs_list)
    # hosts with the same hardware share a line; their own addresses are left out there
    assert line == ("AMD EPYC (AVX2), 2 cores, 24 GiB; 1 host(s); links: emulated eth-1g; "
                    "fabric: vm: no InfiniBand HCA; no GPU · node02, node03: mlx5_0 port 1 ACTIVE "
                    "100 Gb/s InfiniBand, ib0; no GPU · node04: not recorded")
    # runs from before run.json recorded the vector sets, and one with AVX-512
    assert report.hardware([{"used": True, "system": {"cpu_model": "AMD EPYC", "cpus": 2}}])[0].startswith(
        "AMD EPYC, 2 cores; ")
    assert report.widest_isa(["avx2", "fma", "avx512f", "avx512_vnni"]) == "AVX-512"
    assert sorted(["dlobd-fig11", "dlobd-fig4a"], key=report.natural_key) == ["dlobd-fig4a", "dlobd-fig11"]


def test_the_paper_cluster_stands_beside_the_fabric_measured_here(tmp_path):
    run_list = [{"used": True, "start": "2026-11-24T15:00:00Z", "calibration": CALIBRATION,
                 "fabric": {"vm": no_hca_fingerprint(tmp_path)}},
                {"used": False, "start": "2026-11-24T16:00:00Z", "calibration": {"error": "superseded"}}]
    rows = report.fabric_rows(RUN_SPEC, run_list)
    assert rows["paper"] == {
        "name": 'SDSC Comet ("Cluster B" of the DLoBD paper), 1984 nodes, up to 17 used',
        "network": "InfiniBand FDR, full bisection bandwidth within a rack, 4:1 oversubscribed across racks, 56 Gb/s",
        "gpus": "none stated", "where": "DLoBD Sec. 4.1, item (2)"}
    here = rows["here"]
    assert here["link"] == "loopback (one host: vm)"
    assert here["tcp"] == "7.21 µs / 21 Gb/s (sockperf, iperf3)"
    assert here["rdma"].startswith("not runnable: no HCA with an ACTIVE port on vm (fabric.json: "
                                   "no InfiniBand HCA; no GPU)")
    assert here["measured"] == "2026-11-24T14:44:52Z, load 6.66"
    assert here["hosts"] == ["vm: no InfiniBand HCA; no GPU"]
    # runs without a calibration say how to get one
    bare = report.fabric_rows(RUN_SPEC, [{"used": True}])["here"]
    assert bare["link"].startswith("not measured") and "make calibrate" in bare["link"]
    assert bare["hosts"] == ["fingerprint not recorded in run.json"]
    assert report.fabric_rows(IB_SPEC, run_list)["paper"] is None  # no paper scale, no row


def test_experiment_section_shows_the_fabric_table(built):
    section = experiment_page(built[0], "dlobd-fig7a")
    table = section[section.index('<table class="fabric">'):]
    table = table[:table.index("</table>")]
    assert 'SDSC Comet ("Cluster B" of the DLoBD paper)' in table and "DLoBD Sec. 4.1, item (2)" in table
    assert "56 Gb/s" in table
    assert "loopback (one host: vm)" in table and "7.21 µs / 21 Gb/s (sockperf, iperf3)" in table
    assert "vm: no InfiniBand HCA; no GPU" in table
    assert '<table class="fabric">' not in experiment_page(built[0], "scaffe-fig8")


def test_network_comparisons_carry_the_expected_speedup_of_the_model(tmp_path, monkeypatch):
    """A run of the RDMA-gRPC latency sweep on a fabric whose calibration has RDMA: its section
    sets the model's expected ratio beside the slide's "up to 2.7x", labelled a model's, with
    the inputs from both sides."""
    spec = yaml.safe_load((ROOT / "experiments" / "slides-rdma-grpc-latency-small.yaml").read_text())
    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc/calibration.json").write_text(json.dumps(IB))
    monkeypatch.setattr(provenance, "prefix", lambda: prefix)
    monkeypatch.setattr(provenance, "prefix_env", lambda: {})
    runs_dir, res = tmp_path / "runs", tmp_path / "results"
    make_run(runs_dir, spec, "local", {"network": "loopback", "payload_bytes": 2}, {"stdout.log": "no output"})
    results.write_results(spec["id"], list(spec["axes"]), [], res / "local" / f"{spec['id']}.csv",
                          res / "local" / "runs" / f"{spec['id']}.json", runs_dir, "local")
    out = report.write_report(tmp_path / "report" / "index.html", specs={spec["id"]: spec}, scales=["local"],
                              figures_dir=tmp_path / "figures", results_dir=res, verdict_ids=[spec["id"]],
                              data_ids={}, runs_dir=runs_dir)
    page = html.unescape((out.parent / "experiments" / f"{spec['id']}-local.html").read_text())
    table = page[page.index('<table class="fabric expected">'):]
    table = table[:table.index("</table>")]
    assert "expected (model) speedup" in table and "not a measurement" in table and expected.MODEL in table
    row = [r for r in table.split("<tr>") if "ipoib over grpc+rdma" in r][0]
    cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
    assert cells[0] == "ipoib over grpc+rdma<br><span class=\"meta\">claims slides-c26</span>"
    assert cells[1].startswith("ratio up to 2.7<br>")
    assert cells[2] == "ratio 6.81 for payload_bytes 2, 8, 32, 128, 512 (the largest result kept)"
    assert cells[3] == "ipoib and grpc+rdma ride the same InfiniBand link: its rate does not separate them"
    assert "here, grpc+rdma: RDMA between 127.0.0.1 and 127.0.0.1: 1.06 µs, 96.38 Gb/s" in cells[4]
    assert "paper, ipoib: SDSC-Comet-FDR (SC'18 slides, RDMA-gRPC micro-benchmark)'s InfiniBand link, rate not stated" in cells[4]


def test_a_scale_s_profile_notes_show_beside_the_runs_of_that_profile_only():
    scale = {"notes": ["shrunk"], "profile_notes": {"modern": ["TFoS 2.2.5: no parameter server"],
                                                    "paper": ["TFoS 1.0.8: one parameter server"]}}
    paper_run = {"used": True, "labels": {"profile": "paper"}}
    unlabelled = {"used": True, "labels": {"data": "mnist"}}  # recorded before runs named their profile
    assert report.scale_notes(scale, [paper_run]) == [
        "shrunk", "on the paper profile's software: TFoS 1.0.8: one parameter server"]
    assert report.scale_notes(scale, [unlabelled, {**paper_run, "used": False}]) == [
        "shrunk", "on the modern profile's software: TFoS 2.2.5: no parameter server"]
    assert report.scale_notes(scale, []) == ["shrunk"]


def test_runs_are_stale_only_where_their_scale_of_the_spec_or_their_stacks_code_changed(tmp_path):
    import subprocess
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    spec_file, module = tmp_path / "experiments" / "x.yaml", tmp_path / "dlobd" / "stacks" / "s.py"
    spec_file.parent.mkdir(parents=True)
    module.parent.mkdir(parents=True)
    spec = {"id": "x", "stack": "s", "scales": {"local": {"fixed": {"epochs": 2}}, "paper": {"fixed": {"epochs": 18}}}}
    spec_file.write_text(yaml.safe_dump(spec))
    module.write_text("x = 1\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "recorded"], check=True)
    recorded = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    entry = {"id": "x", "stack": "s", "launchers": ["s"], "scale": "local", "commits": [recorded, "0" * 40],
             "runs": [{"run_id": "local/local/x/network-ipoib/attempt-001", "used": True}]}
    unknown = {"commit": "0" * 40, "changed": None}
    # the paper scale's part edited (uncommitted): nothing the local runs ran
    spec["scales"]["paper"]["rehearsal"] = {"epochs": 1}
    spec_file.write_text(yaml.safe_dump(spec))
    assert report.stale_runs(entry, tmp_path) == [unknown]
    # the local scale's part, then the stack's module
    spec["scales"]["local"]["fixed"]["epochs"] = 3
    spec_file.write_text(yaml.safe_dump(spec))
    assert report.stale_runs(entry, tmp_path) == [{"commit": recorded, "changed": ("experiments/x.yaml",)}, unknown]
    spec["scales"]["local"]["fixed"]["epochs"] = 2
    spec_file.write_text(yaml.safe_dump(spec))
    # the module's docstrings and comments: not what its runs ran
    module.write_text('"""The stack s."""\n\n\ndef f():\n    """One."""\n    return 1  # one\n\n\nx = 1\n')
    subprocess.run([*git, "commit", "-qam", "recorded"], check=True)
    recorded = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    entry["commits"][0] = recorded
    module.write_text('"""The stack s, as its runs read it."""\n\n\ndef f():\n    # the one\n    return 1\n\n\nx = 1\n')
    provenance.changed_since.cache_clear()  # (git's answer is kept for the process: the report's)
    assert report.stale_runs(entry, tmp_path) == [unknown]
    module.write_text('"""The stack s."""\n\n\ndef f():\n    """One."""\n    return 1\n\n\nx = 2\n')
    provenance.changed_since.cache_clear()
    assert report.stale_runs(entry, tmp_path) == [{"commit": recorded, "changed": ("dlobd/stacks/s.py",)}, unknown]
    # a docstring that becomes code is code
    module.write_text('"""The stack s."""\n\n\ndef f():\n    return """One."""\n\n\nx = 1\n')
    provenance.changed_since.cache_clear()
    assert report.stale_runs(entry, tmp_path) == [{"commit": recorded, "changed": ("dlobd/stacks/s.py",)}, unknown]
