"""The honesty rules: what a scale substitutes (dlobd/spec/substitutions.py), and when that voids
a claim's premise or a figure's pairing of values (dlobd/results/comparability.py). Specs are the project's own; the small spec dicts below are constructed
inputs that isolate one rule each."""

import pandas as pd

from dlobd import spec
from dlobd.results import claims, comparability
from dlobd.results.comparability import NOT_COMPARABLE, premise_void
from dlobd.spec import substitutions

SPECS = {k: s.data for k, s in spec.load_all(spec.ROOT).items()}


def claim_of(eid, cid):
    return next(c for c in SPECS[eid]["claims"] if c["id"] == cid)


def test_substitutions_name_axis_map_mpi_oversubscription_and_device():
    subs = substitutions.substitutions(SPECS["scaffe-fig12"], "local", cpus=2)
    assert "mpi_impl=mvapich2 (here: mpich)" in subs
    assert "8 ranks oversubscribed on 2 cores" in subs
    assert "CPU processes for the paper's GPUs" in subs
    line = substitutions.footer(SPECS["scaffe-fig12"], "local", cpus=2)
    assert "not the paper's 160 processes, GPUs, InfiniBand" in line
    assert substitutions.substitutions(SPECS["scaffe-fig12"], "paper", cpus=2) == []
    # 8 ranks on 16 cores are not oversubscribed
    assert substitutions.oversubscribed(SPECS["scaffe-fig12"], "local", 16) is None


def test_a_shrunk_model_on_other_data_and_nodes_on_one_host_are_named():
    subs = substitutions.substitutions(SPECS["dlobd-fig6a"], "local")
    # the spec's data set is an id with its description: "imagenet-subset (first 10 classes ...)"
    assert {"model alexnet-mini for alexnet", "data mnist for imagenet-subset",
            "processes on 1 host(s) for up to 2 nodes"} <= set(subs)  # nodes fixed, not an axis


def test_synthetic_data_and_prose_data_sets_are_no_data_substitution():
    def data_subs(paper, local):
        constructed = {"dataset": paper, "scales": {"local": {"dataset": local}}}
        return [s for s in substitutions.substitutions(constructed, "local") if s.startswith("data ")]

    assert data_subs("hibench-pagerank (Huge, BigData)", "pagerank-hibench-shaped-synthetic") == []
    assert data_subs("cifar10 (CIFAR-10 Quick); mnist (LeNet)", "mnist") == []  # two data sets
    assert data_subs("GPU buffers of varying size", "mnist") == []
    assert data_subs("cifar10", "mnist") == ["data mnist for cifar10"]


def test_paper_scale_behaviour_is_void_away_from_the_paper_scale():
    c38 = claim_of("dlobd-fig5b", "dlobd-c38")
    assert "only at its own scale" in premise_void(c38, SPECS["dlobd-fig5b"], "local", ["gpus=8 (here: 2)"])
    assert premise_void(c38, SPECS["dlobd-fig5b"], "paper", []) is None
    # a claim without a premise is judged as it is
    assert premise_void(claim_of("dlobd-fig5b", "dlobd-c35"), SPECS["dlobd-fig5b"], "local", []) is None


def test_linear_scaling_needs_a_core_per_process():
    c08 = claim_of("rdmatf-fig6", "rdmatf-c08")
    spec6 = SPECS["rdmatf-fig6"]
    assert "share 2 cores" in premise_void(c08, spec6, "local", [], cpus=2)
    assert premise_void(c08, spec6, "local", [], cpus=8) is None     # 3 workers + 1 PS fit
    assert premise_void(c08, spec6, "local", [], cpus=None)          # unknown cores: not judged


def test_a_substituted_or_oversubscribed_baseline_voids_a_speedup():
    c02 = claim_of("scaffe-fig12", "scaffe-c02")
    assert "baseline is substituted: mpi_impl=mvapich2 (here: mpich)" in premise_void(
        c02, SPECS["scaffe-fig12"], "local", ["mpi_impl=mvapich2 (here: mpich)"], cpus=64)
    c20 = claim_of("scaffe-table2", "scaffe-c20")
    assert "oversubscribed on 2 cores" in premise_void(c20, SPECS["scaffe-table2"], "local", [], cpus=2)
    assert premise_void(c20, SPECS["scaffe-table2"], "local", [], cpus=16) is None


def test_a_share_the_notes_call_not_comparable():
    c19 = claim_of("scaffe-table2", "scaffe-c19")
    assert "not comparable" in premise_void(c19, SPECS["scaffe-table2"], "local", [])
    quiet = {**SPECS["scaffe-table2"], "scales": {"local": {"notes": ["shrunk"]}}}
    assert premise_void(c19, quiet, "local", []) is None


