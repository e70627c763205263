"""DLoBD artifact: experiment specs, launchers, parsers, figures, claim verdicts, report."""

from pathlib import Path

__version__ = "0.1.0"

#: The project root (the checkout this package lives in).
ROOT = Path(__file__).resolve().parent.parent
