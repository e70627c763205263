"""Bad input to the playbooks fails early with a clear message.

Each scenario runs the real ansible-playbook on a crafted inventory (this machine, reached over
the local connection, into a throw-away prefix); nothing is installed system-wide and no daemon is
started. The scenarios are independent, so they all run at once (one fixture) and each test reads
its own scenario's result.
"""

import hashlib
import http.server
import io
import json
import os
import platform
import re
import socket
import subprocess
import tarfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from dlobd import ROOT, playbook_settings

PLAYBOOKS = ROOT / "playbooks"
ANSIBLE_PLAYBOOK = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "ansible-playbook"
GROUP_VARS = playbook_settings()

LOCAL = {"ansible_connection": "local", "dlobd_cluster_address": "127.0.0.1"}


def inventory(tmp_path: Path, groups: dict, extra_hosts: dict | None = None) -> Path:
    hosts = {"localhost": LOCAL, **(extra_hosts or {})}
    data = {"all": {"hosts": hosts,
                    "children": {g: {"hosts": {h: None for h in members}} for g, members in groups.items()}}}
    path = tmp_path / "inventory" / "hosts.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


ONE_NODE = {"namenode": ["localhost"], "resourcemanager": ["localhost"], "workers": ["localhost"]}
# Two hosts on one machine: one file system, one host name (uname -n), as two hosts sharing a
# prefix on NFS would be if they had one name
TWINS = {**ONE_NODE, "workers": ["localhost", "twin"]}


def run_playbook(tmp_path: Path, inv: Path, playbook: str, *extra: str, extra_vars: dict | None = None):
    cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(inv), str(PLAYBOOKS / playbook),
           "-e", json.dumps({"dlobd_prefix": str(tmp_path / "prefix"), **(extra_vars or {})}), *extra]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """An HTTP server on loopback laid out like the Apache archive, holding a small Hadoop-shaped
    release tarball under two versions: one whose published .sha512 is right, one whose is wrong."""
    root = tmp_path_factory.mktemp("mirror")
    tarballs = {}
    for version, good in (("9.9.1", True), ("9.9.2", False)):
        rel = root / "hadoop" / "common" / f"hadoop-{version}"
        rel.mkdir(parents=True)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            payload = b"not a real jar\n"
            info = tarfile.TarInfo(f"hadoop-{version}/share/hadoop/common/hadoop-common-{version}.jar")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        tarball = rel / f"hadoop-{version}.tar.gz"
        tarball.write_bytes(buf.getvalue())
        digest = hashlib.sha512(buf.getvalue()).hexdigest() if good else "0" * 128
        # Apache's BSD-style checksum line.
        (rel / f"{tarball.name}.sha512").write_text(f"SHA512 ({tarball.name}) = {digest}\n")
        tarballs[version] = tarball
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def maven_settings(tmp_path_factory):
    """Maven settings whose only repository is a local folder holding Hadoop's BOM for a made-up
    version with a wrong .sha1 beside it."""
    root = tmp_path_factory.mktemp("maven")
    bom = root / "repo/org/apache/hadoop/hadoop-project/9.9.3/hadoop-project-9.9.3.pom"
    bom.parent.mkdir(parents=True)
    bom.write_text("<project><modelVersion>4.0.0</modelVersion><groupId>org.apache.hadoop</groupId>"
                   "<artifactId>hadoop-project</artifactId><version>9.9.3</version>"
                   "<packaging>pom</packaging></project>\n")
    bom.with_name(bom.name + ".sha1").write_text("0" * 40 + "\n")
    settings = root / "settings.xml"
    settings.write_text(f"<settings><mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf>"
                        f"<url>file://{root / 'repo'}</url></mirror></mirrors></settings>\n")
    return settings


