"""Experiment specs: load, expand into matrix points, settle each point's settings.

Contract: docs/experiment-spec.md (fields, cross-checks) and docs/runs-and-results.md
(point ids). Schema: dlobd/spec/experiment.schema.json (JSON Schema 2020-12).

API used by the pipeline:

- ``load_all(root) -> dict[str, Spec]``: every ``experiments/*.yaml`` under the project
  root, keyed by id (no validation: ``dlobd.spec.validation.validate`` does that).
- ``Spec``: ``.id``, ``.path``, ``.data`` (the parsed YAML dict), ``.scale(name)`` (the scale
  dict; a spec with ``data_from`` returns its source spec's scale), ``.axes()``, ``.dimensions()``,
  ``.source_spec`` (the spec owning the data),
  ``.points(scale) -> [(point_id, {axis: value})]`` (matrix expanded, ``exclude`` applied,
  sorted by point id), ``.stack(scale)`` (the stack module at that scale), ``.claims``,
  ``.runs_from(scale)`` and ``.shared_points(scale)`` (a scale whose runs are another spec's:
  its point ids -> that spec's point ids with equal ``launch_settings``).
- ``scale_view(data, scale)``: the spec as one scale's runs see it (the other scales left out).
- ``claims_files(root) -> dict[path, dict]``: the claims-only files ``claims/*-text.yaml``.
- ``point_id(point) -> str``: the directory name of a matrix point.
- ``settings(spec, scale, overrides)``, ``launch_settings(spec, scale, point)``: what a
  point runs with, the assumed values and the site's overrides applied.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dlobd import ROOT
from dlobd.spec import claimlang, metrics

SCHEMA_PATH = Path(__file__).with_name("experiment.schema.json")

# Row columns every experiment's results carry besides its axes (docs/runs-and-results.md).
ROW_COLUMNS = frozenset({"step", "epoch", "wall_clock_s"})
# The point key a scale's `repeats` adds (1..N): independent runs of the same setting, whose
# spread the figures draw and whose median the claims read.
REPEAT = "repeat"


def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def metric_dims(name: str) -> frozenset[str] | None:
    """Columns a row of metric `name` may be selected on (None: not in the vocabulary)."""
    metric = metrics.METRICS.get(name)
    if metric is None:
        return None
    return frozenset(metric.dims) | frozenset(metrics.COMMON_DIMS) | ROW_COLUMNS


def value_text(value) -> str:
    """A matrix value as text: 384.0 and 384 are both '384'."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def point_id(point: dict) -> str:
    """`axis-value` pairs sorted by axis, joined by `_`; `default` for a point without axes."""
    if not point:
        return "default"
    return "_".join(
        re.sub(r"[^A-Za-z0-9.+-]", "-", f"{axis}-{value_text(point[axis])}") for axis in sorted(point)
    )


def point_matches(point: dict, partial: dict) -> bool:
    return all(axis in point and value_text(point[axis]) == value_text(v) for axis, v in partial.items())


def needs_text(scale: dict) -> str:
    """What a scale needs, as people read it: the needs of every point, then those only some
    points have (point_needs)."""
    return "; ".join([", ".join(scale.get("needs") or []),
                      *(f"{point_id(entry['at'])} points also: {', '.join(entry['needs'])}"
                        for entry in scale.get("point_needs") or [])])


def expand(scale: dict) -> list[tuple[str, dict]]:
    """The points of one scale: the matrix's cartesian product minus `exclude`, each
    `repeats` times (as `repeat` 1..N) when the scale asks for repeats; none for a scale
    without a matrix (not runnable there)."""
    if "matrix" not in scale:
        return []
    matrix = scale["matrix"] or {}
    axes = sorted(matrix)
    repeats = int(scale.get("repeats", 1))
    points = []
    for values in itertools.product(*(matrix[a] for a in axes)):
        point = dict(zip(axes, values))
        if any(point_matches(point, ex) for ex in scale.get("exclude", [])):
            continue
        for repeat in range(1, repeats + 1) if repeats > 1 else (None,):
            full = point if repeat is None else {**point, REPEAT: repeat}
            points.append((point_id(full), full))
    return sorted(points, key=lambda p: p[0])



