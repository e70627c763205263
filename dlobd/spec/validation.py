"""Validation of experiment specs and claims files: the schema (experiment.schema.json), then
the cross-checks a schema cannot state (axes named where they are declared, claims that read
existing points, rehearsals that only cut work, claims placed once; with the papers' catalog,
ids and kinds that agree with it). Every error is a line `<file>: <field path>: <reason>`.

Command: ``dlobd validate [--dir experiments] [files...]``.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from dlobd import ROOT
from dlobd.spec import (REHEARSAL_DATASET, ROW_COLUMNS, UNSTATED_WORDS, WORK_SETTINGS, Spec, assumed,
                        check_selections, claimlang, expand, load_schema, metric_dims, metrics, networks,
                        read_yaml, rehearsal, synthetic_twin, value_text, within_cluster)


def load_catalog(catalog_dir: Path) -> tuple[dict, dict]:
    """(experiments by id, claims by id) from a catalog of the papers' experiments and claims
    (experiments.yaml, claims.yaml). The project does not ship one: the tests read it from
    the directory DLOBD_CATALOG names, to cross-check the specs against it."""
    exps = read_yaml(catalog_dir / "experiments.yaml")["experiments"]
    claims = read_yaml(catalog_dir / "claims.yaml")["claims"]
    return {e["id"]: e for e in exps}, {c["id"]: c for c in claims}

def _selector_text(value) -> str | None:
    """A selector value as matrix text; None for a quantifier's bound variable."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value_text(value)
    return None

# ---------------------------------------------------------------- validation


class _Errors(list):
    """Error lines `<file>: <field path>: <reason>`, files shown relative to the project root."""

    def __init__(self, root: Path):
        super().__init__()
        self.root = Path(root).resolve()

    def add(self, path: Path | str, field_path: str, reason: str) -> None:
        shown = Path(path)
        try:
            shown = shown.resolve().relative_to(self.root)
        except ValueError:
            pass
        line = f"{shown}: {field_path}: {reason}"
        if line not in self:  # one check may read the same selection several times
            self.append(line)


def _json_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (("." if parts else "") + str(p)))
    return "".join(parts) or "(top)"


def _schema_reason(error: jsonschema.ValidationError) -> str:
    if error.validator == "oneOf" and error.schema is not None and "properties" in error.schema:
        return "a claim needs exactly one of `check` or `not_checkable` (and `check_alt` only beside `check`)"
    if error.validator == "not" and isinstance(error.instance, dict) and "data_from" in error.instance:
        present = [k for k in ("axes", "scales", "same_data_as") if k in error.instance]
        return (f"a spec with data_from takes its axes and scales from {error.instance['data_from']}: "
                f"remove {', '.join(present)}")
    return error.message


def _schema_errors(validator, data, path: Path, errors: _Errors) -> None:
    for err in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        errors.add(path, _json_path(err), _schema_reason(err))


def _in_values(value: str, values) -> bool:
    return any(value_text(v) == value or _try_num(v) == _try_num(value) is not None for v in values)


def _try_num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _axis_values(spec: Spec) -> dict[str, list]:
    """Every value an axis takes in any scale's matrix (or axis_map) of the owning spec."""
    values: dict[str, list] = {a: [] for a in spec.axes()}
    for scale in spec.source_spec.data.get("scales", {}).values():
        for axis, vals in (scale.get("matrix") or {}).items():
            values.setdefault(axis, []).extend(vals)
    return values


def _check_runs_from(spec: Spec, scale: str, other_id: str, registry: dict, errors: _Errors) -> None:
    where = f"scales.{scale}.runs_from"
    other = registry.get(other_id)
    if other is None or other_id == spec.id:
        errors.add(spec.path, where, f"names {'itself' if other is not None else f'unknown spec {other_id!r}'}")
        return
    if other.data.get("data_from"):
        errors.add(spec.path, where, f"{other_id} takes its data from {other.data['data_from']}: name that spec")
        return
    if scale not in (other.data.get("scales") or {}):
        errors.add(spec.path, where, f"{other_id} has no scale {scale!r}")
        return
    if other.runs_from(scale):
        errors.add(spec.path, where, f"{other_id} itself takes its runs at {scale} from {other.runs_from(scale)}")
        return
    try:
        spec.shared_points(scale)
    except (ValueError, KeyError, TypeError) as exc:
        errors.add(spec.path, where, str(exc))


