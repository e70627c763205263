"""The claim language (dlobd/results/claims.py, docs/claim-language.md): parsing, errors, verdicts.

The result tables below are constructed test inputs for the evaluator, built in each test
with round numbers chosen to exercise one rule; they are not measurements.
"""

import ast
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dlobd.results import claims
from dlobd.results.verdicts import verdicts_frame
from dlobd.results.claims import evaluate_claim
from dlobd.spec import claimlang
from dlobd.spec.claimlang import ClaimSyntaxError, Var, parse_check

# Checks of the papers' claim catalog (claims.yaml), translated into the claim language.
CATALOG_CHECKS = {
    "dlobd-c01": "approx(y[network=ipoib, cores=384] / y[network=rdma, cores=384], 2.7, rtol=0.03)",
    "dlobd-c02": "approx(y[network=rdma, cores=384], 870, rtol=0.03) and "
                 "approx(y[network=ipoib, cores=384], 2372, rtol=0.01)",
    "dlobd-c03": "consecutive(c1, c2 in cores: y[network=rdma, cores=c1] / y[network=rdma, cores=c2]"
                 " >= y[network=ipoib, cores=c1] / y[network=ipoib, cores=c2])"
                 " and all(c in cores: y[network=rdma, cores=c] < y[network=ipoib, cores=c])",
    "dlobd-c04": "all(n in {8, 16}: y[device=cpu-mkl, nodes=n] < y[device=gpu, nodes=n] and "
                 "y[device=cpu-mkl, nodes=n] < y[device=gpu-cudnn, nodes=n])",
    "dlobd-c06": "approx(reduction(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]), 0.63, atol=0.01)",
    "dlobd-c06-alt": "approx(speedup_gain(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]), 0.63, atol=0.01)",
    "dlobd-c07": "approx(y[device=cpu-mkl, nodes=1] / y[device=gpu, nodes=1] - 1, 3.236, rtol=0.02)",
    "dlobd-c09": "approx(1 - y[device=cpu-openblas, nodes=16]/y[device=cpu-openblas, nodes=1], 0.783, atol=0.01)",
    "dlobd-c12": "y[device=gpu-cudnn, nodes=16] > y[device=gpu-cudnn, nodes=1]",
    "dlobd-c13": "all(d in {cpu-openblas, cpu-mkl, gpu}: y[device=d, nodes=16] < y[device=d, nodes=1] and "
                 "y[device=d, nodes=8] / y[device=d, nodes=16] < y[device=d, nodes=1] / y[device=d, nodes=2])",
    "dlobd-c27": "all(n in nodes: y[device=cpu-mkl, nodes=n] <= y[device=cpu-openblas, nodes=n] * 1.02) and "
                 "all(n in {1, 2, 4, 8, 16}: y@dlobd-fig4b[device=cpu-mkl, nodes=n] <= "
                 "y@dlobd-fig4b[device=cpu-openblas, nodes=n] * 1.02)",
    "dlobd-c33": "all(m in {cifar10quick, lenet}: all(d in {gpu, gpu-cudnn}: "
                 "y[model=m, device=d, network=rdma, nodes=16] < y[model=m, device=d, network=ipoib, nodes=16]))",
    "dlobd-c35": "not any(g in gpus: g > 8 and exists[dataset=cifar10, gpus=g])",
    "dlobd-c37": "y[dataset=mnist, network=rdma, nodes=4] > y[dataset=mnist, network=ipoib, nodes=4] and "
                 "(y[dataset=mnist, network=rdma, nodes=4] - y[dataset=mnist, network=ipoib, nodes=4])"
                 " / y[dataset=mnist, network=ipoib, nodes=4] < 0.1",
    "dlobd-c39": "all(n in {2, 4, 8, 16}: abs(y[network=ipoib, nodes=n] - y[network=rdma, nodes=n])"
                 " / y[network=ipoib, nodes=n] < 0.05)",
    "dlobd-c40": "approx(reduction(time_to(top1_accuracy >= 0.70, network=ipoib), "
                 "time_to(top1_accuracy >= 0.70, network=rdma)), 0.22, atol=0.01)",
    "dlobd-c42": "approx(time_to(top1_accuracy >= 0.70, network=rdma), 2132, atol=30) and "
                 "approx(time_to(top1_accuracy[network=ipoib] >= 0.70), 4337, atol=30)",
    "dlobd-c44": "all(e in 1..18: y[network=rdma, epoch=e] < y[network=ipoib, epoch=e])",
    "dlobd-c46": "y[network=ipoib, epoch=18] / y[network=rdma, epoch=18] > "
                 "time_to@dlobd-fig6c(top1_accuracy >= 0.70, network=ipoib) / "
                 "time_to(top1_accuracy@dlobd-fig6c >= 0.70, network=rdma)",
    "dlobd-c05": "count(n in nodes: min(y[device=gpu, nodes=n], y[device=gpu-cudnn, nodes=n]) < "
                 "min(y[device=cpu-openblas, nodes=n], y[device=cpu-mkl, nodes=n])) > 2.5",
    "slides-c18": "max_over_time(y@dlobd-fig8b[device=gpu]) < 128000",
    "dlobd-c47": "max_over_time(net_mb_per_s[network=rdma]) > max_over_time(net_mb_per_s[network=ipoib]) and "
                 "mean_over_time(net_mb_per_s[network=rdma]) > mean_over_time(net_mb_per_s[network=ipoib])",
    "dlobd-c49": "max(mean_over_time(host_mem_mb[device=gpu]), mean_over_time(host_mem_mb[device=gpu-cudnn])) < "
                 "min(mean_over_time(host_mem_mb[device=cpu-openblas]), mean_over_time(host_mem_mb[device=cpu-mkl]))",
    "dlobd-c50": "duration(host_mem_mb[device=cpu-mkl]) < duration(host_mem_mb[device=cpu-openblas])",
    "dlobd-c53": "approx(max(n in nodes: time_breakdown_s[system=tfos, nodes=n, phase=spark_jobs] / "
                 "y[system=tfos, nodes=n]), 0.181, atol=0.01)",
    "dlobd-c60": "y[network=verbs, nodes=2] / y[network=grpc-ipoib, nodes=2] - 1 < "
                 "y[network=verbs, nodes=4] / y[network=grpc-ipoib, nodes=4] - 1 < "
                 "y[network=verbs, nodes=8] / y[network=grpc-ipoib, nodes=8] - 1",
    "slides-c04": "argmin(d in device: y[device=d, nodes=1]) == gpu-cudnn and "
                  "y[device=gpu, nodes=1] < min(y[device=cpu-mkl, nodes=1], y[device=cpu-openblas, nodes=1])",
    "slides-c05": "any(n in nodes: y[device=cpu-mkl, nodes=n] < min(y[device=gpu, nodes=n], y[device=gpu-cudnn, nodes=n]))",
    "slides-c26": "approx(max(p in payload: y[spark=default, payload=p] / y[spark=rdma, payload=p]), 2.7, rtol=0.04)",
    "slides-c29": "approx(max(b in batch: y[protocol='grpc+rdma', nodes=4, batch=b] / "
                  "y[protocol=grpc, nodes=4, batch=b]) - 1, 0.35, atol=0.01)",
    "scaffe-c03": "2.6 <= max(m in message_bytes: y[library=mvapich2, message_bytes=m] / "
                  "y[library=hr, message_bytes=m]) <= 3.0",
    "scaffe-c11": "exists[framework=s-caffe, gpus=160]",
    "scaffe-c16": "not any(g in {128, 160}: exists[framework=s-caffe-l, gpus=g])",
    "scaffe-c20": "approx(40.6/28.6, 1.47, rtol=0.01) and approx(113.6/101.6, 1.11, rtol=0.01)",
    "scaffe-c27": "argmin(p in {2, 4, 8, 16}: y[algorithm=chain, processes=p]) == 8",
    "rdmatf-c02": "3 <= y[network=tcp] / y[network=ipoib] <= 4",
    "rdmatf-c04": "min_over_time(cpu_util_pct[network=tcp]) < 10 and "
                  "mean_over_time(cpu_util_pct[network=rdma]) > mean_over_time(cpu_util_pct[network=tcp])",
    "rdmatf-c06": "all(w in workers: w < 2 or y[workers=w] > 224)",
    "rdmatf-c08": "all(n in nodes: n == 1 or y[nodes=n] / y[nodes=1] >= 0.8 * n / 1)",
    "tfgrpc-c05": "all(s in {uniform, random, skew}: y[network=rdma, scheme=s] < "
                  "min(y[network='40GigE', scheme=s], y[network=ipoib, scheme=s]))",
    "tfgrpc-c08": "approx(1 - y[scheme=skew, network=rdma] / y[scheme=skew, network=10GigE], 0.78, atol=0.01)",
    "tfgrpc-c12": "slope(y over k, network=ipoib) > slope(y[network=rdma] over k)",
    "tfgrpc-c21": "approx(max(s in scheme: y[network=rdma, scheme=s] / y[network=eth-10g, scheme=s]), 5.9, rtol=0.02)",
    "neg-and-paren": "-(y[a=1] - 2) * 3 != 4 or not (y[a=-1] >= 0.5e-3)",
}


