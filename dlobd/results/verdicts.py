"""Claim verdicts as records and as the report's table: what was judged, on which values, and
why (dlobd/results/claims.py gives them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import pandas as pd

from dlobd.spec import substitutions
from dlobd.spec.claimlang import fmt

VERDICTS = ("holds", "differs", substitutions.NOT_COMPARABLE, "not run", "not checkable")

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
        "software": v.software,
    } for v in verdicts]
    return pd.DataFrame(rows, columns=[
        "paper", "experiment", "claim_id", "kind", "scale", "verdict", "reason", "paper_values",
        "reproduced", "check", "alt_verdict", "alt_reason", "alt_reproduced", "check_alt", "text",
        "substituted", "software"])
