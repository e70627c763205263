"""The `dlobd` command: one subcommand per concern, each implemented in its own module.

Every module named here exposes `register(parser)` (adds its arguments) and
`run(args) -> int` (the exit status).
"""

import argparse
import importlib
import sys

COMMANDS = {
    "validate": ("dlobd.spec.validation", "check every experiment spec and claims file"),
    "parse": ("dlobd.stacks", "parse one native log of a stack into tidy rows (CSV)"),
    "plan": ("dlobd.execution.plan", "list which experiments can run on this cluster, and why not"),
    "dry-run": ("dlobd.execution.dryrun", "print the exact command of every point of a scale, run nothing"),
    "rehearsal": ("dlobd.execution.rehearsal", "what a rehearsal found: each point run with its work cut, passed or not"),
    "claims": ("dlobd.results.claims", "evaluate the claims of experiments over their results"),
    "guide": ("dlobd.results.guide", "write docs/new-cluster.md from the specs and the inventory settings"),
    "appendix": ("dlobd.results.appendix", "write docs/artifact-evaluation.md from the specs, reference runs and verdicts"),
    "spack": ("dlobd.execution.spack", "the pinned Spack, offline: concretize, check and bench spack-envs/"),
    "fabric": ("dlobd.cluster.fabric", "this host's InfiniBand HCAs and GPUs (the fabric role's detector)"),
    "image": ("dlobd.execution.apptainer", "Apptainer images of containers/: build (or reuse), exec, info"),
    "calibrate": ("dlobd.cluster.calibrate", "measure the cluster's links: TCP and RDMA latency and bandwidth"),
    "compare-paths": ("dlobd.results.comparepaths", "the same points run through two execution paths: statuses side by side"),
    "compare-profiles": ("dlobd.results.compareprofiles", "the same points on the modern and the paper profile's software: values side by side"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="dlobd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        module.register(sub.add_parser(name, help=help_text, description=help_text))
        modules[name] = module
    args = parser.parse_args(argv)
    return modules[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
