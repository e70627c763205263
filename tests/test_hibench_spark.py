"""HiBench PageRank (dlobd/stacks/hibench_spark.py): the hibench.report parser, the launcher's
commands at every point of slides-pagerank-32nodes/-64nodes (on the paper profile in
DLOBD_TFOS_PYTHON), the synthetic graph, and the project's PySpark PageRank: its Python 2.7
syntax, its report lines, and its run in Spark local mode against an independent computation.

Report inputs: tests/data/logs/hibench_spark/ holds reports of real runs of
workloads/pagerank/spark_pagerank.py (tests/data/logs/README.md). HiBench's own lines below
(`hibench_report`) are made here, not measured: their layout is that of HiBench's
`gen_report` in bin/functions/workload_functions.sh (printf with hibench.report.formats
"%-12s %-10s %-8s %-20s %-20s %-20s %-20s\\n" of its conf/hibench.conf; the header written
only when the file is new; Duration from bc with scale=3, which drops the leading zero below
one second; throughputs from bc's integer division), at github.com/Intel-bigdata/HiBench
v7.1.1 (b5628352).
"""

import ast
import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dlobd import ROOT, spec, stacks
from dlobd.cluster import provenance
from dlobd.stacks import hibench_spark as hb
import reallogs
from dlobd.cluster import capabilities
from dlobd.stacks import runner
from dlobd import NotRunnable
from pysyntax import load_program, newer_syntax

LOGS = Path(__file__).resolve().parent / "data" / "logs" / "hibench_spark"
REAL = sorted(LOGS.glob("*/report/hibench.report"))
SPECS = ("slides-pagerank-32nodes", "slides-pagerank-64nodes")
HIBENCH_FORMAT = "%-12s %-10s %-8s %-20s %-20s %-20s %-20s\n"


def hibench_report(*lines) -> str:
    """A report as HiBench's gen_report lays it out: the header, then one line per run."""
    header = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)", "Throughput/node")
    return "".join(HIBENCH_FORMAT % tuple(fields) for fields in (header, *lines))


SCALA_LINE = ("ScalaSparkPagerank", "2017-03-02", "10:11:12", "2620000000", "123.456", "21222464", "663202")


def values(result, metric):
    return [r["value"] for r in result.rows if r["metric"] == metric]


# ---------------------------------------------------------------- parser

def test_real_reports_of_the_project_program():
    assert REAL, f"no report under {LOGS}"
    for path in REAL:
        r = stacks.parse_file("hibench_spark", path)
        assert (r.status, r.finished, r.reason) == ("ok", True, None)
        line = path.read_text().splitlines()[1].split()
        assert r.meta["workload"] == "PySparkPagerank" == line[0]
        assert values(r, "end_to_end_s") == [float(line[4])]
        assert values(r, "input_bytes_per_s") == [float(line[5])]
        # the program's arithmetic is HiBench's: whole bytes per second over the duration
        assert int(line[5]) == int(line[3]) * 1000 // round(float(line[4]) * 1000)
        assert r.meta["input_bytes"] == int(line[3]) and all(x["step"] is None for x in r.rows)


def test_parse_run_reads_the_attempts_report():
    whole = stacks.parse_run("hibench_spark", REAL[0].parent.parent)
    assert whole.status == "ok" and whole.finished
    assert {r["log"] for r in whole.rows} == {"report/hibench.report"}


def test_hibench_scala_line():
    r = hb.parse(hibench_report(SCALA_LINE))
    assert (r.status, r.finished) == ("ok", True)
    assert values(r, "end_to_end_s") == [123.456] and values(r, "input_bytes_per_s") == [21222464.0]
    assert r.meta == {"workload": "ScalaSparkPagerank", "date": "2017-03-02", "time": "10:11:12",
                      "input_bytes": 2620000000, "throughput_per_node_bytes_per_s": 663202}


def test_bc_prints_durations_below_a_second_without_the_zero():
    r = hb.parse(hibench_report(("ScalaSparkPagerank", "2017-03-02", "10:11:12", "1024", ".512", "2000", "1000")))
    assert values(r, "end_to_end_s") == [0.512]


