"""What the tests of the programs for Python 2.7 and 3.5 (the TensorFlow 1.x ones, the PySpark
PageRank) share: loading one as a module here, and the Python syntax newer than those Pythons
may use."""

import ast
import importlib.util
from pathlib import Path


def load_program(path: Path, name: str):
    """A workload program run as a module in this Python (its functions, without its main)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def newer_syntax(tree):
    """Constructs of Python newer than 3.5 (and than 2.7 where 3.5 has them too) in a module."""
    newer = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.JoinedStr, ast.Nonlocal, ast.YieldFrom, ast.AsyncFunctionDef, ast.Await,
                             ast.AnnAssign, ast.NamedExpr, ast.MatMult)):
            newer.append(type(node).__name__)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args
            if args.kwonlyargs or args.posonlyargs or any(a.annotation for a in args.args) or \
                    getattr(node, "returns", None):
                newer.append(f"signature of line {node.lineno}")
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            newer.append(f"starred element, line {node.lineno}")
        elif isinstance(node, ast.Dict) and None in node.keys:
            newer.append(f"** in a dict display, line {node.lineno}")
        elif isinstance(node, ast.Call) and (sum(isinstance(a, ast.Starred) for a in node.args) > 1 or
                                             sum(k.arg is None for k in node.keywords) > 1):
            newer.append(f"several unpackings in a call, line {node.lineno}")
    return newer
