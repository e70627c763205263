"""dlobd/execution/apptainer.py without Apptainer: where it is found, the options runs need here, the image
cache's content hash, the labels, the user-namespace build command, the rootfs's device nodes."""

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

from dlobd import ROOT, SETTINGS_DEFAULTS, playbook_settings
from dlobd.execution import apptainer


def fake_install(tmp_path: Path) -> Path:
    binary = tmp_path / "apptainer-9.9/bin/apptainer"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


def test_missing_apptainer_names_both_ways(tmp_path):
    with pytest.raises(apptainer.ApptainerError) as err:
        apptainer.find_apptainer({"PATH": str(tmp_path)})
    message = str(err.value)
    assert "put `apptainer` on PATH" in message and "$APPTAINER" in message
    assert "DLOBD_APPTAINER_TARBALL" in message and "relocatable Apptainer tarball" in message


def test_apptainer_variable_wins_and_must_be_executable(tmp_path):
    binary = fake_install(tmp_path)
    assert apptainer.find_apptainer({"APPTAINER": str(binary), "PATH": ""}) == binary
    binary.chmod(0o644)
    with pytest.raises(apptainer.ApptainerError, match="is not an executable file"):
        apptainer.find_apptainer({"APPTAINER": str(binary), "PATH": ""})


def test_apptainer_on_path_is_found(tmp_path):
    binary = fake_install(tmp_path)
    assert apptainer.find_apptainer({"PATH": str(binary.parent)}) == binary


def test_tarball_is_unpacked_once_per_digest(tmp_path):
    tarball = tmp_path / "apptainer-prefix.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        data = b"#!/bin/sh\necho apptainer version 9.9\n"
        info = tarfile.TarInfo("apptainer-9.9/bin/apptainer")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    env = {"PATH": "", "DLOBD_APPTAINER_TARBALL": str(tarball)}
    found = apptainer.find_apptainer(env, unpack_root=tmp_path / "cache")
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    assert found == tmp_path / "cache" / digest / "apptainer-9.9/bin/apptainer"
    assert subprocess.run([found], capture_output=True, text=True).stdout == "apptainer version 9.9\n"
    found.write_text("#!/bin/sh\necho kept\n")  # a second call reuses the unpacked copy
    assert apptainer.find_apptainer(env, unpack_root=tmp_path / "cache") == found
    assert found.read_text() == "#!/bin/sh\necho kept\n"


def test_missing_tarball_is_named(tmp_path):
    with pytest.raises(apptainer.ApptainerError, match=r"DLOBD_APPTAINER_TARBALL=.*nope.tar.gz: no such file"):
        apptainer.find_apptainer({"PATH": "", "DLOBD_APPTAINER_TARBALL": str(tmp_path / "nope.tar.gz")})


# CapEff lines as /proc/<pid>/status prints them: full root, and root of a container without
# CAP_SYS_RESOURCE (bit 24), as on this machine.
FULL_ROOT = "Name:\tbash\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"
ROOT_WITHOUT_SYS_RESOURCE = "Name:\tbash\nCapEff:\t000001fffeffffff\n"


def test_root_without_cap_sys_resource_drops_it():
    assert apptainer.run_options(0, apptainer.effective_caps(ROOT_WITHOUT_SYS_RESOURCE)) == [
        "--drop-caps", "CAP_SYS_RESOURCE"]


def test_full_root_and_users_need_no_option():
    assert apptainer.run_options(0, apptainer.effective_caps(FULL_ROOT)) == []
    assert apptainer.run_options(1000, 0) == []


def test_status_without_capeff_is_an_error():
    with pytest.raises(ValueError, match="no CapEff"):
        apptainer.effective_caps("Name:\tbash\n")


def test_run_prefix_puts_options_binds_and_image_in_order(tmp_path):
    binary = fake_install(tmp_path)
    argv = apptainer.run_prefix(Path("/img/stack.sif"), ["/p:/p", "/q"], apptainer=binary, gpu=True)
    expected_caps = apptainer.this_process_run_options()
    assert argv == [str(binary), "exec", *expected_caps, "--nv", "--bind", "/p:/p", "--bind", "/q", "/img/stack.sif"]