def same_value(a, b) -> bool:
    """Matrix values compare as numbers when both are numbers (2 == 2.0), else as text."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


# ---------------------------------------------------------------- assumed settings

ASSUMED = "assumed, not stated by the paper"
# how a scale's `fixed` gives a setting its paper leaves unstated: 'not stated', 'not restated; ...'
UNSTATED_WORDS = re.compile(r"\bnot (?:re)?stated\b")
# the keys of a scale's `assumed` that are not settings
ASSUMED_META = ("why", "within_cluster")


class SettingError(ValueError):
    """A setting given where an experiment has none of that name, or a value it cannot take."""


def assumed(scale: dict) -> dict:
    """{setting: value} a scale assumes where its paper states none (its `assumed`, less the why)."""
    return {k: v for k, v in (scale.get("assumed") or {}).items() if k not in ASSUMED_META}


def within_cluster(scale: dict) -> list[str]:
    """The assumed counts a launcher cuts to what the cluster has (the paper leaves them open)."""
    return list((scale.get("assumed") or {}).get("within_cluster") or [])


def filled(scale: dict) -> dict:
    """The scale with its assumed values in `fixed` in place of the paper's words; a count
    assumed within the cluster stays out (its launcher sizes it to the cluster)."""
    values = {k: v for k, v in assumed(scale).items() if k not in within_cluster(scale)}
    return {**scale, "fixed": {**(scale.get("fixed") or {}), **values}} if values else scale


def assumed_text(scale: dict, name: str, value=None) -> str:
    """'192, assumed, not stated by the paper (Fig. 7(a), same cluster and model)'."""
    value = assumed(scale)[name] if value is None else value
    return f"{value_text(value)}, {ASSUMED} ({scale['assumed']['why']})"


def assumed_settings(spec, scale: str) -> list[str]:
    """What a scale runs with that its paper does not state, for a figure's title or a page:
    ['cores=192 assumed (Fig. 7(a), same cluster and model)']; a count assumed within the
    cluster says 'at most'. `spec` is a Spec or a spec's dict."""
    data = spec.source_spec.data if isinstance(spec, Spec) else spec
    entry = ((data.get("scales") or {}).get(scale) or {})
    cut = within_cluster(entry)
    return [f"{name}={'at most ' if name in cut else ''}{value_text(value)} assumed ({entry['assumed']['why']})"
            for name, value in assumed(entry).items()]


def parse_overrides(text: str, where: str) -> dict:
    """'cores=96 batch=384' -> {'cores': 96, 'batch': 384} (values read as YAML scalars);
    SettingError naming `where` for a word that is not name=value."""
    out = {}
    for word in str(text or "").replace(",", " ").split():
        name, sep, value = word.partition("=")
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not value:
            raise SettingError(f"{where}: {word!r} is not name=value (e.g. cores=96)")
        out[name] = yaml.safe_load(value)
    return out


def check_overrides(spec_data: dict, scale: str, overrides: dict, where: str | dict) -> None:
    """SettingError unless every override names a setting the scale assumes: the others are the
    paper's own (stated) or not settings of the experiment at all. `where`: where they were set,
    or that per setting."""
    entry = (spec_data.get("scales") or {}).get(scale) or {}
    known = assumed(entry)
    for name, value in overrides.items():
        if name not in known:
            accepted = (f"it assumes {', '.join(sorted(known))}" if known
                        else "it assumes nothing: its paper states every setting it runs with")
            raise SettingError(f"{_where(where, name)}: {name}={value_text(value)}: {spec_data['id']} at scale {scale} "
                               f"has no assumed setting {name!r} (scales.{scale}.assumed of experiments/"
                               f"{spec_data['id']}.yaml); {accepted}")


