"""Raw runs to the tidy results table (dlobd/results/tidy.py), on real BigDL logs."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dlobd import stacks
from dlobd.execution import runs
from dlobd.results import tidy as results
from rundirs import make_run, real_logs

SPEC = {
    "id": "dlobd-fig7a",
    "stack": "bigdl",
    "dataset": "cifar10",
    "axes": {"network": {"description": "Spark transport"}, "cores": {"description": "cores"}},
    "scales": {"local": {"runnable": True, "matrix": {"network": ["loopback"], "cores": [1, 2]},
                         "dataset": "cifar10-synthetic"}},
}
AXES = ["network", "cores"]


@pytest.fixture
def log():
    return real_logs("bigdl", min_rows=5)[0]


def _expected_rows(path):
    return stacks.get("bigdl").parse(stacks.read_log(path)).rows


def _point_dir(tmp_path, point):
    return runs.point_dir(tmp_path, "local", "local", SPEC["id"], point)


def test_ok_run_gives_the_parser_rows_with_point_and_provenance(tmp_path, log):
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": log})
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    expected = _expected_rows(log)
    assert len(frame) == len(expected)
    assert list(frame["value"]) == pytest.approx([r["value"] for r in expected])
    assert set(frame["status"]) == {"ok"}
    assert set(frame["point.cores"]) == {1} and set(frame["point.network"]) == {"loopback"}
    assert set(frame["run_id"]) == {"local/local/dlobd-fig7a/cores-1_network-loopback/attempt-001"}
    assert set(frame["data_label"]) == {"synthetic"}
    assert set(frame["log"]) == {"stderr.log"}


def test_newest_ok_attempt_wins_over_a_newer_failure(tmp_path, log):
    point = {"network": "loopback", "cores": 2}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": log})
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": "Exception in thread main\n"},
             status="failed", reason="exit status 1")
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    assert set(frame["run_id"]) == {"local/local/dlobd-fig7a/cores-2_network-loopback/attempt-001"}
    assert set(frame["attempts"]) == {2}
    assert frame["value"].notna().all()


def test_failed_run_is_one_status_row_with_its_reason(tmp_path, log):
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": log}, status="hung",
             reason="killed after the time limit of 900 s")
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["status"], row["reason"]) == ("hung", "killed after the time limit of 900 s")
    assert pd.isna(row["value"]) and row["metric"] is None


@pytest.mark.parametrize("damage,reason_part", [
    (lambda text: "", "empty"),
    (lambda text: "\x00\x01\x02" * 200, "binary"),
    (lambda text: "hello\nnothing of BigDL here\n", "line of bigdl's format"),
])
def test_damaged_log_of_an_ok_run_is_unparseable_never_numbers(tmp_path, log, damage, reason_part):
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point,
             {"stderr.log": damage(stacks.read_log(log))})
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    assert len(frame) == 1
    assert frame.iloc[0]["status"] == "unparseable"
    assert reason_part in frame.iloc[0]["reason"]
    assert frame["value"].isna().all()


def test_ok_run_with_truncated_log_is_unparseable(tmp_path, log):
    text = stacks.read_log(log)
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": text[: len(text) // 2]})
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    # a damaged log gives a status row with the reason, and no partial numbers
    assert list(frame["status"]) == ["unparseable"]
    assert "cut short" in frame.iloc[0]["reason"]
    assert frame["value"].isna().all()


def test_broken_run_json_makes_the_point_unparseable(tmp_path, log):
    point = {"network": "loopback", "cores": 1}
    attempt = runs.new_attempt(tmp_path, "local", "local", SPEC["id"], point)
    (attempt / "run.json").write_text('{"status": "ok"}')
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")
    assert frame.iloc[0]["status"] == "unparseable"
    assert "missing field" in frame.iloc[0]["reason"]


def test_stack_without_parser_is_unparseable(tmp_path, log):
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": log})
    frame = results.parse_point(_point_dir(tmp_path, point), tmp_path, "mxnet")
    assert frame.iloc[0]["status"] == "unparseable"
    assert "unknown stack 'mxnet'" in frame.iloc[0]["reason"]


def _parsed_with_monitor(tmp_path, log, name: str, samples: str):
    """The parsed point of a run whose monitor wrote `samples` to monitor/<name>."""
    point = {"network": "loopback", "cores": 1}
    make_run(tmp_path, SPEC, "local", point, {"stderr.log": log, f"monitor/{name}": samples})
    return results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl")


def test_monitor_samples_become_vocabulary_rows(tmp_path, log):
    monitor = ("time_s,host,cpu_util_pct,rss_mb,net_lo_rx_bytes,net_lo_tx_bytes\n"
               "0.0,vm,10.0,100.0,0,0\n1.0,vm,55.5,120.0,2000000,1000000\n"
               "2.0,vm,60.0,130.0,6000000,1000000\n")
    frame = _parsed_with_monitor(tmp_path, log, "vm.csv", monitor)
    mon = frame[frame["log"] == "monitor/vm.csv"]
    cpu = mon[mon["metric"] == "cpu_util_pct"]
    # (the first sample's CPU value is psutil's first call: no reading)
    assert list(cpu["value"]) == [55.5, 60.0] and set(cpu["unit"]) == {"%"}
    assert list(mon[mon["metric"] == "host_mem_mb"]["value"]) == [100.0, 120.0, 130.0]
    rx = mon[(mon["metric"] == "net_mb_per_s") & (mon["direction"] == "rx")]
    assert list(rx["value"]) == [2.0, 4.0] and list(rx["wall_clock_s"]) == [1.0, 2.0]
    assert set(rx["interface"]) == {"lo"} and set(mon["host"]) == {"vm"}


def test_gpu_samples_become_gpu_metrics(tmp_path, log):
    # a GPU host's columns (dlobd/cluster/monitor.py) with the H200's values under load; an empty
    # cell is a sample nvidia-smi did not give
    monitor = ("time_s,host,cpu_util_pct,rss_mb,gpu0_util_pct,gpu0_mem_mib,gpu_job_mem_mib\n"
               "0.0,gpu1,10.0,100.0,,,\n1.0,gpu1,12.0,700.0,100,6863,3992\n"
               "2.0,gpu1,12.0,709.0,100,6863,3992\n")
    mon = _parsed_with_monitor(tmp_path, log, "gpu1.csv", monitor)
    job = mon[mon["metric"] == "gpu_mem_gb"]
    assert list(job["wall_clock_s"]) == [1.0, 2.0] and set(job["unit"]) == {"GB"}
    assert job["value"].round(3).tolist() == [4.186, 4.186]  # 3,992 MiB
    device = mon[mon["metric"] == "gpu_device_mem_gb"]
    assert device["value"].round(3).tolist() == [7.196, 7.196] and set(device["gpu"]) == {"0"}
    util = mon[mon["metric"] == "gpu_util_pct"]
    assert list(util["value"]) == [100.0, 100.0] and set(util["host"]) == {"gpu1"}


def test_a_monitor_file_from_before_the_gpu_columns_still_reads(tmp_path, log):
    # the H200's samples as the monitor wrote them before it sampled GPUs (CRLF line ends)
    real = (Path(__file__).parent / "data" / "gpu-h200" / "monitor.csv").read_bytes().decode()
    mon = _parsed_with_monitor(tmp_path, log, "vm.csv", real)
    assert mon.loc[mon["metric"] == "host_mem_mb", "value"].max() == 709.0
    assert not mon["metric"].astype(str).str.startswith("gpu").any()


REFERENCE = Path(__file__).resolve().parent.parent / "data" / "reference" / "local" / "local"


def test_the_samples_that_measure_no_job_give_no_row(tmp_path, log):
    # dlobd-fig9's TensorFlow run as sampled: 8 samples, the first at 0.014 s with psutil's
    # first 100.0 %, the last at 7.001 s after the job exited (0 processes, 0.0 MB)
    real = Path(__file__).parent / "data/logs/monitor/dlobd-fig9-tensorflow-f513b91.csv"
    raw = pd.read_csv(real)
    assert (raw["cpu_util_pct"].iloc[0], raw["rss_mb"].iloc[-1], raw["processes"].iloc[-1]) == (100.0, 0.0, 0)
    mon = _parsed_with_monitor(tmp_path, log, "vm.csv", real.read_text())
    cpu = mon[mon["metric"] == "cpu_util_pct"]
    memory = mon[mon["metric"] == "host_mem_mb"]
    assert list(cpu["value"]) == list(raw["cpu_util_pct"].iloc[1:-1])
    assert list(memory["value"]) == list(raw["rss_mb"].iloc[:-1]) and memory["value"].iloc[-1] == 540.6
    for metric in ("net_mb_per_s", "host_mem_mb", "cpu_util_pct"):
        assert mon.loc[mon["metric"] == metric, "wall_clock_s"].max() == 6.007, metric


def test_a_job_not_yet_started_or_not_yet_reaped_keeps_its_samples_until_it_ends(tmp_path, log):
    # a --match sampler sees no process until YARN starts the containers: those samples stand;
    # a job whose processes are zombies (1 process, 0.0 MB, as rdmatf-fig6's last sample) has ended
    monitor = ("time_s,host,cpu_util_pct,rss_mb,processes\n0.01,vm,100.0,0.0,0\n1.0,vm,20.0,0.0,0\n"
               "2.0,vm,90.0,800.0,3\n3.0,vm,95.0,900.0,3\n4.0,vm,52.0,0.0,1\n5.0,vm,3.0,0.0,0\n")
    mon = _parsed_with_monitor(tmp_path, log, "vm.csv", monitor)
    assert list(mon.loc[mon["metric"] == "host_mem_mb", "value"]) == [0.0, 0.0, 800.0, 900.0]
    assert list(mon.loc[mon["metric"] == "cpu_util_pct", "value"]) == [20.0, 90.0, 95.0]
    # the monitor's own file from now on leaves the first CPU cell empty
    monitor = "time_s,host,cpu_util_pct,rss_mb,processes\n0.01,vm,,10.0,1\n1.0,vm,20.0,50.0,1\n"
    mon = _parsed_with_monitor(tmp_path / "new", log, "vm.csv", monitor)
    assert list(mon.loc[mon["metric"] == "cpu_util_pct", "value"]) == [20.0]
    assert list(mon.loc[mon["metric"] == "host_mem_mb", "value"]) == [10.0, 50.0]


def test_a_trace_ends_before_the_job_s_processes_exit(tmp_path, log):
    # the job's JVMs exit one after another: 4385 MB, then 22 MB with 3 of 4 processes exited,
    # then the closing sample; a Python worker that exits mid-run (2.0 s) cuts nothing
    monitor = ("time_s,host,cpu_util_pct,rss_mb,processes,exited\n0.01,vm,,100.0,2,0\n"
               "1.0,vm,90.0,3000.0,4,0\n2.0,vm,95.0,3900.0,4,1\n3.0,vm,97.0,4385.0,4,0\n"
               "4.0,vm,60.0,22.0,4,3\n5.0,vm,3.0,0.0,0,1\n")
    mon = _parsed_with_monitor(tmp_path, log, "vm.csv", monitor)
    assert list(mon.loc[mon["metric"] == "host_mem_mb", "value"]) == [100.0, 3000.0, 3900.0, 4385.0]
    assert mon.loc[mon["log"] == "monitor/vm.csv", "wall_clock_s"].max() == 3.0


def test_a_process_exited_all_run_does_not_end_the_trace_at_its_start(tmp_path, log):
    # dlobd-fig8a's CaffeOnSpark run as sampled: one process of its tree stays a zombie from the
    # second sample on (exited 1 in 229 of 232 samples); its closing sample has 8 exited, 0 MB
    real = Path(__file__).parent / "data/logs/monitor/dlobd-fig8a-caffeonspark-f17ff6a.csv"
    raw = pd.read_csv(real)
    assert (raw["exited"] == 1).sum() == 229 and raw["rss_mb"].iloc[-1] == 0.0
    mon = _parsed_with_monitor(tmp_path, log, "vm.csv", real.read_text())
    memory = mon[mon["metric"] == "host_mem_mb"]
    assert list(memory["value"]) == list(raw["rss_mb"].iloc[:-1])
    assert list(mon.loc[mon["metric"] == "cpu_util_pct", "value"]) == list(raw["cpu_util_pct"].iloc[1:-1])
    rates = mon[mon["metric"] == "net_mb_per_s"]
    assert rates["wall_clock_s"].max() == raw["time_s"].iloc[-2] and rates["value"].max() > 0


def test_results_table_has_the_contract_columns(tmp_path, log):
    parsed = []
    for i, (point, status) in enumerate([({"network": "loopback", "cores": 1}, "ok"),
                                         ({"network": "loopback", "cores": 2}, "failed")]):
        make_run(tmp_path, SPEC, "local", point, {"stderr.log": log}, status=status,
                 reason=None if status == "ok" else "exit status 1")
        parsed.append(results.parse_point(_point_dir(tmp_path, point), tmp_path, "bigdl"))
    out_csv = tmp_path / "results" / "local" / "dlobd-fig7a.csv"
    out_json = tmp_path / "results" / "local" / "runs" / "dlobd-fig7a.json"
    results.write_results("dlobd-fig7a", AXES, parsed, out_csv, out_json, tmp_path, "local")
    table = pd.read_csv(out_csv)
    cols = list(table.columns)
    assert cols[:3] == ["experiment", "network", "cores"]
    assert cols[3:8] == ["metric", "value", "unit", "step", "epoch"]
    assert cols[-10:] == ["run_id", "status", "reason", "cluster", "scale", "data_label", "profile",
                          "hosts", "processes", "layout"]
    assert "wall_clock_s" in cols and "point.cores" not in cols and "attempts" not in cols
    failed = table[table["status"] == "failed"]
    assert len(failed) == 1 and failed.iloc[0]["reason"] == "exit status 1"
    assert (table[table["status"] == "ok"]["cores"] == 1).all()
    summary = pd.read_json(out_json)
    assert set(summary["status"]) == {"ok", "failed"} and summary["used"].all()


def test_experiment_without_runs_is_an_empty_table(tmp_path):
    table = results.write_results("dlobd-fig7a", AXES, [], tmp_path / "r.csv")
    assert table.empty
    assert list(pd.read_csv(tmp_path / "r.csv").columns)[:3] == ["experiment", "network", "cores"]


@pytest.mark.parametrize("point, layout, hosts, processes", [
    # TF_CONFIG's tasks, as the launcher named them in the host's roles (worker:0, ps:0, chief:0)
    ("dlobd-fig11/network-loopback_nodes-2_repeat-1", "2 workers + 1 PS + 1 chief on 1 host", 1, 4),
    ("dlobd-fig9/framework-tensorflow_network-loopback", "2 collective workers on 1 host", 1, 2),
    # Spark's executors (the event log's), their cores and TFoS's TF nodes from spark-submit's command
    ("dlobd-fig9/framework-tensorflowonspark_network-loopback",
     "2 collective workers in 2 executors × 1 core on 1 host", 1, 2),
    ("slides-pagerank-32nodes/datasize-huge_network-loopback", "1 executor × 2 cores on 1 host", 1, 1),
    ("slides-pagerank-64nodes/datasize-huge_network-loopback", "2 executors × 1 core on 1 host", 1, 2),
    ("scaffe-fig11/algorithm-binomial", "8 MPI ranks on 1 host", 1, 8),  # mpirun -np 8
    ("tfgrpc-fig14/network-loopback_payload-scheme-random", "3 workers + 2 PS on 1 host", 1, 5),
])
def test_a_runs_layout_comes_from_its_record(point, layout, hosts, processes):
    record = json.loads((REFERENCE / point / "attempt-001" / "run.json").read_text())
    assert results.run_layout(record) == {"hosts": hosts, "processes": processes, "layout": layout}


def test_a_layout_over_several_hosts_says_how_many_processes_each_ran():
    record = {"command": ["spark-submit", "--num-executors", "3", "--executor-cores", "2", "app.py"],
              "hosts": [{"name": "master", "roles": ["namenode", "resourcemanager"]},
                        {"name": "w1", "roles": ["worker", "executor:1", "executor:2"]},
                        {"name": "w2", "roles": ["worker", "application-master", "executor:3"]}]}
    assert results.run_layout(record) == {"hosts": 2, "processes": 3,
                                          "layout": "3 executors × 2 cores on 2 hosts, 1–2 a host"}
    ranks = {"command": ["/usr/bin/mpirun", "-np", "16", "--hostfile", "hostfile", "hr_reduce"],
             "hosts": [{"name": "w1", "roles": ["workers"]}, {"name": "w2", "roles": ["workers"]}]}
    assert results.run_layout(ranks)["layout"] == "16 MPI ranks on 2 hosts"


def test_the_layout_reaches_every_row_of_its_point_and_a_run_that_started_nothing_has_none():
    runs_dir = REFERENCE.parent.parent
    frame = results.parse_point(REFERENCE / "slides-pagerank-64nodes/datasize-huge_network-loopback",
                                runs_dir, "hibench_spark")
    assert len(frame) > 1 and (frame["layout"] == "2 executors × 1 core on 1 host").all()
    assert (frame["hosts"] == 1).all() and (frame["processes"] == 2).all()
    not_run = results.parse_point(REFERENCE / "slides-pagerank-64nodes/datasize-huge_network-rdma",
                                  runs_dir, "hibench_spark")
    assert not_run["status"].eq("not runnable").all() and not_run["layout"].isna().all()
