"""The parsers on real logs from elsewhere (tests/data/logs/real/, see its README): every log is
read with the values a person wrote beside it."""

from pathlib import Path

import pytest
import yaml

from dlobd import stacks
from reallogs import REAL

CORPUS = sorted(REAL.glob("*/*.yaml"))
ROW_KEYS = ("metric", "value", "unit", "step", "epoch")


def load(described: Path) -> tuple[dict, str]:
    """A corpus entry: its description and its log's text."""
    entry = yaml.safe_load(described.read_text())
    return entry, stacks.read_log(described.with_suffix(".log"))


def matches(row: dict, wanted: dict) -> bool:
    for key, value in wanted.items():
        if key == "value":
            if row.get("value") is None or row["value"] != pytest.approx(value, rel=1e-9, abs=1e-12):
                return False
        elif row.get(key) != value:
            return False
    return True


def test_every_entry_is_complete():
    assert CORPUS, "no real log in tests/data/logs/real"
    for described in CORPUS:
        entry, _ = load(described)
        missing = {"source", "release", "release_evidence", "stack", "expect"} - set(entry)
        assert not missing, f"{described}: lacks {sorted(missing)}"
        assert entry["stack"] == described.parent.name, described
        assert described.with_suffix(".log").is_file(), described
        assert entry["stack"] in stacks.STACKS, described


@pytest.mark.parametrize("described", CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_log_reads_as_written_beside_it(described):
    entry, text = load(described)
    expect = entry["expect"]
    result = stacks.get(entry["stack"]).parse(text)
    assert result.status == expect["status"], result.reason
    if "finished" in expect:
        assert result.finished == expect["finished"], result.reason
    for wanted in expect.get("rows", []):
        found = [r for r in result.rows if matches(r, wanted)]
        near = [{k: r.get(k) for k in (*ROW_KEYS, *wanted)} for r in result.rows
                if r["metric"] == wanted["metric"]][:5]
        assert found, f"no row {wanted}; rows of that metric: {near}"
    for metric, count in expect.get("counts", {}).items():
        assert sum(r["metric"] == metric for r in result.rows) == count, metric
    for metric in expect.get("absent", []):
        assert not [r for r in result.rows if r["metric"] == metric], metric
    for key, value in expect.get("meta", {}).items():
        assert result.meta.get(key) == value, key
