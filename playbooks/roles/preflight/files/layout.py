#!/usr/bin/env python3
"""Which hosts share the prefix, or a host's folder, and whether this host can make its folder.

The preflight (role preflight, tasks/layout.yml) runs it on every host with the host's python3
before anything is installed, so only the standard library; it leaves nothing behind.

    layout.py mark  RUN HOST PREFIX LOCAL_DIR   check LOCAL_DIR, leave HOST's marks; prints JSON
    layout.py seen  RUN PREFIX LOCAL_DIR        the hosts whose marks name the same paths; JSON
    layout.py clear RUN HOST PREFIX LOCAL_DIR   remove HOST's marks

A mark is an empty file in the path's folder, or in its parent before it is made (the file system
the path is, or will be, on), named after the run, the path and the host: hosts that see each
other's mark for the same path there share that folder. Where neither exists yet there is
nothing to compare.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import sys
from pathlib import Path

KINDS = ("prefix", "local")


def folder_of(path: Path) -> Path | None:
    return next((p for p in (path, path.parent) if p.is_dir()), None)


def mark_prefix(run: str, kind: str, path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f".dlobd-layout-{run}-{kind}-{digest}-"


def marks(run: str, prefix: str, local_dir: str):
    """(kind, folder where its marks go or None, the start of their names) for each path."""
    for kind, path in zip(KINDS, (Path(prefix), Path(local_dir))):
        yield kind, folder_of(path), mark_prefix(run, kind, path)


def writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK)


def local_dir_error(prefix: str, local_dir: str) -> str | None:
    """Why this host cannot have `local_dir` as its folder, or None. Under the prefix it is made
    with the prefix. Elsewhere (node-local) it, or at least its parent, must exist: a scratch file
    system missing on a host is an error, not a folder quietly made on its root disk."""
    path, user = Path(local_dir), getpass.getuser()
    if not path.is_absolute():
        return "not an absolute path"
    if path == Path(prefix) or Path(prefix) in path.parents:
        return None
    if path.exists():
        if not path.is_dir():
            return "exists and is not a folder"
        return None if writable(path) else f"is not writable by {user}"
    if not path.parent.is_dir():
        return (f"does not exist, nor does its parent {path.parent} (a node-local file system not "
                "mounted on this host?): make it on every host, or choose another path")
    if not writable(path.parent):
        return f"does not exist, and its parent {path.parent} is not writable by {user}"
    return None


def mark(run: str, host: str, prefix: str, local_dir: str) -> dict:
    error = local_dir_error(prefix, local_dir)
    for kind, folder, start in marks(run, prefix, local_dir):
        # a folder this user cannot write to: the prefix is made there later, or fails then
        if folder and (kind == "prefix" or error is None) and writable(folder):
            (folder / (start + host)).touch()
    return {"local_error": error}


def seen(run: str, prefix: str, local_dir: str) -> dict:
    return {kind: sorted(p.name[len(start):] for p in folder.glob(start + "*")) if folder else []
            for kind, folder, start in marks(run, prefix, local_dir)}


def clear(run: str, host: str, prefix: str, local_dir: str) -> dict:
    for _, folder, start in marks(run, prefix, local_dir):
        if folder:
            (folder / (start + host)).unlink(missing_ok=True)
    return {}


def main(argv: list[str]) -> int:
    commands = {"mark": (mark, 4), "seen": (seen, 3), "clear": (clear, 4)}
    if not argv or argv[0] not in commands or len(argv) - 1 != commands[argv[0]][1]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    command, _ = commands[argv[0]]
    print(json.dumps(command(*argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
