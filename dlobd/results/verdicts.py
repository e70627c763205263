"""Claim verdicts as records and as the report's table: what was judged, on which values, and
why (dlobd/results/claims.py gives them), and each verdict's finding: the same in words, each
number in its metric's unit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields

import pandas as pd

from dlobd.results.comparability import NOT_COMPARABLE
from dlobd.spec.claimlang import fmt

VERDICTS = ("holds", "differs", NOT_COMPARABLE, "not run", "not checkable")

MISSING = math.nan


def is_missing(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


@dataclass
class Verdict:
    claim_id: str
    verdict: str                # holds | differs | not comparable here | not run | not checkable
    reason: str
    check: str | None = None
    paper_values: list = field(default_factory=list)    # [(text, value)] the paper's numbers
    reproduced: list = field(default_factory=list)      # [(text, value)] the compared sides
    inputs: list = field(default_factory=list)          # [(text, value)] every value read
    experiment: str | None = None
    paper: str | None = None
    kind: str | None = None
    text: str | None = None
    scale: str | None = None
    check_alt: str | None = None
    alt: "Verdict | None" = None
    substituted: list = field(default_factory=list)     # ['network=rdma (here: loopback)']
    software: str | None = None     # the profile whose runs it was judged on: paper or modern
    finding: str = ""               # what was measured against what the paper states, in words

    @property
    def alt_verdict(self) -> str | None:
        return self.alt.verdict if self.alt else None

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "alt"}
        for key in ("paper_values", "reproduced", "inputs"):
            out[key] = [{"what": t, "value": _plain(v)} for t, v in out[key]]
        out["alt"] = self.alt.to_dict() if self.alt else None
        return out


def _plain(value):
    return None if is_missing(value) else value


def unique_pairs(pairs) -> list:
    """(text, value) pairs once per text, in first-seen order."""
    return list(dict(pairs).items())


def summary_text(items: list[str], limit: int = 4) -> str:
    items = list(dict.fromkeys(items))
    more = f"; … and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def _pairs_text(pairs) -> str:
    return "; ".join(f"{t} = {fmt(v)}" for t, v in pairs)


def verdicts_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per claim, the columns the report's verdict table shows."""
    rows = [{
        "paper": v.paper, "experiment": v.experiment, "claim_id": v.claim_id, "kind": v.kind,
        "scale": v.scale, "verdict": v.verdict, "reason": v.reason,
        "paper_values": "; ".join(fmt(val) for _, val in v.paper_values),
        "reproduced": _pairs_text(v.reproduced), "check": v.check,
        "alt_verdict": v.alt_verdict, "alt_reason": v.alt.reason if v.alt else None,
        "alt_reproduced": _pairs_text(v.alt.reproduced) if v.alt else None,
        "check_alt": v.check_alt, "text": v.text, "substituted": "; ".join(v.substituted),
        "software": v.software, "finding": v.finding, "alt_finding": v.alt.finding if v.alt else None,
    } for v in verdicts]
    return pd.DataFrame(rows, columns=[
        "paper", "experiment", "claim_id", "kind", "scale", "verdict", "reason", "paper_values",
        "reproduced", "check", "alt_verdict", "alt_reason", "alt_reproduced", "check_alt", "text",
        "substituted", "software", "finding", "alt_finding"])


# ---------------------------------------------------------------- findings in words

# units of a quotient of two values of one unit: the same quantity at two points (3.69x), or a
# part of a whole, a difference relative to a value, a reduction (30.7%)
RATIO, SHARE = "ratio", "share"
# a unit -> (factor, shown unit), largest first: a value takes the first whose factor it reaches
_SCALED = {
    "us": ((1e6, "s"), (1e3, "ms"), (1, "µs")),
    "MB": ((1e3, "GB"), (1, "MB")),
    "MB/s": ((1e3, "GB/s"), (1, "MB/s")),
    "bytes/s": ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "KB/s"), (1, "B/s")),
}
_PERCENT = {"fraction": 100, SHARE: 100, "%": 1}
# buffer sizes as the papers name them: 16 MB is 2^24 bytes
_SIZES = ((2**30, "GB"), (2**20, "MB"), (2**10, "KB"), (1, "B"))
SYMBOLS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "=", "!=": "≠"}


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures, never in exponent form: 29.6, 0.98, 2,130."""
    if value == 0 or not math.isfinite(value):
        return fmt(value)
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, decimals):,.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def quantity(value, unit: str | None) -> str:
    """A value in its unit at a readable scale: 29.6 ms, 1.2 GB, 30.7%, 3.69×."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or is_missing(value):
        return fmt(value)
    if unit in _PERCENT:
        return f"{significant(value * _PERCENT[unit])}%"
    if unit == RATIO:
        return f"{significant(value)}×"
    for factor, shown in _SCALED.get(unit, ()):
        if abs(value) >= factor or factor == 1:
            return f"{significant(value / factor)} {shown}"
    return f"{significant(value)} {unit}" if unit and unit != "1" else significant(value)


