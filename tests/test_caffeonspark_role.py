"""The role caffeonspark's source checks, run for real by ansible-playbook on this machine: a mirror
tarball whose sha256 is not the pinned one, or that is missing, stops the play with the file and
the reason before anything is unpacked; a clone that fails names the mirror and the switch that
leaves the port out; and the modern profile's patch series applies, in order,
to the pinned upstream sources (DLOBD_SOURCE_MIRROR names the folder holding the two tarballs;
without it that test skips and says so)."""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
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


# ---------------------------------------------------------------- cpu-mkl's MKL (tasks/mkl.yml)

MKL_PINS = ("mkl==2026.2.0", "mkl-include==2026.2.0")


def mkl_version_header(year: int, minor: int, update: int) -> str:
    return (f"#define __INTEL_MKL__ {year}\n#define __INTEL_MKL_MINOR__ {minor}\n"
            f"#define __INTEL_MKL_UPDATE__ {update}\n#define __INTEL_MKL_PATCH__ 0\n")


def wheel(folder: Path, requirement: str, files: dict):
    """A wheel of `requirement` (name==version) whose data files (<prefix>/lib, /include) are `files`."""
    name, version = requirement.split("==")
    stem = f"{name.replace('-', '_')}-{version}"
    members = {f"{stem}.data/data/{path}": text.encode() for path, text in files.items()}
    members[f"{stem}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{stem}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
              for path, data in members.items()]
    members[f"{stem}.dist-info/RECORD"] = ("\n".join(record + [f"{stem}.dist-info/RECORD,,"]) + "\n").encode()
    folder.mkdir(exist_ok=True)
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as whl:
        for path, data in members.items():
            whl.writestr(path, data)


def mkl_play(tmp_path, wheels: Path, **variables) -> tuple[int, str, dict]:
    """The role's MKL tasks for real (pip from the folder `wheels` only), then what the role
    records for dlobd-env.sh and the build keys of cpu-mkl and cpu-openblas."""
    facts = tmp_path / "facts.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        # (the build key names the JDK, which the dlobd role finds from the architecture)
        "- hosts: all\n  gather_facts: true\n  gather_subset: [min]\n  roles: [dlobd]\n  tasks:\n"
        "    - ansible.builtin.include_role: {name: caffeonspark, tasks_from: mkl, public: true}\n"
        # (role_path: the patches' folder, as inside the role)
        "    - ansible.builtin.set_fact: {mkl_key: '{{ caffeonspark_build_key }}'}\n"
        f"      vars: {{caffeonspark_device: cpu-mkl, role_path: {ROLE}}}\n"
        "    - ansible.builtin.set_fact: {openblas_key: '{{ caffeonspark_build_key }}'}\n"
        f"      vars: {{caffeonspark_device: cpu-openblas, role_path: {ROLE}}}\n"
        "    - ansible.builtin.copy:\n"
        f"        dest: {facts}\n"
        "        content: \"{{ {'env': caffeonspark_stack_env, 'mkl_key': mkl_key, 'openblas_key': openblas_key}"
        " | to_json }}\"\n"
        "        mode: '0644'\n")
    extra = {"dlobd_prefix": str(tmp_path / "prefix"), "dlobd_profile": "modern", "dlobd_python_home": str(ROOT / ".venv"),
             **variables}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"),
           "ANSIBLE_NOCOLOR": "1", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout + done.stderr
    return done.returncode, " ".join(out.split()), json.loads(facts.read_text()) if facts.is_file() else {}


def mkl_wheels(folder: Path, header: str):
    wheel(folder, MKL_PINS[0], {"lib/libmkl_rt.so.3": "not a library"})
    wheel(folder, MKL_PINS[1], {"include/mkl.h": "/* mkl */\n", "include/mkl_version.h": header})


def test_the_mkl_wheels_install_once_with_the_link_name_and_cpu_mkl_is_recorded(tmp_path):
    mkl_wheels(tmp_path / "wheels", mkl_version_header(2026, 0, 2))
    mkl = tmp_path / "prefix" / "mkl-2026.2.0"
    rc, out, facts = mkl_play(tmp_path, tmp_path / "wheels")
    assert rc == 0, out[-3000:]
    assert (mkl / "include" / "mkl.h").is_file() and os.readlink(mkl / "lib" / "libmkl_rt.so") == "libmkl_rt.so.3"
    env = facts["env"]
    assert env["CAFFEONSPARK_HOME_CPU_MKL"] == f"{tmp_path}/prefix/caffeonspark/cpu-mkl"
    assert env["CAFFEONSPARK_HOME_CPU_OPENBLAS"] == f"{tmp_path}/prefix/caffeonspark/cpu-openblas"
    assert env["CAFFEONSPARK_LIBRARY_PATH"] == f"{mkl}/lib"
    assert env["CAFFEONSPARK_MKL_VERSION"] == "2026.2.0"
    assert env["CAFFEONSPARK_MKL_SOURCE"] == "PyPI mkl==2026.2.0 mkl-include==2026.2.0"
    assert not any(name.startswith("CAFFEONSPARK_LEFT_OUT_") for name in env)
    # installed once: the rerun changes nothing
    rc, out, again = mkl_play(tmp_path, tmp_path / "wheels")
    assert rc == 0 and "changed=0" in out, out[-3000:]
    assert again == facts


