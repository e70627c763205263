"""dlobd compare-paths: the same points through two execution paths, statuses side by side."""

from dlobd import cli
from dlobd.execution import runs


def record(runs_dir, cluster, experiment, point, status, path, reason=None):
    attempt = runs.new_attempt(runs_dir, cluster, "local", experiment, point)
    runs.write_run_json(attempt, {"experiment": experiment, "scale": "local", "cluster": cluster,
                                  "point": point, "status": status, "reason": reason,
                                  "execution": {"path": path}, "versions": {"hadoop": "3.4.1"}})
    return attempt


TF = {"network": "eth-1g-emulated", "nodes": 2}
TFOS = {"gpus": 2, "network": "loopback", "workload": "mnist"}


def test_matching_statuses_across_paths_and_clusters(tmp_path, capsys):
    local, slurm = tmp_path / "local", tmp_path / "slurm"
    record(local, "emulated", "rdmatf-fig6", TF, "ok", "bare-metal")
    record(local, "emulated", "dlobd-fig5b", TFOS, "ok", "bare-metal")
    record(slurm, "slurm", "rdmatf-fig6", TF, "failed", "slurm+prefix", reason="exit status 1")
    record(slurm, "slurm", "rdmatf-fig6", TF, "ok", "slurm+prefix")  # the newest ok counts
    record(slurm, "slurm", "dlobd-fig5b", TFOS, "ok", "slurm+prefix")
    assert cli.main(["compare-paths", str(local), str(slurm)]) == 0
    out = capsys.readouterr().out
    assert "local/rdmatf-fig6/network-eth-1g-emulated_nodes-2: ok | ok  same" in out
    assert "execution.path: bare-metal | slurm+prefix" in out
    assert "versions.hadoop" not in out
    assert out.rstrip().endswith("points: 2, status mismatches: 0")


def test_a_status_difference_or_a_point_on_one_side_only_fails(tmp_path, capsys):
    local, slurm = tmp_path / "local", tmp_path / "slurm"
    record(local, "emulated", "rdmatf-fig6", TF, "ok", "bare-metal")
    record(local, "emulated", "dlobd-fig5b", TFOS, "ok", "bare-metal")
    record(slurm, "slurm", "rdmatf-fig6", TF, "failed", "slurm+prefix", reason="cancelled by Slurm")
    assert cli.main(["compare-paths", str(local), str(slurm)]) == 1
    out = capsys.readouterr().out
    assert "rdmatf-fig6/network-eth-1g-emulated_nodes-2: ok | failed  MISMATCH" in out
    assert "B reason: cancelled by Slurm" in out
    assert "dlobd-fig5b/gpus-2_network-loopback_workload-mnist: ok | absent  MISMATCH" in out
    assert "status mismatches: 2" in out


def test_a_missing_runs_directory_is_named(tmp_path, capsys):
    assert cli.main(["compare-paths", str(tmp_path / "nowhere"), str(tmp_path)]) == 2
    assert f"{tmp_path / 'nowhere'}: not a directory of runs" in capsys.readouterr().out
