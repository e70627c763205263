"""The role tf_cnn_benchmarks, run for real by ansible-playbook on this machine against a git
repository made here (no network): it clones at the pinned commit, changes nothing the second
time, uses a site's checkout as it is, and says where to get the script when it cannot. With the
spack install method it links TF_CNN_BENCHMARKS_HOME to the install Spack recorded (here a folder
in the recipe's layout standing in for `spack location`), and leaves a site's own checkout alone."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlobd import ROOT

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"
SCRIPT = Path("scripts") / "tf_cnn_benchmarks" / "tf_cnn_benchmarks.py"


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository shaped like tensorflow/benchmarks, with two commits: the role pins the first."""
    root = tmp_path_factory.mktemp("benchmarks")
    git("init", "-q", cwd=root)
    (root / SCRIPT).parent.mkdir(parents=True)
    (root / SCRIPT).write_text("print('pinned')\n")
    git("add", ".", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pinned", cwd=root)
    pinned = git("rev-parse", "HEAD", cwd=root)
    (root / SCRIPT).write_text("print('later')\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "later", cwd=root)
    return root, pinned


def play(tmp_path, home, repo_url, commit, **more):
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [dlobd, tf_cnn_benchmarks]\n")
    extra = {"dlobd_install_method": "registry", "dlobd_stack_settings": {"TF_CNN_BENCHMARKS_HOME": str(home)},
             "tf_cnn_benchmarks_repo": repo_url, "tf_cnn_benchmarks_commit": commit, **more}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_clones_at_the_pinned_commit_then_changes_nothing(tmp_path, repo):
    root, pinned = repo
    home = tmp_path / "tf-benchmarks"
    rc, out = play(tmp_path, home, f"file://{root}", pinned)
    assert rc == 0, out[-2000:]
    assert git("rev-parse", "HEAD", cwd=home) == pinned
    assert (home / SCRIPT).read_text() == "print('pinned')\n"
    rc, out = play(tmp_path, home, f"file://{root}", pinned)
    assert rc == 0 and "changed=0" in out, out[-2000:]


def test_a_sites_checkout_is_used_as_it_is(tmp_path):
    home = tmp_path / "site"
    (home / SCRIPT).parent.mkdir(parents=True)
    (home / SCRIPT).write_text("print('site')\n")
    rc, out = play(tmp_path, home, "file:///nowhere", "0" * 40)
    assert rc == 0 and "changed=0" in out, out[-2000:]
    assert (home / SCRIPT).read_text() == "print('site')\n"


def test_a_clone_that_fails_says_where_to_get_it(tmp_path):
    rc, out = play(tmp_path, tmp_path / "home", f"file://{tmp_path}/no-such-repo", "0" * 40)
    assert rc != 0
    assert f"cloning file://{tmp_path}/no-such-repo at {'0' * 40}" in out
    assert "set TF_CNN_BENCHMARKS_HOME in dlobd_stack_settings to a checkout" in out


def spack_install(tmp_path) -> Path:
    """A folder in the layout spack-repo's tf-cnn-benchmarks installs (the checkout's scripts/)."""
    location = tmp_path / "spack-opt" / "tf-cnn-benchmarks-aef6daa"
    (location / SCRIPT).parent.mkdir(parents=True)
    (location / SCRIPT).write_text("print('spack')\n")
    return location


def test_the_spack_method_links_the_home_to_spacks_install(tmp_path):
    location = spack_install(tmp_path)
    home = tmp_path / "tf-benchmarks"
    spack = {"dlobd_install_method": "spack", "spack_locations": {"tf-cnn-benchmarks": str(location)}}
    rc, out = play(tmp_path, home, "file:///nowhere", "0" * 40, **spack)
    assert rc == 0, out[-2000:]
    assert home.is_symlink() and home.resolve() == location.resolve()
    assert (home / SCRIPT).read_text() == "print('spack')\n"
    rc, out = play(tmp_path, home, "file:///nowhere", "0" * 40, **spack)
    assert rc == 0 and "changed=0" in out, out[-2000:]


def test_the_spack_method_leaves_a_sites_checkout_alone(tmp_path):
    location = spack_install(tmp_path)
    home = tmp_path / "site"
    (home / SCRIPT).parent.mkdir(parents=True)
    (home / SCRIPT).write_text("print('site')\n")
    rc, out = play(tmp_path, home, "file:///nowhere", "0" * 40, dlobd_install_method="spack",
                   spack_locations={"tf-cnn-benchmarks": str(location)})
    assert rc != 0
    assert f"{home} (TF_CNN_BENCHMARKS_HOME) is a folder of its own" in out
    assert not home.is_symlink() and (home / SCRIPT).read_text() == "print('site')\n"