def point_text(column: str, value) -> str:
    """One selector in words: 16 MB for message_bytes=16777216, 2 nodes, 1 core, rdma."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if column.endswith("_bytes"):
        factor, unit = next(s for s in _SIZES if abs(value) >= s[0] or s[0] == 1)
        return f"{significant(value / factor)} {unit}"
    if column.endswith("s"):     # a count of things: nodes, cores, gpus, workers
        name = ("process" if column == "processes" else column[:-1]) if value == 1 else column
        return f"{fmt(float(value))} {name.replace('gpu', 'GPU')}"
    return f"{column} {fmt(float(value))}"


def metric_words(name: str) -> str:
    """A metric's name as words, its unit left to the value: latency, end to end, images/s."""
    name = re.sub(r"_(s|us|mb|gb|pct)$", "", name.replace("_mb_per_s", " MB/s").replace("_per_s", "/s"))
    return name.replace("_", " ")


@dataclass(frozen=True)
class Part:
    """One comparison a check made, in words: `text` at `where` (the point a quantifier bound),
    then `note` (what the paper states); `shape` is the comparison without its numbers, which
    tells parts that differ only in their point."""
    shape: str
    text: str
    where: str
    holds: bool
    note: str = ""

    @property
    def full(self) -> str:
        return " ".join(filter(None, (self.text, self.where))) + (f" ({self.note})" if self.note else "")


def _wheres(wheres: list[str]) -> str:
    """'32 MB', '64 MB' -> 'at 32 and 64 MB': one unit said once."""
    split = [w.removeprefix("at ").rsplit(" ", 1) for w in wheres]
    if all(len(s) == 2 and s[1] == split[-1][1] for s in split):
        values = [s[0] for s in split]
        unit = f" {split[-1][1]}"
    else:
        values, unit = [w.removeprefix("at ") for w in wheres], ""
    listed = values[0] if len(values) == 1 else ", ".join(values[:-1]) + f" and {values[-1]}"
    return f"at {listed}{unit}"


def parts_text(parts: list[Part], holds: bool) -> str:
    """The comparisons of a check as one finding: the first (the first that failed, where one
    did) in full, the rest summarised."""
    parts = list({p.full: p for p in parts}.values())
    if not parts:
        return ""
    lead = parts[0] if holds else next((p for p in parts if not p.holds), parts[0])
    rest = [p for p in parts if p is not lead]
    if not rest:
        return lead.full
    if all(p.shape == lead.shape and p.holds == lead.holds and p.where for p in rest) and lead.where:
        return f"{lead.full}, and so {_wheres([p.where for p in rest])}"
    # what the other comparisons found, said apart from the lead's own verdict
    differing = sum(not p.holds for p in rest)
    others = f"the {len(rest)} other comparisons" if len(rest) > 1 else "the other comparison"
    verb = ("hold" if len(rest) > 1 else "holds") if not differing else \
        ("differ" if len(rest) > 1 else "differs") if differing == len(rest) else f"include {differing} that differ{'s' if differing == 1 else ''}"
    return f"{lead.full}; {others} {verb}"


def gaps_text(gaps: list[str], what: str) -> str:
    """The values a check could not read (or that never reached their target), the first in full."""
    gaps = list(dict.fromkeys(gaps))
    more = f"; and {len(gaps) - 1} more {what}" if len(gaps) > 1 else ""
    return gaps[0] + more if gaps else ""
