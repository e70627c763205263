"""What a rehearsal found: every point of a scale run with the scale's layout and its work cut
(`make experiments REHEARSE=1`, runs.launch(rehearse=True)), point by point.

A point passes where its run ended `ok` and its stack's parser reads the logs as a finished run;
a point the cluster cannot provide is listed with its reason, apart. Command:
``dlobd rehearsal --runs DIR [--scale paper]``, exit status 1 where a launched point did not pass.
"""

from __future__ import annotations

from pathlib import Path

from dlobd import ROOT, stacks
from dlobd import spec as dspec
from dlobd.execution import runs


def rehearsed(runs_dir, scale: str) -> list[runs.Attempt]:
    """The newest rehearsal attempt of every point of `scale` under `runs_dir`, by run id."""
    newest = {}
    root = Path(runs_dir)
    for pdir in sorted(root.glob(f"*/{scale}/*/*")):
        for path in runs.attempts(pdir):
            attempt = runs.read_attempt(path, root)
            if runs.is_rehearsal(attempt):
                newest[pdir] = attempt
    return [newest[p] for p in sorted(newest)]


def verdict(attempt: runs.Attempt, specs: dict) -> tuple[str, str | None]:
    """('passed' | 'not runnable' | 'did not pass', why): a run that ended `ok` passes where its
    stack's parser reads it as finished; `why` of a pass names a TF worker that trained no step."""
    record = attempt.record
    if record["status"] == "not runnable":
        return "not runnable", record.get("reason")
    if record["status"] != "ok":
        return "did not pass", f"{record['status']}: {record.get('reason')}"
    try:
        stack = specs[record["experiment"]].point_stack(record["scale"], record["point"])
        parsed = stacks.parse_run(stack, attempt.path)
    except KeyError as exc:
        return "did not pass", f"no parser: {exc}"
    if parsed.status != "ok":
        return "did not pass", f"ended ok, but its logs are {parsed.status}: {parsed.reason}"
    if not parsed.finished:
        return "did not pass", f"ended ok, but its logs stop short: {parsed.reason}"
    if waiting := parsed.meta.get("waiting_for_chief"):
        # its node started and asked the parameter servers; a real run's work outlasts the wait
        return "passed", (f"{', '.join(sorted(waiting))} trained no step: the cut work ended while its "
                          "session waited for the chief's variables (TensorFlow 1.x looks every 30 s)")
    return "passed", None


def summary(runs_dir, scale: str, root: Path = ROOT) -> tuple[list[str], int]:
    """(lines of text, how many launched points did not pass); the specs are `root`'s."""
    specs = dspec.load_all(root)
    found = [(a, *verdict(a, specs)) for a in rehearsed(runs_dir, scale)]
    launched = [f for f in found if f[1] != "not runnable"]
    passed = [f for f in launched if f[1] == "passed"]
    lines = [f"rehearsal at scale {scale} under {runs_dir}: {len(passed)} of {len(launched)} launched "
             f"points passed; {len(found) - len(launched)} not runnable on this cluster"]
    for attempt, outcome, why in found:
        cuts = runs.cuts_text(attempt.record["labels"])
        standins = runs.standins_text(attempt.record["labels"])
        lines.append(f"  {outcome:13} {attempt.run_id}" + (f" ({cuts})" if cuts else "")
                     + (f" [standing in: {standins}]" if standins else "") + (f": {why}" if why else ""))
    return lines, len(launched) - len(passed)


def register(parser) -> None:
    parser.add_argument("--runs", required=True, help="the rehearsal's runs directory")
    parser.add_argument("--scale", default="paper", help="the scale rehearsed (default: paper)")


def run(args) -> int:
    lines, failing = summary(args.runs, args.scale)
    print("\n".join(lines))
    return 1 if failing else 0
