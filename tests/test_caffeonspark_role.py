"""The role caffeonspark's source checks, run for real by ansible-playbook on this machine: a mirror
tarball whose sha256 is not the pinned one, or that is missing, stops the play with the file and
the reason before anything is unpacked; a clone that fails names the mirror and the switch that
leaves the port out; and the modern profile's patch series applies, in order,
to the pinned upstream sources (DLOBD_SOURCE_MIRROR names the folder holding the two tarballs;
without it that test skips and says so)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from dlobd import ROOT

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"
ROLE = ROOT / "playbooks" / "roles" / "caffeonspark"
PATCHES = sorted((ROLE / "files" / "patches" / "modern").glob("*.patch"))
TARBALLS = ("CaffeOnSpark-19df500.tar.gz", "yahoo-caffe-fc0a02e.tar.gz")
MIRROR = os.environ.get("DLOBD_SOURCE_MIRROR", "")


def play(tmp_path, mirror: Path, tasks_from: str = "install-mirror", **variables):
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [dlobd]\n  tasks:\n"
                        f"    - ansible.builtin.include_role: {{name: caffeonspark, tasks_from: {tasks_from}}}\n")
    extra = {"dlobd_prefix": str(tmp_path / "prefix"), "caffeonspark_source_mirror": str(mirror),
             "dlobd_system_packages": False, **variables}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


def fake_tarball(path: Path, top: str):
    src = path.parent / top
    src.mkdir()
    (src / "README.md").write_text("not the pinned sources\n")
    with tarfile.open(path, "w:gz") as tar:
        tar.add(src, arcname=top)


def test_a_changed_tarball_stops_the_play_naming_it(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in TARBALLS:
        fake_tarball(mirror / name, name.removesuffix(".tar.gz"))
    rc, out = play(tmp_path, mirror)
    assert rc != 0
    assert f"{mirror}/CaffeOnSpark-19df500.tar.gz: sha256 " in out
    assert "expected df87399aa9a368013e815ded18b464a16a5d60b63f97ef941bb849ab73603cb2" in out
    assert not (tmp_path / "prefix" / "build").exists()  # nothing unpacked
    assert sorted(p.name for p in mirror.iterdir() if p.is_file()) == sorted(TARBALLS)  # nothing lost


def test_a_missing_tarball_says_which_variable_names_the_folder(tmp_path):
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    rc, out = play(tmp_path, mirror)
    assert rc != 0
    assert f"{mirror}/CaffeOnSpark-19df500.tar.gz: missing (caffeonspark_source_mirror names the folder" in out


def test_a_failed_clone_names_the_mirror_and_the_switch_that_leaves_the_port_out(tmp_path):
    # a repository that is not there: git fails as it would without GitHub, with no traffic
    missing = tmp_path / "no-such-repository"
    jdk = Path(shutil.which("javac")).resolve().parent.parent
    rc, out = play(tmp_path, Path(""), tasks_from="install-git", caffeonspark_repository=f"file://{missing}",
                   caffeonspark_profile="modern", caffeonspark_java_home=str(jdk))
    assert rc != 0
    flat = " ".join(out.split())  # the callback wraps long messages
    assert f"CaffeOnSpark's sources could not be cloned from file://{missing} (fatal: " in flat.replace("''", "'")
    assert f"Give a folder holding {' and '.join(TARBALLS)} (make ... SOURCE_MIRROR=<dir>" in flat
    assert "make reproduce CAFFEONSPARK=0" in flat
    assert not list((tmp_path / "prefix").glob("build/*/*"))


def test_the_patch_series_is_small_and_named_for_one_change():
    assert PATCHES, "no patch in files/patches/modern"
    for number, patch in enumerate(PATCHES, start=1):
        assert patch.name.startswith(f"{number:04d}-"), patch.name
        text = patch.read_text()
        assert text.count("\n+++ ") <= 4, f"{patch.name} touches more than four files"


@pytest.mark.skipif(not MIRROR, reason="DLOBD_SOURCE_MIRROR (the folder holding the two source tarballs) is unset")
def test_the_modern_series_applies_in_order_to_the_pinned_sources(tmp_path):
    tree = tmp_path / "src"
    (tree / "caffe-public").mkdir(parents=True)
    for name, dest in zip(TARBALLS, (tree, tree / "caffe-public")):
        subprocess.run(["tar", "xzf", str(Path(MIRROR) / name), "-C", str(dest), "--strip-components=1"], check=True)
    for patch in PATCHES:
        done = subprocess.run(["patch", "-p1", "--forward", "--batch", "-i", str(patch)], cwd=tree,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{patch.name}: {done.stdout}{done.stderr}"
    # what the series is for: no javah, no OpenCV 2 constant, no protobuf-java 2.5 left
    assert "javah -d" not in (tree / "caffe-distri" / "Makefile").read_text()
    assert "CV_LOAD_IMAGE" not in (tree / "caffe-public" / "src" / "caffe" / "util" / "io.cpp").read_text()
    assert "<version>2.5.0</version>" not in (tree / "caffe-distri" / "pom.xml").read_text()
    # caffe-public's distribution holds what CaffeOnSpark uses, not pycaffe, the tools and examples
    assert "cp -r python $(DISTRIBUTE_DIR)" not in (tree / "caffe-public" / "Makefile").read_text()


def test_the_cuda_builds_go_to_the_gpu_hosts_and_the_launch_host_only(tmp_path):
    """Of caffeonspark_builds, a worker outside group gpu builds the CPU devices alone: it needs no
    CUDA toolkit. The GPU workers and the launch host (whose driver loads the build) build all."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {
        "hosts": {h: {"ansible_connection": "local"} for h in ("head", "cpu1", "gpu1")},
        "children": {"namenode": {"hosts": {"head": None}}, "workers": {"hosts": {"cpu1": None, "gpu1": None}},
                     "gpu": {"hosts": {"gpu1": None}}}}}))
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [dlobd, {role: caffeonspark, when: false}]\n"
                        "  tasks:\n    - ansible.builtin.debug: {msg: '{{ caffeonspark_host_builds | to_json }}'}\n")
    extra = {"dlobd_prefix": str(tmp_path / "prefix"), "dlobd_profile": "paper", "dlobd_install_method": "spack",
             "caffeonspark_install_method": "git", "caffeonspark_builds": ["cpu-openblas", "cpu-mkl", "gpu-cudnn", "gpu"]}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"),
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.minimal", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    decoder = json.JSONDecoder()
    builds = {head[1]: json.loads(decoder.raw_decode(done.stdout, head.end())[0]["msg"])
              for head in re.finditer(r"^(\S+) \| SUCCESS => ", done.stdout, re.MULTILINE)}
    assert builds == {"head": ["cpu-openblas", "cpu-mkl", "gpu-cudnn", "gpu"], "cpu1": ["cpu-openblas", "cpu-mkl"],
                      "gpu1": ["cpu-openblas", "cpu-mkl", "gpu-cudnn", "gpu"]}
