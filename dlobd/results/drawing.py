"""The figure pool's entry point (workflow/rules/common.smk). The Snakemake process names the
drawing function and the pool's worker processes run it: only they import matplotlib, whose
import would otherwise hold the Snakemake process's interpreter lock from its other jobs for
most of a second."""

from __future__ import annotations

import gc
import importlib

FIGURES = "dlobd.results.figures"
# the module the pool's server process imports (and only it): the figures module and its exits
SERVER = "dlobd.results.drawingserver"


# a figure makes some ten thousand matplotlib objects, each counted towards a collection: at
# Python's default threshold (700) the collector ran every few artists, a twentieth of the drawing
COLLECT_AFTER = 100_000


def start_worker() -> None:
    """A drawing process's start: the imported modules frozen, as in the Snakefile, so that each
    collection skips them, and collections only every COLLECT_AFTER new objects."""
    gc.freeze()
    gc.set_threshold(COLLECT_AFTER, *gc.get_threshold()[1:])


def call(function: str, *args):
    """`figures.<function>(*args)`, in the process that runs it (preloaded in the pool's workers)."""
    return getattr(importlib.import_module(FIGURES), function)(*args)
