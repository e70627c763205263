"""Experiment specs (dlobd/spec/, docs/experiment-spec.md): the 55 real specs validate,
every catalog claim is placed once, broken copies fail with the precise message, and matrix
expansion gives the point ids of docs/runs-and-results.md."""

import argparse
import collections
import difflib
import itertools
import random
import shutil

import pandas as pd
import pytest
import yaml

from dlobd import ROOT, spec
from dlobd.results import claims, verdicts
from dlobd.spec import claimlang, metrics, validation

@pytest.fixture(scope="module")
def real_result():
    return validation.validate(ROOT)


# ---------------------------------------------------------------- the real specs


def test_all_specs_validate(real_result):
    errors, summary = real_result
    assert errors == []
    assert summary["specs"] == 55
    assert summary["claims"] == 172


def test_all_specs_match_the_catalog(catalog):
    errors, _ = validation.validate(ROOT, catalog=catalog)
    assert errors == []


def test_spec_ids_are_the_catalog_ids(catalog):
    exps, _ = catalog
    assert set(spec.load_all(ROOT)) == set(exps)


def test_every_catalog_claim_placed_exactly_once(catalog):
    _, cat_claims = catalog
    placed = collections.Counter()
    for s in spec.load_all(ROOT).values():
        placed.update(c["id"] for c in s.claims)
    for data in spec.claims_files(ROOT).values():
        placed.update(c["id"] for c in data["claims"])
    assert set(placed) == set(cat_claims)
    assert [cid for cid, n in placed.items() if n != 1] == []
    # claims tied to an experiment sit in that experiment's spec
    specs = spec.load_all(ROOT)
    for cid, cat in cat_claims.items():
        if cat["experiment_id"]:
            assert cid in {c["id"] for c in specs[cat["experiment_id"]].claims}, cid


def test_claim_texts_are_own_paraphrases(catalog):
    _, cat_claims = catalog
    claims = [c for s in spec.load_all(ROOT).values() for c in s.claims]
    claims += [c for data in spec.claims_files(ROOT).values() for c in data["claims"]]
    close = [c["id"] for c in claims
             if difflib.SequenceMatcher(None, c["text"].lower(), cat_claims[c["id"]]["paraphrase"].lower()).ratio() > 0.8]
    assert close == []


def test_percent_claims_carry_both_readings():
    # a check written with reduction() and a check_alt with speedup_gain() go together
    for s in spec.load_all(ROOT).values():
        for c in s.claims:
            if "check_alt" in c:
                assert "reduction(" in c["check"] and "speedup_gain(" in c["check_alt"], c["id"]


def test_cli_ok_line(capsys):
    parser = argparse.ArgumentParser()
    validation.register(parser)
    assert validation.run(parser.parse_args([])) == 0
    assert capsys.readouterr().out.strip() == "ok: 55 specs, 3 claims files, 172 claims"


# ---------------------------------------------------------------- broken copies


@pytest.fixture
def tree(tmp_path):
    """A writable copy of experiments/ and claims/; edit(id, fn) changes one spec."""
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments")
    shutil.copytree(ROOT / "claims", tmp_path / "claims")

    class Tree:
        root = tmp_path

        @staticmethod
        def path(spec_id):
            return tmp_path / "experiments" / f"{spec_id}.yaml"

        def edit(self, spec_id, change):
            path = self.path(spec_id)
            data = yaml.safe_load(path.read_text())
            change(data)
            path.write_text(yaml.safe_dump(data, sort_keys=False))
            return path

        def errors(self, *files, catalog=None):
            errors, _ = validation.validate(tmp_path, [str(self.path(f)) for f in files] or None, catalog=catalog)
            return errors

    return Tree()


def _claim(data, cid):
    return next(c for c in data["claims"] if c["id"] == cid)


def test_bad_field_type(tree):
    tree.edit("dlobd-fig7b", lambda d: d["plot"].update(log_y="yes"))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: plot.log_y: 'yes' is not of type 'boolean'"]


def test_missing_required_field(tree):
    tree.edit("dlobd-fig9", lambda d: d["metric"].pop("unit"))
    assert tree.errors("dlobd-fig9") == [
        "experiments/dlobd-fig9.yaml: metric: 'unit' is a required property"]


