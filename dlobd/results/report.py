"""The report (Jinja2): an index page with the summary, the verdict table (filterable by
paper and verdict) and a thumbnail of every experiment's figure, and a page per experiment
with its figure, claims, caveats and the provenance of every run.

Figures stay files in the report's own folder (figures/, linked in by `hold_figures`), linked
by relative paths and loaded lazily, so the index opens fast, the report reads from the file
system without a server, and the folder can be sent alone. The pages read results, figures and
verdicts only.
"""

from __future__ import annotations

import ast
import datetime as _dt
import json
import os
import re
import shutil
from pathlib import Path

import jinja2
import pandas as pd
import yaml

from dlobd import ROOT
from dlobd import spec as dspec
from dlobd.cluster import calibrate, fabric, provenance
from dlobd.results import expected, tidy
from dlobd.results.comparability import NOT_COMPARABLE
from dlobd.spec import substitutions

PAPERS = {
    "dlobd": "DLoBD (TMSCS)",
    "slides": "SC'18 booth slides",
    "scaffe": "S-Caffe (PPoPP'17)",
    "rdmatf": "RDMA TensorFlow (USTC)",
    "tfgrpc": "TF-gRPC-Bench",
}
# holds and differs first: what was compared, then what could not be
VERDICT_ORDER = ["holds", "differs", NOT_COMPARABLE, "not run", "not checkable"]
# the columns of verdicts.verdicts_frame the verdict table shows
VERDICT_FIELDS = ("experiment", "claim_id", "kind", "verdict", "reason", "paper_values",
                  "reproduced", "check", "alt_verdict", "alt_reason", "alt_reproduced", "check_alt",
                  "text", "substituted", "software", "finding", "alt_finding")


# what an experiment's entry reads of its results table (tidy.not_run_reason and is_monitor, the
# data labels); the rest (units, steps, the axes) only the figures read, and leaving it unparsed
# halves the reading
RESULTS_COLUMNS = frozenset({"status", "value", "run_id", "reason", "data_label", "log"})

# the experiment pages, beside index.html
PAGES_DIR = "experiments"


def page_path(report_dir, experiment: str, scale: str) -> Path:
    return Path(report_dir, PAGES_DIR, f"{experiment}-{scale}.html")


