"""S-Caffe and the frameworks it is compared with, without a cluster: the command of every
paper-scale point of the scaffe specs on a fake cluster of 16-GPU nodes (a dry run), the
reasons a point is not runnable, and the parser on a constructed log
(tests/data/constructed-logs/scaffe: Caffe's solver format under Hydra's -prepend-rank; no
real run could be had here) and damaged copies of it."""

import json
import re
from pathlib import Path

import pytest

from dlobd import stacks
from dlobd.stacks import scaffe
import reallogs
from stackfakes import WORKERS, assert_random_damage_is_handled, context, install, option, paper_points
from dlobd import NotRunnable

LOG = Path(__file__).resolve().parent / "data" / "constructed-logs" / "scaffe" / "cifar10-quick-4-ranks"
SPECS = ("scaffe-fig8", "scaffe-fig9", "scaffe-fig10", "scaffe-fig13", "scaffe-table2")
SETTINGS = {
    "DLOBD_GPU_WORKERS": " ".join(WORKERS[:10]), "DLOBD_GPUS_PER_NODE": "16", "DLOBD_DATA_DIR": "/srv/data",
    "MVAPICH2_GDR_HOME": "/opt/mv2-gdr", "SCAFFE_HOME": "/opt/osu-caffe", "CAFFE_HOME": "/opt/nvcaffe",
    "INSPUR_CAFFE_HOME": "/opt/caffe-mpi", "CNTK_HOME_GPU_CUDNN": "/opt/cntk", "MMLSPARK_MPI_HOME": "/opt/ompi-1.10",
    "SCAFFE_IMAGENET_LMDB": "/lustre/ilsvrc12/lmdb", "SCAFFE_IMAGENET_LIST": "/lustre/ilsvrc12",
    "SCAFFE_IMAGENET_MAP": "/lustre/ilsvrc12/train_map.txt",
    **{f"SCAFFE_HOME_{d}": f"/opt/s-caffe-{d.lower()}" for d in ("SC_B", "SC_OB", "CC_8", "CB_4", "CB_8")},
}


@pytest.fixture
def cluster(monkeypatch):
    install(monkeypatch, SETTINGS)


def is_design(point) -> bool:
    """A point of Fig. 13's designs or Table 2's rows: a build of the authors' S-Caffe."""
    return bool(set(point) & set(scaffe.DESIGN_AXES))


def runnable_points():
    # fig8's caffe at more GPUs than one node has is not runnable by design, nor is a design point (tested below)
    return [(s, p) for s, p in paper_points(*SPECS)
            if not (p.get("framework") == "caffe" and p["gpus"] > 16) and not is_design(p)]


