"""HiBench PageRank on Spark: Intel HiBench's websearch/pagerank workload, whose Spark side is
Spark's SparkPageRank example over a web graph HiBench's data generator writes (profiles:
`huge` 5,000,000 pages, `gigantic` 30,000,000, `bigdata` 50,000,000; 3 iterations each).

Parser: reads `report/hibench.report`, the summary HiBench appends one line to per run, in
the layout of HiBench's `gen_report` (bin/functions/workload_functions.sh) with the column
formats of its conf/hibench.conf: a header, then per run

  Type Date Time Input_data_size Duration(s) Throughput(bytes/s) Throughput/node

whitespace-separated, e.g. `ScalaSparkPagerank 2017-03-02 10:11:12 2620000000 123.456
21222464 663202`. Duration has three decimals (bc prints `.512` below one second);
Input_data_size is the bytes of the workload's HDFS input; the throughputs are whole bytes
per second. HiBench appends one line per run and writes the header only when it creates the
file (HiBench 6 and 7 alike; tests/data/logs/real/hibench_spark/ holds reports of several runs),
so a report may hold runs of several workloads. The parser reads one run: the newest
PageRank line (its Type ending in `Pagerank`), else the newest line; where the report holds
several runs, meta `report_line` and `report_runs` say which line it read among how many. Rows:
`end_to_end_s` (Duration) and `input_bytes_per_s` (Throughput), run totals; meta: the workload
(Type), the input bytes, the per-node throughput, the date and time. The launcher gives every
attempt its own report folder, so its reports hold one run. A second header, or a run not
dated after the line before it, is two reports mixed (unparseable, naming the line); a header
without a report line is a run that ended before HiBench wrote its result.

Launcher, two ways to the same report:
- with HiBench on the cluster (HIBENCH_HOME, from the hibench role): HiBench's own
  `bin/workloads/websearch/pagerank/prepare/prepare.sh` (its generator, a MapReduce job)
  then `spark/run.sh`, reading a configuration folder of the attempt (`hibench-conf/`: the
  site's conf/*.conf and the run's settings in `zz-dlobd-run.conf`, which sorts last so its
  values win): the point's data size as HiBench's scale profile (or, where the scale gives
  `pages`, a profile `dlobd` of that many pages), the report in the attempt, executors,
  parallelism, Spark's event log in the attempt and the run's YARN tag. The network axis
  picks the Spark HiBench submits with (config/networks.yaml): vanilla Spark, or OSU
  RDMA-Spark from $RDMA_SPARK_HOME, which needs an InfiniBand HCA.
- without HiBench, where the scale gives `pages` per data size (a graph that fits one
  host): workloads/pagerank/spark_pagerank.py, the project's PySpark program with
  SparkPageRank's algorithm, which writes the same report line (Type `PySparkPagerank`),
  over a SYNTHETIC HiBench-shaped graph written by workloads/data/make_datasets.py
  (`pagerank-synthetic`, fixed seed) into $DLOBD_DATA_DIR once and staged into HDFS, through
  `spark-submit --master yarn` in client mode. Its run.json labels say synthetic and
  HiBench-shaped. On the paper profile (Spark 2.1) the program's driver and executors run
  TensorFlowOnSpark's Python (DLOBD_TFOS_PYTHON, a Python 2.7 or 3.5; label `pyspark_python`),
  as Spark 2.1's PySpark fails on the stacks' Python 3; without it those points are not
  runnable. The generator runs in the stacks' Python on every profile. HiBench's own profiles
  (millions of pages) need HiBench's generator: without HIBENCH_HOME such a point is not
  runnable.
Settings (the point's or the scale's `fixed`): `datasize` (a HiBench profile), `pages` (per
data size), `iterations`, `worker_nodes` or `executors`, `cores` (total executor cores,
split evenly), `partitions` (default: the cores; HiBench's map and shuffle parallelism),
`executor_memory`, `driver_memory`.
"""

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from dlobd import ROOT, NotRunnable
from dlobd.cluster import hadoop, provenance
from dlobd.spec.metrics import row
from dlobd.stacks import (
    CUT_LINE,
    NO_LINES,
    LogError,
    ParseResult,
    line_parser,
    positive_whole,
    runner,
    setting,
    whole_number,
)