def test_unknown_axis_in_selector(tree):
    def change(d):
        _claim(d, "dlobd-c01")["check"] = "approx(y[net=ipoib, cores=384] / y[network=rdma, cores=384], 2.7, rtol=0.03)"
    tree.edit("dlobd-fig7b", change)
    errors = tree.errors("dlobd-fig7b")
    assert "experiments/dlobd-fig7b.yaml: claims[0].check: selector names unknown axis 'net' of dlobd-fig7b" in errors


def test_axis_value_not_in_any_matrix(tree):
    def change(d):
        _claim(d, "dlobd-c02")["check"] = "approx(y[network=rdma, cores=999], 870, rtol=0.03)"
    tree.edit("dlobd-fig7b", change)
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: claims[1].check: cores=999: value not in any matrix of dlobd-fig7b"]


def test_claim_naming_a_missing_series(tree):
    def change(d):
        _claim(d, "dlobd-c45")["check"] = "approx(y[network=ipoib, epoch=18] / y[network=roce, epoch=18], 2.6, rtol=0.03)"
    tree.edit("dlobd-fig7a", change)
    assert tree.errors("dlobd-fig7a") == [
        "experiments/dlobd-fig7a.yaml: claims[1].check: network=roce: value not in any matrix of dlobd-fig7a"]


def test_claim_on_another_experiment_checked_against_that_experiment(tree):
    def change(d):
        _claim(d, "dlobd-c27")["check"] = "y@dlobd-fig4b[device=tpu, nodes=1] < 1"
    tree.edit("dlobd-fig4a", change)
    assert tree.errors("dlobd-fig4a") == [
        "experiments/dlobd-fig4a.yaml: claims[9].check: device=tpu: value not in any matrix of dlobd-fig4b"]


def test_unknown_metric(tree):
    tree.edit("dlobd-fig8a", lambda d: d["metric"].update(name="net_mbps"))
    assert tree.errors("dlobd-fig8a") == [
        "experiments/dlobd-fig8a.yaml: metric.name: unknown metric 'net_mbps' (not in docs/metrics.md)"]


def test_dimension_must_belong_to_the_metric(tree):
    def change(d):
        d["dimensions"]["iteration_phase"] = {"description": "not a dimension of time_breakdown_s"}
        _claim(d, "dlobd-c55")["check"] = "time_breakdown_s[framework=tensorflow, network=ipoib, phase=training, host=a] > 0"
        _claim(d, "dlobd-c55")["check_alt"] = "loss[framework=tensorflow, network=ipoib, phase=training] > 0"
    tree.edit("dlobd-fig9", change)
    assert tree.errors("dlobd-fig9") == [
        "experiments/dlobd-fig9.yaml: dimensions.iteration_phase: not a dimension of the spec's metrics "
        "(time_breakdown_s) in docs/metrics.md",
        "experiments/dlobd-fig9.yaml: claims[3].check: selector names unknown axis 'host' of dlobd-fig9",
        "experiments/dlobd-fig9.yaml: claims[3].check_alt: 'phase' is not a dimension of metric 'loss' (docs/metrics.md)"]


def test_plot_series_not_an_axis(tree):
    tree.edit("dlobd-fig11", lambda d: d["plot"].update(series=["channel"]))
    assert tree.errors("dlobd-fig11") == [
        "experiments/dlobd-fig11.yaml: plot.series[0]: 'channel' is not a declared axis or dimension"]


def test_unknown_same_data_as_target(tree):
    tree.edit("dlobd-fig7b", lambda d: d.update(same_data_as=["slides-bigdl-scalability", "slides-nonexistent"]))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: same_data_as[1]: names unknown spec 'slides-nonexistent'"]


def test_unknown_data_from_target(tree):
    tree.edit("slides-bigdl-epoch", lambda d: d.update(data_from="dlobd-fig77"))
    assert tree.errors("slides-bigdl-epoch") == [
        "experiments/slides-bigdl-epoch.yaml: data_from: names unknown spec 'dlobd-fig77'"]