@pytest.mark.parametrize("spec_id, point", runnable_points())
def test_command_of_every_paper_point(tmp_path, cluster, spec_id, point):
    ctx = context(tmp_path, spec_id, point)
    result = scaffe.launch(ctx)
    argv = result.command
    assert result.status == "dry run" and not ctx.attempt_dir.exists()
    framework = point.get("framework", "s-caffe")
    gpus = point.get("gpus", 16)  # fig13 and table2 assume 16 (their specs' `assumed`)
    hosts = [h["address"] for h in result.hosts]
    assert hosts == WORKERS[:-(-gpus // 16)] and not any(h.startswith("127.") for h in hosts)
    if framework == "caffe":
        assert argv[0] == "ssh" and hosts == [WORKERS[0]] and WORKERS[0] in argv
        assert f"-gpu {','.join(str(i) for i in range(gpus))}" in argv[-1]
        return
    lines = result.extra["hostfile"].splitlines()
    if framework == "cntk":
        assert argv[0] == "/opt/ompi-1.10/bin/mpirun" and option(argv, "-np") == str(gpus)
        assert "--tag-output" in argv and argv[argv.index("--tag-output") + 3] == "/opt/cntk/cntk/bin/cntk"
        assert lines == [f"{h} slots={min(16, gpus)}" for h in hosts]
        return
    assert argv[0] == "/opt/mv2-gdr/bin/mpirun" and "-prepend-rank" in argv
    ranks = gpus + (1 if framework == "inspur-caffe" else 0)  # Caffe-MPI's parameter-server rank
    assert option(argv, "-np") == str(ranks) and option(argv, "-f").endswith("attempt-001/hostfile")
    assert sum(int(line.split(":")[1]) for line in lines) == ranks
    home = "/opt/caffe-mpi" if framework == "inspur-caffe" else "/opt/osu-caffe"
    assert f"{home}/bin/caffe" in argv and option(argv, "-solver").endswith("solver.prototxt")
    if framework != "inspur-caffe":
        assert option(argv, "-scal") == "strong" and option(argv, "-gpu") == "all"
    if "gpus" not in point:
        assert result.labels["assumed"]["gpus"].startswith("16, assumed, not stated by the paper (Fig. 8")


def test_nets_follow_the_framework(tmp_path, cluster):
    p = scaffe.plan_point(context(tmp_path, "scaffe-fig8", {"framework": "s-caffe", "gpus": 32}))
    images = scaffe.render(p, scaffe.data_sources(p))["net.prototxt"]
    assert 'type: "ImageData"' in images and 'source: "/lustre/ilsvrc12/train.txt"' in images
    p = scaffe.plan_point(context(tmp_path, "scaffe-fig9", {"framework": "s-caffe", "gpus": 64}))
    texts = scaffe.render(p, scaffe.data_sources(p))
    assert 'source: "/srv/data/lmdb/cifar10/train"' in texts["net.prototxt"] and "backend: LMDB" in texts["net.prototxt"]
    assert re.findall(r"batch_size: (\d+)", texts["net.prototxt"]) == ["128", "100"]  # 8192 / 64 ranks
    assert "max_iter: 1000" in texts["solver.prototxt"] and "solver_mode: GPU" in texts["solver.prototxt"]


def test_single_process_caffe_beyond_one_node_is_not_runnable(tmp_path, cluster):
    with pytest.raises(NotRunnable, match="drives the GPUs of one node: 32 GPUs > 16 per node"):
        scaffe.launch(context(tmp_path, "scaffe-fig8", {"framework": "caffe", "gpus": 32}))


@pytest.mark.parametrize("drop, point, message", [
    ("SCAFFE_HOME", ("scaffe-fig9", {"framework": "s-caffe", "gpus": 2}), "OSU-Caffe.*set SCAFFE_HOME"),
    ("MVAPICH2_GDR_HOME", ("scaffe-fig9", {"framework": "s-caffe", "gpus": 2}), "set MVAPICH2_GDR_HOME"),
    ("INSPUR_CAFFE_HOME", ("scaffe-fig10", {"framework": "inspur-caffe", "gpus": 2}), "Caffe-MPI"),
    ("SCAFFE_IMAGENET_LIST", ("scaffe-fig8", {"framework": "s-caffe", "gpus": 8}), "image files on Lustre"),
    ("CNTK_HOME_GPU_CUDNN", ("scaffe-fig10", {"framework": "cntk", "gpus": 2}),
     r"^CNTK 2\.x GPU build .*: add gpu-cudnn: <its install> to mmlspark_cntk_homes \(role mmlspark; "
     r"CNTK_HOME_GPU_CUDNN\)$"),
    ("MMLSPARK_MPI_HOME", ("scaffe-fig10", {"framework": "cntk", "gpus": 2}),
     r"^the OpenMPI 1\.10 .*: set mmlspark_mpi_home \(role mmlspark; MMLSPARK_MPI_HOME\)$"),
])
def test_missing_software_names_its_variable(tmp_path, monkeypatch, drop, point, message):
    install(monkeypatch, {k: v for k, v in SETTINGS.items() if k != drop})
    with pytest.raises(NotRunnable, match=message):
        scaffe.launch(context(tmp_path, *point))


def test_missing_hardware(tmp_path, monkeypatch):
    install(monkeypatch, SETTINGS, gpu="no GPU (/dev/nvidia* absent)")
    with pytest.raises(NotRunnable, match="needs gpu: no GPU"):
        scaffe.launch(context(tmp_path, "scaffe-fig9", {"framework": "s-caffe", "gpus": 1}))
    install(monkeypatch, SETTINGS, lustre="no Lustre client (/proc/fs/lustre)")
    with pytest.raises(NotRunnable, match="reads image files from Lustre"):
        scaffe.launch(context(tmp_path, "scaffe-fig8", {"framework": "s-caffe", "gpus": 8}))
    install(monkeypatch, {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:2])})
    with pytest.raises(NotRunnable, match=rf"need 4 GPU workers; the cluster has 2 GPU worker\(s\) \(group gpu: "
                                          rf"{WORKERS[0]}, {WORKERS[1]}\)$"):
        scaffe.launch(context(tmp_path, "scaffe-fig9", {"framework": "s-caffe", "gpus": 64}))