REPORT = "report/hibench.report"
LOG_FILES = (REPORT,)

HEADER = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
          "Throughput/node")
# the Type suffix of HiBench's PageRank workloads (ScalaSparkPagerank, HadoopPagerank ...)
PAGERANK = "Pagerank"
FIELDS = (
    ("Date", re.compile(r"\d{4}-\d{2}-\d{2}")),
    ("Time", re.compile(r"\d{2}:\d{2}:\d{2}")),
    ("Input_data_size", re.compile(r"\d+")),
    ("Duration(s)", re.compile(r"\d+(?:\.\d*)?|\.\d+")),
    ("Throughput(bytes/s)", re.compile(r"\d+")),
    ("Throughput/node", re.compile(r"\d+")),
)


def _report_line(no: int, fields: list[str]) -> dict:
    if len(fields) != len(HEADER):
        raise LogError(f"line {no}: {len(fields)} columns, a hibench.report line has {len(HEADER)} "
                       f"({' '.join(HEADER)})")
    for (name, pattern), value in zip(FIELDS, fields[1:]):
        if not pattern.fullmatch(value):
            raise LogError(f"line {no}: {name} {value!r} is not a value of hibench.report's format")
    return dict(zip(HEADER, fields))


def _parse(lines, cut) -> ParseResult:
    lines = [(no, line.split()) for no, line in lines if line.strip()]
    if not any(tuple(f) == HEADER or (len(f) == len(HEADER) and FIELDS[0][1].fullmatch(f[1]))
               for _, f in lines):
        return ParseResult.unparseable(
            f"{NO_LINES} hibench.report's format: no column header '{' '.join(HEADER)}' and no "
            "report line")
    header_at = None
    runs = []  # (line number, values) in the report's order
    for no, fields in lines:
        if tuple(fields) == HEADER:
            if header_at is not None:
                raise LogError(f"line {no}: a second column header (the first is on line {header_at}): "
                               "two reports interleaved or concatenated?")
            header_at = no
            continue
        if header_at is None:
            raise LogError(f"line {no}: a line before the column header (HiBench writes the header "
                           "first): not a whole hibench.report")
        values = _report_line(no, fields)
        if runs and (values["Date"], values["Time"]) <= (runs[-1][1]["Date"], runs[-1][1]["Time"]):
            raise LogError(f"line {no}: a run of {values['Date']} {values['Time']}, not after the run on "
                           f"line {runs[-1][0]} (HiBench appends runs in order): two reports interleaved "
                           "or concatenated?")
        runs.append((no, values))
    if not runs:
        reason = (f"{NO_LINES} hibench.report's format with a result: the column header (line "
                  f"{header_at}) but no report line: the run ended before HiBench reported it")
        return ParseResult.unparseable(reason + (f"; {CUT_LINE}" if cut else ""))
    pagerank = [run for run in runs if run[1]["Type"].endswith(PAGERANK)]
    found_at, found = (pagerank or runs)[-1]
    result = ParseResult(meta={"workload": found["Type"], "date": found["Date"], "time": found["Time"],
                               "input_bytes": int(found["Input_data_size"]),
                               "throughput_per_node_bytes_per_s": int(found["Throughput/node"])})
    if len(runs) > 1:
        result.meta.update(report_line=found_at, report_runs=len(runs))
    result.rows += [row("end_to_end_s", float(found["Duration(s)"])),
                    row("input_bytes_per_s", float(found["Throughput(bytes/s)"]))]
    return result.close(None, cut=cut)


parse = line_parser(_parse)


# ---------------------------------------------------------------- launcher

