"""CNTK's epoch, minibatch and test lines of rank 0, in the wordings of CNTK 1.x, the cntk
executable (BrainScript) and the Python API's ProgressPrinter: MMLSpark's CNTKLearner runs and
S-Caffe's CNTK runs print them.
"""

import re

from dlobd.spec.metrics import row
from dlobd.stacks import LogError, ParseResult

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|-?inf"
MPI_TAG = re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr)>:(.*)$")
CNTK_TIME = re.compile(r"^(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d): ")
# CNTK 2.0's beta Python API printed no [Training] tag; CNTK 1.x's is `[Training Set]`
FINISHED = re.compile(r"^Finished Epoch\[\s*(\d+) of (\d+)\]: (?:\[(Training|Validat)(?:e|ion)?(?: Set)?\] )?(.*)$")
MINIBATCH = re.compile(r"^\s*Epoch\[\s*(\d+) of (\d+)\]-Minibatch\[\s*(\d+)-\s*(\d+)(?:, [\d.]+%)?\]: (.*)$")
CRITERION = re.compile(r"(\w+) = (" + NUM + r")(%?) \* (\d+)")
# CNTK 1.x: `TrainLossPerSample = 0.62585586; EvalErrPerSample = 0.20480554; ...; EpochTime=95.7758`
CRITERION_1X = re.compile(r"(\w+?)PerSample = \s*(" + NUM + r")")
EPOCH_TIME = re.compile(r"[eE]pochTime=(" + NUM + r")s?(?:$|;|\s)")
# the Python API's ProgressPrinter: `... 21.741s (2759.8 samples/s);`
PY_EPOCH_TIME = re.compile(r"\s(" + NUM + r")s \(\s*(" + NUM + r") samples/s\);")
# a test pass: the cntk executable's (and CNTK's Python examples') `Final Results: Minibatch[1-10]: errs = ...`
TEST_RESULT = re.compile(r"^Final Results: Minibatch\[\d+-\d+\]: (.*)$")
# the Python API's ProgressPrinter after an evaluation (Evaluator.summarize_test_progress), its
# summaries numbered from 1: `Finished Evaluation [1]: Minibatch[1-157]: metric = 38.14% * 10000;`
EVALUATION = re.compile(r"^Finished Evaluation \[(\d+)\]: Minibatch\[\d+-\d+\]: (.*)$")
# ProgressPrinter's table: average loss since the start and since the last line, the same of the
# metric where there is one, and the samples seen
TABLE_HEADER = re.compile(r"^\s*average\s+since\s+average\s+since\s+examples\s*$")
TABLE_ROW = re.compile(r"^\s*(" + NUM + r")\s+(" + NUM + r")(?:\s+(?:" + NUM + r")\s+(?:" + NUM + r"))?\s+(\d+)\s*$")
CNTK_COMPLETED = re.compile(r"^__COMPLETED__\s*$")
# the CNTK library's first line in a process (the Python API's, or cntk's)
DEVICE_CHOSEN = re.compile(r"^Selected \w+\[\d+\] .* as the process wide default device\.")
RATE = re.compile(r"[sS]amplesPerSecond = (" + NUM + r")")
CNTK_ERROR = re.compile(r"^EXCEPTION occurred: ?(.*)")


def _criteria(text: str) -> dict:
    """`ce = 1.2 * 500; errs = 43.2% * 500; ...` as {name: (value, is_percent, samples)};
    CNTK 1.x's `TrainLossPerSample = 0.6; EvalErrPerSample = 0.2` as {TrainLoss: (0.6, False, None),
    EvalErr: (20.0, True, None)} (its error a share, given here in percent like 2.x's)."""
    found = {m[1]: (float(m[2]), bool(m[3]), int(m[4])) for m in CRITERION.finditer(text)}
    for m in CRITERION_1X.finditer(text):
        if m[1] == "EvalErr":
            found[m[1]] = (float(m[2]) * 100, True, None)
        elif m[1] == "TrainLoss":
            found[m[1]] = (float(m[2]), False, None)
    return found