def _check_scale(spec: Spec, name: str, scale: dict, errors: _Errors) -> None:
    where = f"scales.{name}"
    axes = spec.axes()
    matrix = scale.get("matrix")
    if name == "paper" and matrix is None:
        errors.add(spec.path, f"{where}.matrix", "the paper scale needs a matrix (the figure's points)")
    if matrix is not None:
        for axis in matrix:
            if axis not in axes:
                errors.add(spec.path, f"{where}.matrix.{axis}", f"unknown axis {axis!r} (declared: {', '.join(sorted(axes))})")
        for axis in axes:
            if axis not in matrix:
                errors.add(spec.path, f"{where}.matrix", f"declared axis {axis!r} has no values in this matrix")

    def check_point(point: dict, fpath: str, allow_dims: bool = False) -> None:
        for axis, value in point.items():
            if axis in axes:
                if matrix is not None and axis in matrix and not _in_values(value_text(value), matrix[axis]):
                    errors.add(spec.path, f"{fpath}.{axis}", f"value {value_text(value)!r} is not in the {name} matrix of {axis!r}")
            elif not (allow_dims and (axis in spec.dimensions() or axis in ROW_COLUMNS)):
                errors.add(spec.path, f"{fpath}.{axis}", f"unknown axis {axis!r}")

    for i, ex in enumerate(scale.get("exclude", [])):
        check_point(ex, f"{where}.exclude[{i}]")
    for i, pn in enumerate(scale.get("point_needs", [])):
        check_point(pn["at"], f"{where}.point_needs[{i}].at")
    for i, pv in enumerate(scale.get("paper_values", [])):
        up_to = pv.get("up_to")
        if up_to is not None and up_to not in axes and up_to not in spec.dimensions():
            errors.add(spec.path, f"{where}.paper_values[{i}].up_to", f"unknown axis {up_to!r}")
        for key in ("at", "over"):
            if key not in pv:
                continue
            check_point(pv[key], f"{where}.paper_values[{i}].{key}", allow_dims=True)
            # 'up to' leaves its axis open; a relation's baseline may leave open what `at` names
            named = set(pv[key]) | {up_to} | (set(pv["at"]) if key == "over" else set())
            open_axes = sorted(a for a, vals in (matrix or {}).items() if len(vals) > 1 and a not in named)
            if open_axes:
                errors.add(spec.path, f"{where}.paper_values[{i}].{key}", f"does not name a point: axes left open: {', '.join(open_axes)}")
    if matrix is not None and not expand(scale):
        errors.add(spec.path, f"{where}.exclude", "every point of the matrix is excluded")
    _check_whole_scale_needs(spec, name, scale, errors)
    for axis, mapping in (scale.get("axis_map") or {}).items():
        if axis not in axes:
            errors.add(spec.path, f"{where}.axis_map.{axis}", f"unknown axis {axis!r}")
            continue
        paper_matrix = (spec.source_spec.data.get("scales", {}).get("paper") or {}).get("matrix") or {}
        for src, dst in mapping.items():
            if axis in paper_matrix and not _in_values(value_text(src), paper_matrix[axis]):
                errors.add(spec.path, f"{where}.axis_map.{axis}.{src}", f"{src!r} is not in the paper matrix of {axis!r}")
            if matrix is not None and axis in matrix and not _in_values(value_text(dst), matrix[axis]):
                errors.add(spec.path, f"{where}.axis_map.{axis}.{src}", f"maps to {value_text(dst)!r}, which is not in the {name} matrix of {axis!r}")


