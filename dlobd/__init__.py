"""DLoBD artifact: experiment specs, launchers, parsers, figures, claim verdicts, report."""

import functools
from pathlib import Path

import yaml

__version__ = "0.1.0"

#: The project root (the checkout this package lives in).
ROOT = Path(__file__).resolve().parent.parent

#: The settings every playbook role shares, as the dlobd role's defaults: settings.yml (what an
#: inventory may set) and derived.yml (values derived from those).
SETTINGS_DEFAULTS = ROOT / "playbooks" / "roles" / "dlobd" / "defaults" / "main"


@functools.lru_cache(maxsize=1)
def playbook_settings() -> dict:
    """The shared settings' defaults, unrendered (templates stay strings); read once, not to be changed."""
    return {key: value for part in ("settings.yml", "derived.yml")
            for key, value in (yaml.safe_load((SETTINGS_DEFAULTS / part).read_text()) or {}).items()}


class NotRunnable(Exception):
    """This cluster cannot provide a point: a stack launcher, a link or a capability check says why."""


# How a reason begins that no site can satisfy (software never released): the plan asks for no
# setting it names, and the point stays not runnable whatever path is given.
NOT_OBTAINABLE = "not obtainable"