def test_run_prefix_command_runs_standalone_with_the_host_python(tmp_path):
    """The apptainer role runs dlobd/execution/apptainer.py with the host's python3, outside any venv."""
    binary = fake_install(tmp_path)
    out = subprocess.run([sys.executable, "-I", str(ROOT / "dlobd/execution/apptainer.py"), "run-prefix", "/i.sif",
                          "--bind", "/a"], capture_output=True, text=True, env={"APPTAINER": str(binary)},
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [str(binary), "exec", *apptainer.this_process_run_options(),
                                      "--bind", "/a", "/i.sif"]


def test_image_sha256_is_the_file_digest(tmp_path):
    image = tmp_path / "x.sif"
    image.write_bytes(b"sif bytes")
    assert apptainer.image_sha256(image) == hashlib.sha256(b"sif bytes").hexdigest()


def make_tree(root: Path) -> Path:
    (root / "playbooks/roles/r/defaults").mkdir(parents=True)
    (root / "playbooks/roles/r/defaults/main.yml").write_text("r_version: '1.0'\n")
    (root / "playbooks/roles/r/__pycache__").mkdir()
    (root / "playbooks/roles/r/__pycache__/x.pyc").write_bytes(b"compiled")
    (root / "containers").mkdir()
    definition = root / "containers/stack.def"
    definition.write_text("# dlobd-profile: modern\nBootstrap: localimage\n")
    return definition


def test_content_hash_changes_with_the_definition_and_the_roles_only(tmp_path):
    definition = make_tree(tmp_path)
    first = apptainer.content_hash(definition, tmp_path, ("playbooks",))
    assert apptainer.content_hash(definition, tmp_path, ("playbooks",)) == first
    (tmp_path / "playbooks/roles/r/__pycache__/x.pyc").write_bytes(b"recompiled")
    (tmp_path / "unrelated.txt").write_text("not an input")
    assert apptainer.content_hash(definition, tmp_path, ("playbooks",)) == first
    (tmp_path / "playbooks/roles/r/defaults/main.yml").write_text("r_version: '1.1'\n")
    second = apptainer.content_hash(definition, tmp_path, ("playbooks",))
    assert second != first
    definition.write_text(definition.read_text() + "%post\n")
    assert apptainer.content_hash(definition, tmp_path, ("playbooks",)) not in (first, second)
    # a file moved to another path is another input
    (tmp_path / "playbooks/roles/r/defaults/main.yml").rename(tmp_path / "playbooks/roles/r/defaults/other.yml")
    assert apptainer.content_hash(definition, tmp_path, ("playbooks",)) != second


def test_in_a_checkout_only_files_git_would_commit_are_inputs_and_staged(tmp_path):
    definition = make_tree(tmp_path)
    (tmp_path / "containers/stack.def").write_text(definition.read_text() + "%files\n    {{ SRC }}/playbooks /x\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("__pycache__/\nplaybooks/inventories/emulated/hosts.yml\nsecrets/\n")
    clean = apptainer.content_hash(definition, tmp_path)
    generated = tmp_path / "playbooks/inventories/emulated/hosts.yml"
    generated.parent.mkdir(parents=True)
    generated.write_text("all: {hosts: {master: {}}}\n")
    (tmp_path / "playbooks/secrets").mkdir()
    (tmp_path / "playbooks/secrets/spark.secret").write_text("s3cret\n")
    assert apptainer.content_hash(definition, tmp_path) == clean  # ignored: neither hashed nor copied
    staged = apptainer.stage_inputs(definition, tmp_path, tmp_path / "staged")
    assert sorted(str(f.relative_to(staged)) for f in staged.rglob("*") if f.is_file()) == \
        ["playbooks/roles/r/defaults/main.yml"]
    (tmp_path / "playbooks/new.yml").write_text("- hosts: all\n")  # new, not ignored: an input
    assert apptainer.content_hash(definition, tmp_path) != clean


def test_an_interrupted_build_removes_its_work_folder(tmp_path, monkeypatch):
    definition = make_tree(tmp_path)
    settings = tmp_path / SETTINGS_DEFAULTS.relative_to(ROOT)
    settings.mkdir(parents=True)
    (settings / "settings.yml").write_text("dlobd_profile_versions: {modern: {hadoop: '3.4.1'}}\n")
    monkeypatch.setattr(apptainer, "find_apptainer", lambda: tmp_path / "apptainer")
    monkeypatch.setattr(apptainer, "make_rootfs", lambda dest, suite: dest)
    seen = []

    def interrupted(argv, env):
        seen.append(Path(env["APPTAINER_TMPDIR"]).parent)
        assert seen[0].is_dir()
        raise KeyboardInterrupt

    monkeypatch.setattr(apptainer, "run_in_userns", interrupted)
    with pytest.raises(KeyboardInterrupt):
        apptainer.build(definition, tmp_path / "images", tmp_path / "rootfs", root=tmp_path,
                        ca_certificates=tmp_path / "no-cas")
    assert seen and not seen[0].exists()
    assert list((tmp_path / "images").iterdir()) == []


def test_inputs_are_the_checkout_sources_of_the_files_section(tmp_path):
    definition = tmp_path / "x.def"
    definition.write_text("Bootstrap: localimage\nFrom: {{ ROOTFS }}\n\n%files\n"
                          "    {{ SRC }}/playbooks /opt/dlobd-src/playbooks\n"
                          "    {{ CA_CERTIFICATES }} /usr/local/share/ca-certificates/site\n"
                          "    {{ SRC }}/dlobd/cluster/fabric.py /opt/dlobd-src/dlobd/cluster/fabric.py\n\n"
                          "%post\n    cp {{ SRC }}/not-a-file-line /x\n")
    assert apptainer.definition_inputs(definition) == ["playbooks", "dlobd/cluster/fabric.py"]


def test_modern_image_is_keyed_by_its_roles_and_benchmarks():
    inputs = apptainer.definition_inputs(apptainer.CONTAINERS_DIR / "modern.def")
    assert {"playbooks", "workloads/tf-grpc-bench", "workloads/hr-reduce", "containers/smoke-test.sh"} <= set(inputs)


def test_missing_image_input_is_named(tmp_path):
    definition = make_tree(tmp_path)
    with pytest.raises(apptainer.ApptainerError, match="image input nothing-here does not exist"):
        apptainer.content_hash(definition, tmp_path, ("nothing-here",))


@pytest.mark.parametrize("definition", sorted(apptainer.CONTAINERS_DIR.glob("*.def")), ids=lambda p: p.stem)
def test_the_project_image_inputs_exist_and_the_cache_path_carries_the_hash(tmp_path, definition):
    # every %files source of every definition, so a moved module cannot break an image build late
    digest = apptainer.content_hash(definition)
    assert apptainer.image_path(tmp_path, definition.stem, digest) == tmp_path / f"{definition.stem}-{digest[:16]}.sif"


def version_sets_tree(tmp_path: Path) -> Path:
    settings = tmp_path / SETTINGS_DEFAULTS.relative_to(ROOT)
    settings.mkdir(parents=True)
    (settings / "settings.yml").write_text(yaml.safe_dump({
        "dlobd_profile_versions": {"modern": {"hadoop": "3.4.1", "java": 17},
                                   "paper-x": {"hadoop": "2.7.3", "java": 8}},
        "dlobd_hadoop_version": "{{ dlobd_versions.hadoop }}", "dlobd_psutil_version": "7.2.2",
        "dlobd_derived_version": "{{ other }}", "dlobd_prefix": "/x"}))
    (tmp_path / "playbooks/roles/python_env/defaults").mkdir(parents=True)
    (tmp_path / "playbooks/roles/python_env/defaults/main.yml").write_text("python_env_pip_version: '26.3'\n")
    return tmp_path


def test_labels_carry_profile_commit_and_the_version_set_of_the_image(tmp_path):
    root = version_sets_tree(tmp_path)
    shared = {"org.dlobd.version.psutil": "7.2.2", "org.dlobd.version.python_env_pip": "26.3"}
    assert apptainer.labels("modern", "abc123", "f" * 64, root) == {
        "org.dlobd.profile": "modern", "org.dlobd.commit": "abc123", "org.dlobd.inputs-sha256": "f" * 64,
        "org.dlobd.version.hadoop": "3.4.1", "org.dlobd.version.java": "17", **shared}
    assert apptainer.labels("paper", "abc123", "f" * 64, root, paper_env="x") == {
        "org.dlobd.profile": "paper", "org.dlobd.commit": "abc123", "org.dlobd.inputs-sha256": "f" * 64,
        "org.dlobd.version.hadoop": "2.7.3", "org.dlobd.version.java": "8", **shared}


def test_labels_of_an_unknown_version_set_name_it_and_the_known_ones(tmp_path):
    root = version_sets_tree(tmp_path)
    with pytest.raises(apptainer.ApptainerError, match="has no version set paper-y .known: modern, paper-x"):
        apptainer.labels("paper", "c", "d", root, paper_env="y")
    with pytest.raises(apptainer.ApptainerError, match="versions are those of its Spack environment: name it"):
        apptainer.labels("paper", "c", "d", root)


def test_each_image_is_labelled_with_the_versions_of_its_version_set():
    shared = playbook_settings()
    for definition in sorted(apptainer.CONTAINERS_DIR.glob("*.def")):
        profile, paper_env = apptainer.definition_profile(definition), apptainer.definition_paper_env(definition)
        method = apptainer.definition_install_method(definition)
        found = apptainer.labels(profile, "c0ffee", "0" * 64, paper_env=paper_env, install_method=method)
        version_set = "modern" if profile == "modern" else f"paper-{paper_env}"
        pinned = shared["dlobd_profile_versions"][version_set]
        registry = shared["dlobd_registry_paper_sets"].get(version_set, {}) if method == "registry" else {}
        for name in ("hadoop", "spark", "java", "tensorflow", "tensorflowonspark", "bigdl", "mpi4py"):
            expected = str(pinned[name]) if name in pinned else None
            if name in registry.get("substitutes", {}):
                expected = f"{registry['substitutes'][name]} (paper: {expected})"
            assert found.get(f"org.dlobd.version.{name}") == expected, (definition.name, name)
    modern = apptainer.labels("modern", "c0ffee", "0" * 64)
    assert (modern["org.dlobd.version.hadoop"], modern["org.dlobd.version.java"]) == ("3.4.1", "17")


def test_a_paper_definition_names_its_spack_environment(tmp_path):
    assert apptainer.definition_paper_env(apptainer.CONTAINERS_DIR / "paper-mmlspark.def") == "mmlspark"
    assert apptainer.definition_paper_env(apptainer.CONTAINERS_DIR / "modern.def") is None
    definition = tmp_path / "paper-x.def"
    definition.write_text("# dlobd-profile: paper\n")
    with pytest.raises(apptainer.ApptainerError, match="needs paper-x.vars.yml beside it"):
        apptainer.definition_paper_env(definition)
    (tmp_path / "paper-x.vars.yml").write_text("dlobd_profile: paper\n")
    with pytest.raises(apptainer.ApptainerError, match="paper-x.vars.yml: no dlobd_paper_env"):
        apptainer.definition_paper_env(definition)


def test_labels_block_and_build_args_render_in_order():
    assert apptainer.labels_block({"b": "2", "a": "1"}) == "    a 1\n    b 2"
    assert apptainer.build_args({"SRC": "/s", "ROOTFS": "/r"}) == ["--build-arg", "ROOTFS=/r", "--build-arg", "SRC=/s"]


def test_every_definition_names_its_profile_and_has_the_labels_placeholder():
    for definition in sorted(apptainer.CONTAINERS_DIR.glob("*.def")):
        assert apptainer.definition_profile(definition) in ("modern", "paper"), definition
        text = definition.read_text()
        assert "    # dlobd-labels" in text and "%test" in text and "%help" in text, definition


def test_definition_without_profile_is_named(tmp_path):
    definition = tmp_path / "x.def"
    definition.write_text("Bootstrap: localimage\n")
    with pytest.raises(apptainer.ApptainerError, match="no `# dlobd-profile: <name>` line"):
        apptainer.definition_profile(definition)


def test_userns_command_waits_for_its_maps_then_runs_the_build():
    argv = apptainer.userns_command(["apptainer", "build", "out.sif", "x.def"])
    assert argv[:4] == ["unshare", "--user", "--mount", "--"]
    # the shell reads one line (sent once the maps are written), then becomes the build
    done = subprocess.run(argv[4:-4] + ["printf", "%s|", "a b", "c"], input="go\n", capture_output=True, text=True)
    assert done.stdout == "a b|c|"
    blocked = subprocess.run(argv[4:-4] + ["echo", "ran"], input="", capture_output=True, text=True)
    assert blocked.returncode != 0 and blocked.stdout == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="writing another namespace's uid_map needs root")
def test_run_in_userns_runs_as_root_of_a_mapped_namespace():
    out = subprocess.run(
        [sys.executable, "-c", "from dlobd.execution import apptainer; import sys; "
         "sys.exit(apptainer.run_in_userns(['sh', '-c', 'id -u; cat /proc/self/uid_map /proc/self/gid_map']))"],
        capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0] == "0" and lines[1:] == ["0", "0", "65536", "0", "0", "65536"]


@pytest.mark.skipif(os.geteuid() != 0, reason="writing another namespace's uid_map needs root")
def test_sigterm_to_a_build_stops_every_process_the_build_started(tmp_path):
    """As `dlobd image build` and the image benchmark do: SIGTERM unwinds, and the build's
    processes (here a shell and two of its children standing in for apptainer and %post) go too,
    the ones that ignore SIGTERM included."""
    pids = tmp_path / "pids"
    script = (f"trap '' TERM; sleep 300 & echo $! >> {pids}; (trap '' TERM; sleep 300) & echo $! >> {pids}; "
              f"echo $$ >> {pids}; wait")
    caller = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys; from dlobd.execution import apptainer; "
         "signal.signal(signal.SIGTERM, apptainer.interrupted); "
         f"apptainer.run_in_userns(['sh', '-c', {script!r}])"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (pids.exists() and len(pids.read_text().split()) == 3):
        assert time.monotonic() < deadline and caller.poll() is None, "the build did not start"
        time.sleep(0.1)
    started = [int(p) for p in pids.read_text().split()]
    caller.send_signal(signal.SIGTERM)
    assert caller.wait(timeout=60) != 0
    assert "KeyboardInterrupt" in caller.stderr.read()
    left = [p for p in started if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert left == [], f"still running after the build was interrupted: {left}"


def test_make_rootfs_reuses_a_finished_rootfs(tmp_path):
    rootfs = tmp_path / "rootfs"
    (rootfs / "dev").mkdir(parents=True)
    (rootfs / ".dlobd-rootfs").write_text("bookworm\n")
    assert apptainer.make_rootfs(rootfs) == rootfs


def test_the_registry_paper_image_names_each_substitution_and_debian_package(tmp_path):
    definition = apptainer.CONTAINERS_DIR / "paper-tfos-bigdl.def"
    assert apptainer.definition_install_method(definition) == "registry"
    assert apptainer.definition_install_method(apptainer.CONTAINERS_DIR / "paper-caffeonspark.def") is None
    found = apptainer.labels("paper", "c0ffee", "0" * 64, paper_env="tfos-bigdl", install_method="registry")
    assert found["org.dlobd.version.spark"] == "2.1.2 (paper: 2.1.0)"
    assert found["org.dlobd.version.bigdl"] == "0.3.0 (paper: a1f3a88)"
    assert (found["org.dlobd.version.hadoop"], found["org.dlobd.version.tensorflow"],
            found["org.dlobd.version.tensorflowonspark"]) == ("2.7.3", "1.4.0", "1.0.8")
    assert found["org.dlobd.version.deb.openjdk-8-jdk-headless"] == "8u504-ga-1"
    assert found["org.dlobd.version.deb.python2.7"] == "2.7.18-8+deb11u1"
    # the same set built by Spack is the paper's own
    spack = apptainer.labels("paper", "c0ffee", "0" * 64, paper_env="tfos-bigdl", install_method="spack")
    assert spack["org.dlobd.version.spark"] == "2.1.0" and "org.dlobd.version.deb.python2.7" not in spack


def test_each_definition_names_its_rootfs_suite_and_its_settings_are_hashed(tmp_path):
    assert apptainer.definition_suite(apptainer.CONTAINERS_DIR / "paper-tfos-bigdl.def") == "sid"
    assert apptainer.definition_suite(apptainer.CONTAINERS_DIR / "modern.def") == "bookworm"
    definition = tmp_path / "x.def"
    definition.write_text("Bootstrap: localimage\n")
    assert apptainer.definition_suite(definition) == apptainer.DEBIAN_SUITE
    inputs = apptainer.definition_inputs(apptainer.CONTAINERS_DIR / "paper-tfos-bigdl.def")
    assert {"playbooks", "containers/paper-tfos-bigdl.vars.yml", "requirements/constraints.txt"} <= set(inputs)


def test_the_standalone_helper_finds_the_same_checkout_and_settings_as_the_package():
    # apptainer.py imports none of the package (the hosts run it alone): its paths must agree
    assert apptainer.ROOT == ROOT
    assert apptainer.ROOT / apptainer.SETTINGS_FILE == SETTINGS_DEFAULTS / "settings.yml"