@pytest.mark.parametrize("claim_id", sorted(CATALOG_CHECKS))
def test_catalog_checks_parse_and_show_round_trip(claim_id):
    check = parse_check(CATALOG_CHECKS[claim_id])
    shown = claimlang.show(check.tree, {})
    assert parse_check(shown).tree == check.tree


def test_catalog_checks_cover_every_construct():
    kinds = set()

    def visit(node):
        kinds.add(type(node).__name__)
        if isinstance(node, claimlang.Call):
            kinds.add(node.name)
        if isinstance(node, claimlang.Quant):
            kinds.add(node.kind)
            kinds.add(type(node.domain).__name__)
        if isinstance(node, claimlang.Ref) and node.experiment:
            kinds.add("other-experiment")
        for child in claimlang._children(node):
            visit(child)

    for text in CATALOG_CHECKS.values():
        visit(parse_check(text).tree)
    wanted = {"Num", "Word", "Ref", "Exists", "Neg", "Not", "Arith", "Logic", "Compare", "TimeTo",
              "Slope", "Quant", "SetOf", "RangeOf", "AxisOf", "other-experiment", "consecutive",
              "all", "any", "count", "max", "argmin", *claimlang.FUNCTIONS} - {"time_to", "slope"}
    assert wanted <= kinds, wanted - kinds


def test_words_numbers_and_operators_lex_as_documented():
    tree = parse_check("y[network=10GigE, batch=64, p=1e-3, q='a b'] - 1-y[z=grpc+rdma] == 0").tree
    (left, _), ops = tree.operands, tree.ops
    assert ops == ("==",)
    ref = left.left.left
    assert dict(ref.selectors)["network"] == claimlang.Word("10GigE")
    assert dict(ref.selectors)["p"].value == pytest.approx(1e-3)
    assert dict(ref.selectors)["q"] == claimlang.Word("a b", quoted=True)
    assert left.left.right == claimlang.Num(1.0, "1")       # '1-y' is 1 minus y, not a word
    assert dict(left.right.selectors)["z"] == claimlang.Word("grpc+rdma")
    domain = parse_check("all(x in {10GigE, 40GigE, 'eth-1g'}: x != 1)").tree.domain
    assert domain == claimlang.SetOf((claimlang.Word("10GigE"), claimlang.Word("40GigE"), claimlang.Word("eth-1g", True)))


def test_selections_report_axes_values_and_bound_variables():
    sels = parse_check(CATALOG_CHECKS["dlobd-c27"]).selections()
    assert sels[0].experiment is None and sels[0].metric == "y"
    assert sels[0].selectors == {"device": "cpu-mkl", "nodes": Var("n")}
    assert sels[-1].experiment == "dlobd-fig4b"
    assert sels[-1].selectors == {"device": "cpu-openblas", "nodes": Var("n")}

    c46 = parse_check(CATALOG_CHECKS["dlobd-c46"]).selections()
    assert [(s.experiment, s.metric, s.kind) for s in c46] == [
        (None, "y", "value"), (None, "y", "value"),
        ("dlobd-fig6c", "top1_accuracy", "time_to"), ("dlobd-fig6c", "top1_accuracy", "time_to")]
    slope = parse_check(CATALOG_CHECKS["tfgrpc-c12"]).selections()
    assert slope[0].selectors == {"network": "ipoib", "k": Var("k")}
    series = parse_check(CATALOG_CHECKS["dlobd-c50"]).selections()
    assert [(s.metric, s.kind) for s in series] == [("host_mem_mb", "series")] * 2
    assert parse_check("y[cores=384] > 1").selections()[0].selectors == {"cores": 384.0}


def test_open_axes_find_ambiguous_selections_statically():
    matrix = {"network": ["ipoib", "rdma"], "cores": [96, 192, 384], "epochs": [18]}
    sel = parse_check("y[cores=384] > 1").selections()[0]
    assert sel.open_axes(matrix) == ["network"]
    assert parse_check("exists[cores=384]").selections()[0].open_axes(matrix) == []
    bound = parse_check("all(n in network: y[network=n, cores=96] > 0)").selections()[0]
    assert bound.open_axes(matrix) == []


