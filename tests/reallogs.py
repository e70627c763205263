"""The real logs from elsewhere (tests/data/logs/real/, see its README) as stack tests use them."""

from pathlib import Path

REAL = Path(__file__).resolve().parent / "data" / "logs" / "real"


def lines(stack: str, name: str) -> list[str]:
    """The lines of tests/data/logs/real/<stack>/<name>.log, newlines kept."""
    return (REAL / stack / f"{name}.log").read_text().splitlines(keepends=True)


def interleaved(a: list[str], b: list[str]) -> str:
    """Two logs' lines taken in turn, as two processes writing to one file would leave them."""
    return "".join(x for pair in zip(a, b) for x in pair)


def cut_mid_line(text_lines: list[str]) -> str:
    """A log whose last line stops half way."""
    return "".join(text_lines[:-1]) + text_lines[-1][: len(text_lines[-1]) // 2]