PROGRAM = ROOT / "workloads" / "pagerank" / "spark_pagerank.py"
GENERATOR = ROOT / "workloads" / "data" / "make_datasets.py"
# HiBench's PageRank scale profiles (its conf/workloads/websearch/pagerank.conf): pages, iterations
PROFILES = {"tiny": (50, 1), "small": (5000, 3), "large": (500000, 3), "huge": (5000000, 3),
            "gigantic": (30000000, 3), "bigdata": (50000000, 3)}
HIBENCH_PAGERANK = Path("bin") / "workloads" / "websearch" / "pagerank"
# HiBench reads its workload's conf after the conf folder and sets every named profile there,
# so a shrunk graph is a profile of its own
OWN_PROFILE = "dlobd"
RUN_CONF = "zz-dlobd-run.conf"
GRAPH = "pagerank-hibench-shaped-synthetic"
SEED = 1
HDFS_DATA = "/dlobd/data"
HDFS_OUTPUT = "/dlobd/output/pagerank"
WORKLOAD = "PySparkPagerank"
EXECUTOR_MEMORY = "1g"
DRIVER_MEMORY = "1g"
# the executor's Python workers hold their partitions' links beside the JVM heap (YARN counts
# them as overhead): pyspark's daemon and two workers peaked at 480 MiB together on the
# 50,000-page graph (Spark local[2], 4 partitions)
EXECUTOR_OVERHEAD_MB = 768
PAPER_PYSPARK_FAILS = ("Spark 2.1's PySpark fails on the stacks' Python 3 (on 3.6 and newer in Spark "
                       "2.1.0, SPARK-19019; on 3.8 and newer in every Spark 2.x, SPARK-29536)")


def plan_point(ctx: runner.RunContext) -> dict:
    """The point's PageRank: HiBench profile, the scale's page count for it (None: the
    profile's own), iterations, executors, cores per executor and partitions."""
    datasize = str(setting(ctx, "datasize", ""))
    if datasize not in PROFILES:
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: datasize {datasize!r} is not a HiBench "
                         f"PageRank profile ({', '.join(PROFILES)})")
    profile_pages, profile_iterations = PROFILES[datasize]
    pages = setting(ctx, "pages")
    if isinstance(pages, dict):
        if datasize not in pages:
            raise ValueError(f"{ctx.spec['id']} {ctx.scale}: 'pages' names no page count for "
                             f"datasize {datasize}")
        pages = pages[datasize]
    executors = positive_whole(ctx, "executors", setting(ctx, "worker_nodes", 1))
    cores = positive_whole(ctx, "cores", executors)
    if cores % executors:
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: {cores} cores do not split evenly over "
                         f"{executors} executors")
    return {"datasize": datasize, "profile_pages": profile_pages,
            "pages": None if pages is None else whole_number(ctx, "pages", pages),
            "iterations": positive_whole(ctx, "iterations", profile_iterations),
            "executors": executors, "executor_cores": cores // executors,
            "partitions": positive_whole(ctx, "partitions", cores)}


def hibench_home(dry_run: bool) -> Path | None:
    """HiBench's folder on this cluster (HIBENCH_HOME), None when unset."""
    home = provenance.stack_setting("HIBENCH_HOME")
    if not home:
        return None
    run_sh = Path(home) / HIBENCH_PAGERANK / "spark" / "run.sh"
    if not dry_run and not run_sh.is_file():
        raise NotRunnable(f"HiBench at {home} (HIBENCH_HOME) has no {HIBENCH_PAGERANK}/spark/run.sh "
                          "(is the hibench role provisioned?)")
    return Path(home)


def spark_defaults(conf_dir: str) -> dict:
    """The properties of a Spark's conf/spark-defaults.conf, secrets left out (HiBench copies
    what it is given into the run's report folder)."""
    path = Path(conf_dir) / "spark-defaults.conf"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            # Java properties: the key ends at the first '=', ':' or blank
            key, *value = re.split(r"\s*[=:]\s*|\s+", line, maxsplit=1)
            if not re.search("secret|password", key, re.IGNORECASE):
                out[key] = value[0] if value else ""
    return out


