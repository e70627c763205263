"""Run directories, attempts and run.json (dlobd/execution/runs.py)."""

import json
import sys
import threading

import pytest

from dlobd import ROOT, stacks
from dlobd.cluster import inventory
from dlobd.execution import runs
from dlobd.stacks import runner

SPEC = {
    "id": "dlobd-fig7b",
    "stack": "bigdl",
    "dataset": "cifar10",
    "scales": {
        "local": {
            "runnable": True,
            "needs": ["tcp"],
            "matrix": {"network": ["loopback", "rdma"], "cores": [1, 2]},
            "point_needs": [{"at": {"network": "rdma"}, "needs": ["infiniband"]}],
            "dataset": "cifar10-synthetic",
            "time_limit_s": 30,
        },
        "paper": {"runnable": False, "reason": "needs the paper profile on an InfiniBand cluster"},
    },
}


def test_point_id_sorted_sanitised_and_stable():
    assert runs.point_id({"network": "loopback", "cores": 2}) == "cores-2_network-loopback"
    assert runs.point_id({"cores": 2.0}) == runs.point_id({"cores": 2})
    assert runs.point_id({"payload": "a b/c"}) == "payload-a-b-c"
    assert runs.point_id({"network": "grpc+rdma"}) == "network-grpc+rdma"
    assert runs.point_id({}) == "default"


def test_attempts_count_up_and_never_reuse(tmp_path):
    point = {"cores": 1}
    a1 = runs.new_attempt(tmp_path, "local", "local", "x", point)
    a2 = runs.new_attempt(tmp_path, "local", "local", "x", point)
    assert (a1.name, a2.name) == ("attempt-001", "attempt-002")
    (a1 / "stdout.log").write_text("first run\n")
    # even if the newest attempt vanished, numbering goes on from what exists
    a2.rmdir()
    a3 = runs.new_attempt(tmp_path, "local", "local", "x", point)
    assert a3.name == "attempt-002"
    assert (a1 / "stdout.log").read_text() == "first run\n"
    assert a1.parent == tmp_path / "local" / "local" / "x" / "cores-1"


def test_concurrent_attempts_are_distinct(tmp_path):
    made = []

    def make():
        made.append(runs.new_attempt(tmp_path, "c", "local", "x", {"n": 1}).name)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 8


def _record(**extra):
    return {"experiment": "x", "scale": "local", "cluster": "local", "point": {"n": 1},
            "status": "ok", "reason": None, **extra}


def test_run_json_is_written_once(tmp_path):
    a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": 1})
    runs.write_run_json(a, _record())
    with pytest.raises(runs.RunError, match="already written; a rerun is a new attempt"):
        runs.write_run_json(a, _record(status="failed", reason="late"))
    assert json.loads((a / "run.json").read_text())["status"] == "ok"


@pytest.mark.parametrize("record,message", [
    (_record(status="done"), "status 'done' is not one of ok, failed, hung, not runnable, unparseable"),
    (_record(status="failed"), "status 'failed' needs a reason"),
    ({"scale": "local", "cluster": "c", "point": {}, "status": "ok"}, "missing field 'experiment'"),
    (_record(point=[1]), "'point' must be a mapping"),
])
def test_bad_records_are_refused_with_the_reason(tmp_path, record, message):
    a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": 1})
    with pytest.raises(runs.RunError, match=message):
        runs.write_run_json(a, record)
    assert not (a / "run.json").exists()


def test_attempt_without_run_json_reads_as_failed(tmp_path):
    a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": 1})
    got = runs.read_attempt(a, tmp_path)
    assert got.record["status"] == "failed"
    assert "interrupted" in got.record["reason"]
    assert got.run_id == "local/local/x/n-1/attempt-001"


def test_broken_run_json_names_the_file(tmp_path):
    a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": 1})
    (a / "run.json").write_text("{not json")
    with pytest.raises(runs.RunError, match=r"run\.json: unreadable"):
        runs.read_attempt(a, tmp_path)


