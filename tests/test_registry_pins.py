"""A paper set's pinned Debian packages (dlobd_registry_paper_sets.<set>.debian), checked by the role
node_basics before anything is installed: run for real by ansible-playbook on this machine
(connection local) against its own apt lists, with a version it serves and one it does not."""

import json
import os
import subprocess
import sys
from pathlib import Path

from dlobd import ROOT

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"


def check_pins(tmp_path, pins: dict) -> tuple[int, str]:
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [dlobd]\n  tasks:\n"
                        "    - ansible.builtin.include_role: {name: node_basics, tasks_from: check-pins}\n")
    extra = {"dlobd_prefix": str(tmp_path / "prefix"), "dlobd_profile": "paper", "dlobd_registry_debian": pins}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def served_version(package: str) -> str:
    """A version of `package` this machine's apt lists hold (the first line of apt-cache madison)."""
    lines = subprocess.run(["apt-cache", "madison", package], capture_output=True, text=True, check=True).stdout
    return lines.splitlines()[0].split("|")[1].strip()


def test_a_served_pin_passes(tmp_path):
    rc, out = check_pins(tmp_path, {"bash": served_version("bash")})
    assert rc == 0, out[-2000:]


def test_a_pin_the_mirror_no_longer_serves_names_package_version_the_served_ones_and_where_to_pin(tmp_path):
    served = served_version("bash")
    rc, out = check_pins(tmp_path, {"bash": "0.1-gone"})
    assert rc != 0
    assert "the distribution serves no bash 0.1-gone (it serves " in out
    assert served in out.split("the distribution serves no bash 0.1-gone (it serves ", 1)[1]
    assert ("pin one of those in dlobd_registry_paper_sets.paper-tfos-bigdl.debian of the dlobd role's settings"
            in out)


def test_a_package_the_mirror_lacks_altogether_is_named(tmp_path):
    rc, out = check_pins(tmp_path, {"dlobd-no-such-package": "1.0"})
    assert rc != 0
    assert "the distribution serves no dlobd-no-such-package 1.0 (it serves no version of it)" in out