@pytest.mark.parametrize("spec_id, point", [(s, p) for s, p in paper_points(*SPECS) if is_design(p)])
def test_a_design_of_the_authors_s_caffe_is_not_obtainable_whatever_path_is_given(tmp_path, cluster, spec_id,
                                                                                   point):
    """Every SCAFFE_HOME_<DESIGN> is set (the fake cluster's): still no such build can be had."""
    design = str(point.get("design", point.get("algorithm")))
    name = scaffe.DESIGNS[design]
    setting = f"SCAFFE_HOME_{name.replace('-', '_')}"
    assert SETTINGS[setting]
    with pytest.raises(NotRunnable) as err:
        scaffe.launch(context(tmp_path, spec_id, point))
    reason = str(err.value)
    assert reason.startswith("not obtainable: ") and "never released" in reason
    assert reason.endswith(f"this point cannot run anywhere but their cluster ({setting})")
    assert name in reason and (design != "none" or "Table 2's baseline" in reason)
    # the setting's name only in the closing parentheses: nothing asks for it
    assert reason.count(setting) == 1 and "set " not in reason


# ---------------------------------------------------------------- parser

def values(result, metric, **where):
    return [r["value"] for r in result.rows if r["metric"] == metric
            and all(r.get(k) == v for k, v in where.items())]


def test_rank_0_stands_for_the_run(tmp_path):
    r = stacks.parse_file("scaffe", LOG / "stdout.log")
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert values(r, "loss") == [2.3, 1.9, 1.5, 1.1, 0.7012]
    assert values(r, "steps_per_s") == [25.1] * 4  # rank 0's; the others print 25.11 ...
    assert values(r, "train_time_s") == [pytest.approx(16.1)] and r.meta["mpi_ranks"] == 4
    run = tmp_path / "run"
    run.mkdir()
    (run / "stdout.log").write_text((LOG / "stdout.log").read_text())
    (run / "run.json").write_text(json.dumps({"labels": {"global_batch": "8192"}}))
    whole = stacks.parse_run("scaffe", run)
    assert values(whole, "images_per_s", step=100) == [pytest.approx(25.1 * 8192)]
    assert values(whole, "images_per_s", step=None) == [pytest.approx(400 * 8192 / 16.1)]


def test_cntk_ranks_through_the_same_parser():
    text = ("[1,0]<stderr>:02/15/2017 09:12:36: Finished Epoch[ 1 of 1]: [Training] ce = 6.5 * 1281167; "
            "errs = 99.000% * 1281167; totalSamplesSeen = 1281167; learningRatePerSample = 0.0001; epochTime=3600.5s\n"
            "[1,1]<stderr>:02/15/2017 09:12:36: Finished Epoch[ 1 of 1]: [Training] ce = 6.5 * 1281167; "
            "errs = 99.000% * 1281167; totalSamplesSeen = 1281167; learningRatePerSample = 0.0001; epochTime=3600.7s\n")
    r = scaffe.parse(text)
    assert (r.status, r.finished) == ("ok", True) and values(r, "train_time_s") == [3600.5]


