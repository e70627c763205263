"""The claim language (docs/claim-language.md): its grammar, parsed into a small tree of
dataclasses (never handed to Python's eval), and the tree shown back as check text.

``parse_check(text) -> Check``; ``Check.selections() -> [Selection]`` for spec validation;
``show(node, env)`` and ``fmt(value)`` for the verdict texts. Evaluation over results is
dlobd/results/claims.py.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, fields

import lark

from dlobd.spec import metrics

GRAMMAR = r"""
?start: expr

?expr: and_test ("or" and_test)*                    -> or_
?and_test: not_test ("and" not_test)*               -> and_
?not_test: "not" not_test                           -> not_
         | comparison
?comparison: sum (COMP_OP sum)*                     -> compare
?sum: term (ADD_OP term)*                           -> arith
?term: factor (MUL_OP factor)*                      -> arith
?factor: "-" factor                                 -> neg
       | atom
?atom: NUMBER                                       -> number
     | STRING                                       -> string
     | NAME                                         -> word
     | DIGITWORD                                    -> word
     | ref
     | AT_NAME                                      -> bare_ref
     | "exists" selectors                           -> exists
     | NAME "(" arg ("," arg)* ")"                  -> call
     | AT_NAME "(" arg ("," arg)* ")"               -> call
     | NAME "(" NAME "in" domain ":" expr ")"       -> quantifier
     | "consecutive" "(" NAME "," NAME "in" domain ":" expr ")" -> consecutive
     | "(" expr ")"

ref: (NAME | AT_NAME) selectors
selectors: "[" [selector ("," selector)*] "]"
selector: NAME "=" value
?value: NUMBER                                      -> number
      | "-" NUMBER                                  -> neg_number
      | STRING                                      -> string
      | NAME                                        -> word
      | DIGITWORD                                   -> word

?arg: expr
    | NAME "=" value                                -> kwarg
    | expr "over" NAME                              -> over

domain: "{" value ("," value)* "}"                  -> set_
      | NUMBER ".." NUMBER                          -> range_
      | NAME                                        -> axis_set

COMP_OP: "<=" | ">=" | "==" | "!=" | "<" | ">"
ADD_OP: "+" | "-"
MUL_OP: "*" | "/"
NUMBER: /\d+(\.\d+)?([eE][+-]?\d+)?/
NAME: /[A-Za-z_][A-Za-z0-9_.+\-]*/
AT_NAME.3: /[A-Za-z_][A-Za-z0-9_]*@[A-Za-z0-9][A-Za-z0-9_.+\-]*/
DIGITWORD.2: /(?!\d+(\.\d+)?([eE][+-]?\d+)?(?![A-Za-z0-9_.+\-]))\d+[A-Za-z_][A-Za-z0-9_.+\-]*/
STRING: /'[^'\n]*'|"[^"\n]*"/

%import common.WS
%ignore WS
"""

# Readable names of the grammar's terminals, for syntax errors.
_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "AT_NAME": "a reference such as y@<experiment>",
    "DIGITWORD": "a word", "STRING": "a quoted word", "COMP_OP": "a comparison",
    "ADD_OP": "'+' or '-'", "MUL_OP": "'*' or '/'", "$END": "the end of the check",
}

QUANTIFIERS = {"all", "any", "count", "max", "min", "argmin", "argmax"}
# name -> (least, most positional arguments; None = any number)
FUNCTIONS = {
    "approx": (2, 2), "abs": (1, 1), "min": (2, None), "max": (2, None),
    "reduction": (2, 2), "speedup_gain": (2, 2),
    "mean_over_time": (1, 1), "max_over_time": (1, 1), "min_over_time": (1, 1),
    "duration": (1, 1), "time_to": (1, 1), "slope": (1, 1),
}
SERIES_FUNCTIONS = {"mean_over_time", "max_over_time", "min_over_time", "duration"}
TIME_COLUMNS = ("wall_clock_s", "time_s")
# Row columns a selector may name in any experiment, whether or not its results have them yet.
ROW_DIMENSIONS = {"step", "epoch", *metrics.COMMON_DIMS,
                  *(d for m in metrics.METRICS.values() for d in m.dims)}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}
ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def first_reached(times, values, op: str, target: float) -> tuple[float | None, float]:
    """What time_to reads from one run's samples (pandas Series of times and values): the time
    of the first sample, in time order (ties as given), whose value is `op target`, else None;
    and the best value the run reached (the largest for > and >=, else the smallest)."""
    ordered = values.to_frame("value").assign(_t=times).dropna(subset=["_t"]).sort_values("_t", kind="stable")
    reached = ordered[COMPARE[op](ordered["value"], target)]
    best = float(ordered["value"].max() if op in (">", ">=") else ordered["value"].min())
    return (None if reached.empty else float(reached["_t"].iloc[0])), best



class ClaimSyntaxError(ValueError):
    """A check that does not parse: position, what was found and what was expected."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 expected: list[str] | None = None, context: str = ""):
        self.message, self.line, self.column = message, line, column
        self.expected = expected or []
        where = f"line {line}, column {column}: " if line is not None else ""
        exp = f"; expected {', '.join(self.expected)}" if self.expected else ""
        ctx = f"\n{context}" if context else ""
        super().__init__(f"{where}{message}{exp}{ctx}")


