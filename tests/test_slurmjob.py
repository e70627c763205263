"""The pure parts of the Slurm path (dlobd/execution/slurmjob.py): roles from the node list, ports from the
job id, the job prefix rendered from the playbook templates, what an interrupted job records."""

import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import psutil
import pytest

from dlobd.cluster import provenance
from dlobd.execution import runs, slurmenv, slurmjob


def test_the_first_node_is_the_master_and_the_others_are_workers():
    assert slurmjob.cluster_roles(["n1", "n2", "n3"]) == ("n1", ["n2", "n3"])
    assert slurmjob.cluster_roles(["solo"]) == ("solo", ["solo"])
    with pytest.raises(slurmjob.JobError, match="no nodes"):
        slurmjob.cluster_roles([])
    with pytest.raises(slurmjob.JobError, match="twice"):
        slurmjob.cluster_roles(["n1", "n1"])


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's client commands are not installed (make slurm-deps)")
def test_a_slurm_node_list_expands_through_scontrol(tmp_path, monkeypatch):
    # a configuration of its own: scontrol would otherwise look for a controller in DNS
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=unit\nSlurmctldHost=localhost\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    hosts = slurmenv.expand_nodelist("n[08-10],gpu7")
    assert hosts == ["n08", "n09", "n10", "gpu7"]
    assert slurmjob.cluster_roles(hosts) == ("n08", ["n09", "n10", "gpu7"])


def test_ports_come_from_the_job_id_and_two_nearby_jobs_never_share_one():
    names = slurmjob.default_port_names()
    assert "namenode_rpc" in names and "nodemanager_https" in names
    first, second = slurmjob.job_ports(4711), slurmjob.job_ports(4712)
    assert list(first) == names
    assert len(set(first.values())) == len(names)
    assert not set(first.values()) & set(second.values())
    for job in range(1000, 1000 + slurmjob.PORT_SLOTS, 97):
        ports = slurmjob.job_ports(job).values()
        assert all(slurmjob.PORT_LOW <= p < slurmjob.PORT_HIGH for p in ports)
    # the block repeats after PORT_SLOTS ids: the agent's port check catches such a pair
    assert slurmjob.job_ports(7) == slurmjob.job_ports(7 + slurmjob.PORT_SLOTS)
    with pytest.raises(slurmjob.JobError, match="do not fit"):
        slurmjob.job_ports(1, [f"p{i}" for i in range(slurmjob.PORT_STRIDE + 1)])


def test_a_port_already_held_on_the_address_is_named():
    with __import__("socket").socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        assert slurmjob.ports_in_use("127.0.0.1", {"namenode_rpc": port}) == [f"namenode_rpc (127.0.0.1:{port})"]


def fake_provisioned(root, profile="modern"):
    """A provisioned prefix's layout with its dlobd-env.sh (paths only: nothing is started)."""
    for sub in ("etc", "bin", "python/bin", "hadoop-3.4.1/lib", "data"):
        (root / sub).mkdir(parents=True)
    (root / "etc" / "fabric.json").write_text("{}\n")
    (root / "bin" / "dlobd-python-tool").write_text("#!/bin/sh\n")
    (root / "etc" / "dlobd-env.sh").write_text("\n".join([
        f"export DLOBD_PREFIX={root}",
        f"export DLOBD_LOCAL_DIR={root}",
        f"export DLOBD_PROFILE={profile}",
        "export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64",
        f"export HADOOP_HOME={root}/hadoop-3.4.1",
        f"export HADOOP_CONF_DIR={root}/etc/hadoop",
        f"export DLOBD_HADOOP_CLASSPATH='{root}/hadoop-3.4.1:{root}/hadoop-3.4.1/lib/*'",
        f"export SPARK_HOME={root}/python/lib/python3.11/site-packages/pyspark",
        f"export DLOBD_PYTHON_HOME={root}/python",
        f"export DLOBD_PYTHON={root}/python/bin/python",
        "export DLOBD_WORKERS=127.0.0.1",
        "export DLOBD_EMULATED_LINK='emulated Ethernet eth-10g (veth + tbf 10000mbit)'",
    ]) + "\n")
    return root


