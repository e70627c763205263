"""What a scale substitutes for the paper's setting: the verdicts (dlobd/results/claims.py),
the figures' footers (dlobd/results/figures/) and the report (dlobd/results/report.py) all name
substitutions as this module words them.

Substitutions come from the spec: the scale's `axis_map` (paper value -> local value), an
MPI standing in for another, ranks oversubscribed on fewer cores, CPU processes for the
paper's GPUs. Whether a substitution voids a claim or a figure's pairing of values is decided in
dlobd/results/comparability.py.
"""

from __future__ import annotations

import re

from dlobd.spec import same_value



def fmt(value) -> str:
    """A value as the spec writes it: 2.0 as 2."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _scale(spec: dict, name: str) -> dict:
    return (spec.get("scales") or {}).get(name) or {}


def axis_substitution(column: str, paper_value, local_value) -> str:
    """How a verdict names a substituted selector: `network=rdma (here: loopback)`."""
    return f"{column}={fmt(paper_value)} (here: {fmt(local_value)})"


def axis_map(spec: dict, scale: str, ran: dict[str, dict[str, str]] | None = None) -> list[str]:
    """Every paper -> local value of the scale's `axis_map` that changes the value. With `ran`
    (column -> local value -> '' where its runs drew a value, else their mark, 'n/r'), a stand-in
    that did not run is named only with its mark, and the one value of the column that ran in its
    place, unmapped, as the stand-in: `network=eth-1g (here: loopback stands in; eth-1g-emulated n/r)`."""
    out = []
    for column, pairs in (_scale(spec, scale).get("axis_map") or {}).items():
        status = (ran or {}).get(column) or {}
        targets = {fmt(v) for v in pairs.values()}
        unmapped = [v for v, mark in status.items() if not mark and v not in targets]
        missing = [k for k, v in pairs.items() if status.get(fmt(v))]
        for k, v in pairs.items():
            if same_value(k, v):
                continue
            mark = status.get(fmt(v))
            if not mark:
                out.append(axis_substitution(column, k, v))
                continue
            instead = f"{unmapped[0]} stands in; " if len(unmapped) == 1 and len(missing) == 1 else ""
            out.append(f"{column}={fmt(k)} (here: {instead}{fmt(v)} {mark})")
    return out


def oversubscribed(spec: dict, scale: str, cpus: int | None) -> str | None:
    """'8 ranks oversubscribed on 2 cores' when the scale runs more ranks than cores."""
    fixed = _scale(spec, scale).get("fixed") or {}
    procs = fixed.get("processes")
    if not isinstance(procs, (int, float)):
        return None
    if cpus and procs > cpus:
        return f"{fmt(procs)} ranks oversubscribed on {cpus} cores"
    if fixed.get("oversubscribe") and not cpus:
        return f"{fmt(procs)} ranks oversubscribed"
    return None


def _mpi_standin(spec: dict, scale: str) -> str | None:
    here = (_scale(spec, scale).get("fixed") or {}).get("mpi") or \
        (_scale(spec, scale).get("fixed") or {}).get("hr_runtime")
    paper_fixed = _scale(spec, "paper").get("fixed") or {}
    paper = paper_fixed.get("hr_runtime") or paper_fixed.get("mpi")
    if here and paper and not str(paper).lower().startswith(str(here).lower()):
        return f"{here} for {paper}"
    return None


def _fixed_network(spec: dict, scale: str) -> str | None:
    """A network the scale fixes in place of the paper's fixed one (not an axis to map)."""
    here = (_scale(spec, scale).get("fixed") or {}).get("network")
    paper = (_scale(spec, "paper").get("fixed") or {}).get("network")
    if here and paper and here != paper:
        return axis_substitution("network", paper, here)
    return None


def _hosts(spec: dict, scale: str) -> str | None:
    """Nodes run as processes on fewer hosts (the scale's fixed `hosts`)."""
    local = _scale(spec, scale)
    fixed = local.get("fixed") or {}
    hosts = fixed.get("hosts")
    nodes = [n for n in (local.get("matrix") or {}).get("nodes") or [fixed.get("nodes")]
             if isinstance(n, (int, float))]
    if hosts and nodes and max(nodes) > hosts:
        return f"processes on {fmt(hosts)} host(s) for up to {fmt(max(nodes))} nodes"
    return None


def _device(spec: dict, scale: str) -> str | None:
    paper_needs = _scale(spec, "paper").get("needs") or []
    local = _scale(spec, scale)
    # (a scale whose GPU points still need GPUs keeps them, substituting nothing)
    kept = any("gpu" in entry.get("needs", []) for entry in local.get("point_needs") or [])
    if "gpu" in paper_needs and "gpu" not in (local.get("needs") or []) and not kept:
        return "CPU processes for the paper's GPUs"
    return None


def _model_and_data(spec: dict, scale: str) -> list[str]:
    """A model or data set the scale trains instead of the paper's (synthetic data of the
    paper's shape is not a substitution: the figures mark it SYNTHETIC)."""
    local = _scale(spec, scale)
    out = []
    model = (local.get("fixed") or {}).get("model")
    if model and spec.get("model") and model != spec["model"]:
        out.append(f"model {model} for {spec['model']}")
    # data set ids only: a spec's dataset may be prose ("GPU buffers of varying size"), or one id
    # with its description after it ("imagenet-subset (first 10 classes of ILSVRC12)")
    data = str(local.get("dataset") or "")
    described = re.fullmatch(r"([\w-]+)(?: \([^()]*\))?", str(spec.get("dataset") or ""))
    paper = described[1] if described else ""
    if re.fullmatch(r"[\w-]+", data) and not data.endswith("-synthetic") and paper and \
            data not in paper and paper not in data:
        out.append(f"data {data} for {paper}")
    return out


def substitutions(spec: dict, scale: str, cpus: int | None = None,
                  ran: dict[str, dict[str, str]] | None = None) -> list[str]:
    """Everything the scale stands in with for the paper's setting, for footers and the report;
    with `ran`, the axis_map's stand-ins as they ran (axis_map)."""
    if scale == "paper":
        return []
    out = axis_map(spec, scale, ran) + _model_and_data(spec, scale)
    out += [s for s in (_fixed_network(spec, scale), _hosts(spec, scale), _mpi_standin(spec, scale),
                        oversubscribed(spec, scale, cpus), _device(spec, scale)) if s]
    return out


def paper_setting(spec: dict) -> str:
    """A short description of the paper's setting: '160 processes, GPUs, InfiniBand'."""
    paper = _scale(spec, "paper")
    fixed = paper.get("fixed") or {}
    parts = [f"{fmt(fixed['processes'])} processes"] if "processes" in fixed else []
    needs = paper.get("needs") or []
    parts += [shown for need, shown in (("gpu", "GPUs"), ("infiniband", "InfiniBand"),
                                        ("multi-host", "several hosts")) if need in needs]
    return ", ".join(parts)


def footer(spec: dict, scale: str, cpus: int | None = None,
           ran: dict[str, dict[str, str]] | None = None) -> str | None:
    """The substitutions line of a figure's footer, or None at paper scale or without any."""
    subs = substitutions(spec, scale, cpus, ran)
    if not subs:
        return None
    paper = paper_setting(spec)
    return "substituted: " + "; ".join(subs) + (f"; not the paper's {paper}" if paper else "")


def run_cores(runs: list[dict]) -> int | None:
    """The fewest cores any used run's host recorded (run.json system.cpus)."""
    found = [r.get("system", {}).get("cpus") for r in runs or [] if r.get("used", True)]
    found = [c for c in found if isinstance(c, int)]
    return min(found) if found else None