def test_select_prefers_newest_ok_then_newest(tmp_path):
    statuses = {"n-1": ["ok", "ok", "failed"], "n-2": ["failed", "hung"]}
    for pid, seq in statuses.items():
        for status in seq:
            a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": int(pid[-1])})
            runs.write_run_json(a, _record(point={"n": int(pid[-1])}, status=status,
                                           reason=None if status == "ok" else "boom"))
    chosen = {a.run_id: a.record["status"]
              for a in runs.select(runs.experiment_attempts(tmp_path, "local", "x"))}
    assert chosen == {"local/local/x/n-1/attempt-002": "ok",
                      "local/local/x/n-2/attempt-002": "hung"}


def test_record_not_runnable_reuses_same_reason_only(tmp_path):
    point = {"network": "rdma", "cores": 1}
    a = runs.record_not_runnable(tmp_path, "local", "local", SPEC, point, "needs infiniband")
    rec = json.loads((a / "run.json").read_text())
    assert rec["status"] == "not runnable" and rec["reason"] == "needs infiniband"
    assert rec["run_id"] == "local/local/dlobd-fig7b/cores-1_network-rdma/attempt-001"
    assert rec["labels"] == {"data": "synthetic", "network": "rdma", "profile": "modern"}
    assert rec["system"]["cpus"] >= 1 and rec["versions"]["python"]
    assert runs.record_not_runnable(tmp_path, "local", "local", SPEC, point, "needs infiniband") == a
    b = runs.record_not_runnable(tmp_path, "local", "local", SPEC, point, "needs gpu")
    assert b.name == "attempt-002"


def test_launch_records_points_the_cluster_cannot_provide(tmp_path):
    # rdma points need InfiniBand, which the machines these tests run on lack (`dlobd plan` says so)
    a = runs.launch(SPEC, "local", {"network": "rdma", "cores": 1}, tmp_path)
    rec = runs.read_attempt(a, tmp_path).record
    assert rec["status"] == "not runnable"
    assert rec["reason"].startswith("needs infiniband:")
    paper = runs.read_attempt(runs.launch(SPEC, "paper", {}, tmp_path), tmp_path).record
    assert paper["reason"] == "needs the paper profile on an InfiniBand cluster"


def test_launch_without_a_launcher_names_the_stack(tmp_path, monkeypatch):
    module = stacks.get("bigdl")
    monkeypatch.delattr(module, "launch", raising=False)
    a = runs.launch(SPEC, "local", {"network": "loopback", "cores": 1}, tmp_path)
    rec = runs.read_attempt(a, tmp_path).record
    assert rec["status"] == "not runnable"
    assert rec["reason"] == "stack 'bigdl' has no launcher yet"


def test_launch_runs_the_stack_launcher_and_writes_provenance(tmp_path, monkeypatch):
    def launch(ctx):
        code = f"print('point', {ctx.point['cores']}); print('limit', {ctx.time_limit_s})"
        return runner.run_command(ctx, [sys.executable, "-c", code])

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    a = runs.launch(SPEC, "local", {"network": "loopback", "cores": 2}, tmp_path)
    rec = json.loads((a / "run.json").read_text())
    assert rec["status"] == "ok" and rec["exit_status"] == 0
    assert rec["command"][0] == sys.executable
    assert (a / "stdout.log").read_text() == "point 2\nlimit 30\n"
    assert rec["start"] <= rec["end"]
    assert rec["point"] == {"network": "loopback", "cores": 2}
    assert {n["name"] for n in rec["system"]["nics"]} >= {"lo"}
    assert set(rec["versions"]) >= {"java", "hadoop", "spark", "python", "tensorflow", "mpi", "stack"}
    assert set(rec["git"]) == {"commit", "dirty"}
    # a rerun is a new attempt; the first one's logs stay as they were
    b = runs.launch(SPEC, "local", {"network": "loopback", "cores": 2}, tmp_path)
    assert b.name == "attempt-002" and (a / "stdout.log").read_text() == "point 2\nlimit 30\n"


def test_launcher_crash_is_a_failed_run(tmp_path, monkeypatch):
    def launch(ctx):
        raise RuntimeError("spark-submit not found")

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    a = runs.launch(SPEC, "local", {"network": "loopback", "cores": 1}, tmp_path)
    rec = runs.read_attempt(a, tmp_path).record
    assert rec["status"] == "failed"
    assert rec["reason"] == "launcher error: RuntimeError: spark-submit not found"