def job_plan(tmp_path, job_id=5150, profile="modern"):
    provisioned = fake_provisioned(tmp_path / "stack", profile)
    return slurmjob.make_plan(job_id, ["n1", "n2", "n3"], str(provisioned), str(tmp_path / "scratch"),
                              str(tmp_path / "shared"),
                              addresses={"n1": "10.9.0.1", "n2": "10.9.0.2", "n3": "10.9.0.3"})


def xml_props(path):
    return {p.findtext("name"): p.findtext("value") for p in ET.parse(path).getroot().iter("property")}


FACTS = {"user_id": "tester", "memtotal_mb": 8000, "processor_vcpus": 2}


@pytest.mark.parametrize("profile, opens", [("modern", True), ("paper", False)])
def test_the_job_s_jvm_options_are_those_of_the_prefix_s_java(tmp_path, profile, opens):
    """Java 17 needs java.lang opened to the daemons' web services; the paper profile's Java 8
    refuses to start with the option."""
    plan = job_plan(tmp_path, profile=profile)
    job = slurmjob.write_job_prefix(plan, "n2", slurmjob.stack_of(plan.provisioned), FACTS)
    flag = "--add-opens=java.base/java.lang=ALL-UNNAMED"
    assert (f'[datanode]="{flag}"' in (job / "sbin" / "dlobd-daemon").read_text()) is opens
    assert (flag in (job / "bin" / "yarn").read_text()) is opens


def test_the_playbook_templates_render_into_a_job_private_prefix(tmp_path):
    plan = job_plan(tmp_path)
    assert plan.daemons("n1") == ["namenode", "resourcemanager"]
    assert plan.daemons("n2") == ["datanode", "nodemanager"]
    job = slurmjob.write_job_prefix(plan, "n2", slurmjob.stack_of(plan.provisioned), FACTS)
    assert job == tmp_path / "scratch" / "dlobd-slurm-5150"
    hdfs = xml_props(job / "etc" / "hadoop" / "hdfs-site.xml")
    assert hdfs["dfs.namenode.rpc-address"] == f"10.9.0.1:{plan.ports['namenode_rpc']}"
    assert hdfs["dfs.datanode.address"] == f"10.9.0.2:{plan.ports['datanode_data']}"
    assert hdfs["dfs.datanode.data.dir"] == f"file://{job}/var/hdfs/data"
    assert hdfs["dfs.replication"] == "2"  # two workers
    yarn = xml_props(job / "etc" / "hadoop" / "yarn-site.xml")
    assert yarn["yarn.nodemanager.local-dirs"] == f"{job}/var/yarn/local"
    assert yarn["yarn.resourcemanager.webapp.address"] == f"10.9.0.1:{plan.ports['resourcemanager_http']}"
    assert yarn["yarn.nodemanager.resource.memory-mb"] == "2000"  # 8000 MiB x 0.25
    core = xml_props(job / "etc" / "hadoop" / "core-site.xml")
    assert core["fs.defaultFS"] == f"hdfs://10.9.0.1:{plan.ports['namenode_rpc']}"
    assert core["hadoop.http.staticuser.user"] == "tester"
    defaults = (job / "etc" / "spark" / "spark-defaults.conf").read_text()
    assert re.search(rf"spark.authenticate.secret\s+{plan.secret}$", defaults, re.M)
    assert (job / "etc" / "spark" / "spark-defaults.conf").stat().st_mode & 0o077 == 0
    # the directories the rendered configuration names exist in the job prefix
    for key in ("spark.local.dir", "spark.eventLog.dir"):
        value = re.search(rf"^{re.escape(key)}\s+(\S+)$", defaults, re.M).group(1).removeprefix("file://")
        assert value.startswith(f"{job}/var/") and (job / value[len(str(job)) + 1:]).is_dir(), key
    for key in ("yarn.nodemanager.local-dirs", "yarn.nodemanager.log-dirs"):
        assert (job / yarn[key][len(str(job)) + 1:]).is_dir(), key
    daemon = (job / "sbin" / "dlobd-daemon").read_text()
    assert f'source "{job}/etc/dlobd-env.sh"' in daemon and "{{" not in daemon
    for name, seconds in slurmjob.DAEMON_STOP_TIMEOUT_S.items():
        assert f"  [{name}]={seconds}\n" in daemon
    # the job's environment: the provisioned stack first, then the job's cluster over it
    env = provenance.source_env(job / "etc" / "dlobd-env.sh")
    assert env["DLOBD_PREFIX"] == str(job)
    assert env["HADOOP_CONF_DIR"] == f"{job}/etc/hadoop"
    assert env["DLOBD_WORKERS"] == "10.9.0.2 10.9.0.3"
    assert env["DLOBD_CLUSTER_ADDRESS"] == "10.9.0.2"
    assert env["DLOBD_EMULATED_LINK"].startswith("emulated Ethernet eth-10g")
    assert env["DLOBD_RESOURCEMANAGER_HTTP"] == f"http://10.9.0.1:{plan.ports['resourcemanager_http']}"
    assert env["PATH"].startswith(f"{job}/bin:")
    # everything else is the provisioned prefix's, linked
    assert (job / "python").resolve() == tmp_path / "stack" / "python"
    assert (job / "etc" / "fabric.json").resolve() == tmp_path / "stack" / "etc" / "fabric.json"
    assert (job / "bin" / "dlobd-python-tool").is_symlink()
    assert not (job / "bin" / "hdfs").is_symlink()
    with pytest.raises(slurmjob.JobError, match="exists"):
        slurmjob.write_job_prefix(plan, "n2", slurmjob.stack_of(plan.provisioned), FACTS)