def test_runs_from_maps_every_point_to_an_equal_point():
    specs = spec.load_all()
    shared = specs["slides-resnet50"].shared_points("local")
    # dlobd-fig11 fixes batch 8 where the slide chart has a batch axis of one value
    assert shared == {pid: pid.removeprefix("batch-8_") for pid, _ in specs["slides-resnet50"].points("local")}
    assert set(shared.values()) == {pid for pid, _ in specs["dlobd-fig11"].points("local")}
    assert specs["slides-inception3-8nodes"].shared_points("local") == {
        pid: pid for pid, _ in specs["slides-inception3-4nodes"].points("local")}
    assert specs["dlobd-fig11"].runs_from("local") is None and specs["dlobd-fig11"].shared_points("local") == {}


def test_runs_from_with_another_setting_names_the_point_and_the_difference(tree):
    def longer(d):
        d["scales"]["local"]["fixed"]["steps"] = 9
    tree.edit("slides-inception3-8nodes", longer)
    assert tree.errors("slides-inception3-8nodes") == [
        "experiments/slides-inception3-8nodes.yaml: scales.local.runs_from: point batch-4_network-loopback_repeat-1 "
        "has no point with the same launch settings in slides-inception3-4nodes at scale local: steps '9' there '6'"]


def test_runs_from_with_a_point_the_other_lacks(tree):
    def more_repeats(d):
        d["scales"]["local"]["repeats"] = 4
    tree.edit("slides-inception3-8nodes", more_repeats)
    assert tree.errors("slides-inception3-8nodes") == [
        "experiments/slides-inception3-8nodes.yaml: scales.local.runs_from: point batch-4_network-loopback_repeat-4 "
        "has no point with the same launch settings in slides-inception3-4nodes at scale local: repeat '4' there '1'"]


@pytest.mark.parametrize("target, reason", [
    ("dlobd-fig77", "names unknown spec 'dlobd-fig77'"),
    ("slides-inception3-8nodes", "names itself"),
    ("slides-bigdl-epoch", "slides-bigdl-epoch takes its data from dlobd-fig7a: name that spec"),
    ("dlobd-fig4c", "point batch-4_network-loopback_repeat-1 has no point with the same launch settings in "
                    "dlobd-fig4c at scale local: dlobd-fig4c has no points at local"),
])
def test_runs_from_target_must_be_a_spec_with_its_own_runs(tree, target, reason):
    tree.edit("slides-inception3-8nodes", lambda d: d["scales"]["local"].update(runs_from=target))
    assert tree.errors("slides-inception3-8nodes") == [
        f"experiments/slides-inception3-8nodes.yaml: scales.local.runs_from: {reason}"]


def test_id_differs_from_file_name(tree):
    tree.edit("rdmatf-fig6", lambda d: d.update(id="rdmatf-fig7"))
    errors = tree.errors("rdmatf-fig6")
    assert "experiments/rdmatf-fig6.yaml: id: 'rdmatf-fig7' differs from the file name 'rdmatf-fig6'" in errors


def test_id_not_in_the_catalog(tree, catalog):
    tree.edit("rdmatf-fig6", lambda d: d.update(id="rdmatf-fig7"))
    errors = tree.errors("rdmatf-fig6", catalog=catalog)
    assert "experiments/rdmatf-fig6.yaml: id: 'rdmatf-fig7' is not an experiment of the catalog" in errors


def test_check_with_syntax_error(tree):
    def change(d):
        _claim(d, "rdmatf-c08")["check"] = "all(n in nodes: y[network=rdma, nodes=n] >= 0.8 * n"
    tree.edit("rdmatf-fig6", change)
    (error,) = tree.errors("rdmatf-fig6")
    assert error.startswith("experiments/rdmatf-fig6.yaml: claims[0].check: syntax error: line 1, column ")


def test_ambiguous_reference(tree):
    def change(d):
        _claim(d, "dlobd-c01")["check"] = "approx(y[network=ipoib] / y[network=rdma, cores=384], 2.7, rtol=0.03)"
    tree.edit("dlobd-fig7b", change)
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: claims[0].check: y[network=ipoib]: ambiguous in the paper matrix of dlobd-fig7b (axes left open: cores)",
        "experiments/dlobd-fig7b.yaml: claims[0].check: y[network=ipoib]: ambiguous in the local matrix of dlobd-fig7b (axes left open: cores)"]


