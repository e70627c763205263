"""Where each setting of a host comes from, which ones no role knows, and which values are invalid.

A setting is a variable named like the project's roles: dlobd_* (the shared settings) or a role's
own (hibench_*, mmlspark_* ...). The known ones are computed from the roles themselves: every
role's defaults (defaults/main.yml or defaults/main/*.yml), the facts their tasks set, and the
dlobd role's dlobd_settings_without_default (the documented inventory-only settings).

Ansible resolves a host's variables without saying which source won. This lookup walks the same
sources in the same order as Ansible's VariableManager (inventory `all: vars:`, the groups' vars,
group_vars/ and host_vars/ beside each inventory source, the host's own vars, -e), so the last
source that sets a name is the one whose value the play sees. A name none of them sets is the
dlobd role's default.

The values those sources set are checked, rendered, against the dlobd role's
files/settings.schema.json (the role's own defaults are not: some need the host's facts), and each
error is said in plain words, naming the setting, its value, where it was set and what the schema
allows (its `description`, else its `enum`). The preflight and `dlobd plan` / `dlobd dry-run`
(playbooks/inventory-settings.yml) stop on them.
"""

from __future__ import annotations

import difflib
import functools
import json
from pathlib import Path

import yaml
from ansible import constants as C
from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.inventory.helpers import sort_groups
from ansible.inventory.manager import InventoryManager
from ansible.plugins.lookup import LookupBase
from ansible.utils.vars import load_extra_vars
from ansible.vars.plugins import get_vars_from_inventory_sources
from jsonschema import Draft202012Validator

DOCUMENTATION = """
name: dlobd_settings
short_description: the project's settings of a host, where each was set, and the unknown ones
description:
  - Returns one mapping with C(origins) (every variable named like a role of the project, dlobd_*
    or <role>_*, that an inventory source or -e sets for the host, mapped to that source),
    C(unknown) (those of them no role defaults, sets or documents, each mapped to the closest
    known names and the defaults file of the role its name belongs to) and C(invalid) (for those
    of them the dlobd role's files/settings.schema.json covers, rendered, every way the value breaks
    it, as a sentence naming the setting with its field path, the value, where it was set and what
    is allowed).
options:
  _terms:
    description: the host (inventory_hostname by default)
"""

ROLES = Path(__file__).resolve().parents[2]
DEFAULTS = ROLES / "dlobd" / "defaults" / "main"
SCHEMA = ROLES / "dlobd" / "files" / "settings.schema.json"
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
_inventories: dict = {}


