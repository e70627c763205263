"""Each host's own folder (dlobd_local_dir) beside the software of a prefix that hosts may share.

- The playbook templates for one host: with the default folder, <prefix>/hosts/<host name>, the
  host's configuration and state move there and nothing else changes from a prefix that is the
  host's alone (dlobd_local_dir = dlobd_prefix, the layout of before). What every host writes into
  the prefix is the same from each of them.
- The prefix's entry point (role stack_env's dlobd-env-entry.sh.j2) reads the folder of the host
  it runs on by `uname -n`, the one folder of a prefix one host provisioned, and else stops naming
  the host.
- The preflight's layout probe (role preflight's files/layout.py): hosts that see each other's
  marks share a folder; a node-local folder that cannot be made is refused, saying why.
"""

import importlib.util
import platform
import subprocess

import pytest

from dlobd import playbook_settings
from dlobd.cluster import provenance
from dlobd.execution import slurmjob

ROLES = slurmjob.PLAYBOOKS / "roles"
NODE = platform.node()
spec = importlib.util.spec_from_file_location("layout", ROLES / "preflight" / "files" / "layout.py")
layout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layout)

# What each host writes into the prefix itself, the same file for all of them
PREFIX_TEMPLATES = [("hadoop", "dlobd-daemon.j2"), ("stack_env", "hdfs.j2"), ("stack_env", "yarn.j2"),
                    ("stack_env", "dlobd-env.j2"), ("stack_env", "dlobd-env-entry.sh.j2"),
                    ("apptainer", "wrapper.j2")]


def host_vars(tmp_path, node=NODE, address="127.0.0.1", memtotal_mb=8000, **over) -> dict:
    """A host's variables as a play resolves them for these templates: the playbooks' defaults, its facts."""
    secret = tmp_path / "spark.secret"
    secret.write_text("s3cret")
    return {**playbook_settings(), **slurmjob.role_defaults(),
            "ansible_managed": "test", "inventory_hostname": node,
            "ansible_facts": {"nodename": node, "user_id": "tester", "memtotal_mb": memtotal_mb,
                              "processor_vcpus": 2, "architecture": "x86_64"},
            "groups": {"namenode": ["nn"], "resourcemanager": ["nn"], "workers": [node], "gpu": []},
            "hostvars": {"nn": {"dlobd_cluster_address": "10.0.0.1"},
                         node: {"ansible_facts": {"memtotal_mb": memtotal_mb, "processor_vcpus": 2}}},
            "dlobd_prefix": "/prefix", "dlobd_cluster_address": address, "dlobd_secret_source": str(secret),
            "spark_home": "/FACT/spark",
            # the apptainer method's wrapper of one command
            "item": "java", "apptainer_wrapper_target_dir": "/usr/lib/jvm/bin", "apptainer_image_path": "/i.sif",
            "apptainer_run_prefix": ["apptainer", "exec", "/i.sif"], **over}


def render(role: str, name: str, variables: dict) -> str:
    return slurmjob.render(ROLES / role / "templates" / name, variables)


def test_one_host_renders_as_before_but_for_the_paths_that_move_to_its_folder(tmp_path):
    moved = set()
    for role, name, _, _ in slurmjob.TEMPLATES:
        default = render(role, name, host_vars(tmp_path))
        alone = render(role, name, host_vars(tmp_path, dlobd_local_dir="{{ dlobd_prefix }}"))
        assert default.replace(f"/prefix/hosts/{NODE}/", "/prefix/") == alone, name
        if default != alone:
            moved.add(name)
    assert moved == {"core-site.xml.j2", "hdfs-site.xml.j2", "yarn-site.xml.j2", "spark-defaults.conf.j2",
                     "spark-env.sh.j2"}
    hdfs = render("hdfs", "hdfs-site.xml.j2", host_vars(tmp_path))
    assert f"<value>file:///prefix/hosts/{NODE}/var/hdfs/data</value>" in hdfs


def test_what_hosts_write_into_the_prefix_is_the_same_from_each(tmp_path):
    for role, name in PREFIX_TEMPLATES:
        first = render(role, name, host_vars(tmp_path))
        other = render(role, name, host_vars(tmp_path, node="other-node", address="10.0.0.2", memtotal_mb=16000))
        assert first == other, name


def test_the_image_wrapper_finds_a_node_local_folder_through_the_prefix(tmp_path):
    # the host's settings for the image are in its folder, which the prefix's dlobd-env.sh names
    wrapper = render("apptainer", "wrapper.j2", host_vars(tmp_path, dlobd_local_dir="/scratch/dlobd"))
    assert "source /prefix/etc/dlobd-env.sh" in wrapper and "/scratch" not in wrapper


@pytest.fixture
def prefix(tmp_path):
    """A prefix two hosts provisioned, with its entry point: each folder says whose it is."""
    root = tmp_path / "stack"
    for name in (NODE, "other-node"):
        (root / "hosts" / name / "etc").mkdir(parents=True)
        (root / "hosts" / name / "etc" / "dlobd-env.sh").write_text(f"export WHOSE={name}\n")
    (root / "etc").mkdir()
    (root / "etc" / "dlobd-env.sh").write_text(
        render("stack_env", "dlobd-env-entry.sh.j2", host_vars(tmp_path, dlobd_prefix=str(root))))
    (root / "bin").mkdir()
    (root / "bin" / "dlobd-env").write_text(render("stack_env", "dlobd-env.j2", host_vars(tmp_path, dlobd_prefix=str(root))))
    (root / "bin" / "dlobd-env").chmod(0o755)
    return root