def _check_assumed(spec: Spec, name: str, scale: dict, errors: _Errors) -> None:
    """An assumed value stands in only for what the paper leaves unstated: not an axis of the
    scale, not a number `fixed` states; a count within the cluster is a whole number."""
    where = f"scales.{name}.assumed"
    fixed = scale.get("fixed") or {}
    for key, value in assumed(scale).items():
        if key in (scale.get("matrix") or {}):
            errors.add(spec.path, f"{where}.{key}", f"{key!r} is a matrix axis: the paper states its values")
        elif key in fixed and not UNSTATED_WORDS.search(str(fixed[key])):
            errors.add(spec.path, f"{where}.{key}", f"fixed.{key} states {value_text(fixed[key])!r}: an assumed "
                                                    "value stands in only where fixed says 'not stated' or is silent")
    for key in within_cluster(scale):
        if key not in assumed(scale):
            errors.add(spec.path, f"{where}.within_cluster", f"{key!r} is not an assumed setting")
        elif not isinstance(assumed(scale)[key], int) or assumed(scale)[key] < 1:
            errors.add(spec.path, f"{where}.{key}", "a count within the cluster is a positive whole number")

def _check_rehearsal(spec: Spec, name: str, scale: dict, errors: _Errors) -> None:
    """A rehearsal cuts the work only: settings that size it, each below what the scale runs."""
    where = f"scales.{name}.rehearsal"
    stated = {**assumed(scale), **(scale.get("fixed") or {})}
    for key, value in rehearsal(scale).items():
        if key == REHEARSAL_DATASET:
            dataset = scale.get("dataset", spec.data.get("dataset"))
            if not synthetic_twin(dataset, value):
                errors.add(spec.path, f"{where}.{key}", f"{value!r} is not the synthetic twin of the scale's data set "
                                                        f"{dataset!r} (<id>-synthetic, in its format): a rehearsal "
                                                        "changes no other data")
        elif key not in WORK_SETTINGS:
            errors.add(spec.path, f"{where}.{key}", f"{key!r} does not size the work (a rehearsal cuts only "
                                                    f"{', '.join(WORK_SETTINGS)}): the layout stays the scale's")
        elif key in (scale.get("matrix") or {}):
            errors.add(spec.path, f"{where}.{key}", f"{key!r} is a matrix axis: a rehearsal runs the scale's points")
        elif isinstance(stated.get(key), (int, float)) and value > stated[key]:
            errors.add(spec.path, f"{where}.{key}", f"{value} is more than the scale's {value_text(stated[key])}: "
                                                    "a rehearsal cuts the work")


def _check_whole_scale_needs(spec: Spec, name: str, scale: dict, errors: _Errors) -> None:
    """A need of the whole scale that only some of its network values have (config/networks.yaml)
    would make a cluster without it run none of the points, those that never use it included."""
    values = sorted({str(p["network"]) for _, p in expand(scale) if "network" in p}) if scale.get("matrix") else []
    if len(values) < 2 or spec.data.get("stack_axis"):
        return
    try:
        per_value = {v: set(networks.resolve(spec.stack(name), v).needs) for v in values}
    except (networks.UnknownNetwork, KeyError):
        return  # an unknown value or stack is named where the launcher resolves it
    # multi-host is the shape of the experiment itself (its tasks run on several nodes), whatever
    # the network
    for need in [n for n in scale.get("needs") or [] if n != "multi-host"]:
        having = [v for v, needs in per_value.items() if need in needs]
        if having and len(having) < len(values):
            errors.add(spec.path, f"scales.{name}.needs",
                       f"{need} is needed by the whole scale, but only its network={'/'.join(having)} "
                       f"points need it ({networks.CONFIG.name}): name it in point_needs instead")


