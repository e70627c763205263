"""The real logs from elsewhere (tests/data/logs/real/), damaged and mixed: every entry of the
corpus cut mid-line, truncated at half its lines and interleaved line by line with a copy of
itself, and, property-based, its lines interleaved with other programs' lines (Spark, YARN,
MPI rank tags, glog, Python warnings), which must not change what is read."""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlobd import stacks
from test_real_logs import CORPUS, REAL, load

# Entries that cannot sensibly give one of the damaged results: {(stack, name): {damage: why}}.
# Each is said in the entry's YAML notes too.
SKIP: dict[tuple[str, str], dict[str, str]] = {
    ("bigdl", "bigdl-0.7-zoo-finetune-validation"): {
        "truncated": "its first 3 of 26 lines are all of BigDL's (the end of the last epoch and its "
                     "validation); the half kept still holds them, the table cut off after is the "
                     "example's own output, not the run's end"},
    ("caffeonspark", "driver-two-ranks-one-host-2016"): {
        "truncated": "two rank-placement lines of a driver, whose log has no end line of its own: its "
                     "first line alone is as whole a driver excerpt as both"},
    **{("hibench_spark", name): {
        "cut mid-line": "a report of several runs: the parser reads the newest whole run, so a cut last "
                        "run leaves it reading the run before (not finished), no prefix of the whole's rows",
        "truncated": "a report of several runs: its first half is a whole report of fewer runs"}
       for name in ("hibench7-pre-all-workloads-2017", "hibench71-wordcount-hadoop-and-spark-2020",
                    "sparkrdma-terasort-two-runs-2018")},
}
# Stacks whose file no other program writes into, so foreign lines in it are damage, not output:
# HiBench's report, which only its own report step appends to.
NOT_A_STREAM = {"hibench_spark"}


def ids(described: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.stem}" for p in described]


IDS = ids(CORPUS)


def entry(described: Path):
    """The entry's stack module and its log's lines (with their newlines)."""
    meta, text = load(described)
    return stacks.get(meta["stack"]), text.splitlines(keepends=True)


def skip_if_listed(described: Path, damage: str):
    why = SKIP.get((described.parent.name, described.stem), {}).get(damage)
    if why:
        pytest.skip(f"{damage}: {why}")


def is_prefix(part, whole) -> bool:
    return part.rows == whole.rows[:len(part.rows)]


def test_the_corpus_is_there():
    assert CORPUS and REAL.is_dir()
    unknown = {key for key in SKIP if not (REAL / key[0] / f"{key[1]}.yaml").is_file()}
    assert not unknown, f"SKIP names entries that are not in the corpus: {sorted(unknown)}"


UNPARSEABLE = [p for p in CORPUS if load(p)[0]["expect"]["status"] == "unparseable"]


@pytest.mark.parametrize("described", UNPARSEABLE, ids=ids(UNPARSEABLE))
def test_an_unparseable_real_log_names_the_line(described):
    """A real log is unparseable only as damage (two runs interleaved ...): the reason says where."""
    parser, lines = entry(described)
    assert re.search(r"line \d+", parser.parse("".join(lines)).reason or "")