def natural_key(text: str) -> list:
    """fig4a before fig11: runs of digits compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(text))]


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("dlobd.results", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
        # compiled templates kept in the user's temporary directory: compiling them took a
        # sixth of writing the report
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )


def _read_csv(path, columns: frozenset | None = None) -> pd.DataFrame:
    """A table the pipeline wrote (empty where it is missing or empty), with only `columns`
    of it where they are given."""
    try:
        return pd.read_csv(path, usecols=(lambda c: c in columns) if columns else None)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def _clean(value):
    """JSON/NaN-safe cell value for the template."""
    if value is None:
        return ""
    if isinstance(value, float) and pd.isna(value):
        return ""
    return value


def _paper_of(verdict_id: str, specs: dict) -> str:
    if verdict_id in specs:
        return specs[verdict_id]["paper"]
    return verdict_id.split("-")[0]


def verdict_rows(results_dir, scales, verdict_ids, specs) -> list[dict]:
    rows = []
    for scale in scales:
        for vid in verdict_ids:
            frame = _read_csv(Path(results_dir, scale, "verdicts", f"{vid}.csv"))
            # rows through one conversion to Python objects: to_dict("records") took a column
            # at a time, three times as long for these small tables
            for rec in (dict(zip(frame.columns, row)) for row in frame.to_numpy(dtype=object)):
                rec = {k: _clean(rec.get(k)) for k in VERDICT_FIELDS}
                rec["experiment"] = rec["experiment"] or vid
                rec["scale"] = scale
                rec["paper"] = _paper_of(vid, specs)
                rows.append(rec)
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(rows, key=lambda r: (rank.get(r["verdict"], len(rank)),
                                       natural_key(r["experiment"]), natural_key(r["claim_id"])))


# A CPU's widest vector instruction set, by the flag that tells it (provenance.VECTOR_ISA), widest first.
ISA_NAMES = (("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
             ("sse4_2", "SSE4.2"))


def widest_isa(isa: list[str]) -> str:
    """The widest vector set of a run.json's `system.cpu_isa`, by name: runs on two CPUs of one
    model can differ twofold where one has AVX-512 and the other AVX2 only."""
    return next((name for flag, name in ISA_NAMES if flag in isa), "no SSE4.2")


def hardware(run_list: list[dict]) -> list[str]:
    """The hardware the used runs recorded, one line per distinct kind: CPU model and its widest
    vector set, cores,
    memory, hosts, links, and each host's HCAs and GPUs where run.json has their fingerprint
    (the NICs, which other tests' bridges come and go on, stay in each run's provenance)."""
    seen = []
    for r in run_list:
        if not r.get("used"):
            continue
        system = r.get("system") or {}
        hosts = r.get("hosts") or []
        links = sorted({h["link"] for h in hosts if h.get("link")})
        cpu = system.get("cpu_model") or "CPU not recorded"
        if system.get("cpu_isa") is not None:
            cpu += f" ({widest_isa(system['cpu_isa'])})"
        parts = [f"{cpu}, {system.get('cpus', '?')} cores"
                 + (f", {round(system['memory_mb'] / 1024)} GiB" if system.get("memory_mb") else ""),
                 f"{len(hosts) or 1} host(s)",
                 "links: " + (", ".join(links) if links else "loopback only (one host)")]
        if r.get("fabric"):
            parts.append("fabric: " + " · ".join(fabric.by_host(r["fabric"])))
        line = "; ".join(parts)
        if line not in seen:
            seen.append(line)
    return seen


def fabric_rows(spec: dict, run_list: list[dict]) -> dict:
    """The paper's cluster beside the fabric here: the cluster the spec's paper scale names (from
    config/clusters.yaml) and the newest calibration and fingerprints the used runs carry; and
    what the communication model expects of the paper's network comparisons (dlobd.results.expected)."""
    paper = calibrate.paper_fabric(((spec.get("scales") or {}).get("paper") or {}).get("cluster"))
    used = sorted((r for r in run_list if r.get("used")), key=lambda r: r.get("start") or "", reverse=True)
    record = next((r["calibration"] for r in used if r.get("calibration")), None)
    hosts = list(dict.fromkeys(line for r in used for line in fabric.by_host(r.get("fabric"))))
    return {"paper": paper,
            "here": {**calibrate.summary(record), "hosts": hosts or ["fingerprint not recorded in run.json"]},
            "expected": expected.expectations(spec, record)}


def _stack_version(run: dict, stack: str) -> str:
    """The stack a run ran with its version: 'bigdl 2.4.0'; a bare version takes the stack's name."""
    version = str((run.get("versions") or {}).get("stack") or "")
    if not version:
        return stack
    return version if version[0].isalpha() else f"{stack} {version}"


def what_ran(spec: dict, scale_data: dict, run_list: list[dict]) -> dict:
    """What ran at the scale: the model (the scale's fixed model or its matrix's, else the one it
    describes, else the paper's), the data and each stack with the version its used runs recorded
    (the stack axis' value, else the scale's stack); and the paper's model and stack where either
    differs."""
    fixed_model = (scale_data.get("fixed") or {}).get("model")
    models = (scale_data.get("matrix") or {}).get("model")
    model = fixed_model or ("; ".join(map(str, models)) if models else
                            scale_data.get("model") or spec.get("model"))
    scale_stack = scale_data.get("stack") or spec.get("stack")
    axis = spec.get("stack_axis")
    ok = [r for r in run_list if r.get("used") and r.get("status") == "ok"]
    stacks = list(dict.fromkeys(_stack_version(r, str((r.get("point") or {}).get(axis) or scale_stack))
                                for r in ok))
    differs = model != spec.get("model") or scale_stack != spec.get("stack")
    return {"ran": bool(ok), "model": model, "data": scale_data.get("dataset", spec.get("dataset")),
            "stack": ", ".join(stacks) or scale_stack,
            "paper": f"{spec.get('model')}, {spec.get('stack')}" if differs else None}


