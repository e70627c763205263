"""The package's layers (docs/design.md, "The package in layers"): import-linter's contracts in
pyproject.toml hold, they break on an upward import or a cycle, and no module imports the
package's own modules inside a function."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlobd import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter over the `dlobd` package found under `root`, with root's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def package_copy(tmp_path):
    """The package and its contracts, copied where a test may break them."""
    shutil.copytree(ROOT / "dlobd", tmp_path / "dlobd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_layers_and_has_no_cycles():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout


def lint_with_import(root: Path, module: str, statement: str) -> str:
    """import-linter's report after adding `statement` to `module` of the copy at `root`."""
    path = root / "dlobd" / module
    path.write_text(path.read_text() + f"\n{statement}  # on purpose\n")
    done = lint_imports(root)
    assert done.returncode != 0, done.stdout
    return done.stdout


def test_an_upward_import_breaks_the_layers(package_copy):
    report = lint_with_import(package_copy, "cluster/fabric.py", "from dlobd.results import report")
    assert "layers: command line, results, execution, stacks, cluster, spec BROKEN" in report
    assert "dlobd.cluster.fabric -> dlobd.results.report" in report


def test_a_figure_job_importing_one_above_it_breaks_the_figures_layers(package_copy):
    report = lint_with_import(package_copy, "results/figures/values.py",
                              "from dlobd.results.figures import paper")
    assert "figures: each job's module imports only the jobs below it BROKEN" in report
    assert "dlobd.results.figures.values -> dlobd.results.figures.paper" in report


def test_a_cycle_inside_a_layer_breaks_the_acyclic_contract(package_copy):
    # claimlang imports metrics: metrics importing claimlang closes a cycle within dlobd.spec
    report = lint_with_import(package_copy, "spec/metrics.py", "from dlobd.spec import claimlang")
    assert "no import cycles among the modules of any package BROKEN" in report


def test_no_module_imports_the_package_inside_a_function():
    late = []
    for path in sorted((ROOT / "dlobd").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else ["dlobd"]  # relative: our own
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if node.col_offset > 0 and any(n == "dlobd" or n.startswith("dlobd.") for n in names):
                late.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert late == []