def test_the_entry_point_reads_the_folder_of_the_host_it_runs_on(prefix):
    assert provenance.source_env(prefix / "etc" / "dlobd-env.sh", base={})["WHOSE"] == NODE
    # in a POSIX shell too (a login shell over ssh)
    done = subprocess.run(["sh", "-c", f'. {prefix}/etc/dlobd-env.sh && echo "$WHOSE"'],
                          capture_output=True, text=True, check=True)
    assert done.stdout == f"{NODE}\n"
    # the arguments of a script that sources it stay its own
    done = subprocess.run([prefix / "bin" / "dlobd-env", "sh", "-c", 'echo "$WHOSE $0"', "arg"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == f"{NODE} arg\n"


def test_a_host_without_a_folder_reads_the_one_folder_else_stops_naming_itself(prefix):
    (prefix / "hosts" / NODE / "etc" / "dlobd-env.sh").unlink()
    assert provenance.source_env(prefix / "etc" / "dlobd-env.sh", base={})["WHOSE"] == "other-node"
    (prefix / "hosts" / "third-node" / "etc").mkdir(parents=True)
    (prefix / "hosts" / "third-node" / "etc" / "dlobd-env.sh").write_text("export WHOSE=third-node\n")
    done = subprocess.run([prefix / "bin" / "dlobd-env", "true"], capture_output=True, text=True)
    assert done.returncode != 0
    assert f"host {NODE} has no folder in {prefix}/hosts/ (provision it" in done.stderr


def test_a_node_local_folder_must_have_its_parent_and_be_writable(tmp_path, monkeypatch):
    prefix = str(tmp_path / "stack")
    assert layout.local_dir_error(prefix, f"{prefix}/hosts/{NODE}") is None  # made with the prefix
    assert layout.local_dir_error(prefix, prefix) is None
    assert layout.local_dir_error(prefix, str(tmp_path / "dlobd")) is None  # made in its parent
    assert layout.local_dir_error(prefix, "scratch/dlobd") == "not an absolute path"
    missing = tmp_path / "scratch" / "dlobd"
    assert layout.local_dir_error(prefix, str(missing)) == (
        f"does not exist, nor does its parent {missing.parent} (a node-local file system not mounted "
        "on this host?): make it on every host, or choose another path")
    (tmp_path / "file").write_text("")
    assert layout.local_dir_error(prefix, str(tmp_path / "file")) == "exists and is not a folder"
    monkeypatch.setattr(layout, "writable", lambda path: False)
    assert layout.local_dir_error(prefix, str(tmp_path)).startswith("is not writable by ")
    assert layout.local_dir_error(prefix, str(tmp_path / "dlobd")).startswith(
        f"does not exist, and its parent {tmp_path} is not writable by ")


def test_hosts_see_each_others_marks_for_the_same_folder_and_nothing_is_left(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    prefix = str(shared / "stack")  # not made yet: the marks go where it will be
    hosts = {"a": f"{prefix}/hosts/a", "b": f"{prefix}/hosts/b", "c": prefix, "d": prefix}
    for host, local_dir in hosts.items():
        assert layout.mark("run1", host, prefix, local_dir) == {"local_error": None}
    # the hosts' folders in the prefix: nothing to compare before the prefix is made
    assert layout.seen("run1", prefix, hosts["a"]) == {"prefix": ["a", "b", "c", "d"], "local": []}
    assert layout.seen("run1", prefix, prefix) == {"prefix": ["a", "b", "c", "d"], "local": ["c", "d"]}
    assert layout.seen("run2", prefix, prefix) == {"prefix": [], "local": []}
    for host, local_dir in hosts.items():
        layout.clear("run1", host, prefix, local_dir)
    assert list(tmp_path.rglob("*")) == [shared]
    # a folder that cannot be made leaves the prefix's mark alone
    assert layout.mark("run3", "a", prefix, str(tmp_path / "no" / "dlobd"))["local_error"].startswith("does not exist")
    assert layout.seen("run3", prefix, str(tmp_path / "no" / "dlobd")) == {"prefix": ["a"], "local": []}


def test_the_resourcemanager_grants_what_the_largest_worker_offers(tmp_path):
    """On a service host smaller than the workers, yarn-site.xml's maximum allocation is still the
    largest worker's NodeManager (the ResourceManager reads its own); dlobd-env.sh gives the
    launchers the smallest worker's, on whichever host they start."""
    workers = {"w1": {"dlobd_hardware": {"memory_gb": 192, "cores": 48}},
               "w2": {"ansible_facts": {"memtotal_mb": 65536, "processor_vcpus": 32}},
               "unseen": {}}  # neither declared nor gathered: left out
    variables = host_vars(tmp_path, memtotal_mb=16384, groups={
        "namenode": ["nn"], "resourcemanager": [NODE], "workers": list(workers), "gpu": []})
    variables["hostvars"].update(workers)
    yarn = render("yarn", "yarn-site.xml.j2", variables)
    # 192 GB x the default dlobd_yarn_memory_fraction 0.25, 48 cores x 2 vcores per CPU
    assert "<name>yarn.scheduler.maximum-allocation-mb</name><value>49152</value>" in yarn
    assert "<name>yarn.scheduler.maximum-allocation-vcores</name><value>96</value>" in yarn
    assert "<name>yarn.nodemanager.resource.memory-mb</name><value>4096</value>" in yarn  # its own
    # what role stack_env exports as DLOBD_YARN_MEMORY_MB and DLOBD_YARN_VCORES
    least = tmp_path / "least.j2"
    least.write_text("{{ dlobd_yarn_least_memory_mb }} {{ dlobd_yarn_least_vcores }}")
    assert slurmjob.render(least, variables) == "16384 64"
