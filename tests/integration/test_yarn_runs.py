"""What every YARN launcher relies on, on the real cluster: data staged into HDFS once, a
Spark job's applications tagged, recorded and their container logs kept, resources sampled,
and a job past its time limit killed together with its YARN application."""

import csv
import json
import subprocess
import urllib.request
from pathlib import Path

import psutil
import pytest

from dlobd.cluster import hadoop, provenance
from dlobd.stacks import runner

pytestmark = pytest.mark.integration


def pi_job(ctx, slices):
    pi = Path(hadoop.stack_env()["SPARK_HOME"]) / "examples" / "src" / "main" / "python" / "pi.py"
    return ["spark-submit", *hadoop.spark_conf(ctx), "--num-executors", "1", "--executor-cores", "1",
            str(pi), str(slices)]


def context(tmp_path, name, limit):
    attempt = tmp_path / name / "attempt-001"
    attempt.mkdir(parents=True)
    return runner.RunContext(spec={}, scale="local", cluster="local", point={}, attempt_dir=attempt,
                           runs_dir=tmp_path, time_limit_s=limit)


def modification_time(path):
    url = f"{hadoop.stack_env()['DLOBD_NAMENODE_HTTP']}/webhdfs/v1{path}?op=GETFILESTATUS"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)["FileStatus"]["modificationTime"]


def test_stage_uploads_once(stack_cluster, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0").write_bytes(b"x" * 1000)
    target = f"/dlobd-test/{tmp_path.name}/data"
    uri = hadoop.hdfs_stage(data, target)
    assert uri == hadoop.stack_env()["DLOBD_HDFS_URI"] + target
    first = modification_time(target)
    assert hadoop.hdfs_stage(data, target) == uri
    assert modification_time(target) == first
    cat = subprocess.run([str(provenance.prefix() / "bin" / "hdfs"), "dfs", "-cat", f"{target}/part-0"],
                         env=hadoop.stack_env(), capture_output=True, timeout=120)
    assert cat.stdout == b"x" * 1000


def test_a_spark_job_leaves_its_records_logs_and_samples(stack_cluster, tmp_path):
    ctx = context(tmp_path, "pi", 600)
    tag = hadoop.app_tag(ctx)
    result = runner.run_command(ctx, pi_job(ctx, 4), env=hadoop.stack_env(), cwd=str(ctx.attempt_dir),
                              yarn_tag=tag)
    assert result.status == "ok", (ctx.attempt_dir / "stderr.log").read_text()[-3000:]
    assert "Pi is roughly 3.1" in (ctx.attempt_dir / "stdout.log").read_text()
    records = [json.loads(p.read_text()) for p in (ctx.attempt_dir / "yarn").glob("application_*.json")]
    assert len(records) == 1
    app = records[0]
    assert app["state"] == "FINISHED" and tag in app["applicationTags"]
    assert app["startedTime"] <= app["launchTime"] <= app["finishedTime"]
    assert app["appAttempts"]
    containers = sorted((ctx.attempt_dir / "containers").iterdir())
    assert len(containers) >= 2  # the AM and one executor
    assert all((c / "stderr").is_file() for c in containers)
    assert len(list((ctx.attempt_dir / "spark-events").iterdir())) == 1
    samples = list(csv.DictReader(open(next((ctx.attempt_dir / "monitor").glob("*.csv")))))
    assert len(samples) >= 5
    # the executor's container is found though it is no child of spark-submit
    assert max(int(s["processes"]) for s in samples) >= 3


def test_a_job_past_its_limit_is_killed_with_its_application(stack_cluster, tmp_path):
    # long enough for the application to be submitted and running on a loaded machine
    ctx = context(tmp_path, "pi-long", 90)
    tag = hadoop.app_tag(ctx)
    result = runner.run_command(ctx, pi_job(ctx, 100000), env=hadoop.stack_env(),
                              cwd=str(ctx.attempt_dir), yarn_tag=tag)
    assert result.status == "hung" and "time limit of 90 s" in result.reason
    apps = hadoop.applications(tag)
    assert [a["state"] for a in apps] == ["KILLED"]
    assert f"YARN application(s) {apps[0]['id']} killed" in result.reason
    assert (ctx.attempt_dir / "yarn").is_dir() and (ctx.attempt_dir / "stderr.log").stat().st_size > 0
    left = [p for p in psutil.process_iter(["cmdline"]) if tag in " ".join(p.info["cmdline"] or [])]
    assert left == []