def _check_claim_syntax(owner: Spec | None, registry: dict, claim: dict, fpath: str, path: Path,
                        errors: _Errors) -> None:
    for key in ("check", "check_alt"):
        text = claim.get(key)
        if text is None:
            continue
        try:
            selections = check_selections(text)
        except claimlang.ClaimSyntaxError as exc:  # the parser's own error carries the position
            errors.add(path, f"{fpath}.{key}", f"syntax error: {exc}")
            continue
        where = f"{fpath}.{key}"
        for sel in selections:
            target = owner
            if sel.experiment is not None:
                target = registry.get(sel.experiment)
                if target is None:
                    errors.add(path, where, f"names unknown experiment {sel.experiment!r}")
                    continue
            if target is None:
                errors.add(path, where, "a claim outside an experiment spec must name its experiment (y@<id>[...])")
                continue
            metric = target.data.get("metric", {}).get("name") if sel.metric == "y" else sel.metric
            allowed = metric_dims(metric) if isinstance(metric, str) else None
            if allowed is None:
                if sel.metric != "y":  # an unknown primary metric is reported at metric.name
                    errors.add(path, where, f"unknown metric {metric!r} (not in docs/metrics.md)")
                allowed = ROW_COLUMNS
            axes, dims, values = target.axes(), target.dimensions(), _axis_values(target)
            for column, raw in sel.selectors.items():
                value = _selector_text(raw)
                if column in axes:
                    if value is not None and not _in_values(value, values.get(column, [])):
                        errors.add(path, where, f"{column}={value}: value not in any matrix of {target.id}")
                elif column in dims:
                    if column not in allowed:
                        errors.add(path, where, f"{column!r} is not a dimension of metric {metric!r} (docs/metrics.md)")
                    listed = dims[column].get("values")
                    if value is not None and listed and not _in_values(value, listed):
                        errors.add(path, where, f"{column}={value}: not a value of dimension {column!r} of {target.id}")
                elif column not in allowed:
                    errors.add(path, where, f"selector names unknown axis {column!r} of {target.id}")
            # an unnamed axis with several values makes the reference ambiguous
            for scale_name, scale in target.source_spec.data.get("scales", {}).items():
                open_axes = sel.open_axes(scale.get("matrix") or {})
                if open_axes:
                    errors.add(path, where, f"{sel.text or sel.metric}: ambiguous in the {scale_name} matrix of "
                                            f"{target.id} (axes left open: {', '.join(open_axes)})")


def _check_metrics(spec: Spec, errors: _Errors) -> None:
    """Metric names of the spec exist in the vocabulary; declared dimensions belong to a metric used."""
    data = spec.data
    used = {"metric.name": data["metric"]["name"]}
    if "y2" in data["plot"]:
        used["plot.y2"] = data["plot"]["y2"]
    for name, scale in (data.get("scales") or {}).items():
        for i, pv in enumerate(scale.get("paper_values", [])):
            if "metric" in pv:
                used[f"scales.{name}.paper_values[{i}].metric"] = pv["metric"]
    allowed = set(ROW_COLUMNS)
    for field_path, name in used.items():
        dims = metric_dims(name)
        if dims is None:
            errors.add(spec.path, field_path, f"unknown metric {name!r} (not in docs/metrics.md)")
        else:
            allowed |= dims
    for dim, decl in data.get("dimensions", {}).items():
        if dim not in allowed:
            errors.add(spec.path, f"dimensions.{dim}", f"not a dimension of the spec's metrics ({', '.join(sorted(set(used.values())))}) in docs/metrics.md")
        if dim == "phase":  # the one dimension whose values the vocabulary fixes
            for value in decl.get("values", []):
                if value not in metrics.PHASES:
                    errors.add(spec.path, "dimensions.phase.values", f"{value!r} is not a phase of docs/metrics.md")


