"""The pinned Spack harness (dlobd/execution/spack.py) and the project recipes' bad-input errors.

The commit checks need no Spack. The others run the pinned Spack offline from SPACK_BUILD (the
folder `make lint-spack` fills; default $DLOBD_PREFIX/build/spack), unpacked from
DLOBD_SPACK_TARBALLS when set, else fetched with git.
"""

import hashlib
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from dlobd.execution import spack as harness

PINS = harness.load_pins()


def build_folder() -> Path:
    prefix = os.environ.get("DLOBD_PREFIX", str(Path.home() / "dlobd-stack"))
    return Path(os.environ.get("SPACK_BUILD", f"{prefix}/build/spack"))


@pytest.fixture(scope="module")
def spack():
    return harness.Spack(build_folder(), tarballs=os.environ.get(harness.TARBALLS_VAR) or None).prepare()


# ---------------------------------------------------------------------- roots at other commits
def test_a_spack_root_at_another_commit_is_refused_naming_both(tmp_path):
    root = tmp_path / "site-spack"
    root.mkdir()
    subprocess.run(["git", "-C", str(root), "init", "--quiet"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                    "--quiet", "--allow-empty", "-m", "not the pin"], check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    site = harness.Spack(tmp_path / "build", spack_root=root, packages_root=tmp_path / "packages")
    with pytest.raises(harness.SpackError) as err:
        site.prepare()
    assert head in str(err.value) and PINS["spack"]["commit"] in str(err.value)
    assert str(root) in str(err.value)


def test_a_spack_root_whose_commit_cannot_be_told_is_refused(tmp_path):
    root = tmp_path / "copied-spack"
    root.mkdir()
    with pytest.raises(harness.SpackError, match="unknown"):
        harness.check_commit(root, PINS["spack"], "Spack")


def test_a_tarball_folder_with_another_file_is_refused(tmp_path):
    (tmp_path / PINS["spack"]["tarball"]).write_bytes(b"not spack")
    with pytest.raises(harness.SpackError, match=PINS["spack"]["tarball_sha256"]):
        harness.unpack(tmp_path, PINS["spack"], tmp_path / "spack", "Spack")
    with pytest.raises(harness.SpackError, match="missing"):
        harness.unpack(tmp_path, PINS["spack_packages"], tmp_path / "pkgs", "spack-packages")


def test_the_pinned_root_passes(spack):
    assert harness.tree_commit(spack.spack_root) == PINS["spack"]["commit"]
    assert harness.tree_commit(spack.packages_root) == PINS["spack_packages"]["commit"]


# ---------------------------------------------------------------------- configuration scopes
def test_callers_with_other_install_roots_share_a_build_folder_without_rewriting_each_others_scope(tmp_path):
    build = tmp_path / "build"
    first = harness.Spack(build, install_root=tmp_path / "a", mirror="file:///m")
    second = harness.Spack(build, install_root=tmp_path / "b")
    first._write_scope()
    written = {p.name: p.read_text() for p in first.scope.iterdir()}
    second._write_scope()
    assert first.scope != second.scope and first.scope.parent == second.scope.parent == build / "scope"
    # the first caller's files are as it wrote them; each names its own install root
    assert {p.name: p.read_text() for p in first.scope.iterdir()} == written
    assert str(tmp_path / "a") in written["config.yaml"] and "file:///m" in written["mirrors.yaml"]
    assert str(tmp_path / "b") in (second.scope / "config.yaml").read_text()
    # the same configuration maps to the same folder, and no partial folder is left behind
    again = harness.Spack(build, install_root=tmp_path / "a", mirror="file:///m")
    again._write_scope()
    assert again.scope == first.scope
    assert sorted(p.name for p in (build / "scope").iterdir()) == sorted([first.scope.name, second.scope.name])


# ---------------------------------------------------------------------- environments
def test_an_environment_naming_a_package_nobody_provides_fails_naming_it(spack, tmp_path):
    env = tmp_path / "broken-env"
    env.mkdir()
    (env / "spack.yaml").write_text("spack:\n  specs: [hadoop@3.4.1, dlobd-no-such-package]\n  view: false\n")
    with pytest.raises(harness.SpackError) as err:
        spack.concretize(env)
    message = str(err.value)
    assert "concretizing environment broken-env failed" in message
    # Spack's own message follows, naming the package
    assert "dlobd-no-such-package" in message.split("failed", 1)[1]
    assert not (env / harness.INPUTS_FILE).exists()


def test_a_lock_goes_stale_when_its_spack_yaml_or_a_recipe_it_uses_changes(tmp_path, monkeypatch):
    env = tmp_path / "modern"
    shutil.copytree(harness.ENVS_DIR / "modern", env, ignore=shutil.ignore_patterns(".spack-env"))
    repo, original = tmp_path / "repo", harness.REPO_DIR
    shutil.copytree(original, repo, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(harness, "REPO_DIR", repo)
    spack = harness.Spack(tmp_path / "build")
    assert spack.is_current(env)
    # a recipe the lock does not use changes nothing
    (repo / "packages" / "caffeonspark" / "package.py").write_text("# edited\n")
    assert spack.is_current(env)
    recipe = repo / "packages" / "bigdl" / "package.py"
    recipe.write_text(recipe.read_text() + "# edited\n")
    assert not spack.is_current(env)
    shutil.copy2(original / "packages" / "bigdl" / "package.py", recipe)
    assert spack.is_current(env)
    (env / "spack.yaml").write_text((env / "spack.yaml").read_text() + "# edited\n")
    assert not spack.is_current(env)


def test_a_comment_in_the_pins_leaves_the_locks_current_and_a_pinned_value_does_not(tmp_path, monkeypatch):
    pins = tmp_path / "pins.yaml"
    monkeypatch.setattr(harness, "PINS_FILE", pins)
    spack = harness.Spack(tmp_path / "build")
    env = harness.ENVS_DIR / "modern"
    text = (harness.ENVS_DIR / "pins.yaml").read_text()
    pins.write_text("# a new comment\n" + text)
    assert spack.is_current(env)
    assert "tag: v1.1.0" in text
    pins.write_text(text.replace("tag: v1.1.0", "tag: v1.1.1"))
    assert not spack.is_current(env)


# ---------------------------------------------------------------------- the user's RDMA-Spark tarball
RDMA_CHECK = textwrap.dedent("""\
    import sys
    import spack.repo
    spack.repo.PATH.get_pkg_class("rdma-spark")  # puts the project repo on the import path
    from spack_repo.dlobd.packages.rdma_spark.package import user_tarball
    try:
        print(user_tarball("0.9.5", sys.argv[1]))
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
    """)


def rdma_fetch(spack, tmp_path, env_vars):
    script = tmp_path / "check.py"
    script.write_text(RDMA_CHECK)
    dest = tmp_path / "stage"
    dest.mkdir(exist_ok=True)
    env = spack.environ()
    env.update(env_vars)
    out = subprocess.run(
        spack.command("python", str(script), str(dest)),
        env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_rdma_spark_without_a_tarball_says_where_to_get_it(spack, tmp_path):
    out = rdma_fetch(spack, tmp_path, {})
    assert out.startswith("InstallError") and "hibd.cse.ohio-state.edu" in out
    missing = tmp_path / "rdma-spark-0.9.5-bin.tar.gz"
    out = rdma_fetch(spack, tmp_path, {"DLOBD_RDMA_SPARK_URL": f"file://{missing}",
                                       "DLOBD_RDMA_SPARK_SHA256": "0" * 64})
    assert out.startswith("InstallError") and f"{missing} (DLOBD_RDMA_SPARK_URL) does not exist" in out


def test_rdma_spark_tarball_failing_its_checksum_is_refused(spack, tmp_path):
    tarball = tmp_path / "rdma-spark-0.9.5-bin.tar.gz"
    tarball.write_bytes(b"a download cut short")
    good = hashlib.sha256(tarball.read_bytes()).hexdigest()
    out = rdma_fetch(spack, tmp_path, {"DLOBD_RDMA_SPARK_URL": f"file://{tarball}",
                                       "DLOBD_RDMA_SPARK_SHA256": "f" * 64})
    assert out.startswith("InstallError") and good in out and "f" * 64 in out
    assert not (tmp_path / "stage" / tarball.name).exists()
    out = rdma_fetch(spack, tmp_path, {"DLOBD_RDMA_SPARK_URL": str(tarball),
                                       "DLOBD_RDMA_SPARK_SHA256": good})
    assert out == str(tmp_path / "stage" / tarball.name)