def lines():
    return (LOG / "stdout.log").read_text().splitlines(keepends=True)


def test_cut_logs_keep_their_complete_lines():
    text = lines()
    r = scaffe.parse("".join(text[:-3]))
    assert r.status == "ok" and not r.finished and "no 'Optimization Done.'" in r.reason
    assert values(r, "train_time_s") == []
    r = scaffe.parse("".join(text[:-3]) + text[-3][:30])
    assert "cut mid-line" in r.reason


def test_concatenated_logs_are_unparseable():
    r = scaffe.parse("".join(lines()) * 2)
    assert r.status == "unparseable" and "concatenated" in r.reason


def test_caffe_train_s_own_optimization_done_after_the_solver_s():
    # S-Caffe runs `caffe train`, whose tool logs 'Optimization Done.' after the solver's: real
    # BVLC lines under Hydra's -prepend-rank
    end = reallogs.lines("caffe", "bvlc-2019-caffe-train-two-optimization-done")
    r = scaffe.parse("".join(f"[0] {line}" for line in end))
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert values(r, "loss") == [0.0026507] and values(r, "top1_accuracy") == [0.9915]


@pytest.mark.parametrize("text, reason", [("", "empty log"), ("\x00" * 40, "binary data"),
                                          ("[1] I0215 09:12:10.0 1 solver.cpp:243] Iteration 0, loss = 2\n",
                                           "no line of")])
def test_empty_binary_and_other_ranks_only(text, reason):
    r = scaffe.parse(text)
    assert r.status == "unparseable" and r.reason.startswith(reason)


def test_random_damage_never_crashes():
    assert_random_damage_is_handled(scaffe.parse, "".join(lines()), seed=11)


@pytest.mark.parametrize("spec_id", ["scaffe-fig13", "scaffe-table2"])
def test_the_assumed_gpus_are_cut_to_a_smaller_cluster_and_labelled(tmp_path, monkeypatch, spec_id):
    install(monkeypatch, {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:2]), "DLOBD_GPUS_PER_NODE": "2"})
    # the scale's assumed GPUs, for the release's S-Caffe: its design points are not obtainable (above)
    p = scaffe.plan_point(context(tmp_path, spec_id, {}))
    assert p["gpus"] == 4 and p["model"] == "googlenet"
    assert p["labels"]["assumed"]["gpus"] == (
        "4, assumed, not stated by the paper (Fig. 8: S-Caffe's GoogLeNet on the same cluster at 8 to 160 GPUs; "
        "16, the most that all three frameworks ran); the assumed 16 cut to this cluster's 4 GPUs "
        "(2 worker(s) of group gpu x 2: dlobd_hardware.gpus of group gpu's first host; DLOBD_GPUS_PER_NODE)")


def test_gpus_given_on_the_command_line_run_as_given_within_the_cluster(tmp_path, cluster):
    p = scaffe.plan_point(context(tmp_path, "scaffe-fig13", {}, overrides={"gpus": 32}))
    assert p["gpus"] == 32 and "assumed" not in p["labels"]
    with pytest.raises(ValueError, match=r"gpus=200, set on the command line: this cluster has 160 GPUs "
                       r"\(10 worker\(s\) of group gpu x 16: dlobd_hardware.gpus of group gpu's first host; "
                       r"DLOBD_GPUS_PER_NODE\); accepted: 1 to 160"):
        scaffe.plan_point(context(tmp_path, "scaffe-fig13", {}, overrides={"gpus": 200}))


def test_a_stated_gpu_count_is_never_cut(tmp_path, monkeypatch):
    install(monkeypatch, {**SETTINGS, "DLOBD_GPU_WORKERS": " ".join(WORKERS[:2]), "DLOBD_GPUS_PER_NODE": "2"})
    with pytest.raises(NotRunnable, match=r"16 GPUs at 2 per node need 8 GPU workers; the cluster has 2 GPU worker\(s\)"):
        scaffe.plan_point(context(tmp_path, "scaffe-fig8", {"framework": "s-caffe", "gpus": 16}))