def _where(where: str | dict, name: str) -> str:
    return where[name] if isinstance(where, dict) else where


# A cluster's own values in place of assumed ones: the inventory's dlobd_assume, which dlobd-env.sh
# exports as JSON, {experiment id: {setting: value}}
SITE_ASSUME = "DLOBD_ASSUME"
SITE_WHERE = "the inventory (dlobd_assume)"


def site_overrides(text: str | None) -> dict:
    """{experiment id: {setting: value}} of the inventory's dlobd_assume (dlobd-env.sh's
    DLOBD_ASSUME); SettingError for a value of another shape."""
    if not text:
        return {}
    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingError(f"{SITE_WHERE}: {SITE_ASSUME} is not JSON ({exc}): {text!r}") from None
    if not isinstance(given, dict) or not all(isinstance(v, dict) for v in given.values()):
        raise SettingError(f"{SITE_WHERE}: must map experiment ids to {{setting: value}}, e.g. "
                           f"{{dlobd-fig7b: {{batch: 384}}}}; got {given!r}")
    return given


def check_site_overrides(site: dict, specs: dict) -> None:
    """SettingError naming the entry unless each of the inventory's values names an experiment of
    `specs` (id -> the spec's data) and a setting one of its scales assumes."""
    for eid, values in site.items():
        if eid not in specs:
            raise SettingError(f"{SITE_WHERE}: {eid!r} is no experiment (no experiments/{eid}.yaml)")
        known = {name for entry in (specs[eid].get("scales") or {}).values() for name in assumed(entry)}
        for name, value in values.items():
            if name not in known:
                raise SettingError(f"{SITE_WHERE}: {eid}: {name}={value_text(value)}: no scale of {eid} assumes "
                                   f"{name!r}; " + (f"its scales assume {', '.join(sorted(known))}" if known
                                                    else "its paper states every setting it runs with"))


def site_overrides_at(site: dict, spec_data: dict, scale: str) -> dict:
    """The inventory's values for one experiment at one scale: those of settings the scale assumes
    (a scale stating a setting keeps the paper's value)."""
    entry = (spec_data.get("scales") or {}).get(scale) or {}
    return {k: v for k, v in (site.get(spec_data["id"]) or {}).items() if k in assumed(entry)}


def settings(spec_data: dict, scale: str, overrides: dict | None = None,
             where: str | dict = "the command line") -> tuple[dict, dict]:
    """(the fixed settings a scale's launcher gets, their labels for run.json): the scale's
    `fixed` with its assumed values and then `overrides` in; labels `assumed` (each assumed
    value with its why) and `overridden` (each override, where it was set, per setting where
    `where` is a mapping, and what it replaced)."""
    entry = spec_data["scales"][scale]
    overrides = overrides or {}
    check_overrides(spec_data, scale, overrides, where)
    labels = {}
    kept = {k: assumed_text(entry, k) for k in assumed(entry) if k not in overrides}
    if kept:
        labels["assumed"] = kept
    if overrides:
        labels["overridden"] = {k: f"{value_text(v)}, set on {_where(where, k)} in place of the assumed "
                                   f"{value_text(assumed(entry)[k])}"
                                for k, v in overrides.items()}
    return {**(filled(entry).get("fixed") or {}), **overrides}, labels


