"""Ansible's linear strategy with Mitogen's connection handling (the `mitogen` package, a
dependency of the tooling): found here by ansible.cfg's strategy_plugins, since the package's own
plugin folder lies inside whichever virtual environment installed it.

Mitogen pins its processes to CPUs, and every process a task starts inherits the pin: on a
2-CPU machine the daemons that cluster-up starts, and so every YARN container, ran on one CPU
of the two. Its policy is replaced by the base one, which pins nothing."""
import ansible_mitogen.affinity
from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule

ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

__all__ = ["StrategyModule"]