def test_mkl_wheels_that_cannot_be_installed_leave_cpu_mkl_out_and_the_rest_on(tmp_path):
    (tmp_path / "no-wheels").mkdir()
    rc, out, facts = mkl_play(tmp_path, tmp_path / "no-wheels")
    assert rc == 0, out[-3000:]
    why = (f"pip could not install mkl==2026.2.0 mkl-include==2026.2.0 into {tmp_path}/prefix/mkl-2026.2.0 "
           "(ERROR: No matching distribution found for mkl==2026.2.0)")
    assert f"CaffeOnSpark's cpu-mkl build is left out on localhost: {why}" in out.replace("''", "'")
    env = facts["env"]
    assert env["CAFFEONSPARK_LEFT_OUT_CPU_MKL"].startswith(why + " (caffeonspark_mkl_root names a site MKL")
    assert "CAFFEONSPARK_HOME_CPU_MKL" not in env and "CAFFEONSPARK_MKL_VERSION" not in env
    assert env["CAFFEONSPARK_HOME_CPU_OPENBLAS"] and env["CAFFEONSPARK_LIBRARY_PATH"] == ""


@pytest.mark.parametrize("files, missing", [
    ({"lib/intel64/libmkl_rt.so": ""}, "{root}/include/mkl.h: missing"),
    ({"include/mkl.h": "", "include/mkl_version.h": mkl_version_header(2017, 0, 3)},
     "{root}: no libmkl_rt.so in lib/intel64/ or lib/"),
])
def test_a_site_mkl_without_its_header_or_library_is_named_and_left_out(tmp_path, files, missing):
    root = tmp_path / "site-mkl"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    rc, out, facts = mkl_play(tmp_path, tmp_path, caffeonspark_mkl_root=str(root))
    assert rc == 0, out[-3000:]
    assert f"left out on localhost: {missing.format(root=root)} (caffeonspark_mkl_root names a site MKL" in out
    assert "CAFFEONSPARK_HOME_CPU_MKL" not in facts["env"] and "CAFFEONSPARK_HOME_CPU_OPENBLAS" in facts["env"]
    assert not (tmp_path / "prefix" / "mkl-2026.2.0").exists()  # no wheel installed for a site's MKL


def site_mkl(root: Path, header: str) -> Path:
    (root / "include").mkdir(parents=True)
    (root / "include" / "mkl.h").write_text("")
    (root / "include" / "mkl_version.h").write_text(header)
    (root / "lib" / "intel64").mkdir(parents=True)
    (root / "lib" / "intel64" / "libmkl_rt.so").write_text("")
    return root


def test_a_site_mkl_s_version_is_read_and_a_new_one_builds_a_new_cpu_mkl_tree(tmp_path):
    root = site_mkl(tmp_path / "site-mkl", mkl_version_header(11, 3, 4))
    (tmp_path / "a").mkdir()
    rc, out, old = mkl_play(tmp_path / "a", tmp_path, caffeonspark_mkl_root=str(root))
    assert rc == 0, out[-3000:]
    assert old["env"]["CAFFEONSPARK_MKL_VERSION"] == "11.3.4"
    assert old["env"]["CAFFEONSPARK_MKL_SOURCE"] == f"site MKL {root}"
    assert old["env"]["CAFFEONSPARK_LIBRARY_PATH"] == f"{root}/lib/intel64"
    (root / "include" / "mkl_version.h").write_text(mkl_version_header(2020, 0, 4))
    (tmp_path / "b").mkdir()
    rc, out, new = mkl_play(tmp_path / "b", tmp_path, caffeonspark_mkl_root=str(root))
    assert rc == 0, out[-3000:]
    assert new["env"]["CAFFEONSPARK_MKL_VERSION"] == "2020.4.0"
    assert new["mkl_key"] != old["mkl_key"] and new["openblas_key"] == old["openblas_key"]
    assert new["mkl_key"] != new["openblas_key"]


def test_the_spack_method_refuses_a_device_its_environment_does_not_build(tmp_path):
    rc, out = play(tmp_path, Path(""), tasks_from="main", dlobd_install_method="spack",
                   caffeonspark_spack_device="cpu-mkl")
    assert rc != 0
    assert ("caffeonspark_spack_device cpu-mkl: the spack method installs Spack's caffeonspark, whose environment "
            "(spack-envs/paper-caffeonspark) builds cpu-openblas and gpu-cudnn only; set caffeonspark_install_method "
            "to git or mirror for cpu-mkl") in " ".join(out.split()), out[-3000:]
