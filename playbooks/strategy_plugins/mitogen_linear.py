"""Ansible's linear strategy with Mitogen's connection handling (the `mitogen` package, a
dependency of the tooling): found here by ansible.cfg's strategy_plugins, since the package's own
plugin folder lies inside whichever virtual environment installed it."""
from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule

__all__ = ["StrategyModule"]