@pytest.mark.parametrize("text, reason", [
    (hibench_report(), "no line of hibench.report's format with a result: the column header (line 1) but no "
                       "report line"),
    (hibench_report(SCALA_LINE)[:-30], "no line of hibench.report's format with a result"),
    (hibench_report(SCALA_LINE, SCALA_LINE), "line 3: a run of 2017-03-02 10:11:12, not after the run on line 2"),
    (hibench_report(SCALA_LINE) * 2, "line 3: a second column header (the first is on line 1): two reports "
                                     "interleaved or concatenated?"),
    (hibench_report(SCALA_LINE).replace("123.456", "12x.4"), "line 2: Duration(s) '12x.4' is not a value"),
    (hibench_report(SCALA_LINE).replace("663202", "663202 extra"), "line 2: 8 columns, a hibench.report line has 7"),
    (HIBENCH_FORMAT % SCALA_LINE, "line 1: a line before the column header"),
    ("x" + hibench_report(SCALA_LINE), "line 1: a line before the column header"),  # a damaged header
])
def test_damaged_reports_are_unparseable_naming_why(text, reason):
    r = hb.parse(text)
    assert r.status == "unparseable" and r.rows == []
    assert reason in r.reason


def test_cut_line_after_the_result_is_not_finished():
    text = hibench_report(SCALA_LINE) + "ScalaSparkPagerank 2017-03-02 10:2"
    r = hb.parse(text)
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason
    assert r.rows == hb.parse(hibench_report(SCALA_LINE)).rows


def test_two_real_reports_interleaved_or_concatenated():
    a, b = (p.read_text().splitlines(keepends=True) for p in REAL[:2])
    mixed = "".join(x for pair in zip(a, b) for x in pair)
    r = hb.parse(mixed)
    assert r.status == "unparseable" and "line 2: a second column header" in r.reason
    assert "interleaved" in r.reason
    r = hb.parse(REAL[0].read_text() * 2)
    assert r.status == "unparseable" and "concatenated" in r.reason


# ---------------------------------------------------------------- launcher

@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A stack environment without a prefix behind it: Spark at /opt/spark, no HiBench."""
    monkeypatch.setenv("DLOBD_PREFIX", str(tmp_path / "no-prefix"))
    for name, value in {"SPARK_HOME": "/opt/spark", "DLOBD_PYTHON": "/stack/bin/python",
                        "DLOBD_DATA_DIR": str(tmp_path / "data"), "DLOBD_HDFS_URI": "hdfs://10.0.0.1:19820",
                        "DLOBD_WORKERS": "10.0.0.2 10.0.0.3"}.items():
        monkeypatch.setenv(name, value)
    for name in ("HIBENCH_HOME", "RDMA_SPARK_HOME", "HIBENCH_VERSION", "DLOBD_PROFILE", "DLOBD_TFOS_PYTHON"):
        monkeypatch.delenv(name, raising=False)
    provenance.provisioned_env.cache_clear()
    yield tmp_path
    provenance.provisioned_env.cache_clear()


@pytest.fixture
def hibench(cluster, monkeypatch):
    """HIBENCH_HOME naming a folder with HiBench's PageRank scripts and a site configuration."""
    home = cluster / "hibench"
    for script in ("prepare/prepare.sh", "spark/run.sh"):
        (home / hb.HIBENCH_PAGERANK / script).parent.mkdir(parents=True, exist_ok=True)
        (home / hb.HIBENCH_PAGERANK / script).write_text("")
    (home / "conf").mkdir()
    (home / "conf" / "hibench.conf").write_text("hibench.scale.profile tiny\nhibench.report.dir ${hibench.home}/report\n")
    (home / "conf" / "spark.conf").write_text("hibench.spark.home /opt/spark\nhibench.yarn.executor.num 2\n")
    monkeypatch.setenv("HIBENCH_HOME", str(home))
    return home


def context(tmp_path, spec_id, point, scale="local", dry_run=True) -> runner.RunContext:
    data = spec.load_all(ROOT)[spec_id].data
    attempt = tmp_path / "runs" / spec.point_id(point) / "attempt-001"
    attempt.mkdir(parents=True)
    return runner.RunContext(spec=data, scale=scale, cluster="test", point=dict(point), attempt_dir=attempt,
                           runs_dir=tmp_path / "runs", fixed=dict(data["scales"][scale].get("fixed", {})),
                           dry_run=dry_run)