class CheckError(ValueError):
    """A check that parses but cannot be evaluated as written (a spec error)."""


# ---------------------------------------------------------------- the tree


@dataclass(frozen=True)
class Num:
    value: float
    text: str


@dataclass(frozen=True)
class Word:
    """A bare or quoted word; a bare word bound by a quantifier stands for its value."""
    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Ref:
    metric: str                 # 'y' or a metric name
    experiment: str | None      # None: the claim's own experiment
    selectors: tuple            # ((column, Num | Word), ...)


@dataclass(frozen=True)
class Exists:
    selectors: tuple


@dataclass(frozen=True)
class Neg:
    operand: object


@dataclass(frozen=True)
class Not:
    operand: object


@dataclass(frozen=True)
class Arith:
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Logic:
    op: str                     # 'and' | 'or'
    operands: tuple


@dataclass(frozen=True)
class Compare:
    operands: tuple
    ops: tuple


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    kwargs: tuple               # ((name, Num), ...): approx's rtol/atol


@dataclass(frozen=True)
class TimeTo:
    ref: Ref
    op: str
    target: object


@dataclass(frozen=True)
class Slope:
    ref: Ref
    axis: str


@dataclass(frozen=True)
class SetOf:
    items: tuple


@dataclass(frozen=True)
class RangeOf:
    low: int
    high: int


@dataclass(frozen=True)
class AxisOf:
    name: str


@dataclass(frozen=True)
class Quant:
    kind: str                   # all any count max min argmin argmax consecutive
    names: tuple
    domain: object
    body: object


def _children(node) -> list:
    out = []
    for f in fields(node):
        value = getattr(node, f.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, tuple):     # (name, node) pairs
                out.extend(x for x in item if hasattr(x, "__dataclass_fields__"))
            elif hasattr(item, "__dataclass_fields__"):
                out.append(item)
    return out


def has_data(node) -> bool:
    """True if the node reads results (its value is reproduced, not a paper number)."""
    if isinstance(node, (Ref, Exists, TimeTo, Slope)):
        return True
    return any(has_data(c) for c in _children(node))


# ---------------------------------------------------------------- parsing