@pytest.fixture(scope="module")
def results(tmp_path_factory, mirror, maven_settings):
    """Run every scenario concurrently; map scenario name -> (exit status, output, its tmp dir)."""
    image = tmp_path_factory.mktemp("image") / "stack.sif"
    image.write_bytes(b"not a real image\n")
    with socket.socket() as closed, socket.socket() as busy:
        closed.bind(("127.0.0.1", 0))  # a loopback port nobody listens on (never listen())
        closed_port = closed.getsockname()[1]
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        busy_port = busy.getsockname()[1]
        ghost = {"ghost": {"ansible_host": "127.0.0.1", "ansible_port": closed_port, "ansible_connection": "ssh",
                           "ansible_ssh_common_args": "-o ConnectTimeout=5 -o StrictHostKeyChecking=no",
                           "dlobd_cluster_address": "127.0.0.1"}}
        scenarios = {
            "no_namenode": ({"resourcemanager": ["localhost"], "workers": ["localhost"]}, None, "preflight.yml", (), {}),
            "unreachable": ({**ONE_NODE, "workers": ["localhost", "ghost"]}, ghost, "preflight.yml", (), {}),
            "port_in_use": (ONE_NODE, None, "preflight.yml", (),
                            {"dlobd_ports": {**GROUP_VARS["dlobd_ports"], "namenode_rpc": busy_port}}),
            "memory": (ONE_NODE, None, "preflight.yml", (),
                       {"dlobd_daemon_heap_mb": {**GROUP_VARS["dlobd_daemon_heap_mb"], "namenode": 10_000_000}}),
            # The machine's real JDK, held to a requirement it cannot meet.
            "java_old": (ONE_NODE, None, "preflight.yml", (), {"dlobd_java_min_version": 99}),
            "java_missing": (ONE_NODE, None, "preflight.yml", (),
                             {"dlobd_system_packages": False, "dlobd_java_home": "/nonexistent/jdk"}),
            "old_paper_setting": (ONE_NODE, None, "preflight.yml", (), {"spack_paper_stack": "caffeonspark"}),
            "role_variable_typo": (ONE_NODE, None, "preflight.yml", (),
                                   {"hibench_enable": True, "mmlspark_pyhton": "/opt/python-3.6/bin/python"}),
            # tfos-bigdl is the one paper set the registry method carries (on a new enough glibc)
            "paper_from_registry": (ONE_NODE, None, "preflight.yml", (),
                                    {"dlobd_profile": "paper", "dlobd_paper_env": "caffeonspark"}),
            "unknown_method": (ONE_NODE, None, "site.yml", ("--tags", "hadoop"), {"dlobd_install_method": "conda"}),
            "unknown_hadoop_method": (ONE_NODE, None, "site.yml", ("--tags", "hadoop"),
                                      {"dlobd_hadoop_install_method": "conda"}),
            "apptainer_no_image": (ONE_NODE, None, "site.yml", ("--tags", "hadoop"),
                                   {"dlobd_install_method": "apptainer"}),
            # the role copies the image to the host, then checks the copy before anything uses it
            "apptainer_bad_digest": (ONE_NODE, None, "site.yml", ("--tags", "hadoop"),
                                     {"dlobd_install_method": "apptainer", "apptainer_image": str(image),
                                      "apptainer_image_sha256": "0" * 64}),
            "tarball_bad": (ONE_NODE, None, "site.yml", ("--tags", "node,hadoop"),
                            {"dlobd_install_method": "tarball", "dlobd_apache_mirror": mirror,
                             "dlobd_hadoop_version": "9.9.2"}),
            "tarball_good": (ONE_NODE, None, "site.yml", ("--tags", "node,hadoop"),
                             {"dlobd_install_method": "tarball", "dlobd_apache_mirror": mirror,
                              "dlobd_hadoop_version": "9.9.1"}),
            "maven_bad": (ONE_NODE, None, "site.yml", ("--tags", "node,hadoop"),
                          {"dlobd_hadoop_version": "9.9.3", "hadoop_maven_extra_args": ["-s", str(maven_settings)]}),
            # no machine has these, so the fabric role must stop both runs
            "rdma_no_hca": (ONE_NODE, {"localhost": {**LOCAL, "dlobd_networks": ["ipoib", "rdma"]}},
                            "site.yml", ("--tags", "node"), {}),
            "hardware_mismatch": (ONE_NODE, {"localhost": {**LOCAL, "dlobd_hardware": {
                "hca": "nosuchhca", "gpus": 99, "gpu_model": "K80"}}}, "fabric.yml", (), {}),
            # a node-local folder on a scratch file system this host does not have
            "local_dir_missing": (ONE_NODE, None, "site.yml", ("--tags", "node"),
                                  {"dlobd_local_dir": "/nonexistent-scratch/dlobd"}),
            "twins_one_name": (TWINS, {"twin": LOCAL}, "preflight.yml", (), {}),
            "twins_one_folder": (TWINS, {"twin": LOCAL}, "preflight.yml", (), {"dlobd_local_dir": "{{ dlobd_prefix }}"}),
            # every value the settings' schema refuses, of both hosts, in one run
            "bad_values": (TWINS, {"localhost": {**LOCAL, "dlobd_hardware": {"cores": -4, "gpus": 0}},
                                   "twin": {**LOCAL, "dlobd_hardware": {"cores": "lots"}}},
                           "preflight.yml", (), {"dlobd_prefix": "relative/path", "dlobd_install_method": "docker"}),
        }

        def one(name):
            groups, extra_hosts, book, args, extra_vars = scenarios[name]
            tmp = tmp_path_factory.mktemp(name)
            rc, out = run_playbook(tmp, inventory(tmp, groups, extra_hosts), book, *args, extra_vars=extra_vars)
            return name, (rc, out, tmp)

        with ThreadPoolExecutor(max_workers=4) as pool:
            done = dict(pool.map(one, scenarios))
        done["ports"] = {"closed": closed_port, "busy": busy_port}
        return done


