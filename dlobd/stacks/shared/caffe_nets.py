"""The Caffe nets and solvers CaffeOnSpark and S-Caffe train (workloads/caffe-nets/): their
Jinja2 templates and models.yaml, which names each model's data set, batch and solver.
"""

import functools

import jinja2
import yaml

from dlobd import ROOT

NETS = ROOT / "workloads" / "caffe-nets"


@functools.lru_cache(maxsize=1)
def models() -> dict:
    return yaml.safe_load((NETS / "models.yaml").read_text())


@functools.cache
def templates() -> jinja2.Environment:
    """One environment a process: it compiles each template once (a plan renders the nets of
    hundreds of points; compiling them anew took most of its time)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(NETS)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