class _Build(lark.Transformer):
    """Lark parse tree -> the dataclass tree, checking names and arities."""

    def _fail(self, token, message: str):
        line, column = getattr(token, "line", None), getattr(token, "column", None)
        raise ClaimSyntaxError(message, line, column)

    def number(self, c):
        return Num(float(c[0]), str(c[0]))

    def neg_number(self, c):
        return Num(-float(c[0]), f"-{c[0]}")

    def string(self, c):
        return Word(str(c[0])[1:-1], quoted=True)

    def word(self, c):
        return Word(str(c[0]))

    def selector(self, c):
        return (str(c[0]), c[1])

    def selectors(self, c):
        return tuple(x for x in c if x is not None)

    def ref(self, c):
        name, sels = str(c[0]), c[1]
        metric, _, experiment = name.partition("@")
        return Ref(metric, experiment or None, sels)

    def bare_ref(self, c):
        metric, _, experiment = str(c[0]).partition("@")
        return Ref(metric, experiment, ())

    def exists(self, c):
        return Exists(c[0])

    def neg(self, c):
        return Neg(c[0])

    def not_(self, c):
        return Not(c[0])

    # The rules below see a single child when the operator is absent ('?rule -> alias'
    # does not inline in Lark): pass it through.
    def or_(self, c):
        return Logic("or", tuple(c)) if len(c) > 1 else c[0]

    def and_(self, c):
        return Logic("and", tuple(c)) if len(c) > 1 else c[0]

    def compare(self, c):
        if len(c) == 1:
            return c[0]
        return Compare(tuple(c[0::2]), tuple(str(op) for op in c[1::2]))

    def arith(self, c):
        node = c[0]
        for op, right in zip(c[1::2], c[2::2]):
            node = Arith(str(op), node, right)
        return node

    def kwarg(self, c):
        return ("kwarg", c[0], c[1])

    def over(self, c):
        return ("over", c[0], c[1])

    def set_(self, c):
        return SetOf(tuple(c))

    def range_(self, c):
        low, high = c
        if "." in low or "e" in low.lower() or "." in high or "e" in high.lower():
            self._fail(low, f"a range needs whole numbers, not {low}..{high}")
        if int(high) < int(low):
            self._fail(low, f"empty range {low}..{high}")
        return RangeOf(int(low), int(high))

    def axis_set(self, c):
        return AxisOf(str(c[0]))

    def quantifier(self, c):
        kind, var, domain, body = c
        if kind not in QUANTIFIERS:
            self._fail(kind, f"unknown quantifier '{kind}' (known: {', '.join(sorted(QUANTIFIERS))})")
        return Quant(str(kind), (str(var),), domain, body)

    def consecutive(self, c):
        a, b, domain, body = c
        if a == b:
            self._fail(b, "consecutive needs two different names")
        return Quant("consecutive", (str(a), str(b)), domain, body)

    def call(self, c):
        name, args = c[0], c[1:]
        base, _, experiment = name.partition("@")
        if experiment:      # time_to@<id>(...), slope@<id>(...): on another experiment's results
            if base not in ("time_to", "slope"):
                self._fail(name, f"only time_to and slope take @<experiment>, not {base}")
            args = [self._at(name, experiment, a) for a in args]
            name = lark.Token("NAME", base, line=name.line, column=name.column)
        if name not in FUNCTIONS:
            self._fail(name, f"unknown function '{name}' (known: {', '.join(sorted(FUNCTIONS))})")
        positional = [a for a in args if not isinstance(a, tuple)]
        overs = [a for a in args if isinstance(a, tuple) and a[0] == "over"]
        kwargs = [(str(a[1]), a[2], a[1]) for a in args if isinstance(a, tuple) and a[0] == "kwarg"]
        least, most = FUNCTIONS[name]
        count = len(positional) + len(overs)
        if count < least or (most is not None and count > most):
            want = least if least == most else f"at least {least}"
            self._fail(name, f"{name}() takes {want} argument(s), got {count}")
        if name == "slope":
            return self._slope(name, overs, kwargs)
        if overs:
            self._fail(name, f"'over' is only allowed in slope(), not in {name}()")
        if name == "time_to":
            return self._time_to(name, positional[0], kwargs)
        if name in SERIES_FUNCTIONS and not isinstance(positional[0], Ref):
            self._fail(name, f"{name}() takes a metric reference such as cpu_util_pct[...]")
        if name == "approx":
            return self._approx(name, positional, kwargs)
        if kwargs:
            self._fail(kwargs[0][2], f"{name}() takes no keyword arguments")
        return Call(str(name), tuple(positional), ())

    def _approx(self, name, positional, kwargs):
        seen = {}
        for key, value, token in kwargs:
            if key not in ("rtol", "atol"):
                self._fail(token, f"approx() takes rtol= and atol=, not {key}=")
            if not isinstance(value, Num) or value.value < 0:
                self._fail(token, f"approx(): {key} must be a non-negative number")
            seen[key] = value
        if not seen:
            self._fail(name, "approx() needs rtol= or atol=")
        return Call("approx", tuple(positional), tuple(seen.items()))

    def _at(self, token, experiment: str, arg):
        """The first argument of time_to@<id>/slope@<id>, pointed at that experiment."""
        if isinstance(arg, Compare) and len(arg.ops) == 1:
            ref = self._as_ref(token, arg.operands[0], "the left side of time_to's condition")
            return Compare((self._on(token, ref, experiment), arg.operands[1]), arg.ops)
        if isinstance(arg, tuple) and arg[0] == "over":
            return ("over", self._on(token, self._as_ref(token, arg[1], "slope's value"), experiment),
                    arg[2])
        return arg

    def _on(self, token, ref: Ref, experiment: str) -> Ref:
        if ref.experiment and ref.experiment != experiment:
            self._fail(token, f"{ref.metric}@{ref.experiment} inside {token}")
        return Ref(ref.metric, experiment, ref.selectors)

    def _as_ref(self, token, node, what: str) -> Ref:
        if isinstance(node, Word) and not node.quoted:
            metric, _, experiment = node.text.partition("@")
            return Ref(metric, experiment or None, ())
        if isinstance(node, Ref):
            return node
        self._fail(token, f"{what} must name a metric (y or a metric name), optionally with [...]")

    def _with_selectors(self, token, ref: Ref, kwargs) -> Ref:
        named = {k for k, _ in ref.selectors}
        for key, _, tok in kwargs:
            if key in named:
                self._fail(tok, f"selector {key!r} given twice")
            named.add(key)
        return Ref(ref.metric, ref.experiment, ref.selectors + tuple((k, v) for k, v, _ in kwargs))

    def _time_to(self, name, condition, kwargs):
        if not (isinstance(condition, Compare) and len(condition.ops) == 1):
            self._fail(name, "time_to() takes a condition such as top1_accuracy >= 0.70")
        ref = self._as_ref(name, condition.operands[0], "the left side of time_to's condition")
        if has_data(condition.operands[1]):
            self._fail(name, "time_to()'s target must be a number")
        return TimeTo(self._with_selectors(name, ref, kwargs), condition.ops[0],
                      condition.operands[1])

    def _slope(self, name, overs, kwargs):
        if len(overs) != 1:
            self._fail(name, "slope() takes '<metric> over <axis>' such as y over nodes")
        _, target, axis = overs[0]
        ref = self._as_ref(name, target, "slope's value")
        for key, token in [(k, axis) for k, _ in ref.selectors] + [(k, t) for k, _, t in kwargs]:
            if key == axis:
                self._fail(token, f"slope over {axis} cannot also select {axis}")
        return Slope(self._with_selectors(name, ref, kwargs), str(axis))


