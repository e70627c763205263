"""Whether a number measured at a scale is the counterpart of a number the paper states: the one
rule that the claims' verdicts (dlobd/results/claims.py) and the figures' paper panels
(dlobd/results/figures/paper.py) both apply, so that a figure never draws as a counterpart what
the report calls not comparable.

- The premise rule, `premise_void`: why a scale voids what a claim rests on (its `premise`,
  docs/claim-language.md), or None. A verdict it voids is `not comparable here`.
- The pair rule, `not_counterpart`: why this scale's value of a paper value's quantity is not its
  counterpart, '' when it is. A counterpart is the same stack's, model's and data's; a quantity
  that grows with the work (a time, a rate, a size) also needs the paper's sizes and settings,
  while a relation of two points of one workload (a ratio, reduction, gain, share) and an extreme
  sample of a utilisation do not; and no claim that reads the paper value's points may rest on a
  premise the scale voids.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dlobd.spec import check_selections, same_value, substitutions
from dlobd.spec.claimlang import Var

NOT_COMPARABLE = "not comparable here"
PREMISES = ("paper-scale", "linear-scaling", "baseline", "share")
_NOT_COMPARABLE_NOTE = re.compile(r"not comparable", re.IGNORECASE)
# the settings of a scale that size its work: one the paper leaves unstated, set at a scale, makes
# that scale's absolute times and rates another workload's
WORKLOAD_SETTINGS = ("batch", "epochs", "gradient_bytes", "image_size", "iterations", "model", "pages",
                     "steps", "test_images", "train_images")
# a paper value of a metric's extreme sample ("lowest CPU utilisation during training"): the
# reduction of every sample of the run (every host's, the whole run, as the claims' min_over_time
# and max_over_time take them) and the label its local bar carries
SAMPLE_EXTREMES = {"lowest": ("min", "lowest sample of the run"),
                   "highest": ("max", "highest sample of the run"),
                   "peak": ("max", "highest sample of the run")}


def _scale(spec: dict, name: str) -> dict:
    return (spec.get("scales") or {}).get(name) or {}


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def premise_void(claim: dict, spec: dict, scale: str, substituted: list[str],
                 cpus: int | None = None) -> str | None:
    """Why the scale voids the premise the claim rests on (its `premise`), or None.

    `substituted` are the selectors read at a stand-in of the scale's `axis_map`, as
    substitutions.axis_substitution names them; `cpus` the cores the runs' hosts recorded
    (substitutions.run_cores)."""
    premise = claim.get("premise")
    if not premise or scale == "paper":
        return None
    kind = premise["kind"]
    local = _scale(spec, scale)
    fixed = local.get("fixed") or {}
    via = f" ({', '.join(substituted)})" if substituted else ""
    if kind == "paper-scale":
        return (f"the paper saw this only at its own scale; the `{scale}` matrix stands in with "
                f"smaller points{via}, where the behaviour cannot show")
    if kind == "linear-scaling":
        axis = premise.get("axis", "nodes")
        values = [v for v in (local.get("matrix") or {}).get(axis, []) if isinstance(v, (int, float))]
        workers = max(values) if values else None
        servers = fixed.get("parameter_servers") or 0
        if cpus is None or workers is None or workers + servers > cpus:
            share = f"{substitutions.fmt(workers)} workers" + (f" and {servers} parameter server(s)" if servers else "")
            on = f"{cpus} cores" if cpus else "cores of unknown number"
            return f"scaling needs a core per process: {share} share {on} here{via}"
        return None
    if kind == "baseline":
        base = premise.get("baseline") or {}
        swapped = [s for s in substituted
                   if any(s.startswith(f"{k}={substitutions.fmt(v)} ") for k, v in base.items())]
        over = substitutions.oversubscribed(spec, scale, cpus)
        if swapped:
            return f"the baseline is substituted: {', '.join(swapped)}"
        if over:
            return f"the baseline is oversubscribed ({over}): a speedup over it says nothing of the paper's"
        return None
    if kind == "share":
        notes = [n for n in local.get("notes") or [] if _NOT_COMPARABLE_NOTE.search(n)]
        if notes:
            return f"the spec's notes call this share not comparable: {notes[0]}"
        return None
    raise ValueError(f"unknown premise {kind!r} (known: {', '.join(PREMISES)})")


def recorded_cores(results_dir: Path, spec: dict) -> int | None:
    """The cores the runs of `spec` (or of its data_from spec) recorded, from the results'
    runs/<id>.json: the cores the premise rule weighs."""
    path = Path(results_dir) / "runs" / f"{spec.get('data_from') or spec.get('id')}.json"
    try:
        return substitutions.run_cores(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError):
        return None


def short(reason: str) -> str:
    """A reason's first clause, for a figure's mark: 'the baseline is substituted'."""
    return re.split(r"[:;(]", reason, maxsplit=1)[0].strip()


def reads(check: str, point: dict) -> bool:
    """Whether the check reads `point` of its own experiment: a reference whose fixed selectors are
    the point's (a quantifier's variable reads every value of its column)."""
    for selection in check_selections(check):
        fixed = {k: v for k, v in selection.selectors.items() if not isinstance(v, Var)}
        if selection.experiment is None and fixed.keys() == point.keys() and \
                all(same_value(fixed[k], point[k]) for k in point):
            return True
    return False


def _substituted(spec: dict, scale: str, points: list[dict]) -> list[str]:
    """The selectors of `points` that the scale's axis_map reads at a stand-in."""
    mapping = _scale(spec, scale).get("axis_map") or {}
    out = []
    for point in points:
        for column, value in point.items():
            pairs = {substitutions.fmt(k): v for k, v in (mapping.get(column) or {}).items()}
            here = pairs.get(substitutions.fmt(value))
            if here is not None and not same_value(here, value):
                out.append(substitutions.axis_substitution(column, value, here))
    return list(dict.fromkeys(out))