def hold_figures(files, source_dir, out_dir) -> str:
    """The report's copy of each drawn file, at its path under `source_dir`: a hard link where
    both are on one file system (no second copy of the bytes), else a copy. Says how many of each."""
    copied = 0
    files = list(map(Path, files))
    for file in files:
        target = Path(out_dir, file.relative_to(source_dir))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(file, target)
        except OSError:
            shutil.copy2(file, target)
            copied += 1
    return f"{len(files) - copied} figures hard-linked, {copied} copied into {out_dir}"


def scale_notes(scale_data: dict, run_list: list[dict]) -> list[str]:
    """The scale's notes, what its runs used that the paper does not state (the settings assumed,
    and those given instead on the command line), and its notes for the software profile of each
    profile its used runs ran (runs before the profile label ran the modern profile)."""
    used = [r.get("labels") or {} for r in run_list if r.get("used")]
    ran = {labels.get("profile") or "modern" for labels in used}
    own = scale_data.get("profile_notes") or {}
    given = {f"{name}={text}" for labels in used for key in ("assumed", "overridden")
             for name, text in (labels.get(key) or {}).items()}
    return [*(scale_data.get("notes") or []),
            *(f"run with {text}" for text in sorted(given)),
            *(f"on the {profile} profile's software: {note}" for profile in sorted(ran) for note in own.get(profile, []))]


def experiment_entries(specs, scales, figures_dir, results_dir, data_ids, runs_dir,
                       report_dir, pdfs: bool = False) -> list[dict]:
    out = []
    pages_dir = Path(report_dir, PAGES_DIR)
    for eid in sorted(specs, key=lambda e: (list(PAPERS).index(specs[e]["paper"])
                                            if specs[e]["paper"] in PAPERS else 99, natural_key(e))):
        spec = specs[eid]
        for scale in scales:
            did = data_ids.get(eid, eid)
            table = _read_csv(Path(results_dir, scale, f"{did}.csv"), RESULTS_COLUMNS)
            scale_data = (spec.get("scales") or {}).get(scale)
            reason = tidy.not_run_reason(spec, scale, scale_data, table, runs_dir)
            try:
                run_list = json.loads(Path(results_dir, scale, "runs", f"{did}.json").read_text())
            except (OSError, json.JSONDecodeError):
                run_list = []
            png = Path(figures_dir, scale, f"{eid}.png")
            pdf = Path(figures_dir, scale, f"{eid}.pdf")
            counts = {}
            for r in run_list:
                if r.get("used"):
                    counts[r["status"]] = counts.get(r["status"], 0) + 1
            data_labels = sorted({str(d) for d in table.get("data_label", pd.Series()).dropna().unique()})
            sampled = not table.empty and bool(tidy.is_monitor(table).any())
            out.append({
                "id": eid,
                "anchor": f"{eid}-{scale}",
                "scale": scale,
                "paper": spec["paper"],
                "paper_name": PAPERS.get(spec["paper"], spec["paper"]),
                "figure": spec["figure"],
                "title": spec["title"],
                "stack": spec.get("stack"),
                # those of the spec whose runs these are (data_from)
                "launchers": dspec.scale_stacks(specs.get(did, spec), scale),
                "ran": what_ran(spec, scale_data or {}, run_list),
                "data_labels": data_labels,
                "cluster": (scale_data or {}).get("cluster"),
                "clusters": sorted({r.get("cluster") for r in run_list if r.get("cluster")}),
                "data_from": spec.get("data_from"),
                "not_run": reason,
                "counts": counts,
                "page": os.path.relpath(page_path(report_dir, eid, scale), report_dir),
                "thumb": os.path.relpath(png, report_dir),
                "png": os.path.relpath(png, pages_dir),
                # the resource-use figure, with the experiment that owns the runs
                "utilisation_png": (os.path.relpath(Path(figures_dir, scale, "utilisation", f"{eid}.png"), pages_dir)
                                    if sampled and did == eid else None),
                "pdf": os.path.relpath(pdf, pages_dir) if pdfs else None,
                "runs": run_list,
                "notes": scale_notes(scale_data or {}, run_list),
                "axis_map": substitutions.axis_map(spec, scale),
                "substitutions": substitutions.substitutions(spec, scale,
                                                             substitutions.run_cores(run_list)),
                "paper_setting": substitutions.paper_setting(spec),
                "hardware": hardware(run_list),
                "fabric": fabric_rows(spec, run_list),
                "origin": sorted({r["run_id"].split("/")[0] for r in run_list if r.get("used")}),
                "commits": sorted({(r.get("git") or {}).get("commit") or "none"
                                   for r in run_list if r.get("used")}),
            })
    return out


