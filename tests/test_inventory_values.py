"""The values an inventory gives the settings, checked against one schema
(playbooks/roles/dlobd/files/settings.schema.json) by the settings lookup: `dlobd plan` and
`dlobd dry-run --inventory` refuse a bad value before they plan anything, naming host, setting,
value, where it was set and what is allowed, every bad value of every host in one message (the
preflight's refusal of the same values: tests/test_provision_preflight.py)."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest
import yaml

from dlobd import ROOT, playbook_settings
from dlobd.cluster import fabric, inventory
from inventories import write_plain

SCHEMA = json.loads(inventory.SETTINGS_SCHEMA.read_text())
SCHEMA_NAME = "playbooks/roles/dlobd/files/settings.schema.json"
CORES = "it must be a whole number of 1 or more (logical CPUs, as YARN counts them)"
# each bad value: (all: vars: settings, per-host dlobd_hardware changes, the message for it)
BAD = {
    "cores-negative": ({}, {"ib-c1": {"cores": -4}},
                       "host ib-c1: dlobd_hardware.cores is -4 (set in {inv} (vars of host ib-c1)): " + CORES),
    "cores-text": ({}, {"ib-g1": {"cores": "lots"}},
                   'host ib-g1: dlobd_hardware.cores is "lots" (set in {inv} (vars of host ib-g1)): ' + CORES),
    "prefix-relative": ({"dlobd_prefix": "relative/path"}, {},
                        'dlobd_prefix is "relative/path" (set in {inv} (all: vars:)): it must be an absolute '
                        "path (starting with /)"),
    "method-unknown": ({"dlobd_install_method": "docker"}, {},
                       'dlobd_install_method is "docker" (set in {inv} (all: vars:)): it must be one of '
                       "registry, tarball, spack, apptainer"),
}
ALL_HOSTS = "hosts ib-c1, ib-c2, ib-c3, ib-c4, ib-g1, ib-g2, ib-head: "


def write(root, settings: dict, hardware: dict):
    """write_plain's inventory with `settings` under all: vars: and each host's dlobd_hardware
    changed by `hardware` (host -> fields)."""
    path = write_plain(root, **settings)
    data = yaml.safe_load(path.read_text())
    for host, fields in hardware.items():
        # a copy: yaml.safe_dump writes hosts of like hardware as aliases of one mapping
        data["all"]["hosts"][host]["dlobd_hardware"] = {**data["all"]["hosts"][host]["dlobd_hardware"], **fields}
    path.write_text(yaml.safe_dump(data))
    return path


def cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dlobd.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """case -> (inventory, plan's result, dry run's result): each bad value alone, then all at once."""
    cases = {name: write(tmp_path_factory.mktemp(name), settings, hardware)
             for name, (settings, hardware, _) in BAD.items()}
    cases["all"] = write(tmp_path_factory.mktemp("all"),
                         {k: v for settings, _, _ in BAD.values() for k, v in settings.items()},
                         {k: v for _, hardware, _ in BAD.values() for k, v in hardware.items()})

    def both(name):
        path = cases[name]
        plan = cli("plan", "--scale", "paper", "--quiet", "--inventory", str(path))
        dry = cli("dry-run", "--scale", "paper", "--inventory", str(path), *(["--check"] if name == "all" else []))
        return name, (path, plan, dry)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(both, cases))


def message(name: str, path) -> str:
    line = BAD[name][2].format(inv=path)
    return line if line.startswith("host ") else ALL_HOSTS + line


@pytest.mark.parametrize("name", BAD)
def test_plan_and_dry_run_refuse_a_bad_value_naming_host_setting_value_origin_and_what_is_allowed(refused, name):
    path, *done = refused[name]
    for command, result in zip(("plan", "dry-run"), done):
        assert result.returncode == 2, (command, result.stdout[-2000:], result.stderr[-2000:])
        assert result.stderr == (f"dlobd {command}: {path}: 1 value(s) that {SCHEMA_NAME} refuses:\n"
                                 f"  {message(name, path)}\n"), command
        assert not result.stdout.strip(), command  # nothing planned


def test_every_bad_value_of_every_host_is_named_in_one_run(refused):
    path, *done = refused["all"]
    for command, result in zip(("plan", "dry-run"), done):
        assert result.returncode == 2, (command, result.stderr[-2000:])
        lines = result.stderr.splitlines()
        assert lines[0] == f"dlobd {command}: {path}: 4 value(s) that {SCHEMA_NAME} refuses:", command
        assert sorted(lines[1:]) == sorted(f"  {message(name, path)}" for name in BAD), command


def test_the_other_shapes_of_a_bad_value_are_named_too(tmp_path):
    """A field no host has, a mapping lacking names, a bad name of a mapping, a list's item, a
    value given on the command line (the run's prefix), a mapping where a list belongs."""
    path = write(tmp_path, {"dlobd_ports": {"namenode_rpc": 70000}, "dlobd_paper_stacks": ["caffeonspark", "tfos"],
                            "dlobd_stack_settings": {"rdma-spark-home": "/opt/rdma-spark"},
                            "dlobd_networks": {"ipoib": True}},
                 {"ib-c2": {"gpu": 2}})
    with pytest.raises(inventory.InventoryError) as raised:
        inventory.load(path, prefix="stack")
    text = str(raised.value)
    where = f"{path} (all: vars:)"
    for line in (
        f"host ib-c2: dlobd_hardware.gpu is 2 (set in {path} (vars of host ib-c2)): not a field of dlobd_hardware "
        f"(fields: {', '.join(fabric.HARDWARE_FIELDS)})",
        f"{ALL_HOSTS}dlobd_ports (set in {where}) has no namenode_http, namenode_https, datanode_data, ",
        "nodemanager_https: a mapping set replaces the default whole, so it must give each of its 17 names",
        f"{ALL_HOSTS}dlobd_ports.namenode_rpc is 70000 (set in {where}): it must be a port number from 1 to 65535",
        f'{ALL_HOSTS}dlobd_paper_stacks[1] is "tfos" (set in {where}): it must be one of caffeonspark, mmlspark, '
        "rdma_spark, registered_stacks",
        f'{ALL_HOSTS}dlobd_stack_settings names "rdma-spark-home" (set in {where}): each name must be the name of a '
        "variable dlobd-env.sh exports",
        f'{ALL_HOSTS}dlobd_networks is {{"ipoib": true}} (set in {where}): it must be a list of network axis values',
        f'{ALL_HOSTS}dlobd_prefix is "stack" (set in the command line (-e)): it must be an absolute path',
    ):
        assert line in text, (line, text)
    assert text.count("\n") == 7, text


def test_the_schema_is_valid_and_describes_what_it_allows():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)

    def nodes(node):
        if isinstance(node, dict):
            yield node
            for value in node.values():
                yield from nodes(value)
        elif isinstance(node, list):
            for value in node:
                yield from nodes(value)

    checks = {"type", "pattern", "minimum", "maximum", "exclusiveMinimum", "minLength", "uniqueItems"}
    for node in nodes(SCHEMA["properties"]):
        # the lookup says what is allowed with the failing node's own description
        assert not checks & set(node) or "description" in node, node
        # a description beside a $ref would not be the failing node's (the referenced one is)
        assert not {"$ref", "description"} <= set(node), node


