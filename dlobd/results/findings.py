"""A check in words: the finding a verdict states (docs/runs-and-results.md), each comparison of
a claim's check with its values in the metric's unit, what a reference reads ('rdma, 384 cores
(here: 2 cores)') and where a max or min over points found its value.

`Wording` is the part of the claims' evaluator (dlobd/results/claims.py) that writes them: it
reads the evaluator's `table(experiment)`, `picked` (the point each max or min chose) and
appends to its `parts`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass

from dlobd.results.verdicts import RATIO, SHARE, SYMBOLS, Part, is_missing, metric_words, point_text, quantity
from dlobd.spec import metrics, same_value
from dlobd.spec.claimlang import (
    Arith,
    AxisOf,
    Call,
    Compare,
    Logic,
    Neg,
    Not,
    Num,
    Quant,
    Ref,
    Slope,
    TimeTo,
    Word,
    fmt,
    has_data,
    show,
)


@dataclass(frozen=True)
class Gap:
    """A value a check could not read: `text` for the reason column (in the check's own terms),
    `words` for the finding (which value, in words, and why)."""
    text: str
    words: str


@dataclass(frozen=True)
class Said:
    """An operand of a comparison in words: what it is, its unit, the metrics it reads, where a
    max or min over points found its value ('at 64 MB'), and whether it is a metric's whole (a
    reference naming nothing the comparison's other references do not)."""
    label: str
    unit: str | None = None
    metrics: frozenset = frozenset()
    at: str = ""
    whole: bool = False


def nodes_of(node, kind) -> list:
    """Every node of `kind` in a check's node, itself included."""
    found = [node] if isinstance(node, kind) else []
    for f in fields(node) if is_dataclass(node) else ():
        value = getattr(node, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            found += nodes_of(item, kind)
    return found


def refs_of(operands) -> list[Ref]:
    return [r for o in operands for r in nodes_of(o, Ref)]


def written_value(node, env: dict):
    """A selector's value: a quantifier's current value, else the value as written."""
    if isinstance(node, Word) and not node.quoted and env.get(node.text) is not None:
        return env[node.text].value
    return node.value if isinstance(node, Num) else node.text


def is_variable(node, env: dict) -> bool:
    return isinstance(node, Word) and not node.quoted and node.text in env


def is_difference(node) -> bool:
    """A difference, or its absolute value: divided by a value, it is a relative difference."""
    if isinstance(node, Call) and node.name == "abs":
        return is_difference(node.args[0])
    return isinstance(node, Arith) and node.op in "+-"


ARITH_WORDS = {"+": "+", "-": "−", "*": "×", "/": "/"}


class Wording:
    """The evaluator's check in words (see the module's docstring)."""

    def _unit(self, experiment: str | None, metric: str) -> str | None:
        spec, _ = self.table(experiment)
        if metric == "y":
            return spec["metric"].get("unit") or metrics.get(spec["metric"]["name"]).unit
        return metrics.METRICS[metric].unit if metric in metrics.METRICS else None

    def ref_words(self, ref: Ref, env: dict, mapped: dict | None = None) -> str:
        """The value a reference reads, in words: 'rdma, 384 cores (here: 2 cores)'."""
        written = {column: written_value(node, env) for column, node in ref.selectors}
        here = [point_text(c, mapped[c]) for c, v in written.items()
                if mapped and c in mapped and not same_value(mapped[c], v)]
        words = ", ".join(point_text(c, v) for c, v in written.items())
        if ref.metric != "y":
            words = f"{metric_words(ref.metric)} at {words}" if words else metric_words(ref.metric)
        words += f" (here: {', '.join(here)})" if here else ""
        return words + (f" in {ref.experiment}" if ref.experiment else "")

    @staticmethod
    def _common(operands) -> list:
        """The selectors (column, value or variable) every reference of a comparison has: its
        labels leave them out, its `where` says them once."""
        refs = refs_of(operands)
        if len(refs) < 2:
            return []
        return [s for s in refs[0].selectors if all(s in r.selectors for r in refs[1:])]

    def _where(self, operands, env: dict) -> str:
        """Where a comparison was made: the points its quantifiers bound, then the values its
        references share ('at 16 MB', 'at loopback, for training')."""
        bound, shared = [], []
        inner = {n for o in operands for q in nodes_of(o, Quant) for n in q.names}
        for column, node in self._common(operands):
            if isinstance(node, Word) and not node.quoted and node.text in inner:
                continue    # ranged over inside: where the max or min was found says the point
            if is_variable(node, env):
                bound += [point_text(column, env[node.text].value)] if env[node.text] is not None else []
            else:
                shared.append(point_text(column, written_value(node, env)))
        return ", ".join(filter(None, (f"at {', '.join(bound)}" if bound else "",
                                       f"for {', '.join(shared)}" if shared else "")))

    def said(self, node, env: dict, common: list = ()) -> Said:
        """A node of a check in words, with the unit of its value."""
        match node:
            case Num(_, text):
                return Said(text)
            case Word(text, quoted):
                bound = not quoted and env.get(text) is not None
                return Said(fmt(env[text].value) if bound else text)
            case Ref(metric, experiment, selectors):
                spec, _ = self.table(experiment)
                name = spec["metric"]["name"] if metric == "y" else metric
                words = ", ".join(point_text(c, written_value(n, env)) for c, n in selectors
                                  if (c, n) not in common and not (is_variable(n, env) and env[n.text] is None))
                label = f"{words} {metric_words(name)}" if words and metric != "y" else words or metric_words(name)
                return Said(label + (f" ({experiment})" if experiment else ""), self._unit(experiment, metric),
                             frozenset({name}), whole=not words)
            case Neg(operand):
                inner = self.said(operand, env, common)
                return Said(f"−{inner.label}", inner.unit, inner.metrics)
            case Arith(op, left, right):
                return self._said_arith(op, left, right, env, common)
            case Call(name, args, _):
                return self._said_call(node, name, args, env, common)
            case TimeTo(ref, op, target):
                where = self.said(Ref("y", ref.experiment, ref.selectors), env, common).label
                return Said(f"time to {metric_words(ref.metric)} {SYMBOLS[op]} {self.said(target, env).label}"
                             f" at {where}", "s", frozenset({ref.metric}))
            case Slope(ref, axis):
                return Said(f"slope of {self.said(ref, env, common).label} over {axis}")
            case Quant(kind, names, _, body):
                inner = self.said(body, {**env, **{n: None for n in names}}, common)
                at = self.picked.get((node, tuple(sorted(env.items()))))
                at = f"at {point_text(self._axis_of(node), at)}" if at is not None else ""
                if kind in ("max", "min"):
                    return Said(f"the {'largest' if kind == 'max' else 'smallest'} {inner.label}",
                                 inner.unit, inner.metrics, at)
                if kind in ("argmax", "argmin"):
                    return Said(f"the {self._axis_of(node)} of the {'largest' if kind == 'argmax' else 'smallest'} "
                                 f"{inner.label}")
                return Said(f"{kind} of {names[0]}: {inner.label}")
            case Compare(operands, ops):
                labels = [self.said(o, env, common).label for o in operands]
                return Said(" ".join([labels[0]] + [f"{SYMBOLS[op]} {label}" for op, label in zip(ops, labels[1:])]))
            case Logic(op, operands):
                return Said(f" {op} ".join(self.said(o, env, common).label for o in operands))
            case Not(operand):
                return Said(f"not {self.said(operand, env, common).label}")
        return Said(show(node, {k: v for k, v in env.items() if v is not None}))

    def _said_arith(self, op, left, right, env, common) -> Said:
        a, b = self.said(left, env, common), self.said(right, env, common)
        wrap = [f"({s.label})" if isinstance(n, Arith) and n.op in "+-" and op in "*/" else s.label
                for n, s in ((left, a), (right, b))]
        if op in "+-":
            # a ratio less one is a gain: a share of the baseline
            unit = SHARE if RATIO in (a.unit, b.unit) and None in (a.unit, b.unit) else a.unit or b.unit
        elif op == "*":
            unit = b.unit if a.unit is None else a.unit if b.unit is None else None
        elif b.unit is None:
            unit = a.unit
        elif a.unit == b.unit:
            # a part of a whole, a difference relative to a value: a share; the same quantity at
            # two points: a ratio
            part = a.metrics != b.metrics or (b.whole and not a.whole)
            unit = SHARE if is_difference(left) or part else RATIO
            wrap[1] = f"the total {wrap[1]}" if b.whole and not a.whole and a.metrics == b.metrics else wrap[1]
        else:
            unit = None
        return Said(f"{wrap[0]} {ARITH_WORDS[op]} {wrap[1]}", unit, a.metrics | b.metrics)

    def _said_call(self, node, name, args, env, common) -> Said:
        said = [self.said(a, env, common) for a in args]
        labels = [s.label for s in said]
        unit = next((s.unit for s in said if s.unit), None)
        metrics_read = frozenset().union(*(s.metrics for s in said))
        match name:
            case "abs":
                return Said(f"|{labels[0]}|", unit, metrics_read)
            case "min" | "max":
                return Said(f"the {'lowest' if name == 'min' else 'highest'} of {', '.join(labels)}",
                             unit, metrics_read)
            case "reduction":
                return Said(f"the reduction from {labels[0]} to {labels[1]}", SHARE, metrics_read)
            case "speedup_gain":
                return Said(f"the gain of {labels[1]} over {labels[0]}", SHARE, metrics_read)
            case "duration":
                return Said(f"the duration of {labels[0]}", "s", metrics_read)
        shown = {"mean_over_time": "mean", "max_over_time": "peak", "min_over_time": "lowest"}
        return Said(f"{shown.get(name, name)} {', '.join(labels)}", unit, metrics_read)

    def _axis_of(self, node: Quant) -> str:
        """The column a quantifier's variable ranges over (to write its values: 16 MB, 2 nodes)."""
        if isinstance(node.domain, AxisOf):
            return node.domain.name
        return next((c for r in refs_of([node.body]) for c, n in r.selectors
                     if isinstance(n, Word) and n.text == node.names[0]), node.names[0])

    def _axis_words(self, node: Quant) -> str:
        return f"{node.kind} over {self._axis_of(node)}"

    def _say_compare(self, node: Compare, values: list, result: bool, env: dict) -> None:
        """The comparison as a part of the finding: its sides with their values in their unit,
        the measured relation where it is not the claimed one."""
        common = self._common(node.operands)
        said = [self.said(o, env, common) for o in node.operands]
        unit = next((s.unit for s in said if s.unit), None)
        sides = [" ".join(filter(None, (s.label if has_data(o) else "", quantity(v, s.unit or unit), s.at)))
                 for o, s, v in zip(node.operands, said, values)]
        claimed = [SYMBOLS[op] for op in node.ops]
        shape = " ".join(s.label if has_data(o) else "#" for o, s in zip(node.operands, said)) + " ".join(claimed)
        ops = claimed if result else [self._measured(a, b) for a, b in zip(values, values[1:])]
        text = " ".join([sides[0]] + [f"{op} {side}" for op, side in zip(ops, sides[1:])])
        self.parts.append(Part(shape, text, self._where(node.operands, env), result,
                               "" if result else f"the claim: {', '.join(claimed)}"))

    @staticmethod
    def _measured(a, b) -> str:
        """How two compared values relate, as measured."""
        if is_missing(a) or is_missing(b):
            return "vs"
        if isinstance(a, str) or isinstance(b, str):
            return "=" if a == b else "≠"
        return "<" if a < b else ">" if a > b else "="