def run_conf(ctx: runner.RunContext, plan: dict, spark_home: str, spark_conf_dir: str,
             flavour: str = "vanilla") -> str:
    """The run's HiBench settings (zz-dlobd-run.conf): HiBench reads the conf folder's files in
    name order, a later value winning, so these override the site's hibench.conf, hadoop.conf
    and spark.conf. HiBench submits with its own --properties-file, which replaces Spark's
    spark-defaults.conf: the chosen Spark's defaults (vanilla or RDMA-Spark's switches) come
    first, the run's settings after them."""
    adir = Path(ctx.attempt_dir).resolve()
    settings = {**spark_defaults(spark_conf_dir), **hadoop.transport_conf(flavour),
                "hibench.scale.profile": plan["datasize"]}
    if plan["pages"] is not None or plan["iterations"] != PROFILES[plan["datasize"]][1]:
        # HiBench's other PageRank settings of every profile: no blocks (Pegasus' Hadoop side)
        settings |= {"hibench.scale.profile": OWN_PROFILE,
                    f"hibench.pagerank.{OWN_PROFILE}.pages": plan["pages"] or plan["profile_pages"],
                    f"hibench.pagerank.{OWN_PROFILE}.num_iterations": plan["iterations"],
                    f"hibench.pagerank.{OWN_PROFILE}.block": 0,
                    f"hibench.pagerank.{OWN_PROFILE}.block_width": 16}
    settings.update({
        "hibench.report.dir": adir / "report",
        "hibench.spark.home": spark_home,
        "hibench.spark.master": "yarn",
        "hibench.yarn.executor.num": plan["executors"],
        "hibench.yarn.executor.cores": plan["executor_cores"],
        "hibench.default.map.parallelism": plan["partitions"],
        "hibench.default.shuffle.parallelism": plan["partitions"],
    })
    for name in ("executor_memory", "driver_memory"):
        if (value := setting(ctx, name)) is not None:
            settings[f"spark.{name.replace('_', '.')}"] = value
    conf = hadoop.spark_conf(ctx)
    settings.update(pair.split("=", 1) for flag, pair in zip(conf[::2], conf[1::2]) if flag == "--conf")
    width = max(len(k) for k in settings) + 2
    return (f"# The settings of one run, written by dlobd/stacks/hibench_spark.py for {adir}\n"
            + "".join(f"{k.ljust(width)}{v}\n" for k, v in settings.items()))


def hibench_command(home: Path, conf_dir: Path) -> list[str]:
    """HiBench's generator, then its Spark PageRank, both reading the attempt's conf folder."""
    scripts = home / HIBENCH_PAGERANK
    return ["env", f"HIBENCH_CONF_FOLDER={conf_dir}", "bash", "-c", 'set -e; "$1"; "$2"', "hibench-pagerank",
            str(scripts / "prepare" / "prepare.sh"), str(scripts / "spark" / "run.sh")]


def graph_dir(data_dir: str, pages: int) -> Path:
    return Path(data_dir) / GRAPH / f"pages-{pages}-seed-{SEED}"


def make_graph(folder: Path, pages: int, python: str, log) -> None:
    """Write the synthetic graph into `folder` unless it is there; a partial write never
    takes the folder's name."""
    if (folder / "Input").is_dir():
        log.write(f"{runner.now_iso()} using {folder} ({(folder / 'SYNTHETIC').read_text().strip()})\n")
        return
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    argv = [python, str(GENERATOR), "pagerank-synthetic", "--out", str(partial), "--pages", str(pages),
            "--seed", str(SEED)]
    log.write(f"{runner.now_iso()} generating: {shlex.join(argv)}\n")
    log.flush()
    done = subprocess.run(argv, stdout=log, stderr=log)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"the graph generator exited with status {done.returncode} (see prepare.log)")
    partial.rename(folder)