def test_a_prefix_that_was_never_provisioned_is_refused(tmp_path):
    with pytest.raises(slurmjob.JobError, match="not a provisioned prefix"):
        slurmjob.make_plan(1, ["n1"], str(tmp_path), str(tmp_path / "s"), str(tmp_path / "sh"),
                           addresses={"n1": "10.9.0.1"})


def test_the_execution_path_comes_from_the_job_plan(tmp_path):
    plan = job_plan(tmp_path)
    shared = tmp_path / "shared" / "slurm-5150"
    shared.mkdir(parents=True)
    plan.save(shared / "job.json")
    got = slurmenv.execution({"DLOBD_SLURM_JOB_JSON": str(shared / "job.json"), "SLURM_JOB_PARTITION": "batch"})
    assert got == {"path": "slurm+prefix",
                   "slurm": {"job_id": 5150, "nodes": ["n1", "n2", "n3"], "master": "n1",
                             "workers": ["n2", "n3"], "partition": "batch"},
                   "image": None}
    assert slurmjob.JobPlan.load(shared / "job.json") == plan
    assert (shared / "job.json").stat().st_mode & 0o077 == 0  # it holds the secret
    (shared / "job.json").write_text(json.dumps({**json.loads((shared / "job.json").read_text()),
                                                 "execution_path": "cloud"}))
    with pytest.raises(slurmjob.JobError, match="execution path 'cloud' is not one of"):
        slurmjob.JobPlan.load(shared / "job.json")


def test_a_prefix_of_the_apptainer_method_runs_the_job_from_its_image(tmp_path):
    plan = job_plan(tmp_path)
    assert (plan.execution_path, plan.image) == ("slurm+prefix", None)
    image = tmp_path / "images" / "modern-0123.sif"
    image.parent.mkdir()
    image.write_bytes(b"SIF stand-in")
    env = tmp_path / "stack" / "etc" / "dlobd-env.sh"
    env.write_text(env.read_text() + f"export DLOBD_INSTALL_METHOD=apptainer\nexport DLOBD_APPTAINER_IMAGE={image}\n")
    plan = slurmjob.make_plan(7, ["n1", "n2"], str(tmp_path / "stack"), str(tmp_path / "scratch"),
                              str(tmp_path / "shared"), addresses={"n1": "10.9.0.1", "n2": "10.9.0.2"})
    assert plan.execution_path == "slurm+apptainer"
    assert plan.image == {"path": str(image), "sha256": hashlib.sha256(b"SIF stand-in").hexdigest()}
    image.unlink()
    with pytest.raises(slurmjob.JobError, match=f"apptainer method, but its image {image} is not there"):
        slurmjob.make_plan(7, ["n1", "n2"], str(tmp_path / "stack"), str(tmp_path / "scratch"),
                           str(tmp_path / "shared"), addresses={"n1": "10.9.0.1", "n2": "10.9.0.2"})