def _names(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _defaults_files(role: Path) -> list[Path]:
    return [p for p in (role / "defaults" / "main.yml", *sorted((role / "defaults" / "main").glob("*.yml")))
            if p.is_file()]


def _facts(node) -> set:
    """The names the tasks in `node` set as facts or register."""
    if isinstance(node, list):
        return set().union(*map(_facts, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    own = {name for key in SET_FACT if isinstance(node.get(key), dict) for name in node[key]}
    if isinstance(node.get("register"), str):
        own.add(node["register"])
    return own | _facts(list(node.values()))


@functools.lru_cache(maxsize=1)
def roles() -> dict[str, dict]:
    """role -> {'known': the variables it defaults, sets or documents, 'defaults': its defaults
    file}, for every role of the project."""
    out = {}
    for role in sorted(p for p in ROLES.iterdir() if (p / "tasks").is_dir() or (p / "defaults").is_dir()):
        files = _defaults_files(role)
        known = {name for f in files for name in _names(f)}
        known |= set().union(*(_facts(_names(t)) for t in sorted((role / "tasks").glob("*.yml"))))
        out[role.name] = {"known": known, "defaults": str(files[0].relative_to(ROLES.parent.parent))
                          if files else None}
    out["dlobd"]["known"] |= set(_names(DEFAULTS / "settings.yml")["dlobd_settings_without_default"])
    return out


def _role_of(name: str, known_roles) -> str | None:
    """The role a variable's name belongs to: the longest role name it starts with."""
    return max((r for r in known_roles if name.startswith(r + "_")), key=len, default=None)


def _per_source(loader, sources, entity, folder: str) -> list[tuple[str, dict]]:
    """The vars plugins' values for a group or host (`folder`: group_vars or host_vars), one
    inventory source at a time."""
    out = []
    for source in sources:
        found = get_vars_from_inventory_sources(loader, [source], [entity], "task")
        if found:
            beside = Path(source) if Path(source).is_dir() else Path(source).parent
            named = beside / folder / entity.name
            files = [p for p in (named, *(named.with_name(named.name + e) for e in (".yml", ".yaml", ".json")))
                     if p.exists()]
            out.append((str(files[0] if files else named), found))
    return out


def origins(loader, sources: list[str], host_name: str) -> dict[str, str]:
    """dlobd_* name -> the source whose value a play sees, for every name a source sets."""
    key = tuple(sources)
    if key not in _inventories:
        _inventories[key] = InventoryManager(loader=loader, sources=list(sources))
    inventory = _inventories[key]
    host = inventory.get_host(host_name)
    if host is None:
        raise AnsibleError(f"dlobd_settings: no host {host_name} in {', '.join(sources)}")
    where = ", ".join(sources)
    all_group = inventory.groups["all"]
    groups = sort_groups([g for g in host.get_groups() if g.name != "all"])
    layers = {
        "all_inventory": [(f"{where} (all: vars:)", all_group.get_vars())],
        "groups_inventory": [(f"{where} (vars of group {g.name})", g.get_vars()) for g in groups],
        "all_plugins_inventory": _per_source(loader, sources, all_group, "group_vars"),
        "groups_plugins_inventory": [s for g in groups for s in _per_source(loader, sources, g, "group_vars")],
    }
    ordered = [layer for entry in C.VARIABLE_PRECEDENCE for layer in layers.get(entry, [])]
    ordered += [(f"{where} (vars of host {host_name})", host.get_vars()),
                *_per_source(loader, sources, host, "host_vars"),
                ("the command line (-e)", load_extra_vars(loader))]
    found = {}
    for source, values in ordered:
        found.update({name: source for name in values if _role_of(name, roles())})
    return found


@functools.lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA.read_text()))


def _shown(value) -> str:
    return json.dumps(value, default=str)


def _field(path) -> str:
    """The setting and the field path of a value: dlobd_hardware.cores, dlobd_paper_stacks[1]."""
    name, *fields = path
    return name + "".join(f"[{f}]" if isinstance(f, int) else f".{f}" for f in fields)


def _explained(error, origin: str) -> list[str]:
    """A schema error in plain words: the setting (with the field path), its value, where it was
    set and what is allowed there."""
    where, schema = _field(error.absolute_path), error.schema
    if error.validator == "additionalProperties":
        fields = schema.get("properties", {})
        return [f"{where}.{name} is {_shown(value)} (set in {origin}): not a field of {where} "
                f"(fields: {', '.join(fields)})" for name, value in error.instance.items() if name not in fields]
    if error.validator == "required":
        missing = ", ".join(name for name in error.validator_value if name not in error.instance)
        return [f"{where} (set in {origin}) has no {missing}: a mapping set replaces the default whole, so "
                f"it must give each of its {len(error.validator_value)} names"]
    # propertyNames checks each name of the mapping, not a value: the error's instance is the name
    if "propertyNames" in error.schema_path:
        return [f"{where} names {_shown(error.instance)} (set in {origin}): each name must be {schema['description']}"]
    allowed = schema.get("description") or "one of " + ", ".join(map(str, schema["enum"]))
    return [f"{where} is {_shown(error.instance)} (set in {origin}): it must be {allowed}"]


class LookupModule(LookupBase):
    def _invalid(self, host: str, found: dict, variables: dict) -> list[str]:
        """What is wrong with each value the sources of `found` set that the schema covers."""
        # another host's (a term naming it): its hostvars, which Ansible renders for that host
        values = variables if host == variables.get("inventory_hostname") else variables["hostvars"][host]
        out = []
        for name in sorted(set(found) & set(validator().schema["properties"])):
            try:
                value = self._templar.template(values[name])
            except AnsibleUndefinedVariable:
                continue  # it needs what only the host tells (its facts): the preflight renders it there
            errors = sorted(validator().iter_errors({name: value}), key=lambda e: list(map(str, e.absolute_path)))
            out += [line for error in errors for line in _explained(error, found[name])]
        return list(dict.fromkeys(out))  # a mapping lacking several required names: said once

    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        host = terms[0] if terms else variables["inventory_hostname"]
        sources = variables.get("ansible_inventory_sources") or []
        known = sorted(set().union(*(r["known"] for r in roles().values())))
        found = origins(self._loader, sources, host)
        unknown = {name: {"close": difflib.get_close_matches(name, known, n=3, cutoff=0.75),
                          "defaults": roles()[_role_of(name, roles())]["defaults"]}
                   for name in sorted(found) if name not in known}
        return [{"origins": found, "unknown": unknown, "invalid": self._invalid(host, found, variables)}]