@pytest.mark.parametrize("described", CORPUS, ids=IDS)
def test_cut_mid_line_is_not_finished(described):
    skip_if_listed(described, "cut mid-line")
    parser, lines = entry(described)
    last = max(i for i, line in enumerate(lines) if line.strip())
    cut = "".join(lines[:last]) + lines[last].rstrip("\n")[:len(lines[last]) // 2]
    result = parser.parse(cut)
    assert result.reason, "a cut log needs a reason"
    if result.status == "ok":
        assert not result.finished and "cut mid-line" in result.reason
        # nothing read from the half line
        assert is_prefix(result, parser.parse("".join(lines)))


@pytest.mark.parametrize("described", CORPUS, ids=IDS)
def test_truncated_at_half_is_not_finished(described):
    skip_if_listed(described, "truncated")
    parser, lines = entry(described)
    result = parser.parse("".join(lines[:len(lines) // 2]))
    assert result.reason, "a truncated log needs a reason"
    if result.status == "ok":
        assert not result.finished and "before the run's end" in result.reason
    else:  # nothing of the format (or nothing at all, of a one-line log) is left in the first half
        assert result.reason.startswith(stacks.NO_LINES) or result.reason == stacks.EMPTY


@pytest.mark.parametrize("described", CORPUS, ids=IDS)
def test_two_copies_interleaved_are_unparseable(described):
    skip_if_listed(described, "interleaved")
    parser, lines = entry(described)
    result = parser.parse("".join(line for line in lines for _ in range(2)))
    assert result.status == "unparseable" and result.rows == []
    assert re.search(r"line \d+", result.reason), result.reason


# ---------------------------------------------------------------- other programs' lines

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=40)
CLOCK = st.tuples(st.integers(1, 12), st.integers(1, 28), st.integers(0, 23), st.integers(0, 59),
                  st.integers(0, 59))
FOREIGN = st.one_of(
    # Spark 1.x/2.x log4j, and BigDL 0.x's log4j layout for other classes
    st.builds(lambda c, w: "18/%02d/%02d %02d:%02d:%02d INFO executor.Executor: %s" % (*c, w), CLOCK, WORDS),
    st.builds(lambda c, w: "2019-%02d-%02d %02d:%02d:%02d WARN  TaskSetManager:66 - %s" % (*c, w), CLOCK, WORDS),
    # YARN's aggregated logs and client reports
    st.builds(lambda n: f"Container: container_1545705600094_0042_01_{n:06d} on worker{n}_8041", st.integers(1, 99)),
    st.sampled_from(["LogType:stderr", "LogType:stdout", "End of LogType:stderr", "Log Upload Time:"]),
    st.builds(lambda s: f"INFO yarn.Client: Application report for application_1545705600094_0042 "
                        f"(state: {s})", st.sampled_from(["ACCEPTED", "RUNNING", "FINISHED"])),
    # MPI rank tags (mpirun --tag-output, horovodrun) on another process's line
    st.builds(lambda r, w: f"[1,{r}]<stderr>:{w}", st.integers(0, 7), WORDS),
    st.builds(lambda r, w: f"[1,{r}]<stdout>:{w}", st.integers(0, 7), WORDS),
    # glog without a year (TF's C++ before 1.5, Caffe) and with one (TF 1.5 on)
    st.builds(lambda c, w: "I%02d%02d %02d:%02d:%02d.123456 12345 gpu_device.cc:1120] %s" % (*c, w), CLOCK, WORDS),
    st.builds(lambda c, w: "2019-%02d-%02d %02d:%02d:%02d.719973: W tensorflow/core/framework/"
                           "allocator.cc:122] %s" % (*c, w), CLOCK, WORDS),
    # Python warnings: the warning and the source line it quotes
    st.builds(lambda w: f"/usr/lib/python3.6/site-packages/h5py/__init__.py:36: FutureWarning: {w}", WORDS),
    st.builds(lambda w: f"  warnings.warn({w!r})", WORDS),
)


def read(result):
    return result.status, result.finished, result.rows


# derandomize: the same examples on every run, so a failure in CI is one anyone can rerun
@settings(max_examples=200, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(described=st.sampled_from([p for p in CORPUS if p.parent.name not in NOT_A_STREAM]),
       inserts=st.lists(st.tuples(st.floats(0, 1), FOREIGN), min_size=1, max_size=12))
def test_other_programs_lines_change_nothing(described, inserts):
    parser, lines = entry(described)
    mixed = list(lines)
    # not after a last line without its newline: the two would become one line
    room = len(lines) if lines[-1].endswith("\n") else len(lines) - 1
    # from the end, so each position is one of the original log's
    for where, foreign in sorted(inserts, reverse=True):
        mixed.insert(round(where * room), foreign + "\n")
    assert read(parser.parse("".join(mixed))) == read(parser.parse("".join(lines)))

