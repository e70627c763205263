"""The stacks: one module per DL stack, holding its log parser (and, later, its launcher).

Every stack module has
  LOG_FILES   glob patterns, relative to a run directory, of the files its parser reads
  parse(text) -> ParseResult   one log file's text to tidy rows
and may have
  parse_records(run_dir, result)   values of the run that join several files (TFoS on YARN:
                                   the ResourceManager's record, Spark's event log and the
                                   logs); completes parse_run's combined result, LogError if
                                   those files cannot be read

`dlobd parse --stack <stack> <logfile>...` prints the rows as CSV. `parse_run` parses the
LOG_FILES of one run directory and joins the rows, each tagged with its `log` file.

Damaged input, for every stack (docs/metrics.md, "Damaged logs"):
- empty, binary, or no line of the stack's format: status `unparseable` with the reason;
- steps going backwards or repeating, or a second start header for the same task (two
  logs interleaved or concatenated): `unparseable`, naming the line;
- a log cut short: status `ok` with the rows of its complete lines only, `finished`
  False and the reason saying what is missing. A last line without its newline is cut
  mid-line and is never read, since its last number may be cut too.
"""

import argparse
import csv
import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dlobd.cluster import hadoop
from dlobd.spec.metrics import ROW_FIELDS, row
from dlobd.stacks import runner

STACKS = ("bigdl", "caffe", "caffeonspark", "grpcbench", "hibench_spark", "hr_reduce", "mmlspark", "scaffe",
          "tensorflow", "tensorflowonspark", "tf_cnn_benchmarks")

# Every parser's reason for a text with no line of its format starts with this.
NO_LINES = "no line of"
EMPTY = "empty log"
CUT_LINE = "the last line is cut mid-line and was not read"

# Above this share of control characters a "log" is binary data, not text.
BINARY_SHARE = 0.01
# control characters other than tab, newline and carriage return, and the replacement character
# (an undecodable byte): one pass of the regex engine, not a Python test per character of a
# log of megabytes
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffd]")


@dataclass
class ParseResult:
    rows: list = field(default_factory=list)  # dicts: metric, value, unit, step, epoch, dims...
    status: str = "ok"                        # 'ok' or 'unparseable'
    reason: str | None = None                 # why unparseable, or what a cut log lacks
    finished: bool = False                    # the log reaches the run's normal end
    meta: dict = field(default_factory=dict)  # settings the log states (model, batch size ...)
    events: list = field(default_factory=list)  # timestamped milestones: {time, event, line}

    @classmethod
    def unparseable(cls, reason: str) -> "ParseResult":
        return cls(status="unparseable", reason=reason)

    def close(self, *problems, cut: bool) -> "ParseResult":
        """Record whether the log reaches the run's normal end.

        `problems` say what the log lacks (None where it lacks nothing); `cut` is true when
        its last line was cut mid-way and not read.
        """
        found = [p for p in (*problems, CUT_LINE if cut else None) if p]
        self.finished = not found
        if found:
            self.reason = "log ends before the run's end: " + "; ".join(found)
        return self


class LogError(ValueError):
    """A log that cannot be read as a whole; the message is the reason."""


def line_parser(parse_lines):
    """A stack's `parse(text)` from its parser of complete lines, `parse_lines(lines, cut)`:
    empty or binary input, and any LogError it raises, give `unparseable` with the reason."""

    def parse(text: str) -> ParseResult:
        try:
            lines, cut = text_lines(text)
            return parse_lines(lines, cut)
        except LogError as e:
            return ParseResult.unparseable(str(e))

    return parse


def setting(ctx, name: str, default=None):
    """A launcher's setting: the point's value, else the scale's fixed one, else the default."""
    return ctx.point.get(name, ctx.fixed.get(name, default))


def positive_whole(ctx, name: str, default=None, needed_by: str = "the stack") -> int:
    """`setting` as a positive whole number; ValueError naming the spec, the scale and the value."""
    value = setting(ctx, name, default)
    runner.unstated(ctx.scale, name, value)
    if value is None:
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: {needed_by} needs '{name}' (a point axis or "
                         "a fixed parameter)")
    return whole_number(ctx, name, value)