@dataclass
class Spec:
    id: str
    path: Path
    data: dict
    registry: dict = field(default_factory=dict, repr=False)  # id -> Spec, for data_from

    @property
    def source_spec(self) -> "Spec":
        """The spec that owns the data: itself, or its `data_from` spec."""
        target = self.data.get("data_from")
        return self.registry[target] if target else self

    def axes(self) -> dict:
        return self.source_spec.data.get("axes", {})

    def paper_values(self) -> list[dict]:
        """The numbers the paper states for this figure (its data_from spec's for a slide chart)."""
        return list(((self.source_spec.data.get("scales") or {}).get("paper") or {}).get("paper_values") or [])

    def dimensions(self) -> dict:
        return self.data.get("dimensions") or self.source_spec.data.get("dimensions", {})

    def scale(self, name: str) -> dict:
        """The scale as launchers see it: its assumed values filled in (`filled`); the spec's
        own words stay in `.data`."""
        scales = self.source_spec.data.get("scales", {})
        if name not in scales:
            raise KeyError(f"{self.id}: no scale {name!r} (has: {', '.join(sorted(scales))})")
        return filled(scales[name])

    def points(self, scale: str) -> list[tuple[str, dict]]:
        return expand(self.scale(scale))

    def stack(self, scale: str) -> str:
        """The stack module that runs this spec at `scale` (a scale may override the spec's)."""
        return self.scale(scale).get("stack", self.data["stack"])

    def point_stack(self, scale: str, point: dict) -> str:
        """The stack module of one point: the value of its `stack_axis`, else the scale's (as
        runs.launch chooses it)."""
        return stack_of_point(self.data, self.source_spec.data.get("scales", {}).get(scale) or {}, point)

    def runs_from(self, scale: str) -> str | None:
        """The spec whose runs at `scale` are this spec's (the scale's `runs_from`), or None."""
        return (self.source_spec.data.get("scales", {}).get(scale) or {}).get("runs_from")

    def shared_points(self, scale: str) -> dict[str, str]:
        """This scale's point ids -> the `runs_from` spec's point ids with equal launch settings
        (empty without `runs_from`). Raises ValueError naming a point that has no equal there."""
        other_id = self.runs_from(scale)
        if other_id is None:
            return {}
        other = self.registry[other_id]
        theirs = {}
        for pid, point in other.points(scale):
            theirs.setdefault(_frozen(launch_settings(other.data, scale, point)), pid)
        out = {}
        for pid, point in self.points(scale):
            found = theirs.get(_frozen(launch_settings(self.source_spec.data, scale, point)))
            if found is None:
                raise ValueError(f"point {pid} has no point with the same launch settings in {other_id} "
                                 f"at scale {scale}: {_nearest_difference(self, other, scale, point)}")
            out[pid] = found
        return out

    @property
    def claims(self) -> list[dict]:
        return self.data.get("claims", [])


def scale_view(spec_data: dict | None, scale: str) -> dict | None:
    """The spec as one scale's measured runs see it: every field but the other scales and the
    scale's rehearsal cut (an edit of the paper scale changes nothing the local runs ran). None
    for no spec."""
    if spec_data is None:
        return None
    own = {k: v for k, v in ((spec_data.get("scales") or {}).get(scale) or {}).items() if k != "rehearsal"}
    return {**spec_data, "scales": {scale: own or None}}


def scale_stacks(spec_data: dict, scale: str) -> list[str]:
    """The stack modules a scale's points run, as runs.launch chooses them: the values of the
    spec's `stack_axis` in the scale's points, else the scale's stack, else the spec's."""
    data = (spec_data.get("scales") or {}).get(scale) or {}
    # a scale without points (no matrix) names its stack, or the spec's
    return sorted({stack_of_point(spec_data, data, point) for _, point in expand(filled(data))}) or [
        stack_of_point(spec_data, data, {})]


def stack_of_point(spec_data: dict, scale_data: dict, point: dict) -> str:
    """The stack module that runs one point of a scale (`scale_data`): the value of the spec's
    `stack_axis` in the point, else the scale's stack, else the spec's."""
    axis = spec_data.get("stack_axis")
    if axis and axis in point:
        return str(point[axis])
    return scale_data.get("stack") or spec_data["stack"]