@functools.cache
def _parser() -> lark.Lark:
    return lark.Lark(GRAMMAR, parser="lalr", maybe_placeholders=True)


def _expected(parser: lark.Lark, names) -> list[str]:
    out = []
    for name in sorted(names):
        if name in _TERMINAL_NAMES:
            out.append(_TERMINAL_NAMES[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            out.append(name)
            continue
        out.append(f"'{pattern.value}'" if pattern.type == "str" else name.lower())
    return out


@dataclass(frozen=True)
class Var:
    """A quantifier's bound variable used as a selector value."""
    name: str


@dataclass
class Selection:
    """One place where a check reads results."""
    experiment: str | None
    metric: str                 # 'y' or a metric name
    selectors: dict             # column -> str | float | Var
    kind: str = "value"         # value | series | time_to | slope | exists
    text: str = ""

    def open_axes(self, matrix: dict) -> list[str]:
        """Axes of `matrix` with several values that this selection leaves open (ambiguous)."""
        if self.kind == "exists":
            return []
        return sorted(a for a, vals in matrix.items()
                      if a not in self.selectors and len(vals) > 1)


@dataclass(frozen=True)
class Check:
    text: str
    tree: object

    def selections(self) -> list[Selection]:
        out: list[Selection] = []

        def visit(node, bound: frozenset):
            match node:
                case Ref():
                    out.append(_selection(node, bound, "value"))
                    return
                case Exists(selectors):
                    out.append(_selection(Ref("y", None, selectors), bound, "exists"))
                    return
                case TimeTo(ref, _, target):
                    out.append(_selection(ref, bound, "time_to"))
                    visit(target, bound)
                    return
                case Slope(ref, axis):
                    sel = _selection(ref, bound, "slope")
                    sel.selectors[axis] = Var(axis)
                    out.append(sel)
                    return
                case Call(name, args, _) if name in SERIES_FUNCTIONS:
                    out.append(_selection(args[0], bound, "series"))
                    return
                case Quant(_, names, _, body):
                    visit(body, bound | set(names))
                    return
            for child in _children(node):
                visit(child, bound)

        visit(self.tree, frozenset())
        return out


def _selection(ref: Ref, bound: frozenset, kind: str) -> Selection:
    sels = {}
    for column, value in ref.selectors:
        if isinstance(value, Num):
            sels[column] = value.value
        elif not value.quoted and value.text in bound:
            sels[column] = Var(value.text)
        else:
            sels[column] = value.text
    return Selection(ref.experiment, ref.metric, sels, kind, show(ref, {}))


@functools.lru_cache(maxsize=None)     # a Check is immutable; specs repeat checks across scales
def parse_check(text: str) -> Check:
    """Parse a check; raises ClaimSyntaxError with the position and what was expected."""
    if not isinstance(text, str) or not text.strip():
        raise ClaimSyntaxError("empty check")
    parser = _parser()
    try:
        tree = parser.parse(text)
    except lark.exceptions.UnexpectedCharacters as e:
        raise ClaimSyntaxError(f"unexpected character {text[e.pos_in_stream]!r}", e.line, e.column,
                               _expected(parser, e.allowed or ()), e.get_context(text)) from None
    except lark.exceptions.UnexpectedToken as e:
        if e.token.type == "$END":      # point just past the last character
            lines = text.rstrip().split("\n")
            raise ClaimSyntaxError("unexpected end of check", len(lines), len(lines[-1]) + 1,
                                   _expected(parser, e.expected)) from None
        raise ClaimSyntaxError(f"unexpected {str(e.token)!r}", e.line, e.column,
                               _expected(parser, e.expected), e.get_context(text)) from None
    try:
        return Check(text, _Build().transform(tree))
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, ClaimSyntaxError):
            err = e.orig_exc
            raise ClaimSyntaxError(err.message, err.line, err.column) from None
        raise


# ---------------------------------------------------------------- rendering


def fmt(value) -> str:
    """A value as the verdict table shows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "missing"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


# Binding strength of each form, for parenthesising when a check is shown.
_ARITH_LEVEL = {"+": 4, "-": 4, "*": 5, "/": 5}


def _level(node) -> int:
    match node:
        case Logic(op, _):
            return 0 if op == "or" else 1
        case Not():
            return 2
        case Compare():
            return 3
        case Arith(op, _, _):
            return _ARITH_LEVEL[op]
        case Neg():
            return 6
    return 9


def show(node, env: dict) -> str:
    """The node as check text, with bound variables replaced by their current values."""
    match node:
        case Num(_, text):
            return text
        case Word(text, quoted):
            if not quoted and text in env:
                return fmt(env[text].value)
            return f"'{text}'" if quoted else text
        case Ref(metric, experiment, selectors):
            at = f"@{experiment}" if experiment else ""
            return f"{metric}{at}[{_show_selectors(selectors, env)}]"
        case Exists(selectors):
            return f"exists[{_show_selectors(selectors, env)}]"
        case Neg(operand):
            return f"-{_wrap(operand, env, 7)}"
        case Not(operand):
            return f"not {_wrap(operand, env, 2)}"
        case Arith(op, left, right):
            own = _ARITH_LEVEL[op]
            return f"{_wrap(left, env, own)} {op} {_wrap(right, env, own + (op in '-/'))}"
        case Logic(op, operands):
            return f" {op} ".join(_wrap(o, env, _level(node) + 1) for o in operands)
        case Compare(operands, ops):
            parts = [_wrap(operands[0], env, 4)]
            for op, operand in zip(ops, operands[1:]):
                parts += [op, _wrap(operand, env, 4)]
            return " ".join(parts)
        case Call(name, args, kwargs):
            items = [show(a, env) for a in args] + [f"{k}={v.text}" for k, v in kwargs]
            return f"{name}({', '.join(items)})"
        case TimeTo(ref, op, target):
            sels = f", {_show_selectors(ref.selectors, env)}" if ref.selectors else ""
            at = f"@{ref.experiment}" if ref.experiment else ""
            return f"time_to({ref.metric}{at} {op} {show(target, env)}{sels})"
        case Slope(ref, axis):
            sels = f", {_show_selectors(ref.selectors, env)}" if ref.selectors else ""
            at = f"@{ref.experiment}" if ref.experiment else ""
            return f"slope({ref.metric}{at} over {axis}{sels})"
        case Quant(kind, names, domain, body):
            inner = {k: v for k, v in env.items() if k not in names}
            return f"{kind}({', '.join(names)} in {_show_domain(domain)}: {show(body, inner)})"
    raise TypeError(f"cannot show {node!r}")


def _show_selectors(selectors, env) -> str:
    return ", ".join(f"{k}={show(v, env)}" for k, v in selectors)


def _show_domain(domain) -> str:
    match domain:
        case SetOf(items):
            return "{" + ", ".join(show(i, {}) for i in items) + "}"
        case RangeOf(low, high):
            return f"{low}..{high}"
        case AxisOf(name):
            return name


def _wrap(node, env, level: int) -> str:
    """Parenthesise a child that binds less tightly than its place needs."""
    text = show(node, env)
    return f"({text})" if _level(node) < level else text