def test_the_verdict_is_not_comparable_with_the_reason_and_the_numbers_read():
    # constructed results: rate doubles from 1 to 2 nodes, which would read `holds`
    rows = [{"run_id": f"r{n}", "status": "ok", "network": "loopback", "nodes": n,
             "metric": "steps_per_s", "value": 1.0 * n} for n in (1, 2)]
    results = pd.DataFrame(rows)
    spec6 = {**SPECS["rdmatf-fig6"]}
    spec6["scales"] = {**spec6["scales"], "local": {**spec6["scales"]["local"],
                                                     "matrix": {"network": ["loopback"], "nodes": [1, 2]},
                                                     "exclude": []}}
    c08 = claim_of("rdmatf-fig6", "rdmatf-c08")
    roomy = claims.evaluate_claim(c08, spec6, results, "local", cpus=8)
    assert roomy.verdict == "holds" and roomy.substituted == ["network=rdma (here: loopback)"]
    tight = claims.evaluate_claim(c08, spec6, results, "local", cpus=2)
    assert tight.verdict == NOT_COMPARABLE
    assert "2 workers and 1 parameter server(s) share 2 cores" in tight.reason
    assert "Read here: holds" in tight.reason and tight.reproduced == roomy.reproduced


def test_a_stand_in_that_did_not_run_is_named_with_its_mark_and_the_one_that_ran_in_its_place():
    # rdmatf-fig1 maps the paper's eth-1g to eth-1g-emulated, which needs several hosts; its
    # loopback runs are what the figure draws (the marks as a figure finds them in its runs)
    ran = {"network": {"loopback": "", "eth-1g-emulated": "n/r"}}
    assert substitutions.axis_map(SPECS["rdmatf-fig1"], "local", ran) == [
        "network=eth-1g (here: loopback stands in; eth-1g-emulated n/r)"]
    # rdmatf-fig5 maps ipoib to loopback: the loopback runs stand in for ipoib, none for eth-1g
    assert substitutions.axis_map(SPECS["rdmatf-fig5"], "local", ran) == [
        "network=eth-1g (here: eth-1g-emulated n/r)", "network=ipoib (here: loopback)"]
    # without the runs (the verdicts, the report) the spec's substitutions as they are planned
    assert substitutions.axis_map(SPECS["rdmatf-fig1"], "local") == ["network=eth-1g (here: eth-1g-emulated)"]


def paper_value(eid, **at):
    """The paper value of `eid` whose `at` and `over` points are `at['at']` and `at['over']`."""
    values = SPECS[eid]["scales"]["paper"]["paper_values"]
    return next(p for p in values if p["at"] == at["at"] and p.get("over") == at.get("over"))


def test_a_paper_value_read_by_a_voided_claim_has_no_counterpart_here():
    fig12 = SPECS["scaffe-fig12"]
    # scaffe-c02/c03 compare MVAPICH2 with HR: MVAPICH2 is MPICH here, a substituted baseline
    mvapich2 = paper_value("scaffe-fig12", at={"mpi_impl": "mvapich2"}, over={"mpi_impl": "hr"})
    assert comparability.not_counterpart(fig12, "local", mvapich2, cpus=2) == "the baseline is substituted"
    assert "mpi_impl=mvapich2 (here: mpich)" in comparability.paper_value_void(fig12, "local", mvapich2, 2)
    # scaffe-c01 (Open MPI over HR) rests on no premise: its ratio is a counterpart
    openmpi = paper_value("scaffe-fig12", at={"mpi_impl": "openmpi"}, over={"mpi_impl": "hr"})
    assert comparability.not_counterpart(fig12, "local", openmpi, cpus=2) == ""
    assert comparability.not_counterpart(fig12, "paper", mvapich2) == ""


def test_a_ratio_over_an_oversubscribed_baseline_is_no_counterpart_where_the_verdict_says_so():
    table2 = SPECS["scaffe-table2"]
    ratio = paper_value("scaffe-table2", at={"algorithm": "none"}, over={"algorithm": "cb-8"})
    assert comparability.not_counterpart(table2, "local", ratio, cpus=2) == \
        "the baseline is oversubscribed"
    # the same ranks on 16 cores: scaffe-c22's premise holds, and so does the pairing
    assert comparability.not_counterpart(table2, "local", ratio, cpus=16) == ""
    assert comparability.reads(claim_of("scaffe-table2", "scaffe-c22")["check"], {"algorithm": "cb-8"})
    assert not comparability.reads(claim_of("scaffe-table2", "scaffe-c22")["check"], {"algorithm": "cc-8"})