def profile_points(profiles_csvs) -> dict[tuple[str, str], list[dict]]:
    """The points run on both profiles (rule profiles' tables, one per experiment), by (scale,
    experiment): each with its statuses, the software each side recorded, and its values side by
    side or why not."""
    tables = [t for t in map(_read_csv, profiles_csvs) if not t.empty]
    out = {}
    if not tables:
        return out
    table = pd.concat(tables, ignore_index=True)
    for (scale, experiment, point), rows in table.groupby(["scale", "experiment", "point"], sort=False):
        first = rows.iloc[0]
        out.setdefault((scale, experiment), []).append({
            "point": point, "modern_status": first["modern_status"], "paper_status": first["paper_status"],
            "modern_software": _clean(first["modern_software"]), "paper_software": _clean(first["paper_software"]),
            "not_compared": _clean(first["not_compared"]),
            "quantities": [{k: _clean(r[k]) for k in ("quantity", "modern", "paper", "ratio")}
                       for _, r in rows.iterrows() if _clean(r["quantity"])],
        })
    for found in out.values():
        found.sort(key=lambda p: natural_key(p["point"]))
    return out


def stale_runs(entry: dict, root: Path = ROOT) -> list[dict]:
    """The commits an experiment's runs were recorded at where what they ran has changed since:
    its spec, the specs of the experiments the runs are of (`runs_from`, `data_from`), as the
    runs' scale sees them (an edit of another scale's part changes nothing they ran), and the
    code of the launchers and parsers of the stacks the scale runs (`launchers`; code_view: not
    their docstrings or comments). Each {'commit', 'changed': the files, or None where git cannot
    tell}. Runs recorded before a change elsewhere (a figure, the docs) still measure what
    today's code runs."""
    sources = {f"experiments/{e}.yaml" for e in
               {entry["id"], *(Path(r["run_id"]).parts[2] for r in entry["runs"] if r.get("used"))}}
    sources.update(f"dlobd/stacks/{stack}.py" for stack in entry["launchers"])
    found = []
    for commit in entry["commits"]:
        changed = provenance.changed_since(commit, tuple(sorted(sources)), root)
        if changed is not None:
            changed = tuple(path for path in changed
                            if (_spec_changed(commit, path, entry["scale"], root) if path.startswith("experiments/")
                                else _code_changed(commit, path, root)))
        found.append({"commit": commit, "changed": changed})
    return [f for f in found if f["changed"] is None or f["changed"]]


DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)  # what may have a docstring