def test_the_schema_knows_the_fields_the_fabric_role_checks():
    assert tuple(SCHEMA["properties"]["dlobd_hardware"]["properties"]) == fabric.HARDWARE_FIELDS


def test_the_schema_names_only_settings_of_the_dlobd_role_and_takes_their_defaults():
    defaults = playbook_settings()
    known = set(defaults) | set(defaults["dlobd_settings_without_default"])
    assert set(SCHEMA["properties"]) <= known
    validator = jsonschema.Draft202012Validator(SCHEMA)
    rendered_later = [name for name in SCHEMA["properties"] if "{{" in json.dumps(defaults.get(name))]
    given = {name: value for name, value in defaults.items()
             if name in SCHEMA["properties"] and name not in rendered_later}
    assert [e.message for e in validator.iter_errors(given)] == []
    assert {"dlobd_ports", "dlobd_hardware", "dlobd_yarn_memory_fraction", "dlobd_worker_ports"} <= set(given)


def test_one_list_of_accepted_values():
    """The schema replaced the role's dlobd_setting_choices: no second list to drift from it."""
    assert "dlobd_setting_choices" not in playbook_settings()
    assert SCHEMA["properties"]["dlobd_install_method"]["enum"] == ["registry", "tarball", "spack", "apptainer"]