def _ctx(tmp_path, limit):
    a = runs.new_attempt(tmp_path, "local", "local", "x", {"n": 1})
    return runner.RunContext(spec=SPEC, scale="local", cluster="local", point={"n": 1},
                           attempt_dir=a, runs_dir=tmp_path, time_limit_s=limit)


def test_run_command_kills_a_run_past_its_limit(tmp_path):
    ctx = _ctx(tmp_path, 0.5)
    # the child sleeps too: the whole process group must go
    code = "import subprocess, time; subprocess.Popen(['sleep', '30']); print('started', flush=True); time.sleep(30)"
    result = runner.run_command(ctx, [sys.executable, "-c", code])
    assert result.status == "hung"
    assert result.reason == "killed after the time limit of 0.5 s"
    assert (ctx.attempt_dir / "stdout.log").read_text() == "started\n"


def test_run_command_failure_keeps_stderr(tmp_path):
    ctx = _ctx(tmp_path, 30)
    result = runner.run_command(ctx, [sys.executable, "-c", "import sys; sys.exit('bad input')"])
    assert (result.status, result.exit_status, result.reason) == ("failed", 1, "exit status 1")
    assert (ctx.attempt_dir / "stderr.log").read_text() == "bad input\n"


ASSUMING = {**SPEC, "scales": {"local": {**SPEC["scales"]["local"],
                                         "fixed": {"epochs": 2, "batch": "not stated"},
                                         "assumed": {"batch": 768, "why": "Fig. 7(a)"}}}}


@pytest.mark.parametrize("site, overrides, batch, labels", [
    (None, None, 768, {"assumed": {"batch": "768, assumed, not stated by the paper (Fig. 7(a))"}}),
    (None, {"batch": 96}, 96, {"overridden": {"batch": "96, set on the command line in place of the assumed 768"}}),
    # the inventory's dlobd_assume, which dlobd-env.sh exports as JSON; the command line wins over it
    ({"dlobd-fig7b": {"batch": 384}}, None, 384,
     {"overridden": {"batch": "384, set on the inventory (dlobd_assume) in place of the assumed 768"}}),
    ({"dlobd-fig7b": {"batch": 384}}, {"batch": 96}, 96,
     {"overridden": {"batch": "96, set on the command line in place of the assumed 768"}}),
    ({"dlobd-fig6c": {"batch": 384}}, None, 768, {"assumed": {"batch": "768, assumed, not stated by the paper (Fig. 7(a))"}}),
], ids=["assumed", "command line", "inventory", "command line over inventory", "inventory, another experiment"])
def test_launch_runs_the_assumed_value_or_its_override_and_labels_it(tmp_path, monkeypatch, site, overrides, batch, labels):
    if site:
        monkeypatch.setenv("DLOBD_ASSUME", json.dumps(site))
    seen = {}

    def launch(ctx):
        seen.update(ctx.fixed)
        return runner.run_command(ctx, [sys.executable, "-c", "pass"])

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    a = runs.launch(ASSUMING, "local", {"network": "loopback", "cores": 2}, tmp_path, overrides=overrides)
    rec = json.loads((a / "run.json").read_text())
    assert seen == {"epochs": 2, "batch": batch}  # the stated epochs as they are
    assert {k: rec["labels"][k] for k in ("assumed", "overridden") if k in rec["labels"]} == labels


def test_an_override_of_a_setting_the_experiment_does_not_assume_is_refused(tmp_path):
    with pytest.raises(runs.dspec.SettingError, match=r"ASSUME: epochs=3: dlobd-fig7b at scale local has no "
                       r"assumed setting 'epochs' \(scales.local.assumed of experiments/dlobd-fig7b.yaml\); "
                       r"it assumes batch"):
        runs.launch(ASSUMING, "local", {"network": "loopback", "cores": 2}, tmp_path, overrides={"epochs": 3},
                    where="ASSUME")
    assert not list(tmp_path.iterdir())  # nothing recorded