def test_a_job_takes_the_settings_of_its_node_s_folder_in_a_prefix_hosts_share(tmp_path):
    """A prefix whose hosts keep their settings in folders of their own (<prefix>/hosts/<name>):
    the job reads this node's through the prefix's entry point, and links the files of that
    folder it does not render (fabric.json) and its settings for the image."""
    plan = job_plan(tmp_path)
    stack = tmp_path / "stack"
    own = stack / "hosts" / platform.node() / "etc"
    own.mkdir(parents=True)
    for name in ("dlobd-env.sh", "fabric.json"):
        (stack / "etc" / name).rename(own / name)
    (own / "dlobd-env.sh").write_text((own / "dlobd-env.sh").read_text().replace(
        f"DLOBD_LOCAL_DIR={stack}\n", f"DLOBD_LOCAL_DIR={own.parent}\n"))
    (own / "dlobd-env-image.sh").write_text("export DLOBD_BIGDL_JAR=/opt/dlobd/jars/bigdl/bigdl.jar\n")
    (stack / "etc" / "dlobd-env.sh").write_text(slurmjob.render(
        slurmjob.PLAYBOOKS / "roles/stack_env/templates/dlobd-env-entry.sh.j2",
        {"ansible_managed": "test", "dlobd_prefix": str(stack)}))
    job = slurmjob.write_job_prefix(plan, "n2", slurmjob.stack_of(plan.provisioned), FACTS)
    assert (job / "etc" / "fabric.json").resolve() == own / "fabric.json"
    env = provenance.source_env(job / "etc" / "dlobd-env.sh")
    assert (env["DLOBD_LOCAL_DIR"], env["HADOOP_HOME"]) == (str(job), f"{stack}/hadoop-3.4.1")
    image_env = provenance.source_env(job / "etc" / "dlobd-env-image.sh", base={})
    assert (image_env["DLOBD_LOCAL_DIR"], image_env["DLOBD_BIGDL_JAR"]) == (str(job), "/opt/dlobd/jars/bigdl/bigdl.jar")


def test_a_job_from_an_image_passes_its_own_cluster_into_the_image(tmp_path):
    plan = job_plan(tmp_path)
    image_env = tmp_path / "stack" / "etc" / "dlobd-env-image.sh"
    image_env.write_text(f"export DLOBD_PREFIX={tmp_path}/stack\nexport HADOOP_CONF_DIR={tmp_path}/stack/etc/hadoop\n"
                         "export DLOBD_BIGDL_JAR=/opt/dlobd/jars/bigdl/bigdl.jar\n")
    job = slurmjob.write_job_prefix(plan, "n2", slurmjob.stack_of(plan.provisioned), FACTS)
    own = job / "etc" / "dlobd-env-image.sh"
    assert not own.is_symlink()  # the provisioned cluster's settings would reach the image
    env = provenance.source_env(own, base={})
    assert env["DLOBD_PREFIX"] == str(job) and env["HADOOP_CONF_DIR"] == f"{job}/etc/hadoop"
    assert env["SPARK_CONF_DIR"] == f"{job}/etc/spark"
    assert env["DLOBD_HDFS_URI"] == f"hdfs://10.9.0.1:{plan.ports['namenode_rpc']}"
    assert env["DLOBD_BIGDL_JAR"] == "/opt/dlobd/jars/bigdl/bigdl.jar"  # the image's own paths stay
    assert "PATH" not in env and "source " not in own.read_text()  # the image keeps its PATH