def points(scale, network):
    specs = spec.load_all(ROOT)
    return [(sid, p) for sid in SPECS for _, p in specs[sid].points(scale) if p["network"] == network]


def option(argv, name):
    return argv[argv.index(name) + 1]


def spark_settings(argv) -> dict:
    return dict(pair.split("=", 1) for flag, pair in zip(argv, argv[1:]) if flag == "--conf")


PYSPARK_SETTINGS = ("spark.pyspark.python", "spark.pyspark.driver.python", "spark.executorEnv.PYSPARK_PYTHON")


def settings(text: str) -> dict:
    """HiBench's reading of a conf file: key, whitespace, value; '#' lines are comments."""
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.strip().partition(" ")
            out[key] = value.strip()
    return out


@pytest.mark.parametrize("spec_id, point", points("local", "loopback"))
def test_local_points_run_the_project_program_on_yarn(cluster, spec_id, point):
    ctx = context(cluster, spec_id, point)
    result = hb.launch(ctx)
    argv = result.command
    executors = 1 if spec_id.endswith("32nodes") else 2
    pages = {"huge": 5000, "bigdata": 50000, "gigantic": 30000}[point["datasize"]]
    assert (result.status, argv[:5]) == ("dry run", ["/opt/spark/bin/spark-submit", "--master", "yarn",
                                                     "--deploy-mode", "client"])
    assert (option(argv, "--num-executors"), option(argv, "--executor-cores")) == (str(executors), str(2 // executors))
    assert argv[argv.index(str(hb.PROGRAM)) - 4:argv.index(str(hb.PROGRAM))] == [
        "--conf", f"spark.eventLog.dir={(ctx.attempt_dir / 'spark-events').resolve().as_uri()}",
        "--conf", "spark.ui.enabled=false"]
    graph = f"hdfs://10.0.0.1:19820/dlobd/data/pagerank-hibench-shaped-synthetic/pages-{pages}-seed-1/Input"
    assert option(argv, "--input") == graph and option(argv, "--edges") == graph + "/edges"
    assert option(argv, "--output").startswith("hdfs://10.0.0.1:19820/dlobd/output/pagerank/dlobd-")
    assert (option(argv, "--iterations"), option(argv, "--partitions"), option(argv, "--nodes")) == ("3", "4", "2")
    assert option(argv, "--report-dir") == str(ctx.attempt_dir.resolve() / "report")
    conf = spark_settings(argv)
    assert [conf[key] for key in PYSPARK_SETTINGS] == ["/stack/bin/python"] * 3
    # Spark 3.x's name and Spark 2.1's (RDMA-Spark 0.9.5 is a Spark 2.1)
    assert (conf["spark.executor.memoryOverhead"], conf["spark.yarn.executor.memoryOverhead"]) == ("768m", "768")
    assert "pyspark_python" not in result.labels
    assert result.labels["data"] == "synthetic, HiBench-shaped PageRank graph"
    assert result.labels["pages"].startswith(f"{pages:,} (HiBench's {point['datasize']}: ")
    assert result.labels["spark"] == "vanilla"
    assert list(ctx.attempt_dir.iterdir()) == []  # a dry run writes nothing


def test_on_the_paper_profile_pyspark_runs_in_tfos_python_and_the_generator_in_the_stacks(cluster, monkeypatch):
    """Spark 2.1's PySpark fails on the stacks' Python 3: every PySpark setting of the driver and
    the executors names DLOBD_TFOS_PYTHON; the graph generator (Python 3 code) keeps DLOBD_PYTHON."""
    monkeypatch.setenv("DLOBD_PROFILE", "paper")
    monkeypatch.setenv("DLOBD_TFOS_PYTHON", "/sw/py27/bin/python2.7")
    generated, launched = [], []

    def run_command(ctx, argv, env, **kw):
        launched.append(env)
        return runner.LaunchResult(argv, "ok")

    monkeypatch.setattr(hb, "make_graph", lambda folder, pages, python, log: generated.append(python))
    monkeypatch.setattr(hb.hadoop, "hdfs_stage", lambda local, path: hb.hadoop.hdfs_uri(path))
    monkeypatch.setattr(hb.hadoop, "hdfs_remove", lambda path: False)
    monkeypatch.setattr(runner, "run_command", run_command)
    ctx = context(cluster, SPECS[0], {"network": "loopback", "datasize": "huge"}, dry_run=False)
    result = hb.launch(ctx)
    assert generated == ["/stack/bin/python"]
    conf = spark_settings(result.command)
    assert [conf[key] for key in PYSPARK_SETTINGS] == ["/sw/py27/bin/python2.7"] * 3
    assert (launched[0]["PYSPARK_PYTHON"], launched[0]["PYSPARK_DRIVER_PYTHON"]) == ("/sw/py27/bin/python2.7",) * 2
    assert (conf["spark.executor.memoryOverhead"], conf["spark.yarn.executor.memoryOverhead"]) == ("768m", "768")
    assert result.labels["pyspark_python"].startswith("DLOBD_TFOS_PYTHON, a Python 2.7 or 3.5: Spark 2.1's "
                                                      "PySpark fails on the stacks' Python 3")
    assert result.versions["stack"] == ("the project's PySpark PageRank (SparkPageRank's algorithm) in "
                                        "/sw/py27/bin/python2.7 (DLOBD_TFOS_PYTHON)")


def test_the_output_an_earlier_attempt_left_at_this_attempts_path_is_removed_first(cluster, monkeypatch):
    """The output folder is named by the attempt's path (its YARN tag): a runs folder made again
    there finds the earlier attempt's output on HDFS, which Spark would refuse to write over."""
    removed, launched = [], []
    monkeypatch.setattr(hb, "make_graph", lambda folder, pages, python, log: None)
    monkeypatch.setattr(hb.hadoop, "hdfs_stage", lambda local, path: hb.hadoop.hdfs_uri(path))
    monkeypatch.setattr(hb.hadoop, "hdfs_remove", lambda path: removed.append(path) or True)
    monkeypatch.setattr(runner, "run_command", lambda ctx, argv, env, **kw: launched.append(removed[:]) or
                        runner.LaunchResult(argv, "ok"))
    ctx = context(cluster, SPECS[0], {"network": "loopback", "datasize": "huge"}, dry_run=False)
    result = hb.launch(ctx)
    output = f"{hb.HDFS_OUTPUT}/{hb.hadoop.app_tag(ctx)}"
    assert launched == [[output]]  # removed before the job starts
    assert result.command[result.command.index("--output") + 1] == hb.hadoop.hdfs_uri(output)
    assert (f" removed {hb.hadoop.hdfs_uri(output)}: the output of an earlier attempt in a folder of this "
            "attempt's path") in (ctx.attempt_dir / "prepare.log").read_text()


def test_on_the_paper_profile_without_tfos_python_the_program_is_not_runnable(cluster, monkeypatch):
    monkeypatch.setenv("DLOBD_PROFILE", "paper")
    ctx = context(cluster, SPECS[0], {"network": "loopback", "datasize": "huge"}, dry_run=False)
    with pytest.raises(NotRunnable, match=r"PySpark fails on the stacks' Python 3 .*SPARK-19019.*: on the "
                                          r"paper profile the project's PageRank runs in TensorFlowOnSpark's "
                                          r"Python 2.7 or 3.5, and DLOBD_TFOS_PYTHON is unset"):
        hb.launch(ctx)
    assert list(ctx.attempt_dir.iterdir()) == [] and not (cluster / "data").exists()  # no graph made


@pytest.mark.parametrize("spec_id, point", points("local", "loopback"))
def test_with_hibench_the_local_points_run_hibench_at_the_shrunk_size(hibench, spec_id, point):
    ctx = context(hibench.parent, spec_id, point, dry_run=False)
    conf = settings(hb.run_conf(ctx, hb.plan_point(ctx), "/opt/spark", "/opt/spark/conf"))
    pages = {"huge": 5000, "bigdata": 50000, "gigantic": 30000}[point["datasize"]]
    assert conf["hibench.scale.profile"] == "dlobd" and conf["hibench.pagerank.dlobd.pages"] == str(pages)
    assert conf["hibench.pagerank.dlobd.num_iterations"] == "3"
    assert conf["hibench.report.dir"] == str(ctx.attempt_dir.resolve() / "report")
    assert conf["hibench.default.map.parallelism"] == conf["hibench.default.shuffle.parallelism"] == "4"


@pytest.mark.parametrize("network", ["ipoib", "rdma"])
@pytest.mark.parametrize("spec_id, point", points("paper", "ipoib"))
def test_paper_points_run_hibench_with_the_networks_spark(hibench, monkeypatch, spec_id, point, network):
    """The paper's points as a cluster with an HCA runs them (the HCA check is the one part
    taken as given here)."""
    rdma_spark = hibench.parent / "rdma-spark"
    monkeypatch.setenv("RDMA_SPARK_HOME", str(rdma_spark))
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, net: [])
    ctx = context(hibench.parent, spec_id, {**point, "network": network}, scale="paper")
    result = hb.launch(ctx)
    conf_dir = ctx.attempt_dir.resolve() / "hibench-conf"
    scripts = hibench / hb.HIBENCH_PAGERANK
    assert result.command == ["env", f"HIBENCH_CONF_FOLDER={conf_dir}", "bash", "-c", 'set -e; "$1"; "$2"',
                              "hibench-pagerank", str(scripts / "prepare" / "prepare.sh"), str(scripts / "spark" / "run.sh")]
    assert result.labels["spark"] == ("rdma-spark" if network == "rdma" else "vanilla")
    nodes = 32 if spec_id.endswith("32nodes") else 64
    home = rdma_spark if network == "rdma" else Path("/opt/spark")
    conf = settings(hb.run_conf(ctx, hb.plan_point(ctx), str(home), str(home / "conf"), result.labels["spark"]))
    # RDMA-Spark's jars and switches over the host's settings; vanilla Spark's as they are
    assert conf.get("spark.yarn.jars") == (f"local:{rdma_spark}/jars/*" if network == "rdma" else None)
    assert conf.get("spark.ib.enabled") == ("true" if network == "rdma" else None)
    assert conf["hibench.scale.profile"] == point["datasize"] and "hibench.pagerank.dlobd.pages" not in conf
    assert (conf["hibench.yarn.executor.num"], conf["hibench.yarn.executor.cores"]) == (str(nodes), "24")
    assert conf["hibench.default.map.parallelism"] == conf["hibench.default.shuffle.parallelism"] == str(24 * nodes)
    assert conf["hibench.spark.master"] == "yarn" and conf["spark.yarn.tags"].startswith("dlobd-")
    assert conf["spark.eventLog.dir"] == (ctx.attempt_dir / "spark-events").resolve().as_uri()
    assert result.labels["data"] == "synthetic, HiBench's PageRank generator"
    assert result.labels["pages"] == f"{hb.PROFILES[point['datasize']][0]:,} (HiBench's {point['datasize']} profile)"
    assert list(ctx.attempt_dir.iterdir()) == []


def test_the_run_conf_overrides_the_sites_files_in_hibenchs_reading_order(hibench, monkeypatch):
    """HiBench reads its conf folder's *.conf in sorted name order, a later value winning
    (load_config.py parse_conf): the run's file must sort last. Its --properties-file replaces
    spark-defaults.conf, so the Spark's defaults are in it, without the secret."""
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, net: [])
    spark_conf = hibench.parent / "spark-conf"
    spark_conf.mkdir()
    (spark_conf / "spark-defaults.conf").write_text(
        "# site defaults\nspark.driver.host   192.168.100.1\nspark.authenticate true\n"
        "spark.authenticate.secret s3cr3t\nspark.eventLog.dir=file:///site/events\n"
        "spark.yarn.jars local:/opt/spark/jars/*\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(spark_conf))
    ctx = context(hibench.parent, SPECS[0], {"network": "ipoib", "datasize": "huge"}, scale="paper", dry_run=False)
    monkeypatch.setattr(runner, "run_command", lambda ctx, argv, **kw: runner.LaunchResult(argv, "ok"))
    hb.launch(ctx)
    conf_dir = ctx.attempt_dir / "hibench-conf"
    merged = {}
    for path in sorted(conf_dir.glob("*.conf")):
        merged.update(settings(path.read_text()))
    assert sorted(p.name for p in conf_dir.iterdir()) == ["hibench.conf", "spark.conf", hb.RUN_CONF]
    assert merged["hibench.scale.profile"] == "huge" and merged["hibench.yarn.executor.num"] == "32"
    assert merged["hibench.report.dir"] == str(ctx.attempt_dir.resolve() / "report")
    assert (conf_dir / "spark.conf").read_text() == (hibench / "conf" / "spark.conf").read_text()
    assert merged["spark.driver.host"] == "192.168.100.1" and merged["spark.yarn.jars"] == "local:/opt/spark/jars/*"
    assert merged["spark.eventLog.dir"] == (ctx.attempt_dir / "spark-events").resolve().as_uri()
    assert "spark.authenticate.secret" not in merged and "s3cr3t" not in (conf_dir / hb.RUN_CONF).read_text()


def test_hibench_profiles_without_hibench_are_not_runnable(cluster, monkeypatch):
    monkeypatch.setattr(capabilities, "network_missing", lambda stack, net: [])
    ctx = context(cluster, SPECS[1], {"network": "ipoib", "datasize": "bigdata"}, scale="paper")
    with pytest.raises(NotRunnable, match=r"^HiBench's bigdata profile \(50,000,000 pages\) needs HiBench's "
                                          r"own generator: set hibench_enabled: true \(role hibench installs "
                                          r"HiBench and records HIBENCH_HOME\), or HIBENCH_HOME in "
                                          r"dlobd_stack_settings$"):
        hb.launch(ctx)


def test_hibench_home_without_hibench_is_named(cluster, monkeypatch):
    monkeypatch.setenv("HIBENCH_HOME", str(cluster))
    ctx = context(cluster, SPECS[0], {"network": "loopback", "datasize": "huge"}, dry_run=False)
    with pytest.raises(NotRunnable, match=r"^HiBench at .* \(HIBENCH_HOME\) has no "
                                          r"bin/workloads/websearch/pagerank/spark/run.sh"):
        hb.launch(ctx)


@pytest.mark.parametrize("spec_id, point", points("local", "rdma"))
def test_rdma_here_is_not_runnable_naming_the_hca_and_rdma_spark(cluster, spec_id, point):
    if not capabilities.missing(["infiniband"]):
        pytest.skip("this machine has an InfiniBand HCA")
    scale = spec.load_all(ROOT)[spec_id].scale("local")
    assert any("rdma-spark" in m for m in capabilities.point_missing(scale, point))  # caught before any launch
    with pytest.raises(NotRunnable) as err:
        hb.launch(context(cluster, spec_id, point))
    assert str(err.value).startswith("network rdma: ")
    assert "no InfiniBand HCA" in str(err.value) and "RDMA_SPARK_HOME" in str(err.value)


@pytest.mark.parametrize("fixed, message", [
    ({"datasize": "enormous"}, "datasize 'enormous' is not a HiBench PageRank profile"),
    ({"cores": 3}, "3 cores do not split evenly over 2 executors"),
    ({"pages": {"huge": 5000}}, "'pages' names no page count for datasize gigantic"),
    ({"iterations": 0}, "'iterations' must be a positive whole number, got 0"),
])
def test_bad_points_are_refused_with_the_reason(cluster, fixed, message):
    ctx = context(cluster, SPECS[1], {"network": "loopback", "datasize": "gigantic"})
    ctx.fixed.update(fixed)
    ctx.point.update({k: v for k, v in fixed.items() if k == "datasize"})
    with pytest.raises(ValueError, match=message):
        hb.plan_point(ctx)


# ---------------------------------------------------------------- the synthetic graph

def test_graph_is_made_once_with_hibenchs_shape(tmp_path):
    folder = tmp_path / "graph"
    with open(tmp_path / "prepare.log", "w") as log:
        hb.make_graph(folder, 2000, sys.executable, log)
        mtime = (folder / "Input" / "edges" / "part-00000").stat().st_mtime_ns
        hb.make_graph(folder, 2000, sys.executable, log)
    assert (folder / "Input" / "edges" / "part-00000").stat().st_mtime_ns == mtime
    assert "using" in (tmp_path / "prepare.log").read_text()
    edges = np.loadtxt(folder / "Input" / "edges" / "part-00000", dtype=np.int64)
    links = np.bincount(edges[:, 0], minlength=2000)
    # floor(0.05 * page length), the length Gaussian(800, 80): mean 39.5, standard deviation 4
    assert 39 < links.mean() < 40 and 3.5 < links.std() < 4.5
    hits = np.bincount(edges[:, 1], minlength=2000)
    # Zipf(0.5): page 0 is linked about (100 / 1) ** 0.5 = 10 times as often as page 99
    assert 6 < hits[0] / hits[99] < 15 and edges.max() < 2000
    assert np.loadtxt(folder / "Input" / "vertices" / "part-00000", dtype=np.int64).tolist() == list(range(2000))
    assert "SYNTHETIC" in os.listdir(folder) and not list(tmp_path.glob("*.partial*"))


def test_a_failed_generation_leaves_no_graph(tmp_path):
    with open(tmp_path / "prepare.log", "w") as log, pytest.raises(RuntimeError, match="exited with status"):
        hb.make_graph(tmp_path / "graph", 0, sys.executable, log)
    assert not (tmp_path / "graph").exists() and not list(tmp_path.glob("graph.partial*"))
    assert "pages must be at least 1" in (tmp_path / "prepare.log").read_text()


# ---------------------------------------------------------------- the PageRank program

def spark_pagerank_reference(edges: np.ndarray, iterations: int) -> dict:
    """SparkPageRank's recurrence with numpy: distinct links; ranks of the pages with links
    start at 1; a page's new rank is 0.15 + 0.85 * the rank / out-degree its linkers send;
    only pages some ranked page links to keep a rank."""
    edges = np.unique(edges, axis=0)
    n = int(edges.max()) + 1
    src, dst = edges[:, 0], edges[:, 1]
    degree = np.bincount(src, minlength=n)
    ranked = degree > 0
    rank = ranked.astype(float)
    for _ in range(iterations):
        received = np.bincount(dst, weights=rank[src] / degree[src], minlength=n)
        reached = np.zeros(n, dtype=bool)
        reached[dst[ranked[src]]] = True
        rank, ranked = np.where(reached, 0.15 + 0.85 * received, 0.0), reached
    return {int(page): float(rank[page]) for page in np.flatnonzero(ranked)}


def local_spark():
    """spark-submit and the Python of Spark's workers: the provisioned stack's, else
    SPARK_HOME and PYSPARK_PYTHON of the environment (e.g. a venv with pyspark)."""
    home = provenance.stack_setting("SPARK_HOME")
    python = provenance.stack_setting("PYSPARK_PYTHON")
    submit = Path(home, "bin", "spark-submit") if home else None
    if not (submit and submit.is_file() and python and shutil.which("java")):
        pytest.skip("no Spark to run the PageRank program in local mode: needs SPARK_HOME with "
                    "bin/spark-submit, PYSPARK_PYTHON (a Python with pyspark 3.5) and java on PATH "
                    "(the provisioned stack, or `pip install 'pyspark==3.5.*'` and SPARK_HOME=<its "
                    "pyspark folder>)")
    return str(submit), python


def test_program_is_python_2_7_syntax():
    """The paper profile's Spark 2.1 runs the program in Python 2.7 (or 3.5)."""
    source = hb.PROGRAM.read_text()
    tree = ast.parse(source, feature_version=(3, 5))  # no f-strings, no variable annotations
    assert newer_syntax(tree) == []
    assert "from __future__ import absolute_import, division, print_function, unicode_literals" in source
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "argparse", "io", "operator", "os", "sys", "time", "pyspark"}


