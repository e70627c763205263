"""dlobd compare-profiles: the same points on the modern and on the paper profile's software,
their values side by side. The modern side is dlobd-fig6c's reference run (BigDL 2.4.0, 10
epochs of 2,560 MNIST images); the paper side the paper profile's real BigDL 0.3.0 run of
tests/data/logs (6 epochs of 12,800: the integration test's settings, not the figure's), so
the values differ for both reasons, which the test does not judge."""

import html
import re
import shutil
from pathlib import Path

from dlobd import cli, spec
from dlobd.execution import runs
from dlobd.results import compareprofiles, comparepaths, report

ROOT = Path(__file__).resolve().parent.parent
MODERN = ROOT / "data/reference/local/local/dlobd-fig6c/network-loopback/attempt-001"
PAPER = ROOT / "tests/data/logs/paper-profile/bigdl-0.3.0-lenet-mnist"
POINT = "local/local/dlobd-fig6c/network-loopback/attempt-001"


def runs_dir(base: Path, attempt: Path) -> Path:
    """A runs directory holding one attempt (its run record and the driver's log)."""
    target = base / POINT
    target.mkdir(parents=True)
    for name in ("run.json", "stderr.log"):
        shutil.copy(attempt / name, target / name)
    return base


def test_a_point_ok_on_both_profiles_shows_each_side_s_software_and_values(tmp_path, capsys):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    assert cli.main(["compare-profiles", str(modern), str(paper)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("local/dlobd-fig6c/network-loopback:")
    assert out[at + 1].startswith("    modern software: ") and out[at + 1].endswith("bigdl 2.4.0")
    assert "hadoop 2.7.3, spark 2.1.2" in out[at + 2] and out[at + 2].endswith("bigdl 0.3.0")
    # the last epoch's accuracy of each: 0.8405 after 10 epochs, 0.9265 after 6
    assert out[at + 3] == "    top1_accuracy: modern 0.8405 | paper 0.9265  (paper/modern 1.1)"
    assert out[-1] == "points: 1, compared (ok on both): 1"


def test_a_point_not_ok_on_a_side_is_listed_with_its_reason_not_compared(tmp_path, capsys):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    record = runs.read_attempt(paper / POINT, paper).record
    runs.write_run_json(runs.new_attempt(paper, "local", "local", "dlobd-fig6c", record["point"]),
                        {**record, "status": "failed", "reason": "exit status 1"})
    assert cli.main(["compare-profiles", str(modern), str(paper)]) == 0
    out = capsys.readouterr().out
    # the newest attempt is a failure, the older ok one is chosen, as the results choose it
    assert "top1_accuracy: modern 0.8405 | paper 0.9265" in out
    shutil.rmtree(paper / POINT)
    assert cli.main(["compare-profiles", str(modern), str(paper)]) == 0
    out = capsys.readouterr().out
    assert "local/dlobd-fig6c/network-loopback: modern ok | paper failed  not compared" in out
    assert "    paper reason: exit status 1" in out
    assert out.rstrip().endswith("points: 1, compared (ok on both): 0")


def test_an_unknown_experiment_or_a_missing_directory_is_named(tmp_path, capsys):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    assert cli.main(["compare-profiles", str(modern), str(paper), "--experiment", "dlobd-fig99"]) == 2
    assert "no experiment spec dlobd-fig99 under experiments/" in capsys.readouterr().out
    assert cli.main(["compare-profiles", str(tmp_path / "nowhere"), str(paper)]) == 2
    assert f"{tmp_path / 'nowhere'}: not a directory of runs" in capsys.readouterr().out


def test_a_log_its_parser_cannot_read_is_named_not_compared(tmp_path, capsys):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    (paper / POINT / "stderr.log").write_text("")  # the driver's log lost
    assert cli.main(["compare-profiles", str(modern), str(paper)]) == 0
    out = capsys.readouterr().out
    assert "local/dlobd-fig6c/network-loopback: not compared: paper unparseable: " in out
    assert out.rstrip().endswith("points: 1, compared (ok on both): 0")


def profiles_report(tmp_path, modern: Path, paper: Path) -> tuple[str, str]:
    """The report of dlobd-fig6c with the profiles rule's table of the two runs directories: its
    index and the experiment's page."""
    specs = spec.load_all()
    found = compareprofiles.points(comparepaths.compare(modern, paper), modern, paper, specs)
    table = tmp_path / "profiles.csv"
    compareprofiles.frame(found).to_csv(table, index=False)
    index = report.write_report(tmp_path / "report" / "index.html", specs={"dlobd-fig6c": specs["dlobd-fig6c"].data},
                                scales=["local"], figures_dir=tmp_path / "figures", results_dir=tmp_path / "results",
                                verdict_ids=[], data_ids={}, runs_dir=modern, profiles=([table], paper))
    page = html.unescape((index.parent / "experiments" / "dlobd-fig6c-local.html").read_text())
    start = page.index('<div class="profiles" id="profiles">')
    return html.unescape(index.read_text()), page[start:page.index("</div>", start)]


def test_the_report_sets_a_point_of_both_profiles_side_by_side(tmp_path):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    index, table = profiles_report(tmp_path, modern, paper)
    assert f"runs under <code>{paper}</code>" in table
    assert "hadoop 3.4.1" in table and "bigdl 2.4.0" in table and "hadoop 2.7.3, spark 2.1.2" in table
    cells = re.findall(r"<td>([^<]*)</td>", table)
    assert cells == ["top1_accuracy", "0.8405", "0.9265", "1.1"]
    assert "share 1 point with these runs; 1 ok on both are compared" in index
    assert 'href="experiments/dlobd-fig6c-local.html#profiles">dlobd-fig6c</a>' in index


def ended(side: Path, status: str, reason: str) -> None:
    """The side's one attempt replaced by one of that status and reason."""
    record = runs.read_attempt(side / POINT, side).record
    shutil.rmtree(side / POINT)
    runs.write_run_json(runs.new_attempt(side, "local", "local", "dlobd-fig6c", record["point"]),
                        {**record, "status": status, "reason": reason})


def test_the_report_names_why_a_point_of_both_profiles_is_not_compared(tmp_path):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    ended(paper, "failed", "exit status 1")
    index, table = profiles_report(tmp_path, modern, paper)
    assert "no point ran ok on both profiles" in table
    assert "1 point not compared: a side did not run ok" in table
    assert "<li><code>network-loopback</code>: paper failed: exit status 1</li>" in table
    assert "share 1 point with these runs; 0 ok on both are compared" in index


def test_a_point_not_run_on_either_side_for_one_reason_says_it_once(tmp_path):
    modern, paper = runs_dir(tmp_path / "modern", MODERN), runs_dir(tmp_path / "paper", PAPER)
    for side in (modern, paper):
        ended(side, "not runnable", "needs rdma: no HCA")
    _, table = profiles_report(tmp_path, modern, paper)
    assert "<li><code>network-loopback</code>: both not runnable: needs rdma: no HCA</li>" in table