def test_claim_needs_check_or_reason(tree):
    tree.edit("dlobd-fig8b", lambda d: _claim(d, "dlobd-c51").pop("check"))
    (error,) = tree.errors("dlobd-fig8b")
    assert error.startswith("experiments/dlobd-fig8b.yaml: claims[2]: a claim needs exactly one of `check` or `not_checkable`")


def test_not_runnable_needs_reason(tree):
    tree.edit("dlobd-fig4c", lambda d: d["scales"]["local"].pop("reason"))
    assert tree.errors("dlobd-fig4c") == [
        "experiments/dlobd-fig4c.yaml: scales.local: 'reason' is a required property"]


def test_matrix_and_paper_values_cross_checks(tree):
    def change(d):
        d["scales"]["local"]["matrix"]["transport"] = ["loopback"]
        d["scales"]["local"]["axis_map"]["cores"][384] = 4
        d["scales"]["paper"]["paper_values"][0]["at"] = {"network": "ipoib"}
    tree.edit("dlobd-fig7b", change)
    assert sorted(tree.errors("dlobd-fig7b")) == sorted([
        "experiments/dlobd-fig7b.yaml: scales.local.matrix.transport: unknown axis 'transport' (declared: cores, network)",
        "experiments/dlobd-fig7b.yaml: scales.local.axis_map.cores.384: maps to '4', which is not in the local matrix of 'cores'",
        "experiments/dlobd-fig7b.yaml: scales.paper.paper_values[0].at: does not name a point: axes left open: cores"])


def test_every_error_reported_at_once(tree):
    tree.edit("dlobd-fig7b", lambda d: d["plot"].update(log_y="yes"))
    tree.edit("tfgrpc-fig10", lambda d: d["plot"].update(x="payload"))
    errors = tree.errors()
    assert "experiments/dlobd-fig7b.yaml: plot.log_y: 'yes' is not of type 'boolean'" in errors
    assert ("experiments/tfgrpc-fig10.yaml: plot.x: 'payload' is not a declared axis, dimension, step, epoch or wall_clock_s"
            in errors)
    assert len(errors) == 2


def test_claim_missing_and_placed_twice(tree, catalog):
    def drop(d):
        d["claims"] = [c for c in d["claims"] if c["id"] != "dlobd-c03"]

    tree.edit("dlobd-fig7b", drop)
    tree.edit("slides-bigdl-scalability", lambda d: d["claims"].append(
        {"id": "dlobd-c60", "kind": "trend", "text": "duplicate", "not_checkable": "test"}))
    assert ("experiments/slides-bigdl-scalability.yaml: claims[4].id: claim dlobd-c60 is placed twice "
            "(also in dlobd-fig11)") in tree.errors()
    errors = tree.errors(catalog=catalog)
    assert "experiments: claims: catalog claim dlobd-c03 is placed nowhere" in errors
    assert ("experiments/slides-bigdl-scalability.yaml: claims[4].id: claim dlobd-c60 is placed twice "
            "(also in dlobd-fig11)") in errors
    assert ("experiments/slides-bigdl-scalability.yaml: claims[4].id: claim dlobd-c60 belongs to experiment "
            "dlobd-fig11 (catalog)") in errors


def test_claim_kind_must_match_catalog(tree, catalog):
    tree.edit("dlobd-fig5b", lambda d: _claim(d, "dlobd-c35").update(kind="trend"))
    assert tree.errors("dlobd-fig5b") == []
    assert tree.errors("dlobd-fig5b", catalog=catalog) == [
        "experiments/dlobd-fig5b.yaml: claims[1].kind: 'trend' differs from the catalog's kind 'limitation'"]


def test_cli_reports_errors_and_exit_status(tree, capsys):
    tree.edit("dlobd-fig7b", lambda d: d["plot"].update(log_y="yes"))
    parser = argparse.ArgumentParser()
    validation.register(parser)
    assert validation.run(parser.parse_args(["--root", str(tree.root)])) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == ["experiments/dlobd-fig7b.yaml: plot.log_y: 'yes' is not of type 'boolean'", "1 error(s)"]