@pytest.mark.parametrize("value, message", [
    ('{"dlobd-fig7b": {"epochs": 3}}', r"the inventory \(dlobd_assume\): dlobd-fig7b: epochs=3: no scale of "
                                       r"dlobd-fig7b assumes 'epochs'; its scales assume batch"),
    ('{"dlobd-fig7b": 384}', r"must map experiment ids to \{setting: value\}"),
    ("{batch: 384", r"DLOBD_ASSUME is not JSON"),
])
def test_an_inventory_value_the_experiment_does_not_assume_is_refused(tmp_path, monkeypatch, value, message):
    monkeypatch.setenv("DLOBD_ASSUME", value)
    with pytest.raises(runs.dspec.SettingError, match=message):
        runs.launch(ASSUMING, "local", {"network": "loopback", "cores": 2}, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing recorded


def test_an_inventory_value_for_an_experiment_that_does_not_exist_is_named():
    with pytest.raises(runs.dspec.SettingError, match=r"'dlobd-fig77' is no experiment \(no experiments/dlobd-fig77.yaml\)"):
        runs.dspec.check_site_overrides({"dlobd-fig77": {"batch": 1}}, {"dlobd-fig7b": ASSUMING})


REHEARSING = {**ASSUMING, "scales": {"local": {**ASSUMING["scales"]["local"],
                                               "rehearsal": {"epochs": 1, "train_images": 256, "why": "one short epoch"}}}}


def test_a_rehearsal_runs_the_point_with_its_work_cut_and_labels_each_cut(tmp_path, monkeypatch):
    seen = {}

    def launch(ctx):
        seen.update(ctx.fixed, limit=ctx.time_limit_s)
        return runner.run_command(ctx, [sys.executable, "-c", "pass"])

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    a = runs.launch(REHEARSING, "local", {"network": "loopback", "cores": 2}, tmp_path, rehearse=True)
    rec = json.loads((a / "run.json").read_text())
    # the layout (the assumed batch) as the scale runs it; the work cut; the scale's own limit, below the cap
    assert seen == {"epochs": 1, "batch": 768, "train_images": 256, "limit": 30}
    assert rec["status"] == "ok" and rec["labels"]["rehearsal"] == {
        "epochs": "2 -> 1", "train_images": "the launcher default -> 256"}
    assert rec["labels"]["assumed"] == {"batch": "768, assumed, not stated by the paper (Fig. 7(a))"}
    # a scale that says no cut is not rehearsed: its whole work would run
    b = runs.launch(ASSUMING, "local", {"network": "loopback", "cores": 2}, tmp_path / "none", rehearse=True)
    rec = json.loads((b / "run.json").read_text())
    assert rec["status"] == "not runnable" and rec["labels"]["rehearsal"] == {}
    assert rec["reason"] == ("no rehearsal cut: scales.local.rehearsal of experiments/dlobd-fig7b.yaml gives none, "
                             "and the point's whole work would run")


def test_a_rehearsal_on_a_site_launches_only_what_its_check_accepts(tmp_path, monkeypatch):
    """With the inventory of the site rehearsed on, each point's command is first made as a dry run
    and held to `dlobd dry-run --check`'s rules there (example-ib: NodeManagers of 98304 MB, node02
    the one outside group gpu). A container larger than a NodeManager is not launched: not
    runnable, each rule it breaks in its reason. One that fits is launched as before."""
    made = []
    heap = ["200g"]

    def launch(ctx):
        made.append("dry run" if ctx.dry_run else "run")
        if ctx.dry_run:
            return runner.LaunchResult(["/opt/spark/bin/spark-submit", "--master", "yarn", "--num-executors", "1",
                                        "--executor-cores", "2", "--executor-memory", heap[0], "x.jar"], "dry run", "")
        return runner.run_command(ctx, [sys.executable, "-c", "pass"])

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    site = inventory.load(ROOT / "playbooks/inventories/example-ib/hosts.yml")
    point = {"network": "loopback", "cores": 2}
    refused = json.loads((runs.launch(REHEARSING, "local", point, tmp_path / "a", rehearse=True, site=site)
                          / "run.json").read_text())
    assert made == ["dry run"]
    assert refused["status"] == "not runnable" and refused["labels"]["rehearsal"]
    assert refused["reason"] == (
        "dlobd dry-run --check refuses its command: container within a node: an executor container of 225280 MiB "
        "(--executor-memory 200g + Spark's default overhead 20480 MiB, in YARN's 256-MiB steps) is more than the "
        "smallest NodeManager's 98304 MB; executors within their NodeManagers: --num-executors 1 containers of "
        "225280 MiB (--executor-memory 200g + Spark's default overhead 20480 MiB, in YARN's 256-MiB steps): the 1 "
        "NodeManager(s) outside group gpu (YARN's label gpu is exclusive), node02 98304 MB, hold 0 beside the "
        "ApplicationMaster's 1024 MiB")
    heap[0] = "3g"
    ran = json.loads((runs.launch(REHEARSING, "local", point, tmp_path / "b", rehearse=True, site=site)
                      / "run.json").read_text())
    assert made == ["dry run", "dry run", "run"] and ran["status"] == "ok"


def test_a_rehearsal_may_train_on_the_synthetic_twin_of_the_scales_data_set_and_says_so(tmp_path, monkeypatch):
    seen = {}

    def launch(ctx):
        seen["dataset"] = ctx.spec["scales"][ctx.scale]["dataset"]
        return runner.run_command(ctx, [sys.executable, "-c", "pass"])

    monkeypatch.setattr(stacks.get("bigdl"), "launch", launch, raising=False)
    # a cluster whose datasets role installed the synthetic CIFAR-10, not the real one
    monkeypatch.setenv("DLOBD_DATASETS", "mnist fashion-mnist cifar10-synthetic")
    twin = {**REHEARSING, "scales": {"local": {**REHEARSING["scales"]["local"], "dataset": "cifar10", "rehearsal": {
        **REHEARSING["scales"]["local"]["rehearsal"], "dataset": "cifar10-synthetic"}}}}
    rec = json.loads((runs.launch(twin, "local", {"network": "loopback", "cores": 2}, tmp_path, rehearse=True)
                      / "run.json").read_text())
    assert seen == {"dataset": "cifar10-synthetic"}
    assert (rec["dataset"], rec["labels"]["data"]) == ("cifar10-synthetic", "synthetic")
    assert rec["labels"]["rehearsal"] == {"dataset": "cifar10 -> cifar10-synthetic", "epochs": "2 -> 1",
                                          "train_images": "the launcher default -> 256"}
    # an ordinary run needs the scale's own, which that cluster lacks
    ordinary = json.loads((runs.launch(twin, "local", {"network": "loopback", "cores": 2}, tmp_path / "ordinary")
                           / "run.json").read_text())
    assert (ordinary["dataset"], ordinary["status"]) == ("cifar10", "not runnable")
    assert ordinary["reason"] == ("needs data set cifar10: the datasets role installed mnist, fashion-mnist, "
                                  "cifar10-synthetic (datasets_names; role datasets says where each comes from)")


def _needing(*needs):
    return {**REHEARSING, "scales": {"local": {**REHEARSING["scales"]["local"], "needs": list(needs)}}}


VETH = "ib0 is a veth of the emulated site: IPoIB's addresses and interface names, no HCA"


def test_a_rehearsal_counts_the_sites_ipoib_stand_in_and_says_so_where_runs_and_rdma_never(tmp_path, monkeypatch):
    monkeypatch.setattr(stacks.get("bigdl"), "launch", lambda ctx: runner.run_command(ctx, [sys.executable, "-c", "pass"]),
                        raising=False)
    monkeypatch.setenv("DLOBD_REHEARSAL_STANDINS", json.dumps({"infiniband": VETH}))
    point = {"network": "loopback", "cores": 2}

    def record(attempt):
        return json.loads((attempt / "run.json").read_text())

    # this machine has no HCA: an ordinary run of a point that needs InfiniBand is not runnable
    ordinary = record(runs.launch(_needing("infiniband"), "local", point, tmp_path / "ordinary"))
    assert ordinary["status"] == "not runnable" and ordinary["reason"].startswith("needs infiniband: no InfiniBand HCA")
    assert "standin" not in ordinary["labels"]
    rehearsed = record(runs.launch(_needing("infiniband"), "local", point, tmp_path / "rehearsed", rehearse=True))
    assert rehearsed["status"] == "ok" and rehearsed["labels"]["standin"] == {"infiniband": VETH}
    # nothing stands in for RDMA; a point needing nothing lacking says no stand-in
    rdma = record(runs.launch(_needing("infiniband", "rdma"), "local", point, tmp_path / "rdma", rehearse=True))
    assert rdma["status"] == "not runnable" and rdma["reason"].startswith("needs rdma: no InfiniBand HCA")
    plain = record(runs.launch(_needing(), "local", point, tmp_path / "plain", rehearse=True))
    assert plain["status"] == "ok" and "standin" not in plain["labels"]


def test_a_rehearsal_counts_the_gpu_stand_in_for_the_stack_whose_launcher_lays_gpu_points_out_on_cpu(tmp_path,
                                                                                                     monkeypatch):
    for name in ("bigdl", "tensorflowonspark"):
        monkeypatch.setattr(stacks.get(name), "launch",
                            lambda ctx: runner.run_command(ctx, [sys.executable, "-c", "pass"]), raising=False)
    monkeypatch.setenv("DLOBD_REHEARSAL_STANDINS", json.dumps({"gpu": "CPU processes, no GPU"}))
    point = {"network": "loopback", "cores": 2}
    tfos = json.loads((runs.launch({**_needing("gpu"), "stack": "tensorflowonspark"}, "local", point,
                                   tmp_path / "tfos", rehearse=True) / "run.json").read_text())
    assert tfos["status"] == "ok" and tfos["labels"]["standin"] == {"gpu": "CPU processes, no GPU"}
    bigdl = json.loads((runs.launch(_needing("gpu"), "local", point, tmp_path / "bigdl", rehearse=True)
                        / "run.json").read_text())
    assert bigdl["status"] == "not runnable" and bigdl["reason"].startswith("needs gpu: no GPU")


@pytest.mark.parametrize("declared, message", [
    ('{"rdma": "a veth"}', "DLOBD_REHEARSAL_STANDINS names rdma: only infiniband, gpu may stand in"),
    ('{"infiniband": ""}', "DLOBD_REHEARSAL_STANDINS: expected a mapping of capability to words"),
    ("infiniband", "DLOBD_REHEARSAL_STANDINS is not JSON"),
])
def test_a_stand_in_that_cannot_stand_in_leaves_the_rehearsal_not_runnable_and_says_why(tmp_path, monkeypatch,
                                                                                         declared, message):
    monkeypatch.setenv("DLOBD_REHEARSAL_STANDINS", declared)
    rec = json.loads((runs.launch(_needing("infiniband"), "local", {"network": "loopback", "cores": 2}, tmp_path,
                                  rehearse=True) / "run.json").read_text())
    assert rec["status"] == "not runnable" and rec["reason"].startswith(message)


def test_a_rehearsal_is_never_chosen_over_a_measurement_and_gives_no_values(tmp_path):
    from dlobd.results import tidy

    point = {"n": 1}
    measured = runs.new_attempt(tmp_path, "local", "local", "x", point)
    runs.write_run_json(measured, _record(status="failed", reason="boom"))
    rehearsed = runs.new_attempt(tmp_path, "local", "local", "x", point)
    runs.write_run_json(rehearsed, _record(labels={"rehearsal": {"epochs": "18 -> 1"}}))
    (chosen,) = runs.select(runs.experiment_attempts(tmp_path, "local", "x"))
    assert chosen.path == measured
    # a point with nothing but its rehearsal: chosen, and read as what it is
    only = runs.read_attempt(rehearsed, tmp_path)
    assert runs.select([only]) == [only]
    assert tidy.parse_attempt(only, "bigdl") == (
        [], "rehearsal", "a rehearsal (epochs 18 -> 1; it ended ok): not a measurement")
