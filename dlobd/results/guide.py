"""`dlobd guide`: docs/new-cluster.md, the way from an inventory to a report on an InfiniBand
cluster. Its tables (hardware per experiment, node-hour estimates, the settings an inventory
gives) are generated from the specs and from the modules that read those settings, so the
guide cannot drift from them; `--check` only compares."""

from __future__ import annotations

from pathlib import Path

import jinja2

from dlobd import ROOT, spec
from dlobd.cluster import capabilities, fabric, inventory, provenance
from dlobd.execution import plan
from dlobd.results.appendix import natural_key, write_generated

OUT = Path("docs") / "new-cluster.md"
# The settings a role records where the inventory runs it, which the plan sees as given
ROLE_SETTINGS = {
    "RDMA_SPARK_HOME": ", or recorded by the `rdma_spark` role (`rdma_spark` in `dlobd_paper_stacks`, "
                       "`rdma_spark_tarball`)",
    "HIBENCH_HOME": ", or recorded by the `hibench` role (`hibench_enabled: true`)",
}


# What site.yml installs on the modern profile only: on the paper one the site's TF 1.x Python
PAPER_PYTHON = ("tensorflow", "tensorflowonspark")


def _max(values) -> int | None:
    found = [v for v in values if v]
    return max(found) if found else None


def rows(root: Path) -> list[dict]:
    """One row per experiment with runs of its own: what its paper scale asks of a cluster."""
    out = []
    for eid, s in sorted(spec.load_all(root).items(), key=lambda kv: natural_key(kv[0])):
        if s.data.get("data_from"):
            continue
        scale = s.scale("paper")
        if not scale.get("runnable", True):
            out.append({"id": eid, "figure": f"{s.data['paper']} {s.data['figure']}", "stack": s.data["stack"],
                        "points": 0, "needs": "not runnable: " + " ".join(str(scale.get("reason")).split()),
                        "nodes": "—", "gpus": "—", "estimate": "—", "hours": 0.0})
            continue
        sizes = [capabilities.point_size(scale, point) for _, point in s.points("paper")]
        nodes = _max(z["nodes"] for z in sizes)
        per_node = _max(z["per_node"] for z in sizes)
        gpus = _max(z["gpus"] or (z["nodes"] or 0) * (z["per_node"] or 0) for z in sizes)
        estimate = plan.node_hours(s, "paper")
        out.append({
            "id": eid, "figure": f"{s.data['paper']} {s.data['figure']}", "stack": s.data["stack"],
            "points": len(sizes), "needs": spec.needs_text(scale),
            "nodes": str(nodes) if nodes else ("2 or more" if "multi-host" in (scale.get("needs") or [])
                                               else "not stated"),
            "gpus": (f"{gpus}" + (f" ({per_node} per node)" if per_node else "")) if gpus else
                    ("yes (count not stated)" if "gpu" in (scale.get("needs") or []) else "—"),
            "estimate": (f"{estimate['node_hours']:.2f} for {estimate['known']} of {estimate['points']} points"
                         if estimate["known"] else "unknown"),
            "hours": estimate["node_hours"],
        })
    return out


def render(root: Path = ROOT) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("dlobd.results", "templates"), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    table = rows(root)
    return env.get_template("new-cluster.md.j2").render(
        rows=table, n_specs=len(spec.load_all(root)), stack_settings=inventory.STACK_SETTINGS,
        hardware_fields=fabric.HARDWARE_FIELDS, provisioned=capabilities.PROVISIONED,
        software_settings=capabilities.SOFTWARE_SETTINGS, role_settings=ROLE_SETTINGS, paper_roles=capabilities.PAPER_ROLES,
        undeclared=capabilities.UNDECLARED, paper_python=PAPER_PYTHON, tfos_python=provenance.TFOS_PYTHON,
        role_variables=inventory.ROLE_VARIABLES, device_variables=inventory.DEVICE_VARIABLES,
        total_hours=sum(r["hours"] for r in table))


def register(parser) -> None:
    parser.add_argument("--out", default=str(ROOT / OUT))
    parser.add_argument("--check", action="store_true", help="only say whether --out is current")


def run(args) -> int:
    return write_generated(Path(args.out), render(), args.check, "dlobd guide")
