"""`dlobd appendix`: docs/artifact-evaluation.md, the Artifact Description / Evaluation
appendix in the form SC and PPoPP use (the cTuning checklist), generated from the specs, the
raw runs of a complete local run (data/reference) and the verdicts the pipeline computed from
them, so that it cannot drift from what the artifact does. `--check` only compares."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import jinja2
import pandas as pd

from dlobd import ROOT, spec
from dlobd.execution import runs
from dlobd.spec import substitutions

OUT = Path("docs") / "artifact-evaluation.md"
REASON_CHARS = 160


def _seconds(record: dict) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    start, end = (dt.datetime.strptime(record[k], fmt) for k in ("start", "end"))
    return (end - start).total_seconds()


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1].rstrip() + "…"


def _needs(reason: str) -> list[str]:
    """The capabilities a not-runnable record names ('needs rdma: ...; needs gpu: ...')."""
    return [part.split(":")[0].removeprefix("needs ").strip()
            for part in str(reason or "").split("; ") if part.startswith("needs ")]


def _local_shows(s: spec.Spec, attempts: list) -> str:
    local = s.source_spec.data["scales"].get("local") or {}
    if not local.get("runnable", True):
        return "not runnable here: " + _short(local.get("reason", ""))
    counts: dict[str, int] = {}
    needs: list[str] = []
    for a in attempts:
        counts[a.record["status"]] = counts.get(a.record["status"], 0) + 1
        needs += [n for n in _needs(a.record.get("reason")) if n not in needs]
    if not attempts:
        return "no runs in the reference set"
    parts = [f"{len(attempts)} points: " + ", ".join(f"{n} {st}" for st, n in sorted(counts.items()))]
    if needs:
        parts.append("the rest need " + ", ".join(needs))
    stand_ins = substitutions.substitutions(s.source_spec.data, "local")
    if stand_ins:
        parts.append("stands in: " + "; ".join(stand_ins))
    parts.append("data: " + str(local.get("dataset") or s.data["dataset"]))
    return "; ".join(parts)


def _verdicts(results_dir: Path, experiment: str) -> str:
    path = results_dir / "local" / "verdicts" / f"{experiment}.csv"
    if not path.is_file():
        return "(no verdicts computed)"
    frame = pd.read_csv(path)
    if frame.empty:
        return "(no claims)"
    groups = frame.groupby("verdict", sort=False)["claim_id"].apply(list)
    return "; ".join(f"{verdict}: {', '.join(ids)}" for verdict, ids in groups.items())


def natural_key(text: str) -> list:
    """Sort key that puts fig4a before fig11."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def rows(root: Path, runs_dir: Path, results_dir: Path) -> list[dict]:
    out = []
    for eid, s in sorted(spec.load_all(root).items(), key=lambda kv: natural_key(kv[0])):
        source = s.source_spec
        owner = s.runs_from("local")
        # with runs_from, only the owner's points that stand for this spec's
        attempts = runs.select(runs.experiment_attempts(
            runs_dir, "local", owner or source.id, set(s.shared_points("local").values()) if owner else None))
        paper = source.data["scales"]["paper"]
        local = source.data["scales"].get("local") or {}
        seconds = sum(_seconds(a.record) for a in attempts
                      if a.record.get("status") != "not runnable" and a.record.get("start") and a.record.get("end"))
        if s.data.get("data_from"):
            command, time = f"drawn from the runs of {source.id}", "—"
        elif owner:
            command, time, seconds = f"`make experiment ID={eid}` (runs {owner}'s points)", "—", 0.0
        elif local.get("runnable", True):
            command, time = f"`make experiment ID={eid}`", f"{seconds / 60:.1f} min" if seconds else "—"
        else:
            command, time = "paper scale only (a cluster)", "—"
        paper_needs = spec.needs_text(paper)
        here_needs = ", ".join(local.get("needs") or []) if local.get("runnable", True) else "—"
        out.append({
            "id": eid, "figure": f"{s.data['paper']} {s.data['figure']}", "command": command, "time": time,
            "seconds": seconds if not s.data.get("data_from") else 0.0,
            "hardware": f"paper: {paper.get('cluster', '?')} ({paper_needs}); here: {here_needs}",
            "shows": _local_shows(s, attempts), "verdicts": _verdicts(results_dir, eid),
        })
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(root: Path, runs_dir: Path, results_dir: Path) -> str:
    table = rows(root, runs_dir, results_dir)
    records = [a.record for e in sorted(spec.load_all(root))
               for a in runs.select(runs.experiment_attempts(runs_dir, "local", e))]
    ran = [r for r in records if r.get("status") == "ok"]
    first = ran[0] if ran else {}
    claims_frames = [pd.read_csv(p) for p in sorted((results_dir / "local" / "verdicts").glob("*.csv"))]
    verdicts = pd.concat(claims_frames)["verdict"].value_counts() if claims_frames else pd.Series(dtype=int)
    env = jinja2.Environment(loader=jinja2.PackageLoader("dlobd.results", "templates"), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["cell"] = _cell
    size_mb = sum(p.stat().st_size for p in runs_dir.rglob("*") if p.is_file()) / 2**20
    return env.get_template("artifact-evaluation.md.j2").render(
        rows=table, n_specs=len(table), runs_dir=runs_dir.name, n_runs=len(records), n_ok=len(ran),
        n_not_runnable=sum(1 for r in records if r.get("status") == "not runnable"),
        run_minutes=sum(r["seconds"] for r in table) / 60, size_mb=size_mb,
        system=first.get("system", {}), versions=first.get("versions", {}),
        verdicts=list(verdicts.items()), n_claims=int(verdicts.sum()) if len(verdicts) else 0)


def register(parser) -> None:
    parser.add_argument("--runs", default="data/reference", help="raw runs of a complete local run")
    parser.add_argument("--results", default="data/results",
                        help="the pipeline's results and verdicts built from --runs")
    parser.add_argument("--out", default=str(ROOT / OUT))
    parser.add_argument("--check", action="store_true", help="only say whether --out is current")


def write_generated(out: Path, text: str, check: bool, remake: str) -> int:
    """Write a generated document, or with `check` only say whether `out` is current."""
    if check:
        current = out.is_file() and out.read_text() == text
        print(f"{out}: {'current' if current else 'out of date: run ' + remake}")
        return 0 if current else 1
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def run(args) -> int:
    return write_generated(Path(args.out), render(ROOT, Path(args.runs), Path(args.results)),
                           args.check, "make appendix")
