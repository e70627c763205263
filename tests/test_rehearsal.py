"""What `dlobd rehearsal` makes of a rehearsal's runs (dlobd/execution/rehearsal.py)."""

from pathlib import Path

from dlobd import cli
from dlobd.execution import rehearsal, runs
from dlobd.stacks import tensorflowonspark

LOG = Path(__file__).parent / "data" / "logs" / "bigdl" / "lenet-mnist" / "stderr.log"
CUT = {"epochs": "18 -> 1"}


def attempt(runs_dir, point: dict, status: str, log: str | None, reason=None, labels=None):
    a = runs.new_attempt(runs_dir, "site", "paper", "dlobd-fig6c", point)
    if log is not None:
        (a / "stderr.log").write_text(log)
    runs.write_run_json(a, {"experiment": "dlobd-fig6c", "scale": "paper", "cluster": "site", "point": point,
                            "stack": "bigdl", "status": status, "reason": reason,
                            "labels": {"rehearsal": CUT} if labels is None else labels})
    return a


def test_a_point_passes_where_it_ended_ok_and_its_logs_read_as_a_finished_run(tmp_path, capsys):
    text = LOG.read_text()
    attempt(tmp_path, {"network": "ipoib"}, "ok", text)
    # ended ok, but its log stops mid-training: it did not pass
    attempt(tmp_path, {"network": "eth-10g"}, "ok", text[:len(text) // 2].rsplit("\n", 1)[0] + "\n")
    attempt(tmp_path, {"network": "rdma"}, "not runnable", None, reason="needs rdma-spark")
    # a measurement beside them is no part of the rehearsal
    attempt(tmp_path, {"network": "ipoib"}, "failed", text, reason="exit status 1", labels={})
    lines, failing = rehearsal.summary(tmp_path, "paper")
    assert failing == 1
    assert lines[0] == (f"rehearsal at scale paper under {tmp_path}: 1 of 2 launched points passed; "
                        "1 not runnable on this cluster")
    assert lines[1] == "  did not pass  site/paper/dlobd-fig6c/network-eth-10g/attempt-001 (epochs 18 -> 1): " \
        "ended ok, but its logs stop short: stderr.log: log ends before the run's end: epoch 1 at iteration 193 " \
        "has no 'Epoch finished' line"
    assert lines[2] == "  passed        site/paper/dlobd-fig6c/network-ipoib/attempt-001 (epochs 18 -> 1)"
    assert lines[3] == "  not runnable  site/paper/dlobd-fig6c/network-rdma/attempt-001 (epochs 18 -> 1): needs rdma-spark"
    assert cli.main(["rehearsal", "--runs", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines() == lines


WAITING_NODE = (Path(__file__).parent / "data" / "logs" / "paper-profile" / "tfos-1.0.8-fig5b-rehearsal-4-workers"
                / "containers" / "container_1796100586473_0003_01_000006" / "stderr")


def test_a_pass_names_a_worker_that_waited_for_the_chief_until_the_cut_work_ended(tmp_path, monkeypatch):
    """A TF 1.x worker whose session still waited for the chief's variables when the cluster
    stopped (its log read as whole, meta waiting_for_chief) is named beside the pass."""
    node = tensorflowonspark.parse(WAITING_NODE.read_text())
    monkeypatch.setattr(rehearsal.stacks, "parse_run", lambda stack, path: node)
    attempt(tmp_path, {"network": "ipoib"}, "ok", "")
    lines, failing = rehearsal.summary(tmp_path, "paper")
    assert failing == 0
    assert lines[1] == ("  passed        site/paper/dlobd-fig6c/network-ipoib/attempt-001 (epochs 18 -> 1): worker:0 "
                        "trained no step: the cut work ended while its session waited for the chief's variables "
                        "(TensorFlow 1.x looks every 30 s)")
