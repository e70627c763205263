"""Run directories for tests, in the real layout (dlobd/execution/runs.py) around real logs.

The logs come from tests/data/logs/<stack>/, written by real runs of each tool; the
run.json beside them is written with the runs API, as the harness writes it.
"""

import shutil
from pathlib import Path

import pytest

from dlobd import stacks
from dlobd.cluster import provenance
from dlobd.execution import runs, slurmenv
from dlobd.stacks import runner

LOGS = Path(__file__).parent / "data" / "logs"


def real_logs(stack: str, min_rows: int = 1) -> list[Path]:
    """Logs of `stack` that its parser reads to the end with at least `min_rows` rows."""
    root = LOGS / stack
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []:
        result = stacks.get(stack).parse(stacks.read_log(path))
        if result.status == "ok" and result.finished and len(result.rows) >= min_rows:
            found.append(path)
    if not found:
        pytest.skip(f"no complete real {stack} log under {root}")
    return found


def make_run(runs_dir, spec: dict, scale: str, point: dict, logs: dict | Path | None = None,
             status: str = "ok", reason: str | None = None, cluster: str = "local") -> Path:
    """One attempt directory. `logs` is a real run's directory (copied whole) or a mapping
    of file names in the attempt to a source path or a text."""
    attempt = runs.new_attempt(runs_dir, cluster, scale, spec["id"], point)
    if isinstance(logs, Path):
        shutil.copytree(logs, attempt, dirs_exist_ok=True)
        logs = {}
    for name, src in (logs or {}).items():
        dest = attempt / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, Path):
            shutil.copyfile(src, dest)
        else:
            dest.write_text(src)
    dataset = spec.get("scales", {}).get(scale, {}).get("dataset", spec.get("dataset"))
    runs.write_run_json(attempt, {
        "run_id": runs.run_id(attempt, runs_dir),
        "experiment": spec["id"], "scale": scale, "cluster": cluster, "point": point,
        "stack": spec.get("stack"), "dataset": dataset,
        "command": ["spark-submit", "--class", "test"], "cwd": str(attempt),
        "start": runner.now_iso(), "end": runner.now_iso(),
        "exit_status": 0 if status == "ok" else 1, "status": status, "reason": reason,
        **provenance.collect(slurmenv.execution(), stack=spec.get("stack")),
        "labels": {"data": runner.data_label(dataset)},
    })
    return attempt