# ---------------------------------------------------------------- points


def test_point_id_rule():
    assert spec.point_id({"network": "loopback", "cores": 2}) == "cores-2_network-loopback"
    assert spec.point_id({"network": "grpc+rdma", "payload_bytes": 2048}) == "network-grpc+rdma_payload-bytes-2048"
    assert spec.point_id({"cores": 384.0, "model": "a b/c"}) == "cores-384_model-a-b-c"
    assert spec.point_id({}) == "default"


def test_expand_matrix_with_exclude():
    points = spec.expand({"matrix": {"b": [1, 2], "a": ["x", "y"]}, "exclude": [{"a": "y", "b": 2}]})
    assert points == [("a-x_b-1", {"a": "x", "b": 1}), ("a-x_b-2", {"a": "x", "b": 2}),
                      ("a-y_b-1", {"a": "y", "b": 1})]
    assert spec.expand({"runnable": False, "reason": "r"}) == []


def test_points_of_real_specs():
    specs = spec.load_all(ROOT)
    fig5b = specs["dlobd-fig5b"]
    paper = dict(fig5b.points("paper"))
    assert len(paper) == 2 * 2 * 4 - 2  # mnist at 16 GPUs is not part of the figure
    assert "gpus-16_network-ipoib_workload-cifar10" in paper
    assert "gpus-16_network-ipoib_workload-mnist" not in paper
    assert [pid for pid, _ in fig5b.points("local")] == [
        "gpus-1_network-loopback_workload-cifar10", "gpus-1_network-loopback_workload-mnist",
        "gpus-2_network-loopback_workload-cifar10", "gpus-2_network-loopback_workload-mnist"]
    # a slide chart repeating a paper figure has the paper figure's points
    assert specs["slides-bigdl-scalability"].points("local") == specs["dlobd-fig7b"].points("local")
    assert specs["dlobd-fig11"].stack("paper") == "tf_cnn_benchmarks"
    assert specs["dlobd-fig11"].stack("local") == "tensorflow"
    assert specs["dlobd-fig4c"].points("local") == []
    with pytest.raises(KeyError, match="no scale 'functional'"):
        specs["dlobd-fig4c"].scale("functional")


def test_local_matrices_fit_this_machine():
    for s in spec.load_all(ROOT).values():
        if s.data.get("data_from"):
            continue
        local = s.scale("local")
        if not local["runnable"]:
            assert not local.get("matrix"), s.id
            continue
        nets = set((local["matrix"].get("network") or ["loopback"]))
        # any other network (the RDMA paths) is in the matrix only to be recorded `not
        # runnable` with its reason: a point_needs entry must name what it takes
        needed = {str(n["at"]["network"]): set(n["needs"]) for n in local.get("point_needs", [])
                  if "network" in n["at"]}
        for net in nets - {"loopback", "eth-1g-emulated", "eth-10g-emulated"}:
            assert needed.get(net, set()) & {"infiniband", "rdma"}, (s.id, net)
        for axis in ("nodes", "gpus", "workers", "cores"):
            assert max(local["matrix"].get(axis, [1])) <= 3, (s.id, axis)
        assert local["time_limit_s"] <= 1800, s.id


# ---------------------------------------------------------------- the paper's own numbers


