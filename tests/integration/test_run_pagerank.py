"""The PageRank of the HiBench slides on the test cluster, launched into a runs folder made again
at the same path (another clone in the same place, or the runs removed): the attempt has the same
folder, so the same YARN tag and HDFS output folder, and HDFS outlives the runs folder."""

import json
import shutil
import subprocess

import pytest

from dlobd import spec
from dlobd.cluster import hadoop, provenance
from dlobd.execution import runs

pytestmark = pytest.mark.integration

POINT = {"network": "loopback", "datasize": "huge"}


def launched(attempt) -> tuple[dict, str]:
    """(run.json, the HDFS folder its job wrote) of an attempt that must have run `ok`."""
    record = json.loads((attempt / "run.json").read_text())
    assert record["status"] == "ok", (record["reason"], (attempt / "stderr.log").read_text()[-3000:])
    command = record["command"]
    return record, command[command.index("--output") + 1]


def on_hdfs(uri: str) -> bool:
    return subprocess.run([str(provenance.prefix() / "bin" / "hdfs"), "dfs", "-test", "-e", f"{uri}/_SUCCESS"],
                          env=hadoop.stack_env(), timeout=120).returncode == 0


def test_a_point_launched_again_at_the_same_path_runs_over_the_earlier_output(stack_cluster, tmp_path):
    data = spec.load_all()["slides-pagerank-32nodes"].data
    first = runs.launch(data, "local", POINT, tmp_path / "runs")
    _, output = launched(first)
    assert on_hdfs(output)

    shutil.rmtree(tmp_path / "runs")
    again = runs.launch(data, "local", POINT, tmp_path / "runs")
    assert again == first
    _, output_again = launched(again)
    assert output_again == output and on_hdfs(output)
    assert (f"removed {output}: the output of an earlier attempt in a folder of this attempt's path"
            in (again / "prepare.log").read_text())