def launch_settings(spec_data: dict, scale: str, point: dict) -> dict:
    """What a launcher is given for one point, as text: its stack, model, data set, time limit,
    the capabilities it needs and its settings (the scale's `fixed` with the point over them).
    Two points with equal launch settings are the same run."""
    data = spec_data["scales"][scale]
    needs = set(data.get("needs") or [])
    for entry in data.get("point_needs") or []:
        if point_matches(point, entry["at"]):
            needs.update(entry["needs"])
    return {
        "stack": stack_of_point(spec_data, data, point),
        "model": value_text(point.get("model", spec_data.get("model"))),
        "dataset": data.get("dataset", spec_data.get("dataset")),
        "time_limit_s": value_text(data.get("time_limit_s")),
        "runnable": data.get("runnable", True),
        "needs": sorted(needs),
        "settings": {k: value_text(v) for k, v in {**(data.get("fixed") or {}), **point}.items()},
    }


def _frozen(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


def _nearest_difference(spec: Spec, other: Spec, scale: str, point: dict) -> str:
    """The fields in which `point` differs from the closest point of `other`, for an error."""
    mine = launch_settings(spec.source_spec.data, scale, point)

    def diff(theirs: dict) -> list[str]:
        out = [f"{k} {mine[k]!r} there {theirs[k]!r}" for k in mine if k != "settings" and mine[k] != theirs[k]]
        for key in sorted(set(mine["settings"]) | set(theirs["settings"])):
            a, b = mine["settings"].get(key), theirs["settings"].get(key)
            if a != b:
                out.append(f"{key} {a!r} there {b!r}")
        return out

    candidates = [diff(launch_settings(other.data, scale, p)) for _, p in other.points(scale)]
    return "; ".join(min(candidates, key=len)) if candidates else f"{other.id} has no points at {scale}"


# libyaml's loader when PyYAML has it: the same safe subset, several times faster
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path):
    return yaml.load(path.read_text(), Loader=_LOADER)


def load_all(root: Path | str = ROOT, directory: str = "experiments") -> dict[str, Spec]:
    registry: dict[str, Spec] = {}
    for path in sorted(Path(root, directory).glob("*.yaml")):
        data = read_yaml(path)
        spec_id = data.get("id", path.stem) if isinstance(data, dict) else path.stem
        registry[spec_id] = Spec(spec_id, path, data if isinstance(data, dict) else {}, registry)
    return registry


def claims_files(root: Path | str = ROOT) -> dict[Path, dict]:
    return {p: read_yaml(p) for p in sorted(Path(root, "claims").glob("*-text.yaml"))}


# ---------------------------------------------------------------- claim syntax

def parse_check(text: str):
    """Parse a check with the claim language (dlobd/spec/claimlang.py); returns its Check object."""
    return claimlang.parse_check(text)


def check_selections(text: str) -> list:
    """The places a check reads results: objects with `.experiment` (None = this spec),
    `.metric` ('y' or a metric name), `.selectors` ({column: value}, a bound variable is a
    `dlobd.spec.claimlang.Var`) and `.open_axes(matrix)`."""
    return parse_check(text).selections()


# the settings that size a point's work, which a rehearsal may cut (scales.<scale>.rehearsal)
WORK_SETTINGS = ("epochs", "iterations", "steps", "warmup", "warmup_steps", "warmup_s", "duration_s",
                 "repeats", "train_images", "test_images", "pages")


# A rehearsal's data set may be the synthetic twin of the scale's, in its format and shape, where
# the real one is a download a rehearsal should not need (CIFAR-10: cifar10 -> cifar10-synthetic).
REHEARSAL_DATASET = "dataset"


def synthetic_twin(dataset, twin) -> bool:
    """Whether `twin` is the synthetic data set standing in for `dataset` (`<id>-synthetic`, of
    the id its text begins with)."""
    ids = str(dataset or "").split()
    return bool(ids) and str(twin) == f"{ids[0]}-synthetic"


def rehearsal(scale: dict) -> dict:
    """The rehearsal's cut of a scale's work: setting -> value (without `why`); {} for none."""
    return {k: v for k, v in (scale.get("rehearsal") or {}).items() if k != "why"}