def _paper_table(s: spec.Spec) -> "pd.DataFrame":
    """Result rows made of the numbers the paper states for the spec's points (paper_values),
    tagged as such: the checks of the spec then judge the paper by its own numbers."""
    rows = []
    primary = s.data["metric"]["name"]
    axes = s.axes()
    for pv in s.scale("paper").get("paper_values", []):
        if pv.get("as") or pv.get("up_to") or pv.get("bound"):
            continue    # relations, maxima and bounds are not values at a point
        point = {k: v for k, v in pv["at"].items() if k in axes}
        rows.append({**pv["at"], "experiment": s.id, "metric": pv.get("metric", primary), "value": pv["value"],
                     "step": None, "epoch": None, "run_id": f"paper/{spec.point_id(point)}", "status": "ok"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("spec_id, expected", [
    ("dlobd-fig7b", {"dlobd-c01": "holds", "dlobd-c02": "holds", "dlobd-c03": "not run"}),
    ("dlobd-fig6c", {"dlobd-c42": "holds", "dlobd-c43": "differs"}),  # 1 - 2132/4337 = 0.508, not 0.48
    ("rdmatf-fig1", {"rdmatf-c05": "holds", "rdmatf-c06": "not run", "rdmatf-c07": "not run"}),
    ("scaffe-table2", {"scaffe-c19": "holds", "scaffe-c20": "differs",  # 40.6/28.6 = 1.42, not 1.47
                       "scaffe-c21": "holds", "scaffe-c22": "holds"}),
])
def test_stated_numbers_through_the_checks(spec_id, expected):
    s = spec.load_all(ROOT)[spec_id]
    verdicts = claims.evaluate_spec(s.data, _paper_table(s), "paper")
    assert {v.claim_id: v.verdict for v in verdicts} == expected


def test_slide_chart_judged_on_its_paper_figure():
    specs = spec.load_all(ROOT)
    table = _paper_table(specs["dlobd-fig7b"])
    verdicts = claims.evaluate_spec(specs["slides-bigdl-scalability"].data, None, "paper",
                                    other_results=lambda exp: table if exp == "dlobd-fig7b" else pd.DataFrame())
    assert {v.claim_id: v.verdict for v in verdicts} == {
        "slides-c19": "holds", "slides-c23": "holds", "slides-c24": "holds", "slides-c25": "not run"}


def _full_table(s: spec.Spec, scale: str, rng: random.Random, specs: dict) -> pd.DataFrame:
    """Constructed test input (not measurements): every point of the scale gets 18 rows
    (epoch/step/wall_clock_s 1..18) of every metric its claims, or other specs' claims about
    it (`metric@<id>`), read, over every value of the spec's dimensions, with random values."""
    used = {s.data["metric"]["name"], *([s.data["plot"]["y2"]] if "y2" in s.data["plot"] else [])}
    for c in (c for other in specs.values() for c in other.claims):
        for key in ("check", "check_alt"):
            if key in c:
                used |= {sel.metric for sel in claimlang.parse_check(c[key]).selections()
                         if sel.metric != "y" and (sel.experiment == s.id
                                                   or (sel.experiment is None and c in s.claims))}
    dims = s.dimensions()
    rows = []
    for pid, point in s.points(scale):
        for name in used:
            metric_dims = [d for d in dims if d in metrics.get(name).dims]
            for combo in itertools.product(*(dims[d].get("values") or [1024, 16777216] for d in metric_dims)):
                for t in range(1, 19):
                    rows.append({**point, **dict(zip(metric_dims, combo)), "metric": name,
                                 "value": rng.uniform(0.5, 1.0) * (t if name == "wall_clock_s" else 1),
                                 "wall_clock_s": 10.0 * t, "epoch": t, "step": t,
                                 "run_id": f"test/{pid}", "status": "ok"})
    return pd.DataFrame(rows)


def test_every_check_evaluates_over_the_paper_matrix():
    """Every check reads only points of the paper matrix (and evaluates without error), except
    the claims that need the local-only flat reduce variants and cost-model runs."""
    rng = random.Random(7)
    specs = spec.load_all(ROOT)
    tables = {}

    def table(exp):
        if exp not in tables:
            tables[exp] = _full_table(specs[exp].source_spec, "paper", rng, specs)
        return tables[exp]

    not_run = {}
    for sid, s in specs.items():
        own = None if s.data.get("data_from") else table(sid)
        for v in claims.evaluate_spec(s.data, own, "paper", other_results=table):
            assert v.verdict in verdicts.VERDICTS, (v.claim_id, v.reason)
            if v.verdict == "not run":
                not_run[v.claim_id] = v.reason
    assert set(not_run) == {"scaffe-c26", "scaffe-c29"}, not_run


def test_same_data_links_follow_the_catalog(catalog):
    exps, _ = catalog
    specs = spec.load_all(ROOT)
    for eid, cat in exps.items():
        data = specs[eid].data
        if eid.startswith("slides-") and cat.get("same_data_as"):
            assert data.get("data_from") == cat["same_data_as"][0], eid
        elif cat.get("same_data_as"):
            assert data.get("same_data_as") == cat["same_data_as"], eid
        else:
            assert "data_from" not in data and "same_data_as" not in data, eid


def test_phase_values_come_from_the_vocabulary(tree):
    tree.edit("dlobd-fig9", lambda d: d["dimensions"]["phase"]["values"].append("hdfs_access"))
    assert tree.errors("dlobd-fig9") == [
        "experiments/dlobd-fig9.yaml: dimensions.phase.values: 'hdfs_access' is not a phase of docs/metrics.md"]


def test_unreadable_file_is_one_error(tree):
    with tree.path("rdmatf-fig6").open("a") as f:
        f.write("\n  bad: [\n")
    errors = tree.errors()
    assert len(errors) == 1
    assert errors[0].startswith("experiments/rdmatf-fig6.yaml: (file): not valid YAML: ")


def test_slide_copy_has_no_matrix_of_its_own(tree):
    tree.edit("slides-bigdl-epoch", lambda d: d.update(axes={"network": {"description": "duplicate"}}))
    assert tree.errors("slides-bigdl-epoch") == [
        "experiments/slides-bigdl-epoch.yaml: (top): a spec with data_from takes its axes and scales from "
        "dlobd-fig7a: remove axes"]


def test_repeats_expand_every_point_that_many_times():
    scale = {"matrix": {"network": ["loopback", "rdma"]}, "exclude": [{"network": "rdma"}], "repeats": 3}
    assert spec.expand(scale) == [(f"network-loopback_repeat-{r}", {"network": "loopback", "repeat": r})
                                  for r in (1, 2, 3)]
    assert spec.expand({**scale, "repeats": 1}) == [("network-loopback", {"network": "loopback"})]


# ---------------------------------------------------------------- assumed settings


def test_the_loader_fills_in_the_assumed_values_and_keeps_the_paper_s_words():
    fig6c = spec.load_all(ROOT)["dlobd-fig6c"]
    # the cores are assumed within the cluster: the launcher sizes them, so the words stay
    assert fig6c.scale("paper")["fixed"] == {"target_accuracy": 0.7, "device": "cpu-mkl", "executor_cores": 24,
                                             "cores": "not stated for this panel", "batch": 768, "epochs": 18}
    assert spec.assumed(fig6c.data["scales"]["paper"])["cores"] == 192
    assert fig6c.scale("local")["fixed"]["cores"] == 2  # a scale without `assumed` as it is
    # a count assumed within the cluster is the launcher's to size: the plan sees none
    assert "gpus" not in spec.load_all(ROOT)["scaffe-table2"].scale("paper")["fixed"]


def test_settings_give_stated_assumed_and_overridden_values_with_their_labels():
    data = spec.load_all(ROOT)["dlobd-fig7b"].data
    fixed, labels = spec.settings(data, "paper")
    assert (fixed["epochs"], fixed["batch"]) == (18, 768)  # stated as it is, assumed in place of the words
    assert labels == {"assumed": {"batch": "768, assumed, not stated by the paper (Fig. 7(a): the same "
                                           "cluster, model and data at 192 cores)"}}
    fixed, labels = spec.settings(data, "paper", {"batch": 384}, "ASSUME")
    assert fixed["batch"] == 384
    assert labels == {"overridden": {"batch": "384, set on ASSUME in place of the assumed 768"}}
    with pytest.raises(spec.SettingError, match=r"^ASSUME: epochs=9: dlobd-fig7b at scale paper has no assumed "
                       r"setting 'epochs' \(scales.paper.assumed of experiments/dlobd-fig7b.yaml\); it assumes batch$"):
        spec.settings(data, "paper", {"epochs": 9}, "ASSUME")
    with pytest.raises(spec.SettingError, match="it assumes nothing: its paper states every setting it runs with"):
        spec.settings(data, "local", {"batch": 9}, "ASSUME")


def test_overrides_parse_as_name_value_words():
    assert spec.parse_overrides("cores=96 batch=384,device=gpu", "ASSUME") == {
        "cores": 96, "batch": 384, "device": "gpu"}
    with pytest.raises(spec.SettingError, match=r"^ASSUME: 'cores' is not name=value \(e.g. cores=96\)$"):
        spec.parse_overrides("cores", "ASSUME")


def test_assumed_settings_say_what_a_scale_assumes_and_why():
    specs = spec.load_all(ROOT)
    assert spec.assumed_settings(specs["dlobd-fig7b"], "paper") == [
        "batch=768 assumed (Fig. 7(a): the same cluster, model and data at 192 cores)"]
    assert spec.assumed_settings(specs["slides-bigdl-scalability"], "paper") == \
        spec.assumed_settings(specs["dlobd-fig7b"], "paper")  # a slide chart of the same data
    assert spec.assumed_settings(specs["scaffe-fig13"].data, "paper")[1].startswith("gpus=at most 16 assumed (Fig. 8")
    assert spec.assumed_settings(specs["dlobd-fig7b"], "local") == []


def test_an_assumed_value_stands_in_only_for_what_the_paper_leaves_unstated(tree):
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(
        assumed={"epochs": 9, "cores": 96, "why": "x", "within_cluster": ["nodes"]}))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: scales.paper.assumed.epochs: fixed.epochs states '18': an assumed value "
        "stands in only where fixed says 'not stated' or is silent",
        "experiments/dlobd-fig7b.yaml: scales.paper.assumed.cores: 'cores' is a matrix axis: the paper states its values",
        "experiments/dlobd-fig7b.yaml: scales.paper.assumed.within_cluster: 'nodes' is not an assumed setting"]
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(assumed={"batch": 768}))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: scales.paper.assumed: 'why' is a required property"]