def test_inventory_without_namenode_fails(results):
    rc, out, _ = results["no_namenode"]
    assert rc != 0
    assert "group 'namenode' must have exactly one host, it has 0" in out


def test_unreachable_worker_fails(results):
    rc, out, _ = results["unreachable"]
    assert rc != 0
    assert "UNREACHABLE" in out  # Ansible's own report ...
    port = results["ports"]["closed"]
    assert f"host(s) ghost could not be reached (ghost: 127.0.0.1:{port})" in out  # ... and ours


def test_port_in_use_fails(results):
    rc, out, _ = results["port_in_use"]
    assert rc != 0
    port = results["ports"]["busy"]
    assert f"port {port} (namenode_rpc) on localhost address 127.0.0.1 is already in use" in out


def test_too_little_memory_for_heaps_fails(results):
    rc, out, _ = results["memory"]
    assert rc != 0
    assert "MiB of memory but needs" in out and "namenode 10000000" in out


def test_java_too_old_fails(results):
    rc, out, _ = results["java_old"]
    assert rc != 0
    assert "is version 17" in out and "need Java 99 or newer" in out


def test_missing_java_fails_when_not_installing(results):
    rc, out, _ = results["java_missing"]
    assert rc != 0
    assert "no Java at /nonexistent/jdk" in out


def test_the_spack_roles_old_paper_setting_is_refused_naming_its_successor(results):
    rc, out, _ = results["old_paper_setting"]
    assert rc != 0
    assert "spack_paper_stack is no longer read; set dlobd_paper_env" in " ".join(out.split())


def test_a_misspelt_role_variable_is_refused_naming_where_it_was_set_and_the_known_name(results):
    rc, out, _ = results["role_variable_typo"]
    text = " ".join(out.split())
    assert rc != 0
    assert ("hibench_enable (set in the command line (-e)) is no setting of the playbooks "
            "(did you mean hibench_enabled") in text, text[-2000:]
    assert "the accepted names and their defaults: playbooks/roles/hibench/defaults/main.yml" in text
    assert "mmlspark_pyhton" in text and "(did you mean mmlspark_python" in text


def test_the_paper_profile_from_the_registries_is_refused_naming_the_methods_that_carry_it(results):
    rc, out, _ = results["paper_from_registry"]
    assert rc != 0
    flat = " ".join(out.split())
    assert ("dlobd_profile is paper (set in the command line (-e)), whose versions (Java 8, Hadoop 2.6.5, "
            "Spark 1.6.2) come from its Spack environment or an image of it") in flat
    assert ("dlobd_install_method is registry (set in the dlobd role: its default), which installs the modern "
            "profile's only and the paper sets paper-tfos-bigdl: set dlobd_install_method to spack or apptainer") in flat


def test_unimplemented_install_method_fails(results):
    # the settings are checked on every run, one of some tags (here hadoop) too
    rc, out, _ = results["unknown_method"]
    assert rc != 0
    assert ('dlobd_install_method is "conda" (set in the command line (-e)): it must be one of registry, '
            "tarball, spack, apptainer") in " ".join(out.split())


