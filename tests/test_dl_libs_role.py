"""The role dl_libs' Spack method, run for real by ansible-playbook on this machine (connection
local) against a folder standing in for Spack's bigdl install: BigDL 2.x's two jars by their wheel
names; the paper's BigDL (commit a1f3a88, Maven-built) as the one jar with its dependencies and no
core jar; a stop naming the folder when that jar is not there; and neither TensorFlow nor BigDL
for a version set without them (the paper's CaffeOnSpark and MMLSpark environments)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from dlobd import ROOT

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"


def play(tmp_path, **variables) -> tuple[int, str, dict]:
    """Run install-spack.yml with the given settings; (exit status, output, the jar facts)."""
    facts = tmp_path / "facts.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  roles: [dlobd]\n  tasks:\n"
        "    - ansible.builtin.include_role: {name: dl_libs, tasks_from: install-spack, public: true}\n"
        "    - ansible.builtin.copy:\n"
        f"        dest: {facts}\n"
        "        content: '{{ {\"jar\": dl_libs_bigdl_jar, \"core\": dl_libs_bigdl_core_jar} | to_json }}'\n"
        "        mode: '0644'\n")
    extra = {"dlobd_prefix": str(tmp_path / "prefix"), "dlobd_system_packages": False, **variables}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr, json.loads(facts.read_text()) if facts.is_file() else {}


def bigdl_install(tmp_path, *jars) -> Path:
    lib = tmp_path / "spack" / "bigdl" / "lib"
    lib.mkdir(parents=True)
    for name in jars:
        (lib / name).write_bytes(b"")
    return lib.parent


# a paper host: no TensorFlow in the stacks' Python, no TensorFlowOnSpark on its path
PAPER = {"dlobd_profile": "paper", "dlobd_tensorflow_version": "1.4.0", "dlobd_tensorflowonspark_version": "1.0.8"}


def test_the_papers_bigdl_is_its_one_jar_with_dependencies(tmp_path):
    home = bigdl_install(tmp_path, "bigdl-0.2.0-SNAPSHOT-jar-with-dependencies.jar", "bigdl-0.2.0-SNAPSHOT.jar")
    rc, out, facts = play(tmp_path, **PAPER, dlobd_bigdl_version="a1f3a88", spack_locations={"bigdl": str(home)})
    assert rc == 0, out
    assert facts == {"jar": f"{home}/lib/bigdl-0.2.0-SNAPSHOT-jar-with-dependencies.jar", "core": ""}
    assert "Install TensorFlow in the stacks' Python" in out and "skipping" in out


def test_the_papers_bigdl_without_its_jar_stops_naming_the_folder(tmp_path):
    home = bigdl_install(tmp_path)
    rc, out, facts = play(tmp_path, **PAPER, dlobd_bigdl_version="a1f3a88", spack_locations={"bigdl": str(home)})
    assert rc != 0 and not facts
    flat = " ".join(out.split())
    assert f"{home}/lib holds 0 jars with dependencies, not one: is bigdl@a1f3a88 installed whole?" in flat


def test_bigdl_2_is_its_two_wheel_jars(tmp_path):
    home = bigdl_install(tmp_path)
    # a modern host without TensorFlow in its set: only the jar paths are recorded
    rc, out, facts = play(tmp_path, dlobd_profile="modern", dlobd_tensorflow_version="",
                          dlobd_tensorflowonspark_version="", dlobd_bigdl_version="2.4.0",
                          spack_locations={"bigdl": str(home)})
    assert rc == 0, out
    assert facts == {"jar": f"{home}/lib/bigdl-dllib-spark_3.1.3-2.4.0-jar-with-dependencies.jar",
                     "core": f"{home}/lib/all-2.4.0-20230420.050641-1.jar"}


def test_a_set_without_tensorflow_or_bigdl_installs_neither(tmp_path):
    # the paper's CaffeOnSpark environment: no bigdl in Spack's locations either
    rc, out, facts = play(tmp_path, dlobd_profile="paper", dlobd_tensorflow_version="",
                          dlobd_tensorflowonspark_version="", dlobd_bigdl_version="", spack_locations={})
    assert rc == 0, out
    assert facts == {"jar": "", "core": ""}


def test_told_not_to_the_role_installs_no_tensorflow_and_still_records_bigdl(tmp_path):
    # make kick-tires (dl_libs_tensorflow: false): a modern set with TensorFlow, whose one job is BigDL's
    home = bigdl_install(tmp_path)
    rc, out, facts = play(tmp_path, dlobd_profile="modern", dlobd_bigdl_version="2.4.0",
                          spack_locations={"bigdl": str(home)}, dl_libs_tensorflow=False)
    assert rc == 0, out
    # (an include_role's task is shown without its role's name)
    for task in ("dl_libs : Install TensorFlow in the stacks' Python",
                 "Put Spack's TensorFlowOnSpark on the stacks' Python path"):
        assert f"TASK [{task}]" in out, out
        assert out.split(f"TASK [{task}]", 1)[1].lstrip("* \n").startswith("skipping"), out
    assert facts["jar"] == f"{home}/lib/bigdl-dllib-spark_3.1.3-2.4.0-jar-with-dependencies.jar"