def paper_pyspark_python() -> str | None:
    """The Python of the program's driver and executors on the paper profile (DLOBD_TFOS_PYTHON),
    NotRunnable where the cluster gives none; None on other profiles, whose PySpark runs in the
    stacks' Python."""
    if provenance.stack_setting("DLOBD_PROFILE") != "paper":
        return None
    python = provenance.stack_setting(provenance.TFOS_PYTHON)
    if not python:
        raise NotRunnable(f"{PAPER_PYSPARK_FAILS}: on the paper profile the project's PageRank runs in "
                          f"TensorFlowOnSpark's Python 2.7 or 3.5, and {provenance.TFOS_PYTHON} is unset "
                          "(dlobd_stack_settings, docs/new-cluster.md)")
    return python


def own_command(ctx: runner.RunContext, plan: dict, spark_submit: str, python: str, input_uri: str,
                output_uri: str, flavour: str = "vanilla") -> list[str]:
    """spark-submit of the project's PageRank on YARN, client mode (the driver writes the report
    into the attempt), its driver and executors in `python`, on the Spark `flavour`."""
    conf = {**hadoop.transport_conf(flavour), "spark.pyspark.python": python, "spark.pyspark.driver.python": python,
            "spark.executorEnv.PYSPARK_PYTHON": python,
            # Spark 2.3 renamed spark.yarn.executor.memoryOverhead (MiB) and 3.x still reads the old
            # name where the new one is unset: both, for Spark 2.1 (the paper profile's, OSU
            # RDMA-Spark 0.9.5's) and 3.x alike
            "spark.executor.memoryOverhead": f"{EXECUTOR_OVERHEAD_MB}m",
            "spark.yarn.executor.memoryOverhead": str(EXECUTOR_OVERHEAD_MB),
            "spark.dynamicAllocation.enabled": "false", "spark.yarn.maxAppAttempts": "1"}
    argv = [spark_submit, "--master", "yarn", "--deploy-mode", "client",
            "--num-executors", str(plan["executors"]), "--executor-cores", str(plan["executor_cores"]),
            "--executor-memory", str(setting(ctx, "executor_memory", EXECUTOR_MEMORY)),
            "--driver-memory", str(setting(ctx, "driver_memory", DRIVER_MEMORY))]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return argv + [*hadoop.spark_conf(ctx), str(PROGRAM),
                   "--edges", f"{input_uri}/edges", "--input", input_uri, "--output", output_uri,
                   "--iterations", str(plan["iterations"]), "--partitions", str(plan["partitions"]),
                   "--report-dir", str(Path(ctx.attempt_dir).resolve() / "report"),
                   "--nodes", str(max(len(provenance.workers()), 1)), "--workload", WORKLOAD]


def _required(name: str) -> str:
    value = provenance.stack_setting(name)
    if not value:
        raise FileNotFoundError(f"{name} is not set: is the stack provisioned under {provenance.prefix()}?")
    return value