def test_every_value_the_settings_schema_refuses_stops_the_preflight_naming_each(results):
    rc, out, tmp = results["bad_values"]
    flat = " ".join(out.split())
    inv = tmp / "inventory" / "hosts.yml"
    assert rc != 0
    cores = "it must be a whole number of 1 or more (logical CPUs, as YARN counts them)"
    prefix = ('dlobd_install_method is "docker" (set in the command line (-e)): it must be one of registry, tarball, '
              'spack, apptainer; dlobd_prefix is "relative/path" (set in the command line (-e)): it must be an '
              "absolute path (starting with /)")
    # each host stops once, with all of its refused values
    assert f"localhost: dlobd_hardware.cores is -4 (set in {inv} (vars of host localhost)): {cores}; {prefix}" in flat
    assert f'twin: dlobd_hardware.cores is "lots" (set in {inv} (vars of host twin)): {cores}; {prefix}' in flat
    assert flat.count("TASK [preflight : Stop on a value the settings' schema refuses]") == 1
    assert not (ROOT / "relative").exists()


def test_unimplemented_install_method_of_one_layer_fails(results):
    rc, out, _ = results["unknown_hadoop_method"]
    assert rc != 0
    assert "install method conda is not implemented yet for Hadoop (implemented: registry, tarball, spack, apptainer)" in out


def test_apptainer_method_without_an_image_fails_naming_the_setting(results):
    rc, out, _ = results["apptainer_no_image"]
    assert rc != 0
    assert "install method apptainer: apptainer_image is not set" in out


def test_apptainer_image_copy_with_another_digest_stops_the_play(results):
    rc, out, tmp = results["apptainer_bad_digest"]
    assert rc != 0
    copy = tmp / "prefix" / "images" / "stack.sif"
    found = hashlib.sha256(b"not a real image\n").hexdigest()
    assert f"the image {copy} has sha256 {found}, expected {'0' * 64}" in out
    assert not (tmp / "prefix" / "hadoop-3.4.1").exists()


def test_tarball_with_wrong_sha512_stops_the_play(results, mirror):
    rc, out, tmp = results["tarball_bad"]
    assert rc != 0
    assert f"download of Hadoop 9.9.2 from {mirror}/hadoop/common/hadoop-9.9.2/hadoop-9.9.2.tar.gz failed" in out
    assert "failed its SHA-512 check" in out
    assert not (tmp / "prefix" / "hadoop-9.9.2").exists()


def test_tarball_with_published_sha512_installs(results):
    rc, out, tmp = results["tarball_good"]
    assert rc == 0, out[-3000:]
    prefix = tmp / "prefix"
    jar = prefix / "hadoop-9.9.1/share/hadoop/common/hadoop-common-9.9.1.jar"
    assert jar.read_bytes() == b"not a real jar\n"
    # the host's configuration in its folder, named by the host: the prefix is its own
    assert "hdfs://127.0.0.1:" in (prefix / "hosts" / platform.node() / "etc/hadoop/core-site.xml").read_text()
    assert (f"localhost: prefix {prefix} is its own (no other host of this run sees it); configuration "
            f"and state of this host: {prefix}/hosts/{platform.node()}") in " ".join(out.split())
    assert os.access(prefix / "sbin/dlobd-daemon", os.X_OK)
    assert (prefix / "etc/secrets/spark.secret").stat().st_mode & 0o777 == 0o600


def test_rdma_asked_of_a_host_without_an_hca_stops_before_anything_installs(results):
    rc, out, tmp = results["rdma_no_hca"]
    assert rc != 0
    found = "found no HCA (/sys/class/infiniband does not exist"
    assert f"localhost: dlobd_networks: ipoib needs infiniband: expected an HCA with an ACTIVE port, {found}" in out
    assert f"localhost: dlobd_networks: rdma needs infiniband and rdma: expected an HCA with an ACTIVE port, {found}" in out
    # node_basics, the first role that installs, never ran: it would have made the prefix layout
    assert not (tmp / "prefix").exists()


