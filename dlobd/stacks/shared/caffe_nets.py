"""The Caffe nets and solvers CaffeOnSpark and S-Caffe train (workloads/caffe-nets/): their
Jinja2 templates and models.yaml, which names each model's data set, batch and solver.
"""

import functools

import yaml

from dlobd import ROOT

NETS = ROOT / "workloads" / "caffe-nets"


@functools.lru_cache(maxsize=1)
def models() -> dict:
    return yaml.safe_load((NETS / "models.yaml").read_text())
