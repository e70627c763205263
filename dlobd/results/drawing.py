"""The figure pool's entry point (workflow/rules/common.smk). The Snakemake process names the
drawing function and the pool's worker processes run it: only they import matplotlib, whose
import would otherwise hold the Snakemake process's interpreter lock from its other jobs for
most of a second."""

from __future__ import annotations

import importlib

FIGURES = "dlobd.results.figures"
# the module the pool's server process imports (and only it): the figures module and its exits
SERVER = "dlobd.results.drawingserver"


def call(function: str, *args):
    """`figures.<function>(*args)`, in the process that runs it (preloaded in the pool's workers)."""
    return getattr(importlib.import_module(FIGURES), function)(*args)
