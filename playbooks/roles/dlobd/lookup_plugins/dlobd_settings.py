"""Where each dlobd_* setting of a host comes from, and which ones no role knows.

Ansible resolves a host's variables without saying which source won. This lookup walks the same
sources in the same order as Ansible's VariableManager (inventory `all: vars:`, the groups' vars,
group_vars/ and host_vars/ beside each inventory source, the host's own vars, -e), so the last
source that sets a name is the one whose value the play sees. A name none of them sets is the
dlobd role's default.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.inventory.helpers import sort_groups
from ansible.inventory.manager import InventoryManager
from ansible.plugins.lookup import LookupBase
from ansible.utils.vars import load_extra_vars
from ansible.vars.plugins import get_vars_from_inventory_sources

DOCUMENTATION = """
name: dlobd_settings
short_description: the dlobd_* settings of a host, where each was set, and the unknown ones
description:
  - Returns one mapping with C(origins) (every dlobd_* variable an inventory source or -e sets
    for the host, mapped to that source) and C(unknown) (those of them the dlobd role neither
    defaults nor lists in dlobd_settings_without_default, each with the closest known names).
options:
  _terms:
    description: the host (inventory_hostname by default)
"""

DEFAULTS = Path(__file__).resolve().parent.parent / "defaults" / "main"
PREFIX = "dlobd_"
_inventories: dict = {}


def _names(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


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
        found.update({name: source for name in values if name.startswith(PREFIX)})
    return found


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        host = terms[0] if terms else variables["inventory_hostname"]
        sources = variables.get("ansible_inventory_sources") or []
        settings = _names(DEFAULTS / "settings.yml")
        known = {*settings, *_names(DEFAULTS / "derived.yml"), *settings["dlobd_settings_without_default"]}
        found = origins(self._loader, sources, host)
        unknown = {name: difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.75)
                   for name in sorted(found) if name not in known}
        return [{"origins": found, "unknown": unknown}]