def test_program_report_lines_are_hibenchs_printf_layout(tmp_path):
    """write_report appends HiBench's gen_report lines, the header once, to a folder given as a
    str (the command line's) or a Path."""
    program = load_program(hb.PROGRAM, "spark_pagerank")
    end = 1700000000.0
    first = program.write_report(str(tmp_path / "report"), "PySparkPagerank", end, 2620000, 1512, 2)
    second = program.write_report(tmp_path / "report", "PySparkPagerank", end + 60, 2620000, 61234, 1)
    assert Path(first) == Path(second) == tmp_path / "report" / "hibench.report"
    day, clock = (time.strftime(f, time.localtime(end)) for f in ("%Y-%m-%d", "%H:%M:%S"))
    day2, clock2 = (time.strftime(f, time.localtime(end + 60)) for f in ("%Y-%m-%d", "%H:%M:%S"))
    assert Path(first).read_text() == hibench_report(
        ("PySparkPagerank", day, clock, "2620000", "1.512", "1732804", "866402"),
        ("PySparkPagerank", day2, clock2, "2620000", "61.234", "42786", "42786"))
    assert program.parse_link("12\t7") == ("12", "7") and program.parse_link("a b c") == ("b", "c")
    with pytest.raises(ValueError, match="not a link line"):
        program.parse_link("12")