class CntkEpochs:
    """CNTK's epoch and minibatch lines of rank 0 (untagged lines count as rank 0) as rows of
    `result`; LogError for epochs out of order. Lines of other ranks are counted, not read:
    every rank prints the same aggregated criteria."""

    def __init__(self, result: ParseResult):
        self.result = result
        self.last_epoch = 0
        self.max_epochs = None
        self.epoch_times = {}
        self.ranks = set()
        self.python_api = False  # the epoch lines are the Python API's ProgressPrinter's
        self.table = False       # a ProgressPrinter table's header was seen
        self.table_samples = 0   # samples seen at its last line
        self.last_evaluation = 0  # number of ProgressPrinter's last evaluation summary
        self.completed = False   # the cntk executable's `__COMPLETED__`
        self.brainscript = None  # line of the first epoch line of the cntk executable's wording
        self.device_chosen = None  # line of CNTK's `Selected ... as the process wide default device.`

    def read(self, no: int, line: str) -> None:
        tag = MPI_TAG.match(line)
        rank, text = (int(tag[2]), tag[3]) if tag else (0, line)
        if tag:
            self.ranks.add(rank)
        text = CNTK_TIME.sub("", text, count=1)
        if CNTK_ERROR.match(text.strip()):
            self.result.meta.setdefault("errors", []).append(text.strip()[:200])
        elif rank != 0:
            return
        elif f := FINISHED.match(text):
            self._epoch(no, int(f[1]), int(f[2]), f[3] or "Training", f[4])
        elif m := MINIBATCH.match(text):
            epoch = int(m[1])
            if epoch <= self.last_epoch:
                raise LogError(f"line {no}: a minibatch of epoch {epoch} after epoch {self.last_epoch} "
                               "finished (two logs interleaved or concatenated?)")
            if r := RATE.search(m[5]):
                self.result.rows.append(row("throughput_records_per_s", float(r[1]), step=int(m[4]), epoch=epoch))
        elif t := TEST_RESULT.match(text):
            self._tested(t[1], None)
        elif e := EVALUATION.match(text):
            self._evaluated(no, int(e[1]), e[2])
        elif TABLE_HEADER.match(text):
            self.table = True
            self._wording(no, python_api=True)
        elif self.table and (t := TABLE_ROW.match(text)):
            self._table_row(no, float(t[2]), int(t[3]))
        elif CNTK_COMPLETED.match(text.strip()):
            self.completed = True
        elif DEVICE_CHOSEN.match(text):
            if self.device_chosen:
                raise LogError(f"line {no}: CNTK chooses its device a second time (line "
                               f"{self.device_chosen} first): two processes' logs interleaved?")
            self.device_chosen = no

    def _wording(self, no: int, python_api: bool) -> None:
        """Note whose wording a line has (the Python API's ProgressPrinter or the cntk
        executable); LogError where one log has both: one process prints one of them."""
        if python_api:
            self.python_api = True
        else:
            self.brainscript = self.brainscript or no
        if self.python_api and self.brainscript:
            raise LogError(f"line {no}: the Python API's progress lines and the cntk executable's "
                           f"epoch lines (line {self.brainscript}) in one log: two logs interleaved?")

    def _tested(self, text: str, epoch: int | None) -> None:
        """A validation's or test pass's criteria: the error share (the first criterion in %) as
        top1_accuracy."""
        errors = [(v, n) for v, percent, n in _criteria(text).values() if percent]
        if errors:
            self.result.rows.append(row("top1_accuracy", 1 - errors[0][0] / 100, epoch=epoch))
            if errors[0][1] is not None:  # (CNTK 1.x does not say)
                self.result.meta["test_records"] = errors[0][1]

    def _evaluated(self, no: int, number: int, text: str) -> None:
        """ProgressPrinter's evaluation summary, read as a test pass (_tested). One printer numbers
        its summaries, so a number not above the last one's is another printer's: LogError."""
        if number <= self.last_evaluation:
            raise LogError(f"line {no}: evaluation {number} after evaluation {self.last_evaluation} "
                           "(two logs interleaved or concatenated?)")
        self.last_evaluation = number
        self._wording(no, python_api=True)
        self._tested(text, None)

    def _table_row(self, no: int, loss_since_last: float, samples: int) -> None:
        """A ProgressPrinter table line: the loss averaged since the line before, at the samples seen."""
        if samples <= self.table_samples:
            raise LogError(f"line {no}: {samples} samples seen after {self.table_samples} "
                           "(two logs interleaved or concatenated?)")
        self.table_samples = samples
        self.result.rows.append(row("loss", loss_since_last, step=samples))

    def _epoch(self, no: int, epoch: int, total: int, kind: str, text: str) -> None:
        rows, meta = self.result.rows, self.result.meta
        if self.max_epochs is not None and total != self.max_epochs:
            raise LogError(f"line {no}: epoch {epoch} of {total} in a run of {self.max_epochs} epochs "
                           "(two logs interleaved or concatenated?)")
        self.max_epochs = total
        crit = _criteria(text)
        if kind == "Training":
            if epoch <= self.last_epoch:
                raise LogError(f"line {no}: epoch {epoch} finishes after epoch {self.last_epoch} "
                               "(two logs interleaved or concatenated?)")
            t = EPOCH_TIME.search(text)
            py = PY_EPOCH_TIME.search(text) if t is None else None
            if not crit or (t or py) is None:
                raise LogError(f"line {no}: a 'Finished Epoch' line without its criterion or its time")
            name, (value, _, _) = next(iter(crit.items()))
            meta.setdefault("criterion", name)
            rows.append(row("loss", value, epoch=epoch))
            seconds = float((t or py)[1])
            self.epoch_times[epoch] = seconds
            rows.append(row("epoch_time_s", seconds, epoch=epoch))
            self._wording(no, python_api=py is not None)
            if py:
                rows.append(row("throughput_records_per_s", float(py[2]), epoch=epoch))
            self.last_epoch = epoch
        else:
            self._tested(text, epoch)

    def missing(self) -> str | None:
        """What the log lacks of a whole training, or None."""
        if self.max_epochs is None:
            return "no 'Finished Epoch' line"
        if self.last_epoch < self.max_epochs:
            return f"{self.last_epoch} of {self.max_epochs} epochs finished"
        if self.last_epoch > self.max_epochs:  # CNTK 2.0 beta's training_session ran on past its end
            return f"epoch {self.last_epoch} finished, past the run's {self.max_epochs} epochs"
        return None

    def finish(self, problems, cut: bool) -> ParseResult:
        """Close the result; a whole training gets its train_time_s (the sum of its epochs)."""
        result = self.result
        if self.ranks:
            result.meta["mpi_ranks"] = len(self.ranks)
        result.close(*problems, cut=cut)
        if result.finished:
            result.rows.append(row("train_time_s", round(sum(self.epoch_times.values()), 6), epoch=self.last_epoch))
        elif result.meta.get("errors"):
            result.reason += f"; the log shows {result.meta['errors'][0]}"
        return result
