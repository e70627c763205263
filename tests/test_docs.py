"""README.md is a short guide, and every repository path the docs cite exists."""

import re

from dlobd import ROOT

README_MAX_LINES = 250

# A cited path counts as the repository's when it starts with one of these.
TOP_DIRS = ("playbooks", "dlobd", "docs", "tests", "experiments", "claims", "config", "containers",
            "slurm", "spack-envs", "spack-repo", "workloads", "benchmarks", "data", "profiles",
            "requirements", "workflow")
TOP_FILES = ("Makefile", "Snakefile", "README.md", "pyproject.toml", "ansible.cfg")

# Made at run time, or paths under $DLOBD_PREFIX that share a name with a repository folder.
NOT_IN_CHECKOUT = (
    "data/runs",          # raw logs of the user's runs
    "data/results", "data/state",                  # the pipeline's tables and markers
    "data/emulated",      # make emulated-experiments' output
    "data/kick-tires",    # make kick-tires' job output and its reference figures' log
    "data/rehearsal",     # make experiments REHEARSE=1: a rehearsal's runs and markers
    "data/runs-paper", "data/paper-profile",       # make reproduce-paper's runs and output
    "data/mnist", "data/fashion-mnist",            # the prefix's data sets
    "data/pagerank-hibench-shaped-synthetic",      # the prefix's generated graphs
    "slurm/site.env",     # the user's copy of slurm/site.env.example
)

BACKTICKS = re.compile(r"`([^`\n]+)`")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
# where a path stops being literal: a glob, a placeholder, a brace list, a variable
VARIABLE_PART = re.compile(r"[*<{$]")


def cited_paths(text):
    """Repository paths in backticks (each word of the span) and relative link targets."""
    words = [w for span in BACKTICKS.findall(text) for w in span.split()]
    links = [t.split("#")[0] for t in LINK_TARGET.findall(text) if "://" not in t]
    return [w.rstrip(".,;:)") for w in words], [t for t in links if t]


def looks_like_repo_path(word):
    head = word.split("/")[0]
    return (head in TOP_DIRS and "/" in word) or word in TOP_FILES


def missing_paths(doc, root):
    """The paths `doc` cites that are not in the checkout at `root`."""
    words, links = cited_paths(doc.read_text())
    candidates = [w for w in words if looks_like_repo_path(w)]
    # link targets are relative to the doc's own folder
    candidates += [str((doc.parent / t).resolve().relative_to(root.resolve())) for t in links
                   if (doc.parent / t).resolve().is_relative_to(root.resolve())]
    missing = []
    for path in candidates:
        if path.startswith(NOT_IN_CHECKOUT):
            continue
        variable = VARIABLE_PART.search(path)
        # for a glob or a placeholder, the folder before it must exist
        fixed = path[:variable.start()].rsplit("/", 1)[0] if variable else path.rstrip("/")
        if not (root / fixed).exists():
            missing.append(path)
    return missing


def docs():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_a_short_guide_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "make reproduce" in text and "make test" in text


def test_every_cited_path_exists():
    missing = {doc.name: missing_paths(doc, ROOT) for doc in docs()}
    assert not {name: paths for name, paths in missing.items() if paths}


def test_every_doc_the_readme_points_to_exists():
    text = (ROOT / "README.md").read_text()
    table = text.split("## Where each topic's doc is", 1)[1]
    targets = LINK_TARGET.findall(table)
    assert len(targets) >= 10
    assert all((ROOT / t).is_file() for t in targets), [t for t in targets if not (ROOT / t).is_file()]


def test_the_checker_finds_a_wrong_path(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "playbooks/roles/dlobd").mkdir(parents=True)
    (tmp_path / "Makefile").write_text("")
    doc = tmp_path / "docs/guide.md"
    doc.write_text(
        "`playbooks/roles/dlobd/` and `playbooks/roles/<role>/tasks` and `Makefile`.\n"
        "`make test` and `data/runs/x/y` and [here](guide.md#top) and [web](https://x.org/a).\n"
        "Wrong: `playbooks/group_vars/all/main.yml`, `dlobd/nothere/*.py` and [gone](gone.md).\n")
    assert missing_paths(doc, tmp_path) == [
        "playbooks/group_vars/all/main.yml", "dlobd/nothere/*.py", "docs/gone.md"]


def test_a_glob_or_placeholder_checks_its_fixed_folder(tmp_path):
    (tmp_path / "experiments").mkdir()
    doc = tmp_path / "README.md"
    doc.write_text("`experiments/<id>.yaml`, `experiments/*.yaml`, `workloads/<x>/run.py`\n")
    assert missing_paths(doc, tmp_path) == ["workloads/<x>/run.py"]