def test_hardware_the_host_lacks_fails_naming_host_field_expected_and_found(results):
    rc, out, _ = results["hardware_mismatch"]
    assert rc != 0
    assert "localhost: dlobd_hardware.hca: expected nosuchhca, found" in out
    assert "localhost: dlobd_hardware.gpus: expected 99, found" in out
    assert "localhost: dlobd_hardware.gpu_model: expected K80, found" in out


def test_fabric_role_records_this_host_and_a_rerun_changes_nothing(tmp_path):
    from dlobd.cluster import fabric

    inv = inventory(tmp_path, ONE_NODE)
    rc, out = run_playbook(tmp_path, inv, "fabric.yml")
    assert rc == 0, out[-3000:]
    recorded = json.loads((tmp_path / "prefix/hosts" / platform.node() / "etc/fabric.json").read_text())
    # what the role ran on this host is what the detector finds here
    assert recorded == fabric.detect(host=recorded["host"])
    assert f"localhost: {recorded['summary']}" in out
    if not Path("/sys/class/infiniband").exists() and recorded["gpus"]["count"] == 0:
        assert recorded["summary"] == "no InfiniBand HCA; no GPU"
        assert recorded["infiniband"]["none_because"].startswith("/sys/class/infiniband does not exist")
    rc, out = run_playbook(tmp_path, inv, "fabric.yml")
    assert rc == 0 and re.search(r"localhost\s*:\s*ok=\d+\s+changed=0", out), out[-3000:]


def test_example_ib_inventory_names_every_role_and_an_ipoib_address_per_host():
    out = subprocess.run([str(ANSIBLE_PLAYBOOK.with_name("ansible-inventory")), "-i",
                          str(PLAYBOOKS / "inventories/example-ib/hosts.yml"), "--list"],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}).stdout
    inv = json.loads(out)
    assert len(inv["namenode"]["hosts"]) == 1 and len(inv["resourcemanager"]["hosts"]) == 1
    assert inv["workers"]["hosts"] and inv["gpu"]["hosts"]
    for host, hostvars in inv["_meta"]["hostvars"].items():
        assert hostvars["dlobd_cluster_interface"] == "ib0", host
        assert hostvars["dlobd_cluster_address"] != hostvars["ansible_host"], host
        assert {"ipoib", "rdma"} <= set(hostvars["dlobd_networks"]), host
        assert hostvars["dlobd_hardware"]["hca"] == "mlx5", host
    assert all(inv["_meta"]["hostvars"][h]["dlobd_hardware"]["gpus"] > 0 for h in inv["gpu"]["hosts"])


def test_maven_checksum_mismatch_stops_the_play(results):
    rc, out, tmp = results["maven_bad"]
    assert rc != 0
    assert "Fetch Hadoop's jars from Maven Central (checksums enforced)" in out
    assert "Checksum validation failed" in out and "org.apache.hadoop:hadoop-project:pom:9.9.3" in out
    assert not (tmp / "prefix" / "hadoop-9.9.3" / "lib").exists()


def test_a_node_local_folder_whose_parent_is_missing_stops_before_anything_is_made(results):
    rc, out, tmp = results["local_dir_missing"]
    assert rc != 0
    assert ("localhost: dlobd_local_dir /nonexistent-scratch/dlobd (set in the command line (-e)) does not "
            "exist, nor does its parent /nonexistent-scratch (a node-local file system not mounted on this "
            "host?)") in " ".join(out.split())
    assert not (tmp / "prefix").exists() and not Path("/nonexistent-scratch").exists()


def test_hosts_sharing_a_prefix_under_one_host_name_are_refused_naming_both(results):
    rc, out, _ = results["twins_one_name"]
    assert rc != 0
    assert (f"localhost and twin share the prefix {results['twins_one_name'][2] / 'prefix'} and call themselves "
            f"the same ({platform.node()}, uname -n)") in " ".join(out.split())


def test_hosts_sharing_a_prefix_and_one_folder_are_refused_naming_the_setting(results):
    rc, out, tmp = results["twins_one_folder"]
    assert rc != 0
    assert (f"localhost: dlobd_local_dir {tmp / 'prefix'} (set in the command line (-e)) is also the folder "
            "of twin, on the file system they share") in " ".join(out.split())
    # the layout probe left nothing behind
    assert list(tmp.glob("**/.dlobd-layout-*")) == []