def code_view(text: str | None) -> str | None:
    """What a module runs: its syntax tree without docstrings (comments are not in it); None where
    there is no module or it does not parse."""
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, DOCUMENTED) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _code_changed(commit: str, path: str, root: Path) -> bool:
    """Whether a stack's module runs other code than at `commit`: an edit of its docstrings or
    comments alone changes nothing its runs ran."""
    now = root / path
    then_view = code_view(provenance.file_at(commit, path, root))
    return then_view is None or then_view != code_view(now.read_text() if now.is_file() else None)


def _spec_changed(commit: str, path: str, scale: str, root: Path) -> bool:
    """Whether a spec file differs, as `scale`'s runs see it, between `commit` and the checkout."""
    then = provenance.file_at(commit, path, root)
    now = root / path
    return (dspec.scale_view(yaml.safe_load(then) if then is not None else None, scale)
            != dspec.scale_view(yaml.safe_load(now.read_text()) if now.is_file() else None, scale))


def write_report(out_html, specs: dict, scales, figures_dir, results_dir, verdict_ids,
                 data_ids: dict, runs_dir, profiles: tuple | None = None, pdfs: bool = False) -> Path:
    """The index and a page per experiment; `profiles` (the profiles rule's tables, the paper
    profile's runs directory) adds each experiment's points run on the papers' software; `pdfs`:
    the figures' PDFs are drawn with them, so their pages link them (a PDF left from an earlier
    build may be of other runs). The figures are linked, not read: the pipeline draws them beside
    the report, and a page links its figure whether it is there yet or not."""
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    verdicts = verdict_rows(results_dir, scales, verdict_ids, specs)
    entries = experiment_entries(specs, scales, figures_dir, results_dir, data_ids, runs_dir,
                                 out_html.parent, pdfs)
    counts = {v: sum(1 for r in verdicts if r.get("verdict") == v) for v in VERDICT_ORDER}
    by_paper = {p: {v: sum(1 for r in verdicts if r["paper"] == p and r["verdict"] == v)
                    for v in VERDICT_ORDER} for p in PAPERS}
    git = provenance.git_state()
    by_point = profile_points(profiles[0]) if profiles else {}
    for e in entries:
        e["profiles"] = by_point.get((e["scale"], data_ids.get(e["id"], e["id"])), [])
        e["stale"] = stale_runs(e)
        e["claims"] = [r for r in verdicts if r["experiment"] == e["id"] and r["scale"] == e["scale"]]
    all_runs = [r for e in entries for r in e["runs"] if r.get("used")]
    env = _env()
    common = {"scales": list(scales), "runs_dir": str(runs_dir),
              "paper_runs_dir": str(profiles[1]) if profiles else None}
    experiment_page = env.get_template("experiment.html.j2")
    for e in entries:
        page = page_path(out_html.parent, e["id"], e["scale"])
        page.parent.mkdir(exist_ok=True)
        page.write_text(experiment_page.render(e=e, model=expected.MODEL, **common), encoding="utf-8")
    html = env.get_template("index.html.j2").render(
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        git=git,
        papers=PAPERS,
        verdict_names=VERDICT_ORDER,
        verdict_counts=counts,
        by_paper=by_paper,
        hardware=hardware([{**r, "hosts": r.get("hosts")} for r in all_runs]),
        clusters=sorted({r.get("cluster") or "?" for r in all_runs}),
        paths={stack: sum(e["counts"].get("ok", 0) for e in entries if e["stack"] == stack)
               for stack in sorted({e["stack"] for e in entries if e["counts"].get("ok")})},
        stale=[e["id"] for e in entries if e["stale"]],
        verdicts=verdicts,
        known_ids=set(specs),
        experiments=entries,
        n_run=sum(1 for e in entries if not e["not_run"]),
        # counted once, with the experiment that owns the runs (not the charts drawn from them)
        profile_experiments=[e for e in entries if e["profiles"] and data_ids.get(e["id"], e["id"]) == e["id"]],
        **common,
    )
    out_html.write_text(html, encoding="utf-8")
    return out_html