@pytest.mark.parametrize("text, line, column, needle", [
    ("approx(y[network=ipoib], 2.7, rtol=)", 1, 36, "unexpected ')'"),
    ("y[network=ipoib", 1, 16, "unexpected end"),
    ("y[network=ipoib] >\n  $3", 2, 3, "unexpected character '$'"),
    ("y[ipoib, 384] > 1", 1, 8, "unexpected ','"),
    ("speedup(y[a=1], y[a=2]) > 0", 1, 1, "unknown function 'speedup'"),
    ("approx(y[a=1], 2.7)", 1, 1, "needs rtol= or atol="),
    ("approx(y[a=1], 2.7, tol=0.1)", 1, 21, "takes rtol= and atol="),
    ("every(n in nodes: y[nodes=n] > 0)", 1, 1, "unknown quantifier 'every'"),
    ("all(e in 18..1: y[epoch=e] > 0)", 1, 10, "empty range"),
    ("abs(1, 2) > 0", 1, 1, "takes 1 argument"),
    ("time_to(0.7, network=rdma) > 0", 1, 1, "takes a condition"),
    ("mean_over_time(3) > 0", 1, 1, "metric reference"),
    ("approx@dlobd-fig6c(1, 2, atol=1)", 1, 1, "only time_to and slope take @<experiment>"),
    ("slope(y over k, k=2) > 0", 1, 17, "cannot also select k"),
    ("", None, None, "empty check"),
])
def test_syntax_errors_name_position_and_expectation(text, line, column, needle):
    with pytest.raises(ClaimSyntaxError) as info:
        parse_check(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert needle in str(err)
    assert (err.line, err.column) == (line, column)


def test_syntax_error_lists_what_was_expected():
    with pytest.raises(ClaimSyntaxError) as info:
        parse_check("y[network=ipoib] > ")
    assert "a number" in info.value.expected and "'('" in info.value.expected
    assert "expected" in str(info.value) and "a number" in str(info.value)


# ---------------------------------------------------------------- evaluation

SPEC = {
    "id": "test-fig", "paper": "dlobd",
    "metric": {"name": "end_to_end_s", "unit": "s", "better": "lower", "reduce": "last"},
    "axes": {"device": {"description": "d"}, "nodes": {"description": "n", "numeric": True}},
    "scales": {
        "paper": {"runnable": False, "reason": "needs the paper's GPU cluster", "cluster": "c"},
        "local": {"runnable": True, "matrix": {"device": ["cpu-openblas", "cpu-mkl", "gpu"],
                                                "nodes": [1, 2, 4]},
                  "axis_map": {"nodes": {1: 1, 8: 2, 16: 4}}},
    },
}


def run_id(point: dict, attempt: int = 1, experiment: str = "test-fig") -> str:
    name = "_".join(f"{k}-{v}" for k, v in sorted(point.items())) or "default"
    return f"local/local/{experiment}/{name}/attempt-{attempt:03d}"


def table(points, experiment="test-fig", metric="end_to_end_s", **extra) -> pd.DataFrame:
    """Tidy rows: one `ok` value per point, `points` = [({axis: value}, value_or_status)]."""
    rows = []
    for point, outcome in points:
        attempt = point.pop("attempt", 1)
        row = {"experiment": experiment, **point, "metric": metric, "value": outcome, "unit": "s",
               "step": None, "epoch": None, "run_id": run_id(point, attempt, experiment),
               "status": "ok", "reason": None, "cluster": "local", "scale": "local",
               "data_label": "synthetic", **extra}
        if isinstance(outcome, tuple):      # (status, reason): a run without values
            row.update(metric=None, value=None, unit=None, status=outcome[0], reason=outcome[1])
        rows.append(row)
    return pd.DataFrame(rows)


def verdict(check, results, spec=SPEC, scale="local", **kw):
    claim = {"id": "dlobd-c99", "kind": "quantitative", "text": "a constructed claim", "check": check}
    claim.update(kw.pop("claim", {}))
    return evaluate_claim(claim, spec, results, scale, **kw)


FIG4 = table([({"device": "cpu-openblas", "nodes": 1}, 1000.0), ({"device": "cpu-mkl", "nodes": 1}, 423.6),
              ({"device": "gpu", "nodes": 1}, 100.0), ({"device": "cpu-mkl", "nodes": 2}, 300.0),
              ({"device": "gpu", "nodes": 2}, 90.0), ({"device": "cpu-openblas", "nodes": 2}, 600.0)])


def test_holds_reports_paper_and_reproduced_values():
    v = verdict("approx(y[device=cpu-openblas, nodes=1] / y[device=gpu, nodes=1], 10, rtol=0.01)", FIG4)
    assert v.verdict == "holds"
    assert v.paper_values == [("10", 10.0)]
    assert v.reproduced == [("y[device=cpu-openblas, nodes=1] / y[device=gpu, nodes=1]", 10.0)]
    assert ("y[device=gpu, nodes=1]", 100.0) in v.inputs


def test_a_verdict_names_the_software_its_runs_ran():
    check = "approx(y[device=cpu-openblas, nodes=1] / y[device=gpu, nodes=1], 10, rtol=0.01)"
    assert verdict(check, FIG4).software == "modern"  # runs without the label: all modern
    points = [({"device": "cpu-openblas", "nodes": 1}, 1000.0), ({"device": "gpu", "nodes": 1}, 100.0)]
    assert verdict(check, table(points, profile="paper")).software == "paper"
    failed = [({"device": "gpu", "nodes": 1}, ("failed", "exit 1"))]
    assert verdict(check, table(failed, profile="paper")).software is None  # no ok run: nothing judged


def test_differs_shows_both_numbers():
    v = verdict("approx(y[device=cpu-openblas, nodes=1] / y[device=gpu, nodes=1], 12, rtol=0.05)", FIG4)
    assert v.verdict == "differs"
    assert "= 10, paper 12 (rtol=0.05)" in v.reason
    assert v.paper_values == [("12", 12.0)]
    assert v.reproduced[0][1] == 10.0


def test_chained_comparison_and_paper_bounds():
    v = verdict("4 <= y[device=cpu-mkl, nodes=1] / y[device=gpu, nodes=1] <= 4.5", FIG4)
    assert v.verdict == "holds"
    assert [p for _, p in v.paper_values] == [4.0, 4.5]
    v = verdict("3 <= y[device=cpu-mkl, nodes=1] / y[device=gpu, nodes=1] <= 4", FIG4)
    assert v.verdict == "differs"
    assert v.reason.endswith(": 3 <= 4.236 <= 4")


def test_both_percent_readings_of_323_6_percent():
    """323.6% only fits the speedup reading: base/new - 1 = 423.6/100 - 1 = 3.236."""
    claim = {"check": "approx(reduction(y[device=cpu-mkl, nodes=1], y[device=gpu, nodes=1]), 3.236, rtol=0.02)",
             "check_alt": "approx(speedup_gain(y[device=cpu-mkl, nodes=1], y[device=gpu, nodes=1]), 3.236, rtol=0.02)"}
    v = verdict(None, FIG4, claim=claim)
    assert v.verdict == "differs"
    assert v.reproduced[0][1] == pytest.approx(1 - 100 / 423.6)
    assert v.alt_verdict == "holds"
    assert v.alt.reproduced[0][1] == pytest.approx(3.236)


def test_both_percent_readings_of_1723_5_percent():
    results = table([({"device": "cpu-mkl", "nodes": 1}, 1823.5), ({"device": "gpu", "nodes": 1}, 100.0)])
    claim = {"check": "approx(reduction(y[device=cpu-mkl, nodes=1], y[device=gpu, nodes=1]), 17.235, rtol=0.02)",
             "check_alt": "approx(speedup_gain(y[device=cpu-mkl, nodes=1], y[device=gpu, nodes=1]), 17.235, rtol=0.02)"}
    v = verdict(None, results, claim=claim)
    assert (v.verdict, v.alt_verdict) == ("differs", "holds")
    assert v.reproduced[0][1] == pytest.approx(1 - 100 / 1823.5)
    assert v.alt.reproduced[0][1] == pytest.approx(17.235)


def test_missing_point_is_not_run_naming_the_selection():
    v = verdict("y[device=gpu, nodes=4] < y[device=cpu-mkl, nodes=4]", FIG4)
    assert v.verdict == "not run"
    assert "y[device=gpu, nodes=4]: no run" in v.reason
    assert "y[device=cpu-mkl, nodes=4]: no run" in v.reason


def test_point_outside_the_local_matrix_is_not_run():
    v = verdict("y[device=gpu-cudnn, nodes=1] > 0", FIG4)
    assert v.verdict == "not run"
    assert "point not in the `local` matrix (device=gpu-cudnn)" in v.reason


def test_failed_and_hung_runs_are_not_run_with_their_reason():
    results = pd.concat([FIG4, table([
        ({"device": "cpu-mkl", "nodes": 4}, ("failed", "exit status 1: OutOfMemoryError")),
        ({"device": "gpu", "nodes": 4}, ("hung", "killed after 900 s")),
    ])])
    v = verdict("y[device=gpu, nodes=4] < y[device=cpu-mkl, nodes=4]", results)
    assert v.verdict == "not run"
    assert "is failed: exit status 1: OutOfMemoryError" in v.reason
    assert "attempt-001 is hung: killed after 900 s" in v.reason


def test_newest_ok_attempt_is_used():
    results = table([({"device": "gpu", "nodes": 1, "attempt": 1}, 100.0),
                     ({"device": "gpu", "nodes": 1, "attempt": 2}, 80.0),
                     ({"device": "gpu", "nodes": 1, "attempt": 3}, ("failed", "node lost"))])
    v = verdict("approx(y[device=gpu, nodes=1], 80, rtol=0.001)", results)
    assert v.verdict == "holds"


def test_no_results_names_the_scale_and_why_not_runnable():
    v = verdict("y[device=gpu, nodes=1] > 0", pd.DataFrame(), scale="paper")
    assert v.verdict == "not run"
    assert "no results for test-fig at `paper` scale: not runnable (needs the paper's GPU cluster)" in v.reason


def test_not_checkable_claims_carry_their_reason():
    claim = {"id": "dlobd-c61", "kind": "background", "text": "context",
             "not_checkable": "background number, not measured in the study"}
    v = evaluate_claim(claim, SPEC, FIG4, "local")
    assert (v.verdict, v.reason) == ("not checkable", "background number, not measured in the study")


def test_ambiguous_selection_is_a_check_error():
    v = verdict("y[nodes=1] > 0", FIG4)
    assert v.verdict == "not checkable"
    assert "ambiguous selection y[nodes=1]: axes left open: device (cpu-mkl, cpu-openblas, gpu)" in v.reason


def test_axis_map_evaluates_paper_points_at_local_points():
    v = verdict("approx(reduction(y[device=cpu-openblas, nodes=1], y[device=cpu-openblas, nodes=8]), 0.4, atol=0.01)",
                FIG4)
    assert v.verdict == "holds"
    missing = verdict("y[device=cpu-openblas, nodes=16] > 0", FIG4)
    assert "y[device=cpu-openblas, nodes=16] (at `local`: device=cpu-openblas, nodes=4): no run" in missing.reason
    unmapped = verdict("y[device=gpu, nodes=384] > 0", FIG4)
    assert "point not in the `local` matrix (nodes=384)" in unmapped.reason


def test_values_from_an_axis_name_are_not_mapped_again():
    spec = {**SPEC, "scales": {"local": {**SPEC["scales"]["local"], "axis_map": {"nodes": {2: 4, 16: 2}}}}}
    # literal 2 is a paper value: mapped to local 4 (no run); axis values are local: 2 stays 2
    assert verdict("all(n in {2}: y[device=gpu, nodes=n] > 0)", FIG4, spec=spec).verdict == "not run"
    v = verdict("all(n in {1, 16}: y[device=gpu, nodes=n] > 0) and any(n in nodes: n == 2 and "
                "y[device=gpu, nodes=n] == 90)", FIG4, spec=spec)
    assert v.verdict == "not run"       # nodes=4 of the axis has no gpu run
    v = verdict("all(n in {1, 16}: y[device=gpu, nodes=n] > 0) and "
                "max(n in nodes: y[device=cpu-mkl, nodes=n]) > 0", FIG4, spec=spec)
    assert "y[device=cpu-mkl, nodes=4]: no run" in v.reason
    assert ("y[device=gpu, nodes=16]", 90.0) in v.inputs


def test_quantifiers_over_sets_axes_and_ranges():
    assert verdict("all(n in {1, 8}: y[device=gpu, nodes=n] < y[device=cpu-mkl, nodes=n])", FIG4).verdict == "holds"
    # `nodes` ranges over the local matrix (1, 2, 4): nodes=4 has no run
    assert verdict("all(n in nodes: y[device=gpu, nodes=n] > 0)", FIG4).verdict == "not run"
    assert verdict("any(d in {cpu-mkl, gpu}: y[device=d, nodes=2] < 95)", FIG4).verdict == "holds"
    assert verdict("any(d in {cpu-mkl, cpu-openblas}: y[device=d, nodes=2] < 95)", FIG4).verdict == "differs"
    v = verdict("approx(max(n in {1, 8}: y[device=cpu-openblas, nodes=n] / y[device=gpu, nodes=n]), 10, rtol=0.01)",
                FIG4)
    assert v.verdict == "holds"
    assert v.reproduced == [("max(n in {1, 8}: y[device=cpu-openblas, nodes=n] / y[device=gpu, nodes=n])", 10.0)]
    assert verdict("min(n in 1..2: y[device=gpu, nodes=n]) == 90", FIG4).verdict == "holds"


def test_an_axis_quantifier_skips_the_points_the_scale_excludes():
    # 3 nodes only on the emulated network: `n in nodes` on loopback ranges over 1 and 2
    spec = {**SPEC, "scales": {"local": {"runnable": True,
                                         "matrix": {"device": ["loopback", "emulated"], "nodes": [1, 2, 3]},
                                         "exclude": [{"device": "loopback", "nodes": 3}]}}}
    results = table([({"device": "loopback", "nodes": 1}, 100.0), ({"device": "loopback", "nodes": 2}, 60.0),
                     ({"device": "emulated", "nodes": 1}, 110.0), ({"device": "emulated", "nodes": 2}, 70.0),
                     ({"device": "emulated", "nodes": 3}, 50.0)])
    v = verdict("all(n in nodes: y[device=loopback, nodes=n] <= y[device=loopback, nodes=1])", results, spec=spec)
    assert v.verdict == "holds", v.reason
    assert verdict("all(n in nodes: y[device=emulated, nodes=n] <= 100)", results, spec=spec).verdict == "differs"
    assert verdict("consecutive(a, b in nodes: y[device=loopback, nodes=a] > y[device=loopback, nodes=b])",
                   results, spec=spec).verdict == "holds"
    # a value the check names itself is not skipped: the excluded point is reported
    named = verdict("all(n in {1, 3}: y[device=loopback, nodes=n] > 0)", results, spec=spec)
    assert named.verdict != "holds"
    assert "point not in the `local` matrix (device=loopback, nodes=3 (excluded))" in named.reason
    only = {**spec, "scales": {"local": {**spec["scales"]["local"], "matrix": {"device": ["loopback"], "nodes": [3]},
                                         "exclude": [{"device": "loopback", "nodes": 3}]}}}
    none = verdict("all(n in nodes: y[device=loopback, nodes=n] > 0)", results, spec=only)
    assert none.verdict != "holds" and "every point is excluded from the `local` matrix" in none.reason


def test_quantifier_bodies_show_bound_values():
    v = verdict("all(d in {cpu-mkl, gpu}: y[device=d, nodes=2] < 200)", FIG4)
    assert v.verdict == "differs"
    assert v.reason == "y[device=cpu-mkl, nodes=2] < 200: 300 < 200"


def test_argmin_and_argmax_compare_as_words():
    v = verdict("argmin(d in device: y[device=d, nodes=1]) == gpu", FIG4)
    assert v.verdict == "holds"
    assert v.reproduced == [("argmin(d in device: y[device=d, nodes=1])", "gpu")]
    assert verdict("argmax(d in {cpu-mkl, gpu}: y[device=d, nodes=1]) == 'gpu'", FIG4).verdict == "differs"
    v = verdict("argmin(d in device: y[device=d, nodes=1]) < 3", FIG4)
    assert v.verdict == "not checkable" and "cannot compare 'gpu' with 3" in v.reason


def test_consecutive_pairs_of_a_numeric_axis():
    spec = {**SPEC, "scales": {"local": {**SPEC["scales"]["local"], "matrix": {"device": ["gpu"], "nodes": [1, 2, 4]}}}}
    results = table([({"device": "gpu", "nodes": 1}, 100.0), ({"device": "gpu", "nodes": 2}, 60.0),
                     ({"device": "gpu", "nodes": 4}, 40.0)])
    v = verdict("consecutive(a, b in nodes: y[nodes=a] / y[nodes=b] > 1.4)", results, spec=spec)
    assert v.verdict == "holds"
    assert [t for t, _ in v.reproduced] == ["y[nodes=1] / y[nodes=2]", "y[nodes=2] / y[nodes=4]"]
    assert verdict("consecutive(a, b in nodes: y[nodes=a] / y[nodes=b] > 1.6)", results, spec=spec).verdict == "differs"
    single = {**spec, "scales": {"local": {"runnable": True, "matrix": {"device": ["gpu"], "nodes": [1]}}}}
    v = verdict("consecutive(a, b in nodes: y[nodes=a] > y[nodes=b])", results, spec=single)
    assert v.verdict == "not run" and "needs at least two values at `local` scale" in v.reason


def test_exists_about_plotted_points():
    results = pd.concat([FIG4, table([({"device": "cpu-mkl", "nodes": 4}, ("hung", "killed after 900 s"))])])
    v = verdict("exists[device=gpu, nodes=2] and not exists[device=cpu-mkl, nodes=4]", results)
    assert v.verdict == "holds"
    assert ("exists[device=cpu-mkl, nodes=4]", False) in v.reproduced
    # a point never attempted is unknown, not absent
    never = verdict("not exists[device=gpu, nodes=4]", results)
    assert never.verdict == "not run" and "exists[device=gpu, nodes=4]: no run" in never.reason
    assert verdict("exists[device=gpu]", pd.DataFrame()).verdict == "not run"
    assert verdict("count(d in device: exists[device=d, nodes=2]) == 3", results).verdict == "holds"
    assert verdict("count(d in device: exists[device=d, nodes=1]) >= 2", results).verdict == "holds"


def test_time_to_on_an_accuracy_over_time_series():
    spec = {**SPEC, "metric": {"name": "top1_accuracy", "unit": "fraction", "better": "higher", "reduce": "max"},
            "axes": {"network": {"description": "n"}},
            "scales": {"local": {"runnable": True, "matrix": {"network": ["ipoib", "rdma"]}}}}
    rows = []
    for network, curve in {"ipoib": [(100, 0.4), (250, 0.65), (400, 0.71), (500, 0.75)],
                           "rdma": [(80, 0.45), (200, 0.66), (312, 0.70), (390, 0.76)]}.items():
        for step, (t, acc) in enumerate(curve):
            rows.append({"network": network, "metric": "top1_accuracy", "value": acc, "step": step,
                         "epoch": None, "wall_clock_s": t, "run_id": run_id({"network": network}),
                         "status": "ok", "reason": None, "scale": "local"})
    results = pd.DataFrame(rows)
    v = verdict("approx(reduction(time_to(top1_accuracy >= 0.70, network=ipoib), "
                "time_to(top1_accuracy >= 0.70, network=rdma)), 0.22, atol=0.01)", results, spec=spec)
    assert v.verdict == "holds", v.reason
    assert ("time_to(top1_accuracy >= 0.70, network=ipoib)", 400.0) in v.inputs
    assert ("time_to(top1_accuracy >= 0.70, network=rdma)", 312.0) in v.inputs
    never = verdict("time_to(top1_accuracy >= 0.9, network=rdma) < 1000", results, spec=spec)
    assert never.verdict == "differs"
    assert "top1_accuracy never reached >= 0.9 in run" in never.reason and "(best 0.76)" in never.reason

    # time from the run's wall_clock_s rows at the same step when accuracy rows carry none
    clock = results.assign(metric="wall_clock_s", value=results["wall_clock_s"])
    joined = pd.concat([results.drop(columns="wall_clock_s"), clock.drop(columns="wall_clock_s")])
    assert verdict("time_to(top1_accuracy >= 0.70, network=rdma) == 312", joined, spec=spec).verdict == "holds"


def test_reduce_over_a_column_and_metric_selectors():
    spec = {**SPEC, "metric": {"name": "epoch_time_s", "unit": "s", "better": "lower", "reduce": "sum",
                               "over": "epoch"},
            "axes": {"network": {"description": "n"}},
            "scales": {"local": {"runnable": True, "matrix": {"network": ["ipoib"]}}}}
    rid = run_id({"network": "ipoib"})
    results = pd.DataFrame([
        *({"network": "ipoib", "metric": "epoch_time_s", "value": 10.0 * e, "epoch": e, "step": None,
           "run_id": rid, "status": "ok"} for e in (1, 2, 3)),
        {"network": "ipoib", "metric": "epoch_time_s", "value": 999.0, "epoch": None, "step": None,
         "run_id": rid, "status": "ok"},           # a run total: outside the `over` reduction
        *({"network": "ipoib", "metric": "top1_accuracy", "value": a, "epoch": e, "step": None,
           "run_id": rid, "status": "ok"} for e, a in ((1, 0.5), (2, 0.7), (3, 0.6))),
    ])
    assert verdict("y[] == 60 and y[epoch=2] == 20", results, spec=spec).verdict == "holds"
    # other metrics use the vocabulary's reducer (top1_accuracy: max)
    assert verdict("top1_accuracy[] == 0.7 and top1_accuracy[epoch=3] == 0.6", results, spec=spec).verdict == "holds"
    v = verdict("top1_accuracy[epoch=4] > 0", results, spec=spec)
    assert v.verdict == "not run" and "has no top1_accuracy values at epoch=4" in v.reason


def test_time_series_functions_and_slope():
    spec = {**SPEC, "metric": {"name": "rpc_calls_per_s", "unit": "calls/s", "better": "higher", "reduce": "mean"},
            "axes": {"network": {"description": "n"}, "k": {"description": "clients", "numeric": True}},
            "scales": {"local": {"runnable": True, "matrix": {"network": ["ipoib", "rdma"], "k": [1, 2, 4]}}}}
    rows = []
    for network, per_k in (("ipoib", 10.0), ("rdma", 4.0)):
        for k in (1, 2, 4):
            rid = run_id({"network": network, "k": k})
            base = {"network": network, "k": k, "run_id": rid, "status": "ok", "step": None, "epoch": None}
            rows.append({**base, "metric": "rpc_calls_per_s", "value": 5.0 + per_k * k})
            for t, cpu in ((0.0, 20.0), (1.0, 60.0), (2.5, 40.0)):
                rows.append({**base, "metric": "cpu_util_pct", "value": cpu * (network == "rdma") + 5,
                             "wall_clock_s": t, "host": "localhost"})
    results = pd.DataFrame(rows)
    v = verdict("slope(y over k, network=ipoib) > slope(y[network=rdma] over k)", results, spec=spec)
    assert v.verdict == "holds"
    assert v.reproduced == [("slope(y over k, network=ipoib)", pytest.approx(10.0)),
                            ("slope(y over k, network=rdma)", pytest.approx(4.0))]
    check = ("approx(mean_over_time(cpu_util_pct[network=rdma, k=2]), 45, atol=0.01) and "
             "max_over_time(cpu_util_pct[network=rdma, k=2]) == 65 and "
             "min_over_time(cpu_util_pct[network=ipoib, k=2]) == 5 and "
             "duration(cpu_util_pct[network=ipoib, k=4]) == 2.5")
    assert verdict(check, results, spec=spec).verdict == "holds"


def test_y_at_another_experiment():
    other_spec = {**SPEC, "id": "test-other",
                  "metric": {"name": "epoch_time_s", "unit": "s", "better": "lower", "reduce": "last"}}
    other = table([({"device": "gpu", "nodes": 1}, 50.0)], experiment="test-other", metric="epoch_time_s")
    asked = []

    def other_results(exp):
        asked.append(exp)
        return other

    v = verdict("y[device=gpu, nodes=1] / y@test-other[device=gpu, nodes=1] == 2", FIG4,
                other_results=other_results, other_spec={"test-other": other_spec}.__getitem__)
    assert v.verdict == "holds"
    assert asked == ["test-other"]
    missing = verdict("y@test-other[device=gpu, nodes=2] > 0", FIG4, other_results=other_results,
                      other_spec={"test-other": other_spec}.__getitem__)
    assert missing.verdict == "not run" and "y@test-other[device=gpu, nodes=2]: no run" in missing.reason


def test_sets_over_a_dimension_and_series_of_another_experiment():
    spec = {**SPEC, "metric": {"name": "latency_us", "unit": "us", "better": "lower", "reduce": "median"},
            "axes": {"library": {"description": "l"}},
            "dimensions": {"message_bytes": {"description": "m", "numeric": True}},
            "scales": {"local": {"runnable": True, "matrix": {"library": ["mpi", "hr"]}}}}
    rows = []
    for library, factor in (("mpi", 3.0), ("hr", 1.0)):
        for m in (1024, 65536):
            for rep in range(3):
                rows.append({"library": library, "metric": "latency_us", "value": factor * m / 1024 + rep,
                             "message_bytes": m, "run_id": run_id({"library": library}), "status": "ok"})
    results = pd.DataFrame(rows)
    v = verdict("approx(max(m in message_bytes: y[library=mpi, message_bytes=m] / "
                "y[library=hr, message_bytes=m]), 2.97, rtol=0.01)", results, spec=spec)
    assert v.verdict == "holds", v.reason
    assert ("y[library=mpi, message_bytes=65536]", 193.0) in v.inputs      # median of 192, 193, 194
    v = verdict("argmax(m in message_bytes: y[library=mpi, message_bytes=m] / m) == 1024 and "
                "consecutive(a, b in message_bytes: a * 64 == b)", results, spec=spec)
    assert v.verdict == "holds", v.reason
    assert verdict("all(m in message_bytes: y[library=hr, message_bytes=m] < y[library=mpi, message_bytes=m])",
                   pd.DataFrame(), spec=spec).verdict == "not run"

    monitor = table([({"device": "gpu", "nodes": 1}, 100.0)], experiment="test-mem", metric="host_mem_mb")
    monitor = pd.concat([monitor.assign(wall_clock_s=0.0), monitor.assign(value=300.0, wall_clock_s=2.0)])
    mem_spec = {**SPEC, "id": "test-mem",
                "metric": {"name": "host_mem_mb", "unit": "MB", "better": "lower", "reduce": "max"}}
    v = verdict("max_over_time(y@test-mem[device=gpu, nodes=1]) == 300 and "
                "duration(y@test-mem[device=gpu, nodes=1]) == 2", FIG4,
                other_results={"test-mem": monitor}.__getitem__, other_spec={"test-mem": mem_spec}.__getitem__)
    assert v.verdict == "holds", v.reason


def test_time_to_on_another_experiment():
    acc_spec = {**SPEC, "id": "test-acc", "metric": {"name": "top1_accuracy", "unit": "fraction",
                                                     "better": "higher", "reduce": "max"}}
    acc = pd.concat([
        table([({"device": "gpu", "nodes": 1}, a)], experiment="test-acc", metric="top1_accuracy").assign(
            wall_clock_s=t, step=i) for i, (t, a) in enumerate(((10.0, 0.5), (20.0, 0.72), (30.0, 0.8)))])
    kw = {"other_results": {"test-acc": acc}.__getitem__, "other_spec": {"test-acc": acc_spec}.__getitem__}
    assert verdict("time_to@test-acc(top1_accuracy >= 0.7, device=gpu, nodes=1) == 20", FIG4, **kw).verdict == "holds"
    assert verdict("time_to(top1_accuracy@test-acc >= 0.75, device=gpu, nodes=1) == 30", FIG4, **kw).verdict == "holds"


def test_data_from_spec_uses_its_source_axes_scales_and_results():
    slide = {"id": "slides-test", "paper": "slides", "data_from": "test-fig", "metric": SPEC["metric"],
             "claims": [{"id": "slides-c99", "kind": "quantitative", "text": "t",
                         "check": "approx(y[device=cpu-openblas, nodes=16] / y[device=cpu-openblas, nodes=1], 0.6, rtol=0.01)"}]}
    [v] = claims.evaluate_spec(slide, None, "local", other_results={"test-fig": FIG4}.__getitem__,
                               other_spec={"test-fig": SPEC}.__getitem__)
    assert v.verdict == "not run"       # nodes=16 maps to local nodes=4: no run there
    slide["claims"][0]["check"] = "approx(y[device=cpu-openblas, nodes=8] / y[device=cpu-openblas, nodes=1], 0.6, rtol=0.01)"
    [v] = claims.evaluate_spec(slide, None, "local", other_results={"test-fig": FIG4}.__getitem__,
                               other_spec={"test-fig": SPEC}.__getitem__)
    assert v.verdict == "holds"


def test_check_errors_are_not_checkable_with_the_reason():
    zero = table([({"device": "gpu", "nodes": 1}, 0.0), ({"device": "cpu-mkl", "nodes": 1}, 5.0)])
    v = verdict("y[device=cpu-mkl, nodes=1] / y[device=gpu, nodes=1] > 1", zero)
    assert v.verdict == "not checkable" and "division by zero" in v.reason
    v = verdict("y[device=gpu, nodes=1, color=red] > 1", FIG4)
    assert "'color' is neither an axis of test-fig nor a column of its results" in v.reason
    v = verdict("y[device=gpu, nodes=1] + 1", FIG4)
    assert "not true/false" in v.reason
    v = verdict("y[device=gpu, nodes=1] > (", FIG4)
    assert v.verdict == "not checkable" and v.reason.startswith("check does not parse: line 1, column 27: unexpected end of check")


def test_verdicts_frame_and_json():
    claim = {"id": "dlobd-c06", "kind": "quantitative", "text": "t",
             "check": "approx(reduction(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]), 0.63, atol=0.01)",
             "check_alt": "approx(speedup_gain(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]), 0.63, atol=0.01)"}
    not_run = {"id": "dlobd-c07", "kind": "quantitative", "text": "t", "check": "y[device=gpu, nodes=4] > 0"}
    verdicts = claims.evaluate_spec({**SPEC, "claims": [claim, not_run]}, FIG4, "local")
    frame = verdicts_frame(verdicts)
    assert list(frame["verdict"]) == ["differs", "not run"]
    assert list(frame["alt_verdict"])[0] == "differs"
    assert frame.loc[0, "paper_values"] == "0.63"
    assert frame.loc[0, "reproduced"].startswith("reduction(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]) = 0.5764")
    data = json.loads(json.dumps([v.to_dict() for v in verdicts]))
    assert data[1]["inputs"] == [{"what": "y[device=gpu, nodes=4]", "value": None}]
    assert data[0]["alt"]["verdict"] == "differs"


def test_a_verdict_on_a_mapped_point_names_the_substitution():
    spec = {**SPEC, "claims": [{"id": "dlobd-c97", "kind": "trend", "text": "t",
                                "check": "y[device=gpu, nodes=1] < y[device=cpu-mkl, nodes=1]"}]}
    spec["scales"] = {"local": {**SPEC["scales"]["local"], "axis_map": {"device": {"gpu": "cpu-openblas"}}}}
    [v] = claims.evaluate_spec(spec, FIG4, "local")
    assert v.verdict == "differs" and v.substituted == ["device=gpu (here: cpu-openblas)"]
    assert verdicts_frame([v]).loc[0, "substituted"] == "device=gpu (here: cpu-openblas)"


def test_cli_prints_and_writes_verdicts(tmp_path, capsys):
    (tmp_path / "experiments").mkdir()
    spec = {**SPEC, "claims": [
        {"id": "dlobd-c98", "kind": "trend", "text": "t", "check": "y[device=gpu, nodes=1] < y[device=cpu-mkl, nodes=1]"},
        {"id": "dlobd-c99", "kind": "background", "text": "t", "not_checkable": "background"}]}
    (tmp_path / "experiments" / "test-fig.yaml").write_text(yaml.safe_dump(spec))
    results = tmp_path / "results"
    results.mkdir()
    FIG4.to_csv(results / "test-fig.csv", index=False)
    from dlobd.cli import main
    status = main(["claims", "--results", str(results), "--scale", "local", "--root", str(tmp_path),
                   "--json", str(tmp_path / "v.json"), "--csv", str(tmp_path / "v.csv")])
    out = capsys.readouterr().out
    assert status == 0
    assert "dlobd-c98" in out and "holds" in out and "1 holds, 0 differs, 0 not comparable here, 0 not run, 1 not checkable" in out
    assert [v["verdict"] for v in json.loads((tmp_path / "v.json").read_text())] == ["holds", "not checkable"]
    assert list(pd.read_csv(tmp_path / "v.csv")["claim_id"]) == ["dlobd-c98", "dlobd-c99"]
    assert main(["claims", "--results", str(tmp_path / "nope"), "--scale", "local", "--root", str(tmp_path)]) == 2
    assert main(["claims", "--results", str(results), "--scale", "local", "--root", str(tmp_path),
                 "--experiments", "no-such"]) == 2


def test_claim_modules_never_use_eval_or_exec():
    source = "".join(Path(m.__file__).read_text() for m in (claims, claimlang))
    names = {n.func.id for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not names & {"eval", "exec", "compile", "__import__"}
    attrs = {n.func.attr for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not attrs & {"eval", "exec", "query"}      # pandas' eval/query evaluate strings too


def test_repeats_of_a_point_are_read_as_their_median():
    spec = {**SPEC, "scales": {**SPEC["scales"], "local": {**SPEC["scales"]["local"], "repeats": 3}}}
    rows = table([({"device": "gpu", "nodes": 1, "repeat": r}, v) for r, v in ((1, 90.0), (2, 130.0), (3, 100.0))]
                 + [({"device": "cpu-mkl", "nodes": 1, "repeat": 1}, 95.0),
                    ({"device": "cpu-mkl", "nodes": 1, "repeat": 2}, ("failed", "exit 1"))])
    v = verdict("approx(y[device=gpu, nodes=1], 100, rtol=0.001)", rows, spec=spec)
    assert v.verdict == "holds"    # the median, neither the newest (100 by chance) nor the mean (106.7)
    v = verdict("approx(y[device=gpu, nodes=1], 106.7, rtol=0.01)", rows, spec=spec)
    assert v.verdict == "differs"
    inputs = dict(v.inputs)
    assert inputs["y[device=gpu, nodes=1] over 3 repeats"] == "median 100 (min 90, max 130)"
    # a repeat that failed leaves the ok one; the failure is listed among what was read
    v = verdict("y[device=cpu-mkl, nodes=1] < 96", rows, spec=spec)
    assert v.verdict == "holds"
    assert any("repeat-2" in m and "is failed: exit 1" in m for _, m in v.inputs)


def test_a_series_of_a_repeated_point_must_name_its_repeat():
    rows = table([({"device": "gpu", "nodes": 1, "repeat": r}, 10.0 * r) for r in (1, 2)])
    v = verdict("time_to(end_to_end_s[device=gpu, nodes=1] >= 10) > 0", rows)
    assert v.verdict == "not checkable"
    assert "the point has 2 repeats; name one (`repeat=N`)" in v.reason


# ---------------------------------------------------------------- findings in words

LATENCY = {**SPEC, "metric": {"name": "latency_us", "unit": "us", "better": "lower", "reduce": "median"},
           "axes": {"algorithm": {"description": "a"}, "message_bytes": {"description": "m", "numeric": True}},
           "scales": {"local": {"runnable": True, "matrix": {"algorithm": ["chain", "binomial"],
                                                             "message_bytes": [16777216, 33554432, 67108864]}}}}
REDUCE = table([({"algorithm": a, "message_bytes": m}, v, ) for a, m, v in (
    ("chain", 16777216, 29642.0), ("binomial", 16777216, 31850.0), ("chain", 33554432, 58000.0),
    ("binomial", 33554432, 60100.0), ("chain", 67108864, 120000.0), ("binomial", 67108864, 118000.0))],
    metric="latency_us")


def test_a_finding_says_each_comparison_in_the_metric_s_unit_and_summarises_the_rest():
    check = "all(m in {16777216, 33554432}: y[algorithm=chain, message_bytes=m] < y[algorithm=binomial, message_bytes=m])"
    v = verdict(check, REDUCE, spec=LATENCY)
    assert v.verdict == "holds"
    assert v.finding == "chain 29.6 ms < binomial 31.9 ms at 16 MB, and so at 32 MB"
    # a failing part leads, with the relation measured and the claimed one beside it
    v = verdict(check.replace("33554432}", "33554432, 67108864}"), REDUCE, spec=LATENCY)
    assert v.verdict == "differs"
    assert v.finding == ("chain 120 ms > binomial 118 ms at 64 MB (the claim: <); "
                         "the 2 other comparisons hold")
    assert "y[" not in v.finding and "y[algorithm=chain, message_bytes=67108864]" in v.reason
    # where the others are mixed, it counts those that differ, in words that agree with the count
    slower = REDUCE.copy()
    slower.loc[(slower["algorithm"] == "chain") & (slower["message_bytes"] == 33554432), "value"] = 61000.0
    v = verdict(check.replace("33554432}", "33554432, 67108864}"), slower, spec=LATENCY)
    assert v.finding == ("chain 61 ms > binomial 60.1 ms at 32 MB (the claim: <); "
                         "the 2 other comparisons include 1 that differs")


def test_a_finding_writes_ratios_shares_and_the_paper_s_tolerance():
    v = verdict("approx(y[device=cpu-openblas, nodes=1] / y[device=gpu, nodes=1], 12, rtol=0.05)", FIG4)
    # how far apart, then what the check allows: 10 is 16.7% from 12, more than the 5% allowed
    assert v.finding == "cpu-openblas / gpu 10× for 1 node (the paper: 12×, 16.7% apart; the check allows 5%)"
    v = verdict("approx(reduction(y[device=cpu-openblas, nodes=1], y[device=cpu-mkl, nodes=1]), 0.63, atol=0.01)", FIG4)
    assert v.finding == ("the reduction from cpu-openblas to cpu-mkl 57.6% for 1 node "
                         "(the paper: 63%, 5.36% apart; the check allows ±1%)")


def test_a_not_run_finding_names_the_point_in_words_and_why():
    v = verdict("y[device=gpu, nodes=16] < y[device=cpu-mkl, nodes=16]", FIG4)
    assert v.verdict == "not run"
    assert v.finding == "gpu, 16 nodes (here: 4 nodes): no run; and 1 more missing"
    results = pd.concat([FIG4, table([({"device": "gpu", "nodes": 4}, ("not runnable", "needs gpu: no GPU; needs cuda: none"))])])
    assert verdict("y[device=gpu, nodes=4] > 0", results).finding == "gpu, 4 nodes: not runnable: needs gpu: no GPU"