def whole_number(ctx, name: str, value) -> int:
    """A setting's value as a positive whole number; ValueError naming the spec, the scale and the value."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or str(number) != str(value).strip():
        raise ValueError(f"{ctx.spec['id']} {ctx.scale}: '{name}' must be a positive whole "
                         f"number, got {value!r}")
    return number


def get(name: str):
    if name not in STACKS:
        raise KeyError(f"unknown stack {name!r}; known stacks: {', '.join(STACKS)}")
    return importlib.import_module(f"dlobd.stacks.{name}")


def text_lines(text: str) -> tuple[list[tuple[int, str]], bool]:
    """The complete lines of a log as (line number, text), and whether a cut last line was dropped.

    Raises LogError for empty and binary input.
    """
    if not text.strip():
        raise LogError(EMPTY)
    control = len(_CONTROL.findall(text))
    if "\x00" in text or control > BINARY_SHARE * len(text):
        raise LogError(f"binary data, not a text log ({control} of {len(text)} characters "
                       "are control bytes or undecodable)")
    lines = text.split("\n")
    cut = lines[-1] != ""
    lines = lines[:-1]  # the part after the last newline: empty, or a line cut mid-way
    return [(i + 1, line.rstrip("\r")) for i, line in enumerate(lines)], cut


def read_log(path: Path) -> str:
    # Undecodable bytes become U+FFFD, which text_lines counts as binary.
    return Path(path).read_text(encoding="utf-8", errors="replace")


def parse_file(stack: str, path: Path) -> ParseResult:
    return get(stack).parse(read_log(path))


def parse_run(stack: str, run_dir: Path) -> ParseResult:
    """Parse every LOG_FILES match of a run directory; rows carry the file as `log`.

    Empty files and files without any line of the stack's format are skipped (a Spark
    driver's stdout may hold none); any other unparseable file makes the run unparseable.
    """
    module = get(stack)
    run_dir = Path(run_dir)
    paths = sorted({p for pattern in module.LOG_FILES for p in run_dir.glob(pattern) if p.is_file()})
    if not paths:
        return ParseResult.unparseable(
            f"{run_dir}: no log file matching {', '.join(module.LOG_FILES)}")
    combined = ParseResult(finished=True)
    silent = []
    for path in paths:
        rel = str(path.relative_to(run_dir))
        try:
            result = module.parse(read_log(path))
        except Exception as exc:  # a parser's own bug must not stop the other points
            return ParseResult.unparseable(f"{rel}: parser error: {type(exc).__name__}: {exc}")
        if result.status != "ok":
            if result.reason and result.reason.startswith((NO_LINES, EMPTY)):
                silent.append(rel)
                continue
            return ParseResult.unparseable(f"{rel}: {result.reason}")
        combined.rows += [{**r, "log": rel} for r in result.rows]
        combined.events += [{**e, "log": rel} for e in result.events]
        for key, value in result.meta.items():  # a list per log (nodes, problems) joins the others'
            both = isinstance(value, list) and isinstance(combined.meta.get(key), list)
            combined.meta[key] = combined.meta[key] + value if both else value
        if not result.finished:
            combined.finished = False
            combined.reason = "; ".join(filter(None, [combined.reason, f"{rel}: {result.reason}"]))
    if hasattr(module, "parse_records"):
        try:
            module.parse_records(run_dir, combined)
        except LogError as e:
            return ParseResult.unparseable(str(e))
    if not combined.rows and not combined.events:
        read = [str(p.relative_to(run_dir)) for p in paths if str(p.relative_to(run_dir)) not in silent]
        return ParseResult.unparseable(
            f"{run_dir}: no value in its {stack} logs ({', '.join(read) or 'none'} read; "
            f"{', '.join(silent) or 'none'} empty or without a line of {stack}'s format)")
    return combined


def yarn_application_span(run_dir, result: ParseResult) -> None:
    """A `parse_records` for stacks whose run is one YARN application: end_to_end_s from its
    ResourceManager record (submission to end); a failed or killed application leaves the run
    unfinished with YARN's diagnostics. LogError for a record that cannot be read."""

    try:
        app = hadoop.application_record(run_dir)
        if app is None:
            return
        if app.get("state") != "FINISHED" or app.get("finalStatus") != "SUCCEEDED":
            result.finished = False
            why = (f"YARN application {app['id']} ended {app.get('state')}/{app.get('finalStatus')}: "
                   f"{str(app.get('diagnostics') or '').strip()[:300]}")
            result.reason = "; ".join(filter(None, [result.reason, why]))
            return
        result.rows.append({**row("end_to_end_s", hadoop.application_seconds(app)), "log": app["_log"]})
    except hadoop.HadoopError as exc:
        raise LogError(str(exc)) from None


def to_csv(rows: list, out) -> None:
    dims = sorted({k for r in rows for k in r} - set(ROW_FIELDS))
    writer = csv.DictWriter(out, fieldnames=list(ROW_FIELDS) + dims, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", required=True, choices=STACKS)
    parser.add_argument("logs", nargs="+", type=Path,
                        help="log files, or a run directory (its LOG_FILES are read)")


def run(args) -> int:
    status = 0
    rows = []
    for path in args.logs:
        if path.is_dir():
            result = parse_run(args.stack, path)
        elif path.is_file():
            result = parse_file(args.stack, path)
        else:
            print(f"dlobd parse: {path}: no such file or directory", file=sys.stderr)
            status = 2
            continue
        if result.status != "ok":
            print(f"dlobd parse: {path}: unparseable: {result.reason}", file=sys.stderr)
            status = max(status, 1)
            continue
        if not result.finished:
            print(f"dlobd parse: {path}: run did not finish: {result.reason}", file=sys.stderr)
        tag = {"log": str(path)} if len(args.logs) > 1 and path.is_file() else {}
        rows += [{**r, **tag} for r in result.rows]
    if rows:
        to_csv(rows, sys.stdout)
    return status