def paper_value_void(spec: dict, scale: str, p: dict, cpus: int | None = None) -> str:
    """Why a claim that reads every point of the paper value `p` (`at`, and `over` for a relation)
    is `not comparable here` at this scale, '' when none is."""
    points = [p["at"]] + ([p["over"]] if "over" in p else [])
    for claim in spec.get("claims") or []:
        checks = [c for c in (claim.get("check"), claim.get("check_alt")) if c]
        if not claim.get("premise") or not any(all(reads(c, pt) for pt in points) for c in checks):
            continue
        void = premise_void(claim, spec, scale, _substituted(spec, scale, points), cpus)
        if void:
            return void
    return ""


def changed_settings(spec: dict, scale: str, settings: dict | None = None) -> list[tuple[str, object, object]]:
    """(setting, the paper's value, this scale's) of each number the scale changes; `settings`:
    the scale as its runs saw it (Spec.scale), else the spec's own words."""
    if scale == "paper":
        return []
    paper = _scale(spec, "paper").get("fixed") or {}
    here = (settings if settings is not None else _scale(spec, scale)).get("fixed") or {}
    return [(k, v, here[k]) for k, v in paper.items() if k in here and _number(v) is not None
            and _number(here[k]) is not None and not same_value(v, here[k])]


def other_workload(spec: dict, scale: str, settings: dict | None = None) -> bool:
    """Whether this scale runs another workload than the paper's (other step counts or sizes, a
    size the paper does not state, another model or data set): its absolute times and rates are
    not the paper's quantity. (`settings` as for changed_settings)"""
    paper = _scale(spec, "paper").get("fixed") or {}
    fixed = (settings if settings is not None else _scale(spec, scale)).get("fixed") or {}
    unstated = [k for k in WORKLOAD_SETTINGS if k in fixed and k not in paper]
    return bool(changed_settings(spec, scale, settings) or unstated) or any(
        s.startswith(("model ", "data ")) for s in substitutions.substitutions(spec, scale))


def sample_extreme(p: dict) -> tuple[str, str] | None:
    """The reduction and words of a paper value that is one sample of a run ('lowest ...')."""
    words = str(p.get("quantity", "")).split()
    return SAMPLE_EXTREMES.get(words[0]) if words else None


def not_counterpart(spec: dict, scale: str, p: dict, cpus: int | None = None,
                    settings: dict | None = None) -> str:
    """Why this scale's value of the paper value `p`'s quantity is not its counterpart ('' when
    it is); the reason is short, for a figure's mark: another stack, model, data set or workload,
    or the first clause of the premise rule's reason (paper_value_void). (`settings` as for
    changed_settings)"""
    if p.get("stack") not in (None, spec["stack"]):
        return "another stack"
    swapped = [s.split()[0] for s in substitutions.substitutions(spec, scale) if s.startswith(("model ", "data "))]
    if swapped:
        return "another " + " and ".join({"model": "model", "data": "data set"}[w] for w in swapped)
    if not (p.get("as") or sample_extreme(p)) and other_workload(spec, scale, settings):
        return "another workload"
    if p.get("at") is not None and (void := paper_value_void(spec, scale, p, cpus)):
        return short(void)
    return ""
