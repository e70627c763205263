"""The modern image for real: built (or reused from the cache when its definition and the roles are
unchanged), its %test run, then a prefix provisioned with dlobd_install_method=apptainer from it
(playbooks/install.yml on the local machine) whose wrappers run Hadoop, Spark, TensorFlow and MPI
inside the image; a second provisioning changes nothing.

`make test-apptainer` runs it. Apptainer comes from $APPTAINER, PATH or $DLOBD_APPTAINER_TARBALL
(without any the test fails with the error that names them). DLOBD_TEST_IMAGES: the image cache
(default $DLOBD_PREFIX/images, else ~/dlobd-stack/images). A cold build takes tens of minutes
here (docs/spack-apptainer-slurm.md, "Apptainer images"); a cached one seconds.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dlobd import ROOT, playbook_settings
from dlobd.execution import apptainer

pytestmark = pytest.mark.integration

IMAGES = Path(os.environ.get("DLOBD_TEST_IMAGES") or apptainer.default_images_dir())
GROUP_VARS = playbook_settings()
# The provisioned prefix's ports, shifted off the defaults so that its daemons never meet a local
# cluster that runs beside the test.
PORTS = {name: port + 500 for name, port in GROUP_VARS["dlobd_ports"].items()}
# The versions the modern image is built with
MODERN = GROUP_VARS["dlobd_profile_versions"]["modern"]


@pytest.fixture(scope="module")
def prefix(modern_image, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("apptainer-method")
    inventory = tmp / "inventory" / "hosts.yml"
    inventory.parent.mkdir()
    inventory.write_text((ROOT / "playbooks/inventories/local/hosts.yml").read_text())
    prefix = tmp / "prefix"
    extra = {"dlobd_prefix": str(prefix), "dlobd_install_method": "apptainer", "apptainer_image": str(modern_image),
             "apptainer_binary": str(apptainer.find_apptainer()), "dlobd_ports": PORTS}
    command = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks/install.yml"),
               "-e", json.dumps(extra)]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    for attempt in ("first", "second"):
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{attempt} provisioning:\n" + done.stdout[-5000:] + done.stderr[-2000:]
        recap = re.search(r"changed=(\d+)", done.stdout.split("PLAY RECAP")[-1]).group(1)
        if attempt == "second":
            assert recap == "0", "a second provisioning changed something:\n" + done.stdout[-5000:]
    return prefix


def run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)


def test_image_test_section_passes(modern_image):
    argv = apptainer.run_prefix(modern_image)
    done = run([argv[0], "test", *argv[2:]])
    assert done.returncode == 0, done.stdout + done.stderr
    for line in (f"ok: Hadoop {MODERN['hadoop']}", f"ok: Spark {MODERN['spark']}",
                 "ok: TensorFlow, TensorFlowOnSpark", "ok: BigDL's Engine class", "ok: MPI", "ok: data sets"):
        assert line in done.stdout, done.stdout


def test_image_labels_name_profile_commit_and_versions(modern_image):
    argv = apptainer.run_prefix(modern_image)
    labels = json.loads(run([argv[0], "inspect", "--json", "--labels", modern_image]).stdout)["data"]["attributes"]["labels"]
    assert labels["org.dlobd.profile"] == "modern"
    assert labels["org.dlobd.inputs-sha256"] == apptainer.content_hash(apptainer.CONTAINERS_DIR / "modern.def")
    assert labels["org.dlobd.version.hadoop"] == MODERN["hadoop"]
    assert labels["org.dlobd.version.tensorflow"] == MODERN["tensorflow"]


def test_a_second_build_reuses_the_cached_image(modern_image):
    again = subprocess.run([sys.executable, "-m", "dlobd.cli", "image", "--images", str(IMAGES), "build"],
                           cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"reused: {modern_image} ")


def test_hdfs_runs_inside_the_image_through_the_wrappers(prefix):
    done = run([prefix / "bin/hdfs", "version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Hadoop {MODERN['hadoop']}\n")
    # JAVA_HOME's java is the wrapper: the JVM that ran is the image's
    java = (prefix / "libexec/apptainer/jvm/bin/java").read_text()
    assert "exec" in java and str(apptainer.find_apptainer()) in java


def test_the_namenode_in_the_image_answers_webhdfs(prefix):
    # The image lists lib/* sorted, so jaxb-impl 2.2.3 precedes jaxb-runtime 2.3.1 there: without
    # java.lang opened every WebHDFS call answered HTTP 500 (the launchers stage data through it).
    done = run([prefix / "bin/hdfs", "namenode", "-format", "-force", "-nonInteractive"])
    assert done.returncode == 0, done.stderr[-3000:]
    started = run([prefix / "sbin/dlobd-daemon", "start", "namenode"])
    assert started.returncode == 0, started.stdout + started.stderr
    base = f"http://127.0.0.1:{PORTS['namenode_http']}/webhdfs/v1"
    try:
        summary = _webhdfs_when_up(f"{base}/?op=GETCONTENTSUMMARY&user.name=root")
        assert summary["ContentSummary"]["directoryCount"] == 1
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{base}/absent?op=GETCONTENTSUMMARY&user.name=root", timeout=30)
        assert missing.value.code == 404
    finally:
        stopped = run([prefix / "sbin/dlobd-daemon", "stop", "namenode"])
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def _webhdfs_when_up(url: str, wait_s: float = 120) -> dict:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return json.load(answer)
        except urllib.error.HTTPError:
            raise
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def test_spark_submit_runs_inside_the_image(prefix):
    done = run([prefix / "bin/dlobd-env", "spark-submit", "--version"])
    assert done.returncode == 0, done.stderr
    assert f"version {MODERN['spark']}" in done.stdout + done.stderr
    env = (prefix / "hosts" / socket.gethostname() / "etc/dlobd-env.sh").read_text()
    assert f"export SPARK_HOME={prefix}/spark-{MODERN['spark']}\n" in env


def test_the_stacks_python_is_the_images(prefix):
    done = run([prefix / "python/bin/python", "-c",
                "import sys, tensorflow, tensorflowonspark; print(sys.prefix, tensorflow.__version__)"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["/opt/dlobd/python", MODERN["tensorflow"]]


def test_commands_in_the_image_see_the_hosts_stack_environment_not_the_images(prefix):
    # the image's %environment sets /opt/dlobd's settings whatever the caller's environment holds;
    # the wrappers pass the prefix's dlobd-env.sh (its cluster's configuration) over them
    done = run([prefix / "python/bin/python", "-c",
                "import os; print(*(os.environ[k] for k in ('DLOBD_PREFIX', 'SPARK_CONF_DIR', 'HADOOP_CONF_DIR')))"])
    assert done.returncode == 0, done.stderr
    own = prefix / "hosts" / socket.gethostname()
    assert done.stdout.split() == [str(prefix), f"{own}/etc/spark", f"{own}/etc/hadoop"]


def test_mpi_ranks_run_inside_the_image(prefix):
    # rank 0 gathers and prints: mpirun's forwarding may split and interleave the ranks' own output
    done = run([prefix / "bin/mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                prefix / "python/bin/python", "-c",
                "from mpi4py import MPI; import sys; c = MPI.COMM_WORLD; "
                "seen = c.gather((c.Get_rank(), sys.prefix)); c.Get_rank() or print(seen)"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[(0, '/opt/dlobd/python'), (1, '/opt/dlobd/python')]\n"


def test_data_sets_are_copied_out_whole(prefix):
    for name in ("mnist", "fashion-mnist"):
        folder = prefix / "data" / name
        manifest = json.loads((folder / "MANIFEST.json").read_text())
        assert manifest["name"] == name and manifest["files"]
        for entry in manifest["files"]:
            assert apptainer.sha256_file(folder / entry["file"]) == entry["sha256"], entry["file"]
