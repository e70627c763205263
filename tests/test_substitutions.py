"""The honesty rules (dlobd/spec/substitutions.py): what a scale substitutes, and when that voids
a claim's premise. Specs are the project's own; the small spec dicts below are constructed
inputs that isolate one rule each."""

import pandas as pd

from dlobd import spec
from dlobd.results import claims
from dlobd.spec import substitutions
from dlobd.spec.substitutions import NOT_COMPARABLE, void_reason

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
    assert "only at its own scale" in void_reason(c38, SPECS["dlobd-fig5b"], "local", ["gpus=8 (here: 2)"])
    assert void_reason(c38, SPECS["dlobd-fig5b"], "paper", []) is None
    # a claim without a premise is judged as it is
    assert void_reason(claim_of("dlobd-fig5b", "dlobd-c35"), SPECS["dlobd-fig5b"], "local", []) is None


def test_linear_scaling_needs_a_core_per_process():
    c08 = claim_of("rdmatf-fig6", "rdmatf-c08")
    spec6 = SPECS["rdmatf-fig6"]
    assert "share 2 cores" in void_reason(c08, spec6, "local", [], cpus=2)
    assert void_reason(c08, spec6, "local", [], cpus=8) is None     # 3 workers + 1 PS fit
    assert void_reason(c08, spec6, "local", [], cpus=None)          # unknown cores: not judged


def test_a_substituted_or_oversubscribed_baseline_voids_a_speedup():
    c02 = claim_of("scaffe-fig12", "scaffe-c02")
    assert "baseline is substituted: mpi_impl=mvapich2 (here: mpich)" in void_reason(
        c02, SPECS["scaffe-fig12"], "local", ["mpi_impl=mvapich2 (here: mpich)"], cpus=64)
    c20 = claim_of("scaffe-table2", "scaffe-c20")
    assert "oversubscribed on 2 cores" in void_reason(c20, SPECS["scaffe-table2"], "local", [], cpus=2)
    assert void_reason(c20, SPECS["scaffe-table2"], "local", [], cpus=16) is None


def test_a_share_the_notes_call_not_comparable():
    c19 = claim_of("scaffe-table2", "scaffe-c19")
    assert "not comparable" in void_reason(c19, SPECS["scaffe-table2"], "local", [])
    quiet = {**SPECS["scaffe-table2"], "scales": {"local": {"notes": ["shrunk"]}}}
    assert void_reason(c19, quiet, "local", []) is None


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