def test_the_image_wrapper_passes_the_callers_prefix_settings_else_its_own(tmp_path):
    runtime = tmp_path / "apptainer"
    runtime.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
    runtime.chmod(0o755)
    prefix = tmp_path / "stack"
    # a prefix whose host keeps its settings in a folder of its own, which its dlobd-env.sh names
    host_etc = prefix / "hosts" / "vm" / "etc"
    host_etc.mkdir(parents=True)
    (prefix / "etc").mkdir()
    (prefix / "etc" / "dlobd-env.sh").write_text(f"export DLOBD_LOCAL_DIR={host_etc.parent}\n")
    (host_etc / "dlobd-env-image.sh").write_text("export A=provisioned\n")
    wrapper = tmp_path / "java"
    wrapper.write_text(slurmjob.render(slurmjob.PLAYBOOKS / "roles/apptainer/templates/wrapper.j2", {
        "ansible_managed": "test", "item": "java", "apptainer_wrapper_target_dir": "/usr/lib/jvm/bin",
        "apptainer_image_path": "/i.sif", "dlobd_prefix": str(prefix),
        "apptainer_run_prefix": [str(runtime), "exec", "--drop-caps", "CAP_SYS_RESOURCE", "/i.sif"]}))
    wrapper.chmod(0o755)

    def env_file(**env):
        out = subprocess.run([str(wrapper), "-version"], env={"PATH": "/usr/bin:/bin", **env},
                             capture_output=True, text=True, check=True).stdout.split("\n")
        assert out[-4:-1] == ["/i.sif", "/usr/lib/jvm/bin/java", "-version"]
        return out[out.index("--env-file") + 1]

    assert env_file() == f"{host_etc}/dlobd-env-image.sh"
    job = tmp_path / "job"
    assert env_file(DLOBD_LOCAL_DIR=str(job)) == f"{host_etc}/dlobd-env-image.sh"  # the job has none
    (job / "etc").mkdir(parents=True)
    (job / "etc" / "dlobd-env-image.sh").write_text("export A=job\n")
    assert env_file(DLOBD_LOCAL_DIR=str(job)) == f"{job}/etc/dlobd-env-image.sh"


def test_without_a_job_the_path_is_local_or_bare_metal(monkeypatch):
    monkeypatch.setattr(provenance, "workers", lambda gpu=False: ["127.0.0.1"])
    assert slurmenv.execution({})["path"] == "local"
    monkeypatch.setattr(provenance, "workers", lambda gpu=False: ["10.255.255.1"])
    assert slurmenv.execution({}) == {"path": "bare-metal", "slurm": None, "image": None}


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="Slurm's client commands are not installed (make slurm-deps)")
def test_a_point_the_slurm_executor_submitted_records_its_job_and_the_prefix_image(tmp_path, monkeypatch):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=unit\nSlurmctldHost=localhost\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    provisioned = fake_provisioned(tmp_path / "stack")
    monkeypatch.setattr(provenance, "prefix", lambda: provisioned)
    job = {"SLURM_JOB_ID": "88", "SLURM_JOB_NODELIST": "h[2-3]", "SLURM_JOB_PARTITION": "batch"}
    assert slurmenv.execution(job) == {
        "path": "slurm+prefix", "slurm": {"job_id": 88, "nodes": ["h2", "h3"], "partition": "batch"},
        "image": None}
    image = tmp_path / "modern.sif"
    image.write_bytes(b"SIF stand-in")
    env = provisioned / "etc" / "dlobd-env.sh"
    env.write_text(env.read_text() + f"export DLOBD_INSTALL_METHOD=apptainer\nexport DLOBD_APPTAINER_IMAGE={image}\n")
    got = slurmenv.execution(job)
    assert got["path"] == "slurm+apptainer"
    assert got["image"] == {"path": str(image), "sha256": hashlib.sha256(b"SIF stand-in").hexdigest()}


def test_the_signals_the_job_traps_map_to_status_and_reason():
    assert slurmenv.interrupted_outcome("USR1") == ("hung", "Slurm time limit")
    assert slurmenv.interrupted_outcome("TERM") == ("failed", "cancelled by Slurm")
    with pytest.raises(slurmjob.JobError, match="HUP"):
        slurmenv.interrupted_outcome("HUP")