def test_program_ranks_match_an_independent_computation(tmp_path):
    submit, python = local_spark()
    graph = tmp_path / "graph"
    subprocess.run([sys.executable, str(hb.GENERATOR), "pagerank-synthetic", "--out", str(graph),
                    "--pages", "300", "--seed", "5"], check=True, capture_output=True)
    # two hand-made links more: a page nobody links to, and a link given twice
    with open(graph / "Input" / "edges" / "part-00000", "a") as fh:
        fh.write("300\t7\n300\t7\n")
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [submit, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.local.dir={tmp_path}", "--conf", "spark.driver.host=127.0.0.1",
         str(hb.PROGRAM), "--edges", str(graph / "Input" / "edges"), "--input", str(graph / "Input"),
         "--output", str(tmp_path / "ranks"), "--iterations", "3", "--partitions", "2",
         "--report-dir", str(tmp_path / "report"), "--nodes", "2"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = {}
    for part in glob.glob(str(tmp_path / "ranks" / "part-*")):
        for line in Path(part).read_text().splitlines():
            page, rank = line.split("\t")
            got[int(page)] = float(rank)
    expected = spark_pagerank_reference(np.loadtxt(graph / "Input" / "edges" / "part-00000", dtype=np.int64), 3)
    assert got.keys() == expected.keys() and 300 not in got
    assert max(abs(got[p] - expected[p]) / expected[p] for p in got) < 1e-12
    report = stacks.parse_file("hibench_spark", tmp_path / "report" / "hibench.report")
    assert (report.status, report.finished, report.meta["workload"]) == ("ok", True, "PySparkPagerank")
    size = sum(p.stat().st_size for p in (graph / "Input").rglob("*") if p.is_file())
    assert report.meta["input_bytes"] == size
    duration = values(report, "end_to_end_s")[0]
    assert values(report, "input_bytes_per_s") == [size * 1000 // round(duration * 1000)]
    assert report.meta["throughput_per_node_bytes_per_s"] == values(report, "input_bytes_per_s")[0] // 2


# ---------------------------------------------------------------- reports of several runs

def test_a_report_of_several_runs_reads_its_newest_pagerank_run_and_says_so():
    r = hb.parse("".join(reallogs.lines("hibench_spark", "hibench7-pre-all-workloads-2017")))
    assert (r.status, r.finished) == ("ok", True)
    assert (r.meta["workload"], r.meta["report_line"], r.meta["report_runs"]) == ("ScalaSparkPagerank", 19, 28)
    assert values(r, "end_to_end_s") == [23.345]
    # without a PageRank run, the newest run
    r = hb.parse("".join(reallogs.lines("hibench_spark", "sparkrdma-terasort-two-runs-2018")))
    assert (r.meta["workload"], r.meta["report_line"], r.meta["report_runs"]) == ("ScalaSparkTerasort", 3, 2)
    assert values(r, "end_to_end_s") == [52.166]


def test_a_report_whose_runs_go_back_in_time_is_two_reports():
    report = reallogs.lines("hibench_spark", "hibench7-pre-all-workloads-2017")
    r = hb.parse("".join(report[:1] + report[10:] + report[1:10]))
    assert r.status == "unparseable" and "line 21: a run of 2017-09-22 15:31:36, not after the run on line 20" in r.reason


def test_a_report_of_several_runs_cut_mid_line_reads_the_complete_runs():
    r = hb.parse(reallogs.cut_mid_line(reallogs.lines("hibench_spark", "hibench7-pre-all-workloads-2017")))
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason
    assert (r.meta["report_line"], r.meta["report_runs"]) == (19, 27)
