"""The metric vocabulary and the stack parsers, on real logs (tests/data/logs/, see its
README for the commands that made them) and on damaged copies of them."""

import random
import re
import shutil
from pathlib import Path

import pytest

from dlobd import cli, stacks
from dlobd.spec import metrics
from dlobd.stacks.shared.caffe_solver import GLOG, GlogClock
import reallogs

ROOT = Path(__file__).resolve().parent.parent
LOGS = Path(__file__).resolve().parent / "data" / "logs"


def text(rel: str) -> str:
    return stacks.read_log(LOGS / rel)


def parse(stack: str, rel: str) -> stacks.ParseResult:
    return stacks.get(stack).parse(text(rel))


def values(result, metric, **where):
    return [r["value"] for r in result.rows if r["metric"] == metric
            and all(r.get(k) == v for k, v in where.items())]


# ---------------------------------------------------------------- vocabulary

def doc_table(heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after `heading` in docs/metrics.md."""
    doc = (ROOT / "docs" / "metrics.md").read_text()
    section = doc.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without header and separator


def test_doc_vocabulary_equals_code():
    documented = {r[0].strip("`"): r for r in doc_table("## Vocabulary")}
    assert set(documented) == set(metrics.METRICS)
    for name, (_, unit, better, reducer, dims, meaning) in documented.items():
        m = metrics.METRICS[name]
        assert (unit, better, reducer, meaning) == (m.unit, m.better, m.reducer, m.meaning), name
        assert [d.strip("`") for d in dims.split(", ") if d] == list(m.dims), name


def test_doc_phases_equal_code():
    documented = {r[0].strip("`"): r[1] for r in doc_table("### Phases of `time_breakdown_s`")}
    assert documented == metrics.PHASES


def test_vocabulary_has_the_required_metrics():
    required = {"loss", "top1_accuracy", "wall_clock_s", "throughput_records_per_s", "images_per_s",
                "steps_per_s", "epoch_time_s", "end_to_end_s", "train_time_s", "latency_us",
                "bandwidth_mb_per_s", "rpc_calls_per_s", "cpu_util_pct", "host_mem_mb",
                "net_mb_per_s", "gpu_mem_gb", "gpu_device_mem_gb", "gpu_util_pct",
                "time_breakdown_s"}
    assert required <= set(metrics.METRICS)
    assert "phase" in metrics.get("time_breakdown_s").dims


def test_row_fills_the_unit_and_refuses_unknowns():
    assert metrics.row("images_per_s", 5, step=3) == {
        "metric": "images_per_s", "value": 5.0, "unit": "images/s", "step": 3, "epoch": None}
    with pytest.raises(KeyError, match="unknown metric 'images_per_sec'"):
        metrics.row("images_per_sec", 5)
    with pytest.raises(ValueError, match="unknown dimension"):
        metrics.row("loss", 1.0, payload_bytes=4)
    with pytest.raises(ValueError, match="phase 'lunch'"):
        metrics.row("time_breakdown_s", 1.0, phase="lunch")
    with pytest.raises(ValueError, match="better must be"):
        metrics.Metric("x", "s", "faster", "mean", "")


# ---------------------------------------------------------------- registry

@pytest.mark.parametrize("name", stacks.STACKS)
def test_every_stack_module_has_parser_and_log_files(name):
    module = stacks.get(name)
    assert callable(module.parse) and module.LOG_FILES and module.__doc__
    assert module.__doc__.split("\n", 1)[0].strip()


def test_unknown_stack_is_named():
    with pytest.raises(KeyError, match="unknown stack 'mxnet'"):
        stacks.get("mxnet")


# ---------------------------------------------------------------- real logs

def test_bigdl_lenet_full_mnist():
    r = parse("bigdl", "bigdl/lenet-mnist/stderr.log")
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert len(values(r, "throughput_records_per_s")) == 391  # 50000 records / batch 128
    assert values(r, "throughput_records_per_s", step=1) == [293.57642]
    assert values(r, "loss", step=1) == [2.279935]
    assert values(r, "top1_accuracy") == [0.9204]
    assert values(r, "top5_accuracy") == [0.9966]
    assert values(r, "test_loss") == [0.28802976]
    assert values(r, "epoch_time_s") == [pytest.approx(33.757950868)]
    assert values(r, "train_time_s") == [pytest.approx(33.757950868)]
    steps = [r["step"] for r in r.rows if r["metric"] == "loss"]
    assert steps == list(range(1, 392))
    walls = values(r, "wall_clock_s")
    assert walls == sorted(walls) and walls[-1] == 33.592142031
    assert r.meta["records_per_iteration"] == 128.0 and r.meta["test_records"] == 10000


def test_bigdl_0_3_lenet_on_yarn_from_the_paper_profile_image():
    """BigDL 0.3.0 (the paper profile's stand-in for commit a1f3a88) on Spark 2.1.2 and YARN 2.7.3,
    Java 8: its DistriOptimizer words a step `Trained 128 records in 0.48 seconds.`, 2.x's too."""
    r = parse("bigdl", "paper-profile/bigdl-0.3.0-lenet-mnist/stderr.log")
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert len(values(r, "throughput_records_per_s")) == 600  # 6 epochs of 12800 records / batch 128
    assert values(r, "throughput_records_per_s", step=1) == [264.27908]
    assert values(r, "loss", step=1) == [2.3278065]
    assert values(r, "top1_accuracy") == [0.8205, 0.8725, 0.8945, 0.9125, 0.9215, 0.9265]
    assert values(r, "epoch_time_s")[0] == pytest.approx(12.043026903)
    assert r.meta["epoch_records"] == 12800 and r.meta["test_records"] == 2000


def test_bigdl_vgg_cifar10_synthetic():
    r = parse("bigdl", "bigdl/vgg-cifar10-synthetic/stderr.log")
    assert (r.status, r.finished) == ("ok", True)
    assert len(values(r, "loss")) == 40 == len(values(r, "throughput_records_per_s"))
    assert len(values(r, "top1_accuracy")) == 1
    assert r.meta["records_per_iteration"] == 32.0


def test_bigdl_failed_run_names_the_error():
    r = parse("bigdl", "bigdl/vgg-oom-driver-2g/stderr.log")
    assert r.status == "unparseable"
    assert "java.lang.OutOfMemoryError: Java heap space" in r.reason


def test_tensorflow_collective_workers():
    for i in (0, 1):
        r = parse("tensorflow", f"tensorflow/collective-cifar10-synthetic/tasks/worker-{i}.log")
        assert (r.status, r.finished) == ("ok", True)
        assert [x["step"] for x in r.rows if x["metric"] == "loss"] == list(range(1, 41))
        assert {x["task"] for x in r.rows} == {f"worker:{i}"}
        assert len(values(r, "top1_accuracy")) == 2 and len(values(r, "epoch_time_s")) == 2
        totals = [x for x in r.rows if x["step"] is None]
        assert {x["metric"] for x in totals} == {"train_time_s", "images_per_s", "steps_per_s", "end_to_end_s",
                                                 *(["time_breakdown_s"] if i == 0 else [])}
        # worker:0 leads a collective run: its last step's clock is the training phase, the
        # rest of its life is start-up
        end_to_end = values(r, "end_to_end_s")[0]
        assert [(x["phase"], round(x["value"], 4)) for x in r.rows if x["metric"] == "time_breakdown_s"] == (
            [("training", 5.7588), ("tf_startup", round(end_to_end - 5.7588, 4))] if i == 0 else [])
        assert r.meta["strategy"] == "collective" and r.meta["num_workers"] == "2"


def test_tensorflow_warmup_is_outside_the_counts():
    r = parse("tensorflow", "tensorflow/collective-resnet50-synthetic/tasks/worker-1.log")
    assert (r.status, r.finished) == ("ok", True)
    assert r.meta["warmup_steps"] == "1" and r.meta["model"] == "resnet50"
    assert [x["step"] for x in r.rows if x["metric"] == "loss"] == [1, 2, 3, 4]
    assert values(r, "train_time_s") == [19.8256]


def test_tensorflow_parameter_server_run():
    run = LOGS / "tensorflow" / "ps-alexnet-synthetic"
    chief = stacks.parse_file("tensorflow", run / "tasks" / "chief-0.log")
    assert (chief.status, chief.finished) == ("ok", True)
    assert len(values(chief, "steps_per_s")) == 6 + 1  # six steps and the run's mean
    server = stacks.parse_file("tensorflow", run / "tasks" / "ps-0.log")
    # A server prints only its start line: finished by design, no rows.
    assert (server.status, server.finished, server.rows) == ("ok", True, [])
    whole = stacks.parse_run("tensorflow", run)
    assert whole.status == "ok" and whole.finished
    assert {r["log"] for r in whole.rows} == {"tasks/chief-0.log"}


def test_tensorflowonspark_spark_mode_run():
    run = LOGS / "tensorflowonspark" / "spark-mnist"
    driver = stacks.parse_file("tensorflowonspark", run / "stdout.log")
    assert (driver.status, driver.finished) == ("ok", True)
    phases = {r["phase"]: r["value"] for r in driver.rows if r["metric"] == "time_breakdown_s"}
    assert set(phases) == {"tfos_startup", "training", "tfos_shutdown"}
    assert all(v > 0 for v in phases.values())
    names = [e["event"] for e in driver.events]
    assert names.index("reserve_start") < names.index("nodes_started") < names.index("shutdown_start")
    whole = stacks.parse_run("tensorflowonspark", run)
    assert whole.status == "ok" and whole.finished
    tasks = {r.get("task") for r in whole.rows}
    assert {"chief:0", "worker:0", "driver"} <= tasks
    feeds = [e for e in whole.events if e["event"] == "feed_partition_done"]
    assert sum(int(e["detail"]) for e in feeds) == 6400  # every MNIST record fed once
    assert values(whole, "top1_accuracy", task="chief:0")


def test_tensorflowonspark_tensorflow_mode_run():
    whole = stacks.parse_run("tensorflowonspark", LOGS / "tensorflowonspark" / "tensorflow-cifar10-synthetic")
    assert whole.status == "ok" and whole.finished
    assert {e["event"] for e in whole.events} >= {"reserve_start", "nodes_started", "node_start"}
    assert not [e for e in whole.events if e["event"] == "feed_partition_start"]  # TF reads itself


def test_tf_cnn_benchmarks_alexnet_nan_loss():
    r = parse("tf_cnn_benchmarks", "tf_cnn_benchmarks/alexnet/stdout.log")
    assert (r.status, r.finished) == ("ok", True)
    assert values(r, "images_per_s") == [16.1, 14.2, 15.1, 15.14]
    assert values(r, "loss") == []  # the script printed nan: no row, but noted
    assert r.meta["nonfinite"] == ["total_loss at step 1", "total_loss at step 10", "total_loss at step 20"]
    assert r.meta["model"] == "alexnet" and r.meta["dataset"] == "imagenet (synthetic)"


def test_tf_cnn_benchmarks_resnet50():
    r = parse("tf_cnn_benchmarks", "tf_cnn_benchmarks/resnet50/stdout.log")
    assert (r.status, r.finished) == ("ok", True)
    assert values(r, "loss") == [7.259, 7.8]
    assert values(r, "images_per_s", step=None) == [1.96]


def test_tf_cnn_benchmarks_distributed_workers():
    run = LOGS / "tf_cnn_benchmarks" / "distributed-alexnet"
    whole = stacks.parse_run("tf_cnn_benchmarks", run)
    assert whole.status == "ok" and whole.finished
    # Each worker's step lines are its own rate; the total counts both workers.
    assert values(whole, "worker_images_per_s", task="worker:1") == [1.7, 2.3]
    assert values(whole, "images_per_s") == [4.59, 4.59]
    assert not values(whole, "images_per_s", step=1)
    assert {r["log"] for r in whole.rows} == {"tasks/worker-0.log", "tasks/worker-1.log"}


def test_caffe_lenet_mnist():
    r = parse("caffe", "caffe/lenet-mnist-small/stderr.log")
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert [x["step"] for x in r.rows if x["metric"] == "loss"] == list(range(0, 301, 20))
    assert values(r, "loss", step=0) == [2.35957] and values(r, "loss", step=300) == [0.108932]
    assert values(r, "top1_accuracy") == [0.134577, 0.895161, 0.923891, 0.939012]
    assert values(r, "test_loss", step=300) == [0.192493]
    walls = values(r, "wall_clock_s")
    assert walls == sorted(walls) and 7 < walls[-1] < 9  # glog stamps 22:18:06.63 .. 22:18:14.50
    assert values(r, "steps_per_s") == []  # this Caffe prints no iter/s


# ---------------------------------------------------------------- damaged logs

# Per stack: a real log, the line that marks its normal end, a per-step line, and a second
# real log of the same stack that starts over (for interleaving).
DAMAGE = {
    "bigdl": ("bigdl/lenet-mnist-small/stderr.log", "Epoch finished", "Trained ",
              "bigdl/lenet-mnist/stderr.log"),
    "tensorflow": ("tensorflow/collective-cifar10-synthetic/tasks/worker-0.log", "event=summary",
                   "event=step", "tensorflow/collective-resnet50-synthetic/tasks/worker-0.log"),
    "tensorflowonspark": ("tensorflowonspark/spark-mnist/executors/0/stderr", "event=summary",
                          "event=step", "tensorflowonspark/tensorflow-cifar10-synthetic/executors/0/stderr"),
    "tf_cnn_benchmarks": ("tf_cnn_benchmarks/alexnet/stdout.log", "total images/sec", "\timages/sec:",
                          "tf_cnn_benchmarks/resnet50/stdout.log"),
    "caffe": ("caffe/lenet-mnist-small/stderr.log", "Optimization Done.", "] Iteration",
              "caffe/lenet-mnist-small-b32/stderr.log"),
}


def lines_of(rel):
    return text(rel).splitlines(keepends=True)


def is_prefix(part, whole):
    return part.rows == whole.rows[:len(part.rows)]


@pytest.mark.parametrize("stack", stacks.STACKS)
@pytest.mark.parametrize("damaged, reason", [
    ("", "empty log"),
    ("  \n\n\t\n", "empty log"),
    (bytes(random.Random(7).randrange(256) for _ in range(4096)).decode("utf-8", "replace"), "binary data"),
    ("model checkpoint saved\x00\x00\x00\x01\x02", "binary data"),
    ("hello\nthis is not a training log\n", "no line of"),
])
def test_damaged_input_is_unparseable_with_reason(stack, damaged, reason):
    r = stacks.get(stack).parse(damaged)
    assert r.status == "unparseable" and r.rows == []
    assert r.reason.startswith(reason)


def test_binary_share_counts_control_and_undecodable_characters_only():
    # no NUL: the share decides. Tabs, carriage returns and newlines are text; an escape (ANSI
    # colour), a bell and an undecodable byte (U+FFFD) are not
    line = "step 1\tloss 0.5\r\n"
    assert stacks.text_lines(line * 100 + "\x1b[0m\n")[0][-1] == (101, "\x1b[0m")
    damaged = line * 10 + "\x07\x1b\ufffd\x7f\x85\n"
    with pytest.raises(stacks.LogError, match=rf"^binary data, not a text log \(3 of {len(damaged)} characters"):
        stacks.text_lines(damaged)


@pytest.mark.parametrize("stack", sorted(DAMAGE))
def test_log_cut_before_its_end_keeps_complete_rows(stack):
    rel, end_marker, _, _ = DAMAGE[stack]
    lines = lines_of(rel)
    whole = stacks.get(stack).parse("".join(lines))
    end = next(i for i, line in enumerate(lines) if end_marker in line)
    cut = stacks.get(stack).parse("".join(lines[:end]))
    assert cut.status == "ok" and not cut.finished
    assert "before the run's end" in cut.reason
    assert cut.rows and is_prefix(cut, whole)


@pytest.mark.parametrize("stack", sorted(DAMAGE))
def test_log_cut_mid_line_never_reads_the_cut_line(stack):
    rel, _, step_marker, _ = DAMAGE[stack]
    lines = lines_of(rel)
    parser = stacks.get(stack).parse
    last_step = max(i for i, line in enumerate(lines) if step_marker in line)
    line = lines[last_step]
    cut = parser("".join(lines[:last_step]) + line[:len(line) // 2])
    assert cut.status == "ok" and not cut.finished
    assert "cut mid-line" in cut.reason
    before = parser("".join(lines[:last_step]))
    assert cut.rows == before.rows  # nothing from the half line
    assert is_prefix(cut, parser("".join(lines)))


@pytest.mark.parametrize("stack", sorted(DAMAGE))
def test_two_interleaved_logs_are_unparseable(stack):
    rel, _, _, other = DAMAGE[stack]
    a, b = lines_of(rel), lines_of(other)
    mixed = [line for pair in zip(a, b) for line in pair] + a[len(b):] + b[len(a):]
    r = stacks.get(stack).parse("".join(mixed))
    assert r.status == "unparseable" and r.rows == []
    assert "interleaved" in r.reason and re.search(r"line \d+", r.reason)


@pytest.mark.parametrize("stack", sorted(DAMAGE))
def test_a_log_concatenated_with_itself_is_unparseable(stack):
    rel = DAMAGE[stack][0]
    r = stacks.get(stack).parse(text(rel) * 2)
    assert r.status == "unparseable" and "concatenated" in r.reason


def test_two_tfos_driver_logs_interleaved_are_unparseable():
    a = lines_of("tensorflowonspark/spark-mnist/stdout.log")
    b = lines_of("tensorflowonspark/tensorflow-cifar10-synthetic/stdout.log")
    r = stacks.get("tensorflowonspark").parse("".join(x for pair in zip(a, b) for x in pair))
    assert r.status == "unparseable" and "a second time" in r.reason


def test_tfos_driver_log_cut_before_shutdown_is_not_finished():
    lines = lines_of("tensorflowonspark/spark-mnist/stdout.log")
    end = next(i for i, line in enumerate(lines) if "Shutting down cluster" in line)
    r = stacks.get("tensorflowonspark").parse("".join(lines[:end]))
    assert r.status == "ok" and not r.finished and "before the cluster was stopped" in r.reason
    phases = {x["phase"] for x in r.rows if x["metric"] == "time_breakdown_s"}
    assert phases == {"tfos_startup"}  # training's end and the shutdown were never logged


FIXTURES = [(stack, path) for stack in stacks.STACKS if (LOGS / stack).is_dir()
            for path in sorted((LOGS / stack).rglob("*")) if path.is_file() and path.name != "README.md"]


@pytest.mark.parametrize("stack, path", FIXTURES, ids=lambda v: str(v).split("logs/")[-1])
def test_random_damage_never_crashes(stack, path):
    """Flipped bytes, dropped, repeated and swapped lines: a result, never an exception."""
    rng = random.Random(path.name)
    original = path.read_bytes()
    for _ in range(25):
        data = bytearray(original)
        for _ in range(rng.randrange(1, 20)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(32, 127)
        lines = bytes(data).decode("utf-8", "replace").splitlines(keepends=True)
        for _ in range(rng.randrange(0, 4)):
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                choice = rng.randrange(3)
                if choice == 0:
                    lines[i], lines[j] = lines[j], lines[i]
                elif choice == 1:
                    del lines[i]
                else:
                    lines.insert(i, lines[j])
        damaged = "".join(lines)[:rng.randrange(len(original) + 1)]
        r = stacks.get(stack).parse(damaged)
        assert r.status in ("ok", "unparseable")
        assert (r.reason is None) == (r.status == "ok" and r.finished)
        for x in r.rows:
            assert metrics.get(x["metric"]).unit == x["unit"]


def test_damaged_dlobd_line_is_named():
    lines = lines_of("tensorflow/collective-cifar10-synthetic/tasks/worker-0.log")
    i = next(i for i, line in enumerate(lines) if "event=step" in line)
    lines[i] = lines[i].replace("loss=", "loss ")
    r = stacks.get("tensorflow").parse("".join(lines))
    assert r.status == "unparseable" and f"line {i + 1}" in r.reason and "key=value" in r.reason


def test_parse_run_without_logs_or_values(tmp_path):
    r = stacks.parse_run("bigdl", tmp_path)
    assert r.status == "unparseable" and "no log file matching" in r.reason
    (tmp_path / "stderr.log").write_text("")
    (tmp_path / "stdout.log").write_text("INFO SparkContext: Running Spark version 3.5.9\n")
    r = stacks.parse_run("bigdl", tmp_path)
    assert r.status == "unparseable" and "no value" in r.reason


def test_parse_run_names_the_log_that_did_not_finish(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(LOGS / "tensorflowonspark" / "spark-mnist", run)
    node = run / "executors" / "1" / "stderr"
    lines = node.read_text().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if "event=summary" in line)
    node.write_text("".join(lines[:end]))
    r = stacks.parse_run("tensorflowonspark", run)
    assert r.status == "ok" and not r.finished
    assert r.reason.startswith("executors/1/stderr: log ends before the run's end")


def test_parse_run_refuses_a_damaged_file(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(LOGS / "tensorflow" / "collective-cifar10-synthetic", run)
    (run / "tasks" / "worker-1.log").write_bytes(bytes(range(256)) * 8)
    r = stacks.parse_run("tensorflow", run)
    assert r.status == "unparseable" and r.reason.startswith("tasks/worker-1.log: binary data")


# ---------------------------------------------------------------- command line

def test_cli_prints_csv(capsys):
    assert cli.main(["parse", "--stack", "tf_cnn_benchmarks", str(LOGS / "tf_cnn_benchmarks/resnet50/stdout.log")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "metric,value,unit,step,epoch"
    assert out[1:] == ["images_per_s,2.8,images/s,1,", "loss,7.259,1,1,", "images_per_s,2.0,images/s,10,",
                       "loss,7.8,1,10,", "images_per_s,1.96,images/s,,"]


def test_cli_parses_a_run_directory(capsys):
    assert cli.main(["parse", "--stack", "tensorflowonspark", str(LOGS / "tensorflowonspark/spark-mnist")]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split(",")
    assert header[:5] == ["metric", "value", "unit", "step", "epoch"] and "log" in header and "phase" in header


def test_cli_reports_unparseable_and_missing(tmp_path, capsys):
    empty = tmp_path / "stderr.log"
    empty.write_text("")
    assert cli.main(["parse", "--stack", "bigdl", str(empty)]) == 1
    assert f"{empty}: unparseable: empty log" in capsys.readouterr().err
    assert cli.main(["parse", "--stack", "bigdl", str(tmp_path / "nope.log")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_warns_about_a_run_that_did_not_finish(tmp_path, capsys):
    lines = lines_of("bigdl/lenet-mnist-small/stderr.log")
    end = next(i for i, line in enumerate(lines) if "Epoch finished" in line)
    cut = tmp_path / "stderr.log"
    cut.write_text("".join(lines[:end]))
    assert cli.main(["parse", "--stack", "bigdl", str(cut)]) == 0
    captured = capsys.readouterr()
    assert "run did not finish: log ends before the run's end" in captured.err
    assert len(captured.out.splitlines()) == 1 + 3 * 50  # header, 3 rows for each of 50 iterations


def test_a_parser_that_breaks_makes_only_its_point_unparseable(tmp_path, monkeypatch):
    class Broken:
        LOG_FILES = ("stdout.log",)

        @staticmethod
        def parse(text):
            raise ValueError("phase 'x' is not one of the vocabulary")

    (tmp_path / "stdout.log").write_text("anything\n")
    monkeypatch.setattr(stacks, "get", lambda name: Broken)
    r = stacks.parse_run("broken", tmp_path)
    assert r.status == "unparseable"
    assert r.reason == "stdout.log: parser error: ValueError: phase 'x' is not one of the vocabulary"


# ---------------------------------------------------------------- Caffe releases' real logs

def test_caffe_reads_intel_mpi_rank_prefixes_rank_by_rank():
    r = stacks.get("caffe").parse("".join(reallogs.lines("caffe", "intel-caffe-mlsl-ranks-interleaved")))
    assert r.status == "ok" and r.meta["mpi_ranks"] == 3
    assert {(x["task"], x["step"]) for x in r.rows if x["metric"] == "loss"} == {
        ("rank:5", 2110), ("rank:9", 1440), ("rank:7", 2305)}


def test_caffe_reads_nvcaffes_first_iterations_time_as_no_rate():
    r = stacks.get("caffe").parse("".join(reallogs.lines("caffe", "nvcaffe-0.16-ssd-first-iterations")))
    assert values(r, "loss", step=2) == [5.08295] and values(r, "steps_per_s", step=2) == []


@pytest.mark.parametrize("a, b, reason", [
    ("bvlc-rc3-lcnn-1.85m-iterations", "caffe-2015-lrcn-snapshot-and-last-iteration",
     "iteration 109900 from thread 6967, the solver's before it from thread 6584"),
    ("nvcaffe-0.16-ssd-first-iterations", "intel-caffe-mlsl-ranks-interleaved",
     "line 2: a glog line with an MPI rank prefix among lines without one"),
])
def test_two_real_caffe_logs_interleaved_are_unparseable(a, b, reason):
    r = stacks.get("caffe").parse(reallogs.interleaved(reallogs.lines("caffe", a), reallogs.lines("caffe", b)))
    assert r.status == "unparseable" and reason in r.reason and "interleaved" in r.reason


def test_a_real_caffe_log_cut_mid_line_is_not_finished():
    r = stacks.get("caffe").parse(reallogs.cut_mid_line(reallogs.lines("caffe", "nvcaffe-0.15-digits-snapshot")))
    assert r.status == "ok" and not r.finished and "cut mid-line" in r.reason
    assert max(x["step"] for x in r.rows if x["metric"] == "loss") == 7120


def test_caffe_train_s_two_optimization_done_lines_end_one_run():
    # solver.cpp's line, then tools/caffe.cpp's once Solve() returned
    r = stacks.get("caffe").parse("".join(reallogs.lines("caffe", "bvlc-2019-caffe-train-two-optimization-done")))
    assert (r.status, r.finished, r.reason) == ("ok", True, None)
    assert values(r, "top1_accuracy", step=10000) == [0.9915]


def test_caffe_logs_concatenated_after_optimization_done_are_unparseable():
    end = reallogs.lines("caffe", "bvlc-2019-caffe-train-two-optimization-done")
    start = reallogs.lines("caffe", "bvlc-2019-caffe-train-first-iterations")
    concatenated = {
        # the same run's end twice
        "line 10: iteration 10000 after 'Optimization Done.'": end + end,
        # another run's start after the end: its test pass at iteration 0
        "line 10: test at iteration 0 after iteration 10000": end + start,
        # a third 'Optimization Done.' after the solver's and the tool's
        "line 9: 'Optimization Done.' again": end + end[-1:],
        # a second solver's test pass and end between the solver's and the tool's
        "line 12: 'Optimization Done.' again": end[:-1] + end[2:7] + end[-1:],
    }
    for reason, lines in concatenated.items():
        r = stacks.get("caffe").parse("".join(lines))
        assert r.status == "unparseable" and reason in r.reason and "concatenated" in r.reason, reason


def test_glog_clock_follows_new_year_and_is_not_moved_by_another_process_s_line():
    clock = GlogClock()

    def at(stamp: str):
        return clock.stamp(1, GLOG.match(f"I{stamp} 6584 solver.cpp:228] Iteration 1, loss = 0.5"))

    first = at("1231 23:59:00.000000")
    # a line of another process, months before, gets its own time and leaves the clock
    assert at("0914 09:36:00.000000") < first
    assert (at("0101 00:01:00.000000") - first).total_seconds() == 120