@pytest.mark.parametrize("signal_name", ["USR1", "TERM"])
def test_an_interrupt_ends_the_pipeline_and_records_its_unfinished_runs(tmp_path, signal_name):
    plan = job_plan(tmp_path)
    shared = tmp_path / "shared" / "slurm-5150"
    shared.mkdir(parents=True)
    plan.save(shared / "job.json")
    runs_dir = tmp_path / "runs"
    point = {"network": "eth-1g-emulated", "nodes": 2, "repeat": 1}   # a point of the local matrix
    cut = runs.new_attempt(runs_dir, "slurm", "local", "rdmatf-fig6", point)
    (cut / "stdout.log").write_text("step 1\n")
    done = runs.new_attempt(runs_dir, "slurm", "local", "tfgrpc-fig9", {"network": "loopback"})
    runs.write_run_json(done, {"experiment": "tfgrpc-fig9", "scale": "local", "cluster": "slurm",
                               "point": {"network": "loopback"}, "status": "ok"})
    pipeline = subprocess.Popen(["sleep", "60"])
    recorded = slurmjob.interrupt(plan, signal_name, runs_dir, pipeline.pid, grace_s=5)
    pipeline.wait(timeout=5)  # psutil has reaped it: its status is gone with it
    status, reason = slurmenv.INTERRUPTIONS[signal_name]
    assert recorded == [cut]
    record = runs.read_attempt(cut, runs_dir).record
    assert record["status"] == status and record["reason"].startswith(reason)
    assert record["point"] == point
    assert (cut / "stdout.log").read_text() == "step 1\n"
    assert runs.read_attempt(done, runs_dir).record["status"] == "ok"
    # a launcher still running in the job reads the same reason
    environ = {"DLOBD_SLURM_JOB_JSON": str(shared / "job.json")}
    assert slurmenv.interruption(environ) == (status, reason)
    assert json.loads((shared / slurmenv.INTERRUPT_FILE).read_text())["signal"] == signal_name
    assert not psutil.pid_exists(pipeline.pid) or psutil.Process(pipeline.pid).status() == psutil.STATUS_ZOMBIE


def test_outside_a_slurm_job_nothing_is_interrupted(tmp_path):
    assert slurmenv.interruption({}) is None


def test_a_run_ended_by_a_signal_waits_for_the_trap_to_say_why(tmp_path):
    import threading

    shared = tmp_path / "slurm-9"
    shared.mkdir()
    environ = {"DLOBD_SLURM_JOB_JSON": str(shared / "job.json")}
    assert slurmenv.interruption(environ, wait_s=0.3) is None
    # the trap writes its reason a moment after Slurm's signal ended the command
    writer = threading.Timer(0.5, lambda: (shared / slurmenv.INTERRUPT_FILE).write_text(
        json.dumps({"status": "failed", "reason": "cancelled by Slurm"})))
    writer.start()
    assert slurmenv.interruption(environ, wait_s=5) == ("failed", "cancelled by Slurm")
    writer.join()
    assert [slurmenv.ended_by_signal(s) for s in (143, -15, 137, 1, 0, None, 255)] == \
        [True, True, True, False, False, False, False]


@pytest.mark.parametrize("item, error", [
    ("rdmatf-fig6", "expected EXPERIMENT=POINT_JSON"),
    ("no-such-experiment={}", "expected EXPERIMENT=POINT_JSON with a known experiment"),
    ("rdmatf-fig6={nodes: 2}", "the point is not JSON"),
    ("rdmatf-fig6=[2]", "must be a JSON object"),
])
def test_a_point_to_launch_that_is_malformed_is_named(tmp_path, item, error):
    with pytest.raises(slurmjob.JobError, match=re.escape(error)):
        slurmjob.launch_item(item, tmp_path / "runs", "slurm", "local")
    assert not (tmp_path / "runs").exists()


def test_the_node_teardown_ends_what_still_runs_from_the_job_directory(tmp_path):
    job_dir = tmp_path / "dlobd-slurm-77"
    (job_dir / "var").mkdir(parents=True)
    # a process left behind as a YARN container is: started from the job directory, in its own session
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"{job_dir}/var/container"],
                            start_new_session=True)
    other = subprocess.Popen(["sleep", "60"])
    try:
        assert [p.pid for p in slurmjob.job_processes(str(job_dir))] == [left.pid]
        slurmjob.end_processes(slurmjob.job_processes(str(job_dir)), grace_s=5)
        left.wait(timeout=5)
        assert slurmjob.job_processes(str(job_dir)) == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
