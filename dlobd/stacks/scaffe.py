"""S-Caffe (Awan et al., PPoPP 2017), released by OSU's HiDL project as OSU-Caffe: Caffe
co-designed with MVAPICH2-GDR, one MPI rank per GPU, CUDA-aware MPI for the model broadcast
and the gradient reduce; and the frameworks the paper compares it with: single-process
multi-GPU Caffe, CNTK's data-parallel SGD over MPI and Inspur's Caffe-MPI.

All are registered or site installs given by path: SCAFFE_HOME (OSU-Caffe; its `bin/caffe`),
MVAPICH2_GDR_HOME (its MPI, as hr_reduce reads it), CAFFE_HOME (NVIDIA/BVLC Caffe with
`-gpu`), CNTK_HOME_GPU_CUDNN with MMLSPARK_MPI_HOME (CNTK's binary release and the OpenMPI
1.10 it is built against: the mmlspark role's mmlspark_cntk_homes and mmlspark_mpi_home),
INSPUR_CAFFE_HOME.

The designs of Fig. 13 (SC-B, SC-OB) and the rows of Table 2 (SC-B with the MPI library's
reduce, `none`, or with the hierarchical reduce's CC-8, CB-4, CB-8) are stages of the paper's
co-design (Sec. 4): the S-Caffe it released is their culmination (Sec. 8), with overlapped
propagation and aggregation on the hierarchical reduce (which MVAPICH2-GDR 2.2 released, Sec.
5), and nothing in the paper makes the earlier designs switches of it. Each is a build of the
authors' S-Caffe that was never released, so those points are not obtainable, whatever path a
SCAFFE_HOME_<DESIGN> setting names.

Launcher: MVAPICH2-GDR's mpirun (Hydra, `-f <hostfile>`: hr_reduce's placement and host-file
code) with `-prepend-rank`, one rank per GPU over the inventory's GPU hosts
(DLOBD_GPU_WORKERS, DLOBD_GPUS_PER_NODE ranks each), MV2_USE_CUDA=1, of
`caffe train -solver <attempt>/solver.prototxt -gpu all -scal strong|weak` (OSU-Caffe's
options as the HiDL user guide names them: `-scal` says whether the solver's batch is the
global one split over the ranks or each rank's; its source is not public, so the flags could
not be checked against it here). Single-process Caffe runs on the first GPU host over ssh
with `-gpu 0,..,n-1`, only when the GPUs fit one host. The nets are workloads/caffe-nets/
(Caffe's own Data layer on an LMDB, or ImageData on a list of image files on Lustre for
`s-caffe`), the solver the model's reference one with the point's iterations and batch.

Parser: the ranks' output through `-prepend-rank` (`[<rank>] <line>`, Hydra) or OpenMPI's
`--tag-output` (`[<job>,<rank>]<stderr>:`); untagged lines count as rank 0. Rank 0's Caffe
solver lines (dlobd.stacks.shared.caffe_solver.SolverLines: NVIDIA Caffe, which OSU-Caffe is based on,
prints `Iteration N (x iter/s, ...), loss = y`) give loss and steps_per_s; its first to last
iteration (or `Optimization Done.`) train_time_s. OSU-Caffe prints no per-phase times that
any available source documents, so no time_breakdown_s is read. CNTK ranks' lines go through
dlobd.stacks.mmlspark's reader. With the run's `global_batch` label (run.json), parse_records
turns steps_per_s into images_per_s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dlobd import NOT_OBTAINABLE, NotRunnable
from dlobd.cluster import capabilities, hadoop, provenance
from dlobd.cluster.remote import ssh_argv
from dlobd.spec.metrics import row
from dlobd.stacks import NO_LINES, LogError, ParseResult, line_parser, runner
from dlobd.stacks.shared import cntk_install
from dlobd.stacks.shared.caffe_nets import models, templates
from dlobd.stacks.shared.caffe_solver import GLOG, GlogClock, SolverLines
from dlobd.stacks.shared.cntk_log import CntkEpochs
from dlobd.stacks.shared.mpi import hostfile_text, mpirun_prefix, rank_placement

LOG_FILES = ("stdout.log", "stderr.log")

CNTK_CONFIG = Path(__file__).resolve().parents[2] / "workloads" / "scaffe" / "alexnet.cntk"
FRAMEWORKS = ("s-caffe", "s-caffe-l", "caffe", "cntk", "inspur-caffe")
DESIGN_AXES = ("design", "algorithm")
# the designs by the paper's names: Table 2's `none` is its SC-B row, with the MPI library's reduce
DESIGNS = {"none": "SC-B", "sc-b": "SC-B", "sc-ob": "SC-OB", "cc-8": "CC-8", "cb-4": "CB-4", "cb-8": "CB-8"}
HIERARCHICAL_REDUCE = ("CC-8", "CB-4", "CB-8")
HYDRA_TAG = re.compile(r"^\[(\d+)\] (.*)$")


# ---------------------------------------------------------------------------- parser

def _parse(lines, cut) -> ParseResult:
    result = ParseResult()
    clock, solver = GlogClock(), SolverLines(result)
    cntk = CntkEpochs(result)
    tagged = set()
    for no, line in lines:
        if "Epoch[" in line or "EXCEPTION occurred" in line:
            cntk.read(no, line)  # CNTK's ranks, tagged by OpenMPI
            continue
        rank, text = 0, line
        if t := HYDRA_TAG.match(line):
            rank, text = int(t[1]), t[2]
            tagged.add(rank)
        if rank == 0 and (g := GLOG.match(text)):  # every rank logs its solver: rank 0 stands for the run
            solver.read(no, clock.stamp(no, g), g[7])
    solver.close()
    if tagged:
        result.meta["mpi_ranks"] = len(tagged)
    if not result.rows:
        return ParseResult.unparseable(f"{NO_LINES} S-Caffe's, Caffe's or CNTK's format: no rank-0 glog "
                                       "'Iteration N, loss = x' line and no CNTK epoch line")
    if cntk.max_epochs is not None:
        return cntk.finish([cntk.missing()], cut)
    result.close(None if solver.done else f"no 'Optimization Done.' line (last iteration {solver.last_iter})",
                 cut=cut)
    if result.finished and (span := solver.training_span_s()):
        result.rows.append(row("train_time_s", span))
        result.meta["iterations"] = solver.last_iter
    return result


parse = line_parser(_parse)


def parse_records(run_dir, result: ParseResult) -> None:
    """images_per_s from the solver's rate and the run's global batch (run.json's labels)."""
    path = Path(run_dir) / runner.RUN_JSON
    if not path.is_file():
        return
    try:
        batch = int((json.loads(path.read_text()).get("labels") or {}).get("global_batch") or 0)
    except (json.JSONDecodeError, ValueError, OSError) as exc:
        raise LogError(f"{runner.RUN_JSON}: unreadable global_batch label: {exc}") from None
    if not batch:
        return
    rates = [r for r in result.rows if r["metric"] == "steps_per_s"]
    result.rows += [{**row("images_per_s", r["value"] * batch, step=r["step"]), "log": r.get("log")}
                    for r in rates]
    spans = [r for r in result.rows if r["metric"] == "train_time_s"]
    if spans and result.meta.get("iterations"):
        result.rows.append({**row("images_per_s", result.meta["iterations"] * batch / spans[0]["value"]),
                            "log": spans[0].get("log")})


# ---------------------------------------------------------------------------- launcher

def _gpus_per_node() -> int:
    return int(provenance.stack_setting("DLOBD_GPUS_PER_NODE") or 1)


def unreleased(design: str) -> NotRunnable:
    """Why a point of one of the paper's designs (DESIGNS) runs nowhere but the authors' cluster."""
    name = DESIGNS[design]
    if name in HIERARCHICAL_REDUCE:
        what = (f"Table 2's {name} row is S-Caffe's SC-B design with the hierarchical reduce {name} (released "
                "in MVAPICH2-GDR 2.2); SC-B is")
    else:
        baseline = " (Table 2's baseline, with the MPI library's reduce)" if design == "none" else ""
        what = f"S-Caffe's {name} design{baseline} is"
    return NotRunnable(f"{NOT_OBTAINABLE}: {what} a build of the authors' S-Caffe that was never released; this "
                       f"point cannot run anywhere but their cluster (SCAFFE_HOME_{name.replace('-', '_')})")


def plan_point(ctx: runner.RunContext) -> dict:
    labels = {}
    framework = str(ctx.point.get("framework", "s-caffe"))
    if framework not in FRAMEWORKS:
        raise ValueError(f"{ctx.spec['id']}: framework {framework!r} is none of {', '.join(FRAMEWORKS)}")
    design = next((str(ctx.point[a]).lower() for a in DESIGN_AXES if a in ctx.point), None)
    if design is not None:
        if design not in DESIGNS:
            raise ValueError(f"S-Caffe design {design!r} is none of {', '.join(DESIGNS)}")
        raise unreleased(design)
    # a model the paper leaves unstated comes from the scale's `assumed` (in fixed)
    model = str(ctx.fixed.get("model", ctx.spec.get("model")))
    if model not in models():
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: model {model!r} has no S-Caffe net here "
                         f"(workloads/caffe-nets/models.yaml has {', '.join(models())}); where the paper "
                         f"states none, scales.{ctx.scale}.assumed gives one")
    if lacking := capabilities.missing(["gpu", "infiniband"]):
        raise NotRunnable("; ".join(lacking))
    # Fig. 8 sets S-Caffe reading image files from Lustre (s-caffe) against LMDB (s-caffe-l)
    images = framework == "s-caffe" and "s-caffe-l" in (
        ctx.spec.get("scales", {}).get(ctx.scale, {}).get("matrix", {}).get("framework", []))
    if images and (lacking := capabilities.missing(["lustre"])):
        raise NotRunnable("s-caffe reads image files from Lustre: " + "; ".join(lacking))
    per_node = int(ctx.fixed.get("gpus_per_node", _gpus_per_node()))
    hosts = provenance.workers(gpu=True)
    per_node_from = ("the scale's gpus_per_node" if "gpus_per_node" in ctx.fixed
                     else "dlobd_hardware.gpus of group gpu's first host; DLOBD_GPUS_PER_NODE")
    gpus, label = runner.count_within(ctx, "gpus", len(hosts) * per_node,
                                      f"GPUs ({len(hosts)} worker(s) of group gpu x {per_node}: {per_node_from})")
    if label:
        labels["assumed"] = {"gpus": label}
    if framework == "caffe" and gpus > per_node:
        raise NotRunnable(f"single-process Caffe drives the GPUs of one node: {gpus} GPUs > "
                               f"{per_node} per node")
    if -(-gpus // per_node) > len(hosts):
        raise NotRunnable(f"{gpus} GPUs at {per_node} per node need {-(-gpus // per_node)} GPU workers; "
                          f"the cluster has {len(hosts)} {hadoop.workers_phrase(gpu=True)}")
    # Caffe-MPI's rank 0 is its parameter server, which takes no GPU
    ranks = gpus + (1 if framework == "inspur-caffe" else 0)
    placement = rank_placement(hosts[:-(-gpus // per_node)], ranks)
    iterations = int(ctx.fixed.get("iterations", models()[model]["solver"]["max_iter"]))
    batch = ctx.fixed.get("batch")
    global_batch = int(batch) if str(batch).isdigit() else models()[model]["batch"] * gpus
    return {"framework": framework, "model": model, "gpus": gpus, "ranks": ranks, "placement": placement,
            "images": images, "iterations": iterations, "global_batch": global_batch, "labels": labels}


def _home(var: str, what: str) -> str:
    home = provenance.stack_setting(var)
    if not home:
        raise NotRunnable(f"{what}: set {var} in dlobd_stack_settings to its install (a registered or site "
                          "download)")
    return home


def caffe_home(p: dict) -> str:
    if p["framework"] == "caffe":
        return _home("CAFFE_HOME", "single-process multi-GPU Caffe (NVIDIA's or BVLC's)")
    if p["framework"] == "inspur-caffe":
        return _home("INSPUR_CAFFE_HOME", "Inspur Caffe-MPI (github.com/Caffe-MPI)")
    return _home("SCAFFE_HOME", "OSU-Caffe (S-Caffe; hidl.cse.ohio-state.edu, registration)")


def data_sources(p: dict) -> dict:
    dataset = models()[p["model"]]["dataset"]
    if p["images"]:
        root = _home("SCAFFE_IMAGENET_LIST", "ILSVRC12 as image files on Lustre with train.txt/val.txt "
                                             "lists (image-net.org, registration)")
        return {"train": f"{root}/train.txt", "test": f"{root}/val.txt", "kind": "images"}
    if dataset == "cifar10":
        root = f"{provenance.stack_setting('DLOBD_DATA_DIR') or ''}/lmdb/cifar10"
    else:
        root = _home("SCAFFE_IMAGENET_LMDB", "ILSVRC12 as train/ and val/ LMDBs (image-net.org, registration)")
        return {"train": f"{root}/train", "test": f"{root}/val", "kind": "lmdb"}
    return {"train": f"{root}/train", "test": f"{root}/test", "kind": "lmdb"}


def render(p: dict, sources: dict) -> dict:
    m = models()[p["model"]]
    env = templates()
    per_rank = max(1, p["global_batch"] // p["gpus"])
    net = env.get_template(m["template"]).render(
        data_kind=sources["kind"], train_source=sources["train"], test_source=sources["test"],
        batch=per_rank, test_batch=m["test_batch"], input=m["input"],
        classes=10 if m["dataset"] == "cifar10" else 1000)
    solver = env.get_template("solver.prototxt.j2").render(
        net="net.prototxt", solver={**m["solver"], "max_iter": p["iterations"]}, validate=False,
        test_iter=m["test_iter"], snapshot_prefix=p["model"], mode="GPU")
    return {"solver.prototxt": solver, "net.prototxt": net}


def command(ctx: runner.RunContext, p: dict, adir: Path, check: bool) -> tuple[list[str], dict | None]:
    """The command of a point, and the host file it needs ({path: text}) when it has one."""
    hostfile = adir / "hostfile"
    solver = str(adir / "solver.prototxt")
    if p["framework"] == "caffe":
        host = p["placement"][0][0]
        argv = [f"{caffe_home(p)}/bin/caffe", "train", "-solver", solver,
                "-gpu", ",".join(str(i) for i in range(p["gpus"]))]
        return ssh_argv(host, str(adir), {}, argv), None
    if p["framework"] == "cntk":
        cntk = cntk_install.cntk_home("gpu-cudnn", "CNTK 2.x GPU build (github.com/Microsoft/CNTK/releases)")
        mpi = cntk_install.mpi_home("the OpenMPI 1.10 CNTK's binary release is built against")
        argv = [f"{mpi}/bin/mpirun", "-np", str(p["gpus"]), "--hostfile", str(hostfile), "--tag-output",
                "-x", "LD_LIBRARY_PATH", f"{cntk}/cntk/bin/cntk", f"configFile={CNTK_CONFIG}",
                f"minibatchSize={p['global_batch']}", f"mapFile={_home('SCAFFE_IMAGENET_MAP', 'ILSVRC12 map files for CNTK (image-net.org, registration)')}",
                f"outputDir={adir}/cntk"]
        return argv, {hostfile: hostfile_text("openmpi", p["placement"])}
    mpi = mpirun_prefix("mvapich2-gdr", p["ranks"], hostfile, check=check)
    argv = [*mpi, "-prepend-rank", "-genv", "MV2_USE_CUDA", "1", f"{caffe_home(p)}/bin/caffe", "train",
            "-solver", solver]
    if p["framework"] != "inspur-caffe":
        argv += ["-gpu", "all", "-scal", str(ctx.fixed.get("scaling", "strong"))]
    return argv, {hostfile: hostfile_text("mvapich2-gdr", p["placement"])}


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    p = plan_point(ctx)
    adir = Path(ctx.attempt_dir).resolve()
    texts = {} if p["framework"] == "cntk" else render(p, data_sources(p))
    argv, extra_files = command(ctx, p, adir, check=not ctx.dry_run)
    if not ctx.dry_run:
        for name, text in texts.items():
            (adir / name).write_text(text)
        for path, text in (extra_files or {}).items():
            path.write_text(text)
    result = runner.run_command(ctx, argv, cwd=str(adir), keep_stdin=p["framework"] == "caffe")
    result.versions = {"stack": f"{p['framework']} (release)"}
    result.labels = {"framework": p["framework"], "gpus": str(p["gpus"]), "global_batch": str(p["global_batch"]),
                     "model": p["model"], **p["labels"]}
    if extra_files:
        result.extra["hostfile"] = next(iter(extra_files.values()))
    if ctx.dry_run:
        # its hostfile is in the attempt, as its prototxts
        result.extra["files"] = {**texts, **{str(Path(path).relative_to(adir)): text
                                             for path, text in (extra_files or {}).items()}}
    result.hosts = [{"name": h, "address": h, "roles": [f"gpu x{n}"]} for h, n in p["placement"]]
    return result