def test_a_rehearsal_cuts_only_the_work_and_only_downward(tree):
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(
        rehearsal={"epochs": 20, "executor_cores": 1, "cores": 2, "train_images": 1536, "why": "x"}))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: scales.paper.rehearsal.epochs: 20 is more than the scale's 18: "
        "a rehearsal cuts the work",
        "experiments/dlobd-fig7b.yaml: scales.paper.rehearsal.executor_cores: 'executor_cores' does not size the "
        f"work (a rehearsal cuts only {', '.join(spec.WORK_SETTINGS)}): the layout stays the scale's",
        "experiments/dlobd-fig7b.yaml: scales.paper.rehearsal.cores: 'cores' does not size the work (a rehearsal "
        f"cuts only {', '.join(spec.WORK_SETTINGS)}): the layout stays the scale's"]
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(rehearsal={"epochs": 1}))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: scales.paper.rehearsal: 'why' is a required property"]
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(rehearsal={"epochs": 1, "why": "one epoch"}))
    assert tree.errors("dlobd-fig7b") == []
    # a data set only as the synthetic twin of the scale's (cifar10 -> cifar10-synthetic)
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(rehearsal={"dataset": "mnist", "why": "x"}))
    assert tree.errors("dlobd-fig7b") == [
        "experiments/dlobd-fig7b.yaml: scales.paper.rehearsal.dataset: 'mnist' is not the synthetic twin of the "
        "scale's data set 'cifar10' (<id>-synthetic, in its format): a rehearsal changes no other data"]
    tree.edit("dlobd-fig7b", lambda d: d["scales"]["paper"].update(rehearsal={"dataset": "cifar10-synthetic", "why": "x"}))
    assert tree.errors("dlobd-fig7b") == []


def test_a_scale_runs_the_stacks_of_its_own_points():
    # what flags a scale's recorded runs stale is the launchers that scale runs, not the spec's
    specs = spec.load_all(ROOT)
    assert spec.scale_stacks(specs["tfgrpc-fig4"].data, "local") == ["grpcbench"]
    assert spec.scale_stacks(specs["tfgrpc-fig4"].data, "paper") == ["tf_cnn_benchmarks"]
    assert spec.scale_stacks(specs["dlobd-fig9"].data, "local") == ["tensorflow", "tensorflowonspark"]
    assert spec.scale_stacks(specs["dlobd-fig7b"].data, "local") == ["bigdl"]
    for s in specs.values():
        for scale in s.data.get("scales", {}):
            assert {s.point_stack(scale, p) for _, p in s.points(scale)} <= set(spec.scale_stacks(s.data, scale)), s.id
