"""A fake paper-scale cluster for the launcher tests of the paper profile's stacks: what
dlobd.cluster.provenance and dlobd.cluster.capabilities answer, so a launcher in a dry run computes the command it
would run there. Nothing here runs or reaches a host."""

import random
from pathlib import Path

from dlobd import spec
from dlobd.cluster import capabilities, provenance
from dlobd.stacks import runner

ROOT = Path(__file__).resolve().parent.parent
WORKERS = [f"192.0.2.{i}" for i in range(11, 27)]  # 16 IPoIB addresses (documentation range)


def fake_capabilities(**missing):
    """Every capability present, except those named with their reason."""
    names = ("tcp", "infiniband", "rdma", "gpu", "nvidia-smi", "paper-profile", "hadoop", "spark", "mpi",
             "multi-host", "caffeonspark", "cntk", "lustre", "rdma-spark")
    caps = {n: (True, "fake cluster") for n in names}
    caps.update({n: (False, why) for n, why in missing.items()})
    return caps


def install(monkeypatch, settings: dict, workers=WORKERS, **missing):
    """Make provenance and capabilities answer for the fake cluster (`workers` as its dlobd-env.sh
    lists them)."""
    listed = {"DLOBD_WORKERS": " ".join(workers), **settings}
    monkeypatch.setattr(provenance, "stack_setting", lambda name: listed.get(name))
    monkeypatch.setattr(capabilities, "capabilities", lambda: fake_capabilities(**missing))


def context(tmp_path, spec_id: str, point: dict, scale: str = "paper",
            overrides: dict | None = None) -> runner.RunContext:
    """A launcher's context as runs.launch makes it: the scale's settings with its assumed values,
    then `overrides` given on the command line."""
    data = spec.load_all(ROOT)[spec_id].data
    attempt = tmp_path / "attempt-001"
    return runner.RunContext(spec=data, scale=scale, cluster="fake", point=dict(point),
                           attempt_dir=attempt, runs_dir=tmp_path,
                           fixed=spec.settings(data, scale, overrides)[0], dry_run=True,
                           overridden={name: "the command line" for name in overrides or {}})


def paper_points(*spec_ids):
    specs = spec.load_all(ROOT)
    return [(sid, point) for sid in spec_ids for _, point in specs[sid].points("paper")]


def option(argv, name):
    return argv[argv.index(name) + 1]


def damaged(text: str, rng) -> str:
    """`text` with a few lines swapped in, dropped or repeated, cut at a random place."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randrange(0, 4)):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        choice = rng.randrange(3)
        if choice == 0:
            lines[i] = lines[j]
        elif choice == 1:
            del lines[i]
        else:
            lines.insert(i, lines[j])
    return "".join(lines)[:rng.randrange(len(text) + 1)]


def assert_random_damage_is_handled(parse, text: str, seed: int, times: int = 60) -> None:
    """Damaged copies of a log give a result, never an exception: `ok` with a reason exactly
    when unfinished, rows only of the vocabulary."""
    from dlobd.spec import metrics

    rng = random.Random(seed)
    for _ in range(times):
        r = parse(damaged(text, rng))
        assert r.status in ("ok", "unparseable")
        assert (r.reason is None) == (r.status == "ok" and r.finished)
        assert all(metrics.get(x["metric"]).unit == x["unit"] for x in r.rows)