def launch(ctx: runner.RunContext) -> runner.LaunchResult:
    network = str(ctx.point.get("network", "loopback"))
    plan = plan_point(ctx)
    spark_submit, env, flavour = hadoop.spark_install("hibench_spark", network, hadoop.stack_env(),
                                                      dry_run=ctx.dry_run)
    home = hibench_home(ctx.dry_run)
    if home is None and plan["pages"] is None:
        raise NotRunnable(f"HiBench's {plan['datasize']} profile ({plan['profile_pages']:,} pages) "
                          "needs HiBench's own generator: set hibench_enabled: true (role hibench installs "
                          "HiBench and records HIBENCH_HOME), or HIBENCH_HOME in dlobd_stack_settings")
    adir = Path(ctx.attempt_dir).resolve()
    # one data label per data source (figures list every distinct one); the size apart
    pages = (f"{plan['profile_pages']:,} (HiBench's {plan['datasize']} profile)" if plan["pages"] is None
             else f"{plan['pages']:,} (HiBench's {plan['datasize']}: {plan['profile_pages']:,})")
    if home is not None:
        conf_dir = adir / "hibench-conf"
        if not ctx.dry_run:
            conf_dir.mkdir()
            for path in sorted((home / "conf").glob("*.conf")):
                shutil.copyfile(path, conf_dir / path.name)
            with open(conf_dir / RUN_CONF, "x", encoding="utf-8") as fh:
                fh.write(run_conf(ctx, plan, env["SPARK_HOME"], env.get("SPARK_CONF_DIR", ""), flavour))
        result = runner.run_command(ctx, hibench_command(home, conf_dir), env=env, cwd=str(adir),
                                  yarn_tag=hadoop.app_tag(ctx))
        result.versions = {"stack": f"HiBench {env.get('HIBENCH_VERSION', 'unknown')}"}
        result.labels = {"data": "synthetic, HiBench's PageRank generator",
                         "workload": "HiBench ScalaSparkPagerank"}
    else:
        # NotRunnable before the graph is made
        paper_python = paper_pyspark_python()
        stacks_python = _required("DLOBD_PYTHON")
        pyspark_python = paper_python or stacks_python
        local = graph_dir(_required("DLOBD_DATA_DIR"), plan["pages"])
        hdfs_path = f"{HDFS_DATA}/{GRAPH}/{local.name}/Input"
        output_path = f"{HDFS_OUTPUT}/{hadoop.app_tag(ctx)}"
        if ctx.dry_run:
            input_uri = hadoop.hdfs_uri(hdfs_path)
        else:
            with open(adir / "prepare.log", "x", encoding="utf-8") as log:
                make_graph(local, plan["pages"], stacks_python, log)
                log.write(f"{runner.now_iso()} staging {local / 'Input'} into HDFS {hdfs_path}\n")
                log.flush()
                input_uri = hadoop.hdfs_stage(local / "Input", hdfs_path)
                log.write(f"{runner.now_iso()} staged: {input_uri}\n")
                # The tag names the attempt by its folder: a runs folder made again at the same
                # path (another clone, the runs removed) finds the earlier attempt's output on a
                # kept HDFS, which Spark would not write over. HiBench's scripts clear theirs too.
                if hadoop.hdfs_remove(output_path):
                    log.write(f"{runner.now_iso()} removed {hadoop.hdfs_uri(output_path)}: the output of an "
                              "earlier attempt in a folder of this attempt's path\n")
        output_uri = hadoop.hdfs_uri(output_path)
        argv = own_command(ctx, plan, spark_submit, pyspark_python, input_uri, output_uri, flavour)
        env.update({"PYSPARK_PYTHON": pyspark_python, "PYSPARK_DRIVER_PYTHON": pyspark_python})
        result = runner.run_command(ctx, argv, env=env, cwd=str(adir), yarn_tag=hadoop.app_tag(ctx))
        stack = "the project's PySpark PageRank (SparkPageRank's algorithm)"
        result.versions = {"stack": f"{stack} in {paper_python} ({provenance.TFOS_PYTHON})" if paper_python else stack}
        result.labels = {"data": "synthetic, HiBench-shaped PageRank graph",
                         "workload": f"{WORKLOAD}: SparkPageRank's algorithm on a HiBench-shaped graph"}
        if paper_python:
            result.labels["pyspark_python"] = f"{provenance.TFOS_PYTHON}, a Python 2.7 or 3.5: {PAPER_PYSPARK_FAILS}"
    result.labels.update({"pages": pages, "iterations": str(plan["iterations"]), "spark": flavour,
                          "network": network})
    result.hosts = hadoop.with_application_roles(provenance.cluster_hosts(),
                                                hadoop.application_roles(adir))
    return result
