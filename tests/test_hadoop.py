"""dlobd/cluster/hadoop.py without a cluster: tags, Spark settings, configuration and errors."""

import socket
from pathlib import Path

import pytest

from dlobd.cluster import hadoop, provenance
from dlobd.stacks import runner
from dlobd import NotRunnable


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A stack environment with no prefix behind it and a ResourceManager address nobody serves."""
    with socket.socket() as s:  # a loopback port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path / "no-prefix"))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    monkeypatch.setenv("DLOBD_RESOURCEMANAGER_HTTP", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("DLOBD_NAMENODE_HTTP", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("DLOBD_HDFS_URI", "hdfs://127.0.0.1:1")
    provenance.provisioned_env.cache_clear()
    yield conf
    provenance.provisioned_env.cache_clear()


def ctx(attempt: Path) -> runner.RunContext:
    attempt.mkdir(parents=True)
    return runner.RunContext(spec={}, scale="local", cluster="local", point={},
                           attempt_dir=attempt, runs_dir=attempt.parent)


def test_each_attempt_has_its_own_lower_case_tag(tmp_path):
    a, b = ctx(tmp_path / "attempt-001"), ctx(tmp_path / "attempt-002")
    assert hadoop.app_tag(a) != hadoop.app_tag(b)
    assert hadoop.app_tag(a) == hadoop.app_tag(a) == hadoop.app_tag(a).lower()


def test_spark_conf_tags_the_run_and_logs_events_into_the_attempt(tmp_path):
    c = ctx(tmp_path / "attempt-001")
    conf = hadoop.spark_conf(c)
    pairs = dict(v.split("=", 1) for k, v in zip(conf[::2], conf[1::2]) if k == "--conf")
    assert pairs["spark.yarn.tags"] == hadoop.app_tag(c)
    assert pairs["spark.eventLog.enabled"] == "true"
    assert pairs["spark.eventLog.dir"] == (c.attempt_dir / "spark-events").resolve().as_uri()
    assert (c.attempt_dir / "spark-events").is_dir()


def test_container_log_dirs_come_from_yarn_site(env):
    (env / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.nodemanager.log-dirs</name>"
        "<value>/a/logs, /b/logs</value></property></configuration>")
    assert hadoop.container_log_dirs() == ["/a/logs", "/b/logs"]


def test_missing_or_broken_yarn_site_is_named(env):
    with pytest.raises(hadoop.HadoopError, match=r"yarn-site\.xml: unreadable"):
        hadoop.container_log_dirs()
    (env / "yarn-site.xml").write_text("<configuration>")
    with pytest.raises(hadoop.HadoopError, match=r"yarn-site\.xml: unreadable"):
        hadoop.container_log_dirs()


def test_unreachable_resourcemanager_is_named(env):
    with pytest.raises(hadoop.HadoopError, match=r"http://127\.0\.0\.1:\d+/ws/v1/cluster/apps.*unreachable"):
        hadoop.applications("dlobd-x")


def test_stage_names_a_missing_data_set_and_a_relative_path(env, tmp_path):
    with pytest.raises(hadoop.HadoopError, match=r"no-such-data: data set not found"):
        hadoop.hdfs_stage(tmp_path / "no-such-data", "/data/x")
    (tmp_path / "d").mkdir()
    with pytest.raises(hadoop.HadoopError, match="must be absolute"):
        hadoop.hdfs_stage(tmp_path / "d", "data/x")


def test_unset_settings_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path))
    monkeypatch.delenv("DLOBD_RESOURCEMANAGER_HTTP", raising=False)
    provenance.provisioned_env.cache_clear()
    with pytest.raises(hadoop.HadoopError, match="DLOBD_RESOURCEMANAGER_HTTP is not set"):
        hadoop.applications("dlobd-x")
    provenance.provisioned_env.cache_clear()


def test_application_roles_come_from_the_rm_record_and_the_event_log(tmp_path):
    import json

    (tmp_path / "yarn").mkdir()
    (tmp_path / "spark-events").mkdir()
    (tmp_path / "yarn" / "application_1_0001.json").write_text(json.dumps(
        {"id": "application_1_0001", "appAttempts": [{"nodeId": "w1:18041"}]}))
    events = [{"Event": "SparkListenerApplicationStart", "App ID": "application_1_0001"},
              {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Executor Info": {"Host": "w1"}},
              {"Event": "SparkListenerExecutorAdded", "Executor ID": "2", "Executor Info": {"Host": "w2"}}]
    # a log cut mid-line (a killed application) still gives the executors it recorded
    (tmp_path / "spark-events" / "application_1_0001").write_text(
        "".join(json.dumps(e) + "\n" for e in events) + '{"Event": "SparkListenerJobSt')
    roles = hadoop.application_roles(tmp_path)
    assert roles == {"w1": ["application-master", "executor:1"], "w2": ["executor:2"]}
    addresses = {"w1": "10.77.0.2", "w2": "10.77.0.3"}

    def resolve(name):
        if name not in addresses:
            raise OSError(name)
        return addresses[name]

    cluster = [{"name": "10.77.0.1", "address": "10.77.0.1", "roles": ["namenode"]},
               {"name": "10.77.0.2", "address": "10.77.0.2", "roles": ["worker"]},
               {"name": "10.77.0.3", "address": "10.77.0.3", "roles": ["worker"]}]
    hosts = hadoop.with_application_roles(cluster, {**roles, "elsewhere": ["executor:3"]}, resolve)
    assert [(h["address"], h["roles"]) for h in hosts] == [
        ("10.77.0.1", ["namenode"]), ("10.77.0.2", ["worker", "application-master", "executor:1"]),
        ("10.77.0.3", ["worker", "executor:2"]), ("elsewhere", ["executor:3"])]
    assert cluster[1]["roles"] == ["worker"]    # the cluster's own list is left as it was
    assert hadoop.application_roles(tmp_path / "no-run") == {}


@pytest.mark.parametrize("memory", [4096, 6144, 24576, 32768, 65536, 131072, 100000])
@pytest.mark.parametrize("per_node", [1, 2, 3, 4])
@pytest.mark.parametrize("step", [128, 256, 1024])
def test_executor_containers_pin_at_most_per_node_executors_to_a_nodemanager(env, monkeypatch, memory, per_node,
                                                                              step):
    (env / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.scheduler.minimum-allocation-mb</name>"
        f"<value>{step}</value></property></configuration>")
    monkeypatch.setenv("DLOBD_YARN_MEMORY_MB", str(memory))
    try:
        share = hadoop.executor_container_mb(per_node, 1536, dry_run=True)
    except NotRunnable as e:
        # too small for per_node shares of 1536 MiB beside the AM: the smallest sizes only
        assert memory < 24576 or (memory, per_node) == (24576, 4) and step == 1024
        assert str(e).startswith(f"{per_node} executor(s) per NodeManager of at least 1536 MiB each: "
                                 f"YARN offers {memory} MiB")
        return
    # YARN rounds each request up to the step: the AM's 512 + 384 MiB, and the executors' shares
    am = -(-(512 + 384) // step) * step
    assert share % step == 0 and share >= 1536
    assert per_node * share + am <= memory < (per_node + 1) * share


def test_a_dry_run_without_the_nodemanagers_memory_sizes_nothing(env, monkeypatch):
    monkeypatch.setenv("DLOBD_YARN_MEMORY_MB", "'$DLOBD_YARN_MEMORY_MB'")
    assert hadoop.executor_container_mb(2, 1536, dry_run=True) is None


def test_the_nodemanagers_memory_at_launch_is_the_resourcemanager_s_smallest(env, monkeypatch):
    import http.server
    import json
    import threading

    nodes = {"nodes": {"node": [{"id": "w1:1", "state": "RUNNING", "availMemoryMB": 5000, "usedMemoryMB": 1144},
                                {"id": "w2:1", "state": "RUNNING", "availMemoryMB": 2048, "usedMemoryMB": 2048}]}}
    asked = []

    class RM(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            body = json.dumps(nodes if "states=RUNNING" in self.path else {"nodes": None}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), RM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("DLOBD_RESOURCEMANAGER_HTTP", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("DLOBD_YARN_MEMORY_MB", "999999")  # what a launch does not read
        assert hadoop.nodemanager_memory_mb() == 4096
        assert asked == ["/ws/v1/cluster/nodes?states=RUNNING"]
        nodes["nodes"] = None
        with pytest.raises(hadoop.HadoopError, match="no RUNNING NodeManager"):
            hadoop.nodemanager_memory_mb()
    finally:
        server.shutdown()


@pytest.mark.parametrize("workers, executors, per_node", [(1, 4, None), (2, 2, 1), (2, 3, 2), (3, 2, 1),
                                                          (16, 4, 1), (4, 9, 3)])
def test_executors_spread_at_most_their_share_per_worker(monkeypatch, workers, executors, per_node):
    monkeypatch.setattr(hadoop.provenance, "workers", lambda: [f"10.0.0.{i}" for i in range(1, workers + 1)])
    assert hadoop.executors_per_node(executors) == per_node