def validate(root: Path | str = ROOT, files: list | None = None, directory: str = "experiments",
             catalog: tuple[dict, dict] | None = None) -> tuple[list[str], dict]:
    """Validate specs and claims files. With `files`, only those specs are checked (the
    completeness of claim placement is then not checked). With `catalog` (load_catalog's
    experiments and claims by id) the specs are also cross-checked against it: ids, sources,
    claim kinds, and every catalog claim placed once."""
    root = Path(root)
    errors = _Errors(root)
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    file_validator = jsonschema.Draft202012Validator({**schema["$defs"]["claims_file"], "$defs": schema["$defs"]})
    cat_exps, cat_claims = catalog or ({}, {})

    registry: dict[str, Spec] = {}
    unreadable: set[str] = set()  # ids of files that do not load: no follow-on errors for them
    paths = sorted(Path(root, directory).glob("*.yaml"))
    for path in paths:
        try:
            data = read_yaml(path)
        except yaml.YAMLError as exc:
            errors.add(path, "(file)", "not valid YAML: " + " ".join(str(exc).split()))
            unreadable.add(path.stem)
            continue
        if not isinstance(data, dict):
            errors.add(path, "(file)", "a spec is a YAML mapping")
            unreadable.add(path.stem)
            continue
        spec_id = data.get("id") if isinstance(data.get("id"), str) else path.stem
        if spec_id in registry:
            errors.add(path, "id", f"duplicate id {spec_id!r} (also in {registry[spec_id].path})")
        registry[spec_id] = Spec(spec_id, path, data, registry)
    if files:
        wanted = {Path(f).resolve() for f in files}
        checked = [s for s in registry.values() if s.path.resolve() in wanted]
        missing = wanted - {s.path.resolve() for s in checked}
        for m in sorted(missing):
            errors.add(m, "(file)", "no such spec file")
    else:
        checked = list(registry.values())
    cfiles = {}
    for path in [] if files else sorted(Path(root, "claims").glob("*-text.yaml")):
        try:
            cfiles[path] = read_yaml(path)
        except yaml.YAMLError as exc:
            errors.add(path, "(file)", "not valid YAML: " + " ".join(str(exc).split()))

    placed: dict[str, str] = {}
    n_claims = 0

    def place(claim: dict, where: str, path: Path, fpath: str, owner_id: str | None, paper: str | None) -> None:
        cid = claim.get("id")
        if not isinstance(cid, str):
            return
        if cid in placed:
            errors.add(path, f"{fpath}.id", f"claim {cid} is placed twice (also in {placed[cid]})")
        placed[cid] = where
        if paper and not cid.startswith(paper + "-"):
            errors.add(path, f"{fpath}.id", f"claim {cid} is not a claim of paper {paper!r}")
        if catalog is None:
            return
        cat = cat_claims.get(cid)
        if cat is None:
            errors.add(path, f"{fpath}.id", f"claim {cid} is not in the catalog")
            return
        if cat.get("experiment_id") and cat["experiment_id"] != owner_id:
            errors.add(path, f"{fpath}.id", f"claim {cid} belongs to experiment {cat['experiment_id']} (catalog)")
        if claim.get("kind") != cat.get("kind"):
            errors.add(path, f"{fpath}.kind", f"{claim.get('kind')!r} differs from the catalog's kind {cat.get('kind')!r}")

    for spec in checked:
        data, path = spec.data, spec.path
        before = len(errors)
        _schema_errors(validator, data, path, errors)
        schema_ok = len(errors) == before
        if spec.id != path.stem:
            errors.add(path, "id", f"{spec.id!r} differs from the file name {path.stem!r}")
        cat = cat_exps.get(spec.id)
        if catalog is not None and cat is None:
            errors.add(path, "id", f"{spec.id!r} is not an experiment of the catalog")
        elif cat is not None:
            if data.get("source") != cat["source"]:
                errors.add(path, "source", f"{data.get('source')!r} differs from the catalog's {cat['source']!r}")
        if isinstance(data.get("paper"), str) and not spec.id.startswith(data["paper"] + "-"):
            errors.add(path, "paper", f"{data['paper']!r} does not match the id {spec.id!r}")
        for i, other in enumerate(data.get("same_data_as") or []):
            if other not in registry:
                errors.add(path, f"same_data_as[{i}]", f"names unknown spec {other!r}")
            elif registry[other].data.get("data_from") != spec.id:
                errors.add(path, f"same_data_as[{i}]", f"{other} does not say `data_from: {spec.id}`")
        target = data.get("data_from")
        if target is not None:
            if target not in registry:
                errors.add(path, "data_from", f"names unknown spec {target!r}")
                for i, claim in enumerate(data.get("claims") or []):
                    place(claim, spec.id, path, f"claims[{i}]", spec.id, data.get("paper"))
                continue
            if registry[target].data.get("data_from"):
                errors.add(path, "data_from", f"{target} itself takes its data from elsewhere")
            if spec.id not in (registry[target].data.get("same_data_as") or []):
                errors.add(path, "data_from", f"{target} does not list {spec.id} in same_data_as")
        if not schema_ok:
            # cross-checks assume the shapes the schema guarantees
            for i, claim in enumerate(data.get("claims") or []):
                if isinstance(claim, dict):
                    place(claim, spec.id, path, f"claims[{i}]", spec.id, data.get("paper"))
            continue

        _check_metrics(spec, errors)
        axes = spec.axes()
        dims = spec.dimensions()
        for axis in dims:
            if axis in axes:
                errors.add(path, f"dimensions.{axis}", "is also a matrix axis")
        plot = data["plot"]
        x_ok = set(axes) | set(dims) | ROW_COLUMNS
        if plot["x"] not in x_ok:
            errors.add(path, "plot.x", f"{plot['x']!r} is not a declared axis, dimension, step, epoch or wall_clock_s")
        for key in ("series", "panels"):
            for i, name in enumerate(plot.get(key, [])):
                if name not in axes and name not in dims:
                    errors.add(path, f"plot.{key}[{i}]", f"{name!r} is not a declared axis or dimension")
        if "stack" in plot and plot["stack"] not in dims:
            errors.add(path, "plot.stack", f"{plot['stack']!r} is not a declared dimension")
        if "stack_axis" in data:
            sa = data["stack_axis"]
            if sa not in axes:
                errors.add(path, "stack_axis", f"{sa!r} is not a declared axis")
            else:
                stacks = set(load_schema()["$defs"]["stack"]["enum"])
                for v in _axis_values(spec)[sa]:
                    if v not in stacks:
                        errors.add(path, "stack_axis", f"value {v!r} of {sa!r} is not a stack module")
        if target is None:
            for name, scale in data["scales"].items():
                _check_scale(spec, name, scale, errors)
                _check_assumed(spec, name, scale, errors)
                _check_rehearsal(spec, name, scale, errors)
                if "runs_from" in scale:
                    _check_runs_from(spec, name, scale["runs_from"], registry, errors)
        for i, claim in enumerate(data.get("claims", [])):
            n_claims += 1
            place(claim, spec.id, path, f"claims[{i}]", spec.id, data["paper"])
            _check_claim_syntax(spec, registry, claim, f"claims[{i}]", path, errors)

    for path, cdata in cfiles.items():
        before = len(errors)
        _schema_errors(file_validator, cdata, path, errors)
        where = f"claims/{path.name}"
        if len(errors) != before:
            for i, claim in enumerate((cdata or {}).get("claims") or [] if isinstance(cdata, dict) else []):
                if isinstance(claim, dict):
                    place(claim, where, path, f"claims[{i}]", None, None)
            continue
        if not path.stem.startswith(cdata["paper"] + "-"):
            errors.add(path, "paper", f"{cdata['paper']!r} does not match the file name")
        for i, claim in enumerate(cdata["claims"]):
            n_claims += 1
            place(claim, where, path, f"claims[{i}]", None, cdata["paper"])
            _check_claim_syntax(None, registry, claim, f"claims[{i}]", path, errors)

    if not files and catalog is not None:
        for cid in sorted(set(cat_claims) - set(placed)):
            if cat_claims[cid].get("experiment_id") not in unreadable:
                errors.add(Path(root, directory), "claims", f"catalog claim {cid} is placed nowhere")
        for eid in sorted(set(cat_exps) - set(registry) - unreadable):
            errors.add(Path(root, directory), "(files)", f"catalog experiment {eid} has no spec")
    summary = {"specs": len(checked), "claims_files": len(cfiles), "claims": n_claims}
    return list(errors), summary


# ---------------------------------------------------------------- command


def register(parser) -> None:
    parser.add_argument("--dir", default="experiments", help="spec directory under the project root")
    parser.add_argument("--root", default=str(ROOT), help="project root (holds experiments/ and claims/)")
    parser.add_argument("files", nargs="*", help="only these spec files (claim placement is then not checked)")


def run(args) -> int:
    errors, summary = validate(args.root, args.files or None, args.dir)
    for line in errors:
        print(line)
    if errors:
        print(f"{len(errors)} error(s)")
        return 1
    print(f"ok: {summary['specs']} specs, {summary['claims_files']} claims files, {summary['claims']} claims")
    return 0
