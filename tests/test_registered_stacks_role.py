"""The role registered_stacks, run for real by ansible-playbook on this machine: each path an
inventory gives in dlobd_stack_settings is checked for what its setting names (bin/caffe,
bin/mpirun, an LMDB's train/ ...), and a path that lacks it stops the play naming the setting,
the path and the file. Every name it checks is one the inventory reader accepts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from dlobd import ROOT
from dlobd.cluster import inventory
from dlobd.stacks import scaffe

ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
INVENTORY = ROOT / "playbooks" / "inventories" / "local" / "hosts.yml"
CHECKS = yaml.safe_load((ROOT / "playbooks/roles/registered_stacks/defaults/main.yml").read_text())[
    "registered_stacks_checks"]


def play(tmp_path, settings: dict):
    playbook = tmp_path / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles: [dlobd, registered_stacks]\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_ROLES_PATH": str(ROOT / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(INVENTORY), str(playbook),
                           "-e", json.dumps({"dlobd_stack_settings": settings})],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_every_checked_setting_is_one_an_inventory_may_give():
    assert set(CHECKS) <= set(inventory.STACK_SETTINGS)
    # and every S-Caffe design build the launcher's reasons name (none is obtainable, but an inventory may list one)
    assert {f"SCAFFE_HOME_{name.replace('-', '_')}" for name in scaffe.DESIGNS.values()} <= set(CHECKS)


def test_installs_that_hold_what_their_settings_name_pass(tmp_path):
    scaffe, lmdb = tmp_path / "osu-caffe", tmp_path / "ilsvrc12-lmdb"
    (scaffe / "bin").mkdir(parents=True)
    (scaffe / "bin" / "caffe").write_text("")
    (lmdb / "train").mkdir(parents=True)
    rc, out = play(tmp_path, {"SCAFFE_HOME": str(scaffe), "SCAFFE_IMAGENET_LMDB": str(lmdb),
                              "DLOBD_TF_RDMA_PYTHON": "/usr/bin/python3"})
    assert rc == 0 and "failed=0" in out, out[-2000:]


def test_a_path_without_its_install_stops_naming_setting_path_and_file(tmp_path):
    gdr = tmp_path / "mvapich2-gdr"
    gdr.mkdir()
    rc, out = play(tmp_path, {"MVAPICH2_GDR_HOME": str(gdr)})
    assert rc != 0
    assert f"MVAPICH2_GDR_HOME={gdr} (dlobd_stack_settings): no {gdr}/bin/mpirun (MVAPICH2-GDR" in " ".join(out.split())
