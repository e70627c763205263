"""Spack, offline and pinned: unpack or clone the pinned Spack, concretize and check the
environments under spack-envs/, install them.

Everything Spack writes (caches, repo indexes, configuration, temporary files, installs) goes
under one build folder; ~/.spack and the system configuration are never read or written.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from dlobd import ROOT

ENVS_DIR = ROOT / "spack-envs"
PINS_FILE = ENVS_DIR / "pins.yaml"
REPO_DIR = ROOT / "spack-repo" / "spack_repo" / "dlobd"
# Beside each spack.lock: the digest of the inputs it was concretized from.
INPUTS_FILE = "inputs.sha256"
# Where a site without internet keeps the pinned tarballs (pins.yaml names the files).
TARBALLS_VAR = "DLOBD_SPACK_TARBALLS"


class SpackError(Exception):
    """A Spack step failed; the message names what and carries Spack's own output."""


def load_pins(path: Path = PINS_FILE) -> dict:
    return yaml.safe_load(path.read_text())


def environments() -> list[str]:
    return sorted(p.parent.name for p in ENVS_DIR.glob("*/spack.yaml"))


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tree_commit(root: Path) -> str | None:
    """The commit a Spack (or spack-packages) folder holds: its git HEAD, or the commit the
    tarball it was unpacked from was archived at (recorded at unpack)."""
    marker = root / ".dlobd-commit"
    if marker.exists():
        return marker.read_text().strip()
    if (root / ".git").exists():
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        if out.returncode == 0:
            return out.stdout.strip()
    return None


def check_commit(root: Path, pin: dict, what: str) -> None:
    found = tree_commit(root)
    if found != pin["commit"]:
        raise SpackError(
            f"{what} at {root} is at commit {found or 'unknown (no git HEAD, no unpack record)'}, "
            f"not the pinned {pin['commit']} ({pin['tag']}, spack-envs/pins.yaml): "
            f"check out the pinned commit or point at another {what}"
        )


def unpack(tarballs: Path, pin: dict, dest: Path, what: str) -> None:
    """Unpack the pinned tarball of `what` into dest, after checking its sha256 and the commit
    `git archive` wrote into it."""
    tarball = tarballs / pin["tarball"]
    if not tarball.is_file():
        raise SpackError(f"{what}: {tarball} is missing (the tarball folder must hold {pin['tarball']})")
    found = _sha256(tarball)
    if found != pin["tarball_sha256"]:
        raise SpackError(
            f"{what}: {tarball} has sha256 {found}, pins.yaml expects {pin['tarball_sha256']}"
        )
    commit = subprocess.run(
        f"gzip -dc {tarball} | git get-tar-commit-id", shell=True, capture_output=True, text=True
    ).stdout.strip()
    if commit != pin["commit"]:
        raise SpackError(f"{what}: {tarball} was archived at {commit or 'an unknown commit'}, not {pin['commit']}")
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(tarball), "-C", str(partial), "--strip-components=1"], check=True)
    (partial / ".dlobd-commit").write_text(commit + "\n")
    partial.rename(dest)


def clone(pin: dict, dest: Path) -> None:
    """Fetch exactly the pinned commit with git (no history)."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    git = ["git", "-C", str(partial)]
    partial.mkdir(parents=True)
    for cmd in (
        git + ["init", "--quiet"],
        git + ["fetch", "--quiet", "--depth", "1", pin["git"], pin["commit"]],
        git + ["checkout", "--quiet", "FETCH_HEAD"],
    ):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            raise SpackError(f"{' '.join(cmd)} failed:\n{out.stderr.strip()}")
    partial.rename(dest)


class Spack:
    """The pinned Spack, run offline with every file it writes under `build`.

    spack_root / packages_root: an existing Spack (a site's) and spack-packages checkout; both are
    refused unless at the pinned commits. Otherwise they are unpacked from `tarballs` (a folder
    holding the pinned tarballs) or cloned with git, into build/src.
    """

    def __init__(self, build: Path, tarballs: Path | None = None, spack_root: Path | None = None,
                 packages_root: Path | None = None, mirror: str | None = None,
                 install_root: Path | None = None, pins: dict | None = None):
        self.build = Path(build).resolve()
        self.pins = pins or load_pins()
        self.tarballs = Path(tarballs) if tarballs else None
        self.spack_root = Path(spack_root) if spack_root else self.build / "src" / "spack"
        self.packages_root = Path(packages_root) if packages_root else self.build / "src" / "spack-packages"
        self.mirror = mirror
        self.install_root = Path(install_root) if install_root else self.build / "opt"
        self.python = self.build / "venv" / "bin" / "python"
        # build/scope/<digest of its files>: callers that differ in install root or mirror share a
        # build folder without rewriting each other's scope under a running command
        self.scope = self.build / "scope" / hashlib.sha256(
            json.dumps(self.scope_files(), sort_keys=True).encode()).hexdigest()[:16]
        # a host environment's own software (`spack external find`), above the pinned scope
        self.site_scope: Path | None = None

    # ------------------------------------------------------------------ setting up
    def prepare(self) -> "Spack":
        for root, key, what in ((self.spack_root, "spack", "Spack"),
                                (self.packages_root, "spack_packages", "spack-packages")):
            pin = self.pins[key]
            if not root.exists():
                if root.parent != self.build / "src":
                    raise SpackError(f"{what} root {root} does not exist")
                root.parent.mkdir(parents=True, exist_ok=True)
                if self.tarballs:
                    unpack(self.tarballs, pin, root, what)
                else:
                    clone(pin, root)
            check_commit(root, pin, what)
        self._python()
        self._write_scope()
        return self

    def _python(self) -> None:
        """A venv with clingo from PyPI: Spack then never bootstraps its own."""
        want = self.pins["clingo"]
        stamp = self.build / "venv" / f".clingo-{want}"
        if stamp.exists():
            return
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(self.build / "venv")], check=True)
        out = subprocess.run([str(self.python), "-m", "pip", "install", "--quiet", f"clingo=={want}"],
                             capture_output=True, text=True)
        if out.returncode:
            raise SpackError(f"pip install clingo=={want} failed:\n{out.stderr.strip()}")
        stamp.touch()

    def scope_files(self) -> dict[str, dict]:
        """The configuration scope every command runs with (`spack -C`). The part that decides
        concretization (target, compiler, concretizer) comes from pins.yaml alone."""
        pins = self.pins
        compiler = pins["compiler"]
        mirrors = {"dlobd-user": self.mirror} if self.mirror else {}
        return {
            "bootstrap.yaml": {"bootstrap": {"enable": False}},
            "mirrors.yaml": {"mirrors:": mirrors},
            # the project's recipes first: they add versions to builtin's hadoop, spark ...
            "repos.yaml": {"repos": {"dlobd": str(REPO_DIR),
                                     "builtin": str(self.packages_root / "repos" / "spack_repo" / "builtin")}},
            "concretizer.yaml": {"concretizer": {
                "reuse": False, "targets": {"granularity": "generic", "host_compatible": False}}},
            "config.yaml": {"config": {
                "install_tree": {"root": str(self.install_root)},
                "build_stage": [str(self.build / "stage")],
                "source_cache": str(self.build / "cache" / "source"),
                "misc_cache": str(self.build / "cache" / "misc"),
                "test_stage": str(self.build / "test-stage"),
                # python 3.6-3.9 (the paper profile's) are deprecated in builtin
                "deprecated": True,
            }},
            "packages.yaml": {"packages": {
                "all": {"require": [f"target={pins['target']}"]},
                "gcc": {"buildable": False, "externals": [{
                    "spec": f"{compiler['spec']} target={pins['target']}",
                    "prefix": compiler["prefix"],
                    "extra_attributes": {"compilers": {
                        "c": compiler["cc"], "cxx": compiler["cxx"], "fortran": compiler["fortran"]}},
                }]},
            }},
        }

    def _write_scope(self) -> None:
        """Written once, complete, into its own folder: a concurrent caller sees either no scope
        folder or the whole of it."""
        if self.scope.is_dir():
            return
        self.scope.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=self.scope.parent))
        for name, content in self.scope_files().items():
            (partial / name).write_text(yaml.safe_dump(content, sort_keys=False))
        try:
            partial.rename(self.scope)
        except OSError:
            # another caller put the same scope in place first
            shutil.rmtree(partial)

    # ------------------------------------------------------------------ running
    def environ(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPACK_")}
        tmp = self.build / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env.update(
            SPACK_PYTHON=str(self.python),
            SPACK_DISABLE_LOCAL_CONFIG="1",
            SPACK_USER_CONFIG_PATH=str(self.build / "user-config"),
            SPACK_USER_CACHE_PATH=str(self.build / "user-cache"),
            TMPDIR=str(tmp),
        )
        return env

    def command(self, *args: str) -> list[str]:
        scopes = ["-C", str(self.scope)]
        if self.site_scope and self.site_scope.is_dir():
            scopes += ["-C", str(self.site_scope)]
        return [str(self.spack_root / "bin" / "spack"), *scopes, *args]

    def run(self, *args: str, what: str, check: bool = True) -> str:
        """Run one spack command (niced); on failure raise SpackError naming `what` with Spack's
        output."""
        out = subprocess.run(["nice", *self.command(*args)], env=self.environ(), capture_output=True, text=True)
        if out.returncode and check:
            raise SpackError(f"{what} failed (spack {' '.join(args)}):\n{(out.stdout + out.stderr).strip()}")
        return out.stdout

    # ------------------------------------------------------------------ environments
    def inputs_digest(self, env_dir: Path) -> str:
        """Digest of what a lock is concretized from: spack.yaml, the project recipes the lock
        uses and the pins (which also fix the scope's target and compiler). The pins count by
        their values: a comment in pins.yaml leaves every lock current."""
        digest = hashlib.sha256()
        digest.update(json.dumps(yaml.safe_load(PINS_FILE.read_text()), sort_keys=True).encode())
        digest.update((env_dir / "spack.yaml").read_bytes())
        if self.site_scope:
            for path in sorted(self.site_scope.glob("*.yaml")):
                digest.update(path.read_bytes())
        for name in sorted(self.project_packages(env_dir)):
            for path in sorted((REPO_DIR / "packages" / name).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    digest.update(path.relative_to(REPO_DIR).as_posix().encode())
                    digest.update(path.read_bytes())
        return digest.hexdigest()

    @staticmethod
    def project_packages(env_dir: Path) -> set[str]:
        """Project recipes (their module folder names) a lock's concrete specs come from."""
        lock = env_dir / "spack.lock"
        if not lock.exists():
            return set()
        specs = yaml.safe_load(lock.read_text()).get("concrete_specs", {})
        return {spec["name"].replace("-", "_") for spec in specs.values() if spec.get("namespace") == "dlobd"}

    def is_current(self, env_dir: Path) -> bool:
        recorded = env_dir / INPUTS_FILE
        return (env_dir / "spack.lock").exists() and recorded.exists() and \
            recorded.read_text().split()[0] == self.inputs_digest(env_dir)

    def concretize(self, env_dir: Path) -> float:
        """Re-concretize one environment, record its input digest; returns the seconds it took."""
        start = time.monotonic()
        self.run("-e", str(env_dir), "concretize", "--force", what=f"concretizing environment {env_dir.name}")
        seconds = time.monotonic() - start
        (env_dir / INPUTS_FILE).write_text(f"{self.inputs_digest(env_dir)}  spack.yaml, recipes, pins\n")
        return seconds

    def scratch_copy(self, env_dir: Path) -> Path:
        """A copy of an environment under the build folder, so checks never touch the checkout."""
        copy = self.build / "check" / env_dir.name
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        for name in ("spack.yaml", "spack.lock"):
            if (env_dir / name).exists():
                shutil.copy2(env_dir / name, copy / name)
        return copy

    def find_externals(self, env_dir: Path, packages: list[str]) -> None:
        """Declare the host's own builds of `packages` as non-buildable externals of a host
        environment, in a scope beside it (found once and kept, so a rerun changes nothing)."""
        site = env_dir.parent / f"{env_dir.name}-site"
        if not packages or (site / "packages.yaml").exists():
            self.site_scope = site
            return
        # Spack writes into no -C scope (they are read-only to it): it finds into an environment
        # of its own, whose packages section becomes the site scope, written last, so a failed
        # find leaves no scope behind and runs again next time.
        finder = site.with_name(site.name + ".find")
        shutil.rmtree(finder, ignore_errors=True)
        finder.mkdir(parents=True)
        (finder / "spack.yaml").write_text("spack:\n  specs: []\n")
        self.run("-e", str(finder), "external", "find", "--not-buildable", *packages,
                 what="spack external find")
        found = yaml.safe_load((finder / "spack.yaml").read_text())["spack"].get("packages") or {}
        site.mkdir(parents=True, exist_ok=True)
        (site / "packages.yaml").write_text(yaml.safe_dump({"packages": found}, sort_keys=True))
        shutil.rmtree(finder)
        self.site_scope = site

    def install(self, env_dir: Path) -> dict:
        """Concretize a host's environment when its inputs changed, install it, and return
        {"changed": bool, "locations": {root name: prefix}}."""
        changed = not self.is_current(env_dir)
        if changed:
            self.concretize(env_dir)
        before = self.installed_hashes()
        self.run("-e", str(env_dir), "install", "--fail-fast", what=f"installing environment {env_dir.name}")
        lock = yaml.safe_load((env_dir / "spack.lock").read_text())
        locations = {
            lock["concrete_specs"][root["hash"]]["name"]: self.run(
                "location", "-i", f"/{root['hash']}", what=f"spack location of {root['spec']}").strip()
            for root in lock["roots"]
        }
        return {"changed": changed or self.installed_hashes() != before, "locations": locations}

    def installed_hashes(self) -> set[str]:
        # (spack find fails when nothing is installed yet)
        out = self.run("find", "--format", "{hash}", what="listing installed packages", check=False)
        return {word for word in out.split() if len(word) == 32}

    def audit(self) -> str:
        names = sorted(p.parent.name.replace("_", "-") for p in (REPO_DIR / "packages").glob("*/package.py"))
        return self.run("audit", "packages", *names, what="spack audit packages of spack-repo")


# ---------------------------------------------------------------------- command line
def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--build", required=True, type=Path, help="folder for everything Spack writes")
    parser.add_argument("--tarballs", type=Path, default=os.environ.get(TARBALLS_VAR) or None,
                        help=f"folder with the pinned tarballs (default ${TARBALLS_VAR}); else git")
    parser.add_argument("--spack-root", type=Path, help="an existing Spack at the pinned commit")
    parser.add_argument("--packages-root", type=Path, help="an existing spack-packages at the pinned commit")
    parser.add_argument("--mirror", help="a Spack source mirror (URL or folder) for sites without internet")
    parser.add_argument("--env", action="append", help="only these environments (default: all)")
    parser.add_argument("--env-dir", type=Path, help="install: the host's environment folder")
    parser.add_argument("--install-root", type=Path, help="install: where packages go (default BUILD/opt)")
    parser.add_argument("--find-externals", default="",
                        help="install: comma-separated packages to take from the host (spack external find)")
    parser.add_argument("action", choices=["lock", "lint", "bench", "install", "run"],
                        help="lock: re-concretize every environment; lint: audit the recipes, check "
                             "every lock is current (concretizing the changed ones in a copy); bench: "
                             "print concretize_s per environment; install: a host's environment "
                             "(--env-dir), printing JSON {changed, locations}; run: any spack command")
    parser.add_argument("spack_args", nargs=argparse.REMAINDER, help="for run: the spack command")


def run(args) -> int:
    if args.action != "run" and args.spack_args:
        print(f"error: options go before the action ({args.action}); unexpected: {' '.join(args.spack_args)}",
              file=sys.stderr)
        return 2
    try:
        spack = Spack(args.build, tarballs=args.tarballs, spack_root=args.spack_root,
                      packages_root=args.packages_root, install_root=args.install_root,
                      mirror=args.mirror).prepare()
        names = args.env or environments()
        if args.action == "install":
            spack.find_externals(args.env_dir, [p for p in args.find_externals.split(",") if p])
            print(json.dumps(spack.install(args.env_dir)))
            return 0
        if args.action == "run":
            cmd = spack.command(*args.spack_args)
            return subprocess.run(cmd, env=spack.environ()).returncode
        if args.action in ("lock", "bench"):
            for name in names:
                # bench times a copy: the checkout's locks stay as committed
                env_dir = ENVS_DIR / name if args.action == "lock" else spack.scratch_copy(ENVS_DIR / name)
                seconds = spack.concretize(env_dir)
                print(f"concretize_s[{name}]: {seconds:.1f}", flush=True)
            return 0
        # lint
        spack.audit()
        print("spack audit packages: clean")
        stale = [n for n in names if not spack.is_current(ENVS_DIR / n)]
        for name in stale:
            # concretized in a copy: a failure shows Spack's message, the checkout is left as is
            seconds = spack.concretize(spack.scratch_copy(ENVS_DIR / name))
            print(f"{name}: inputs changed since its lock; concretizes ({seconds:.0f} s)", flush=True)
        print(f"{len(names) - len(stale)} of {len(names)} spack.lock files are current for their inputs")
        if stale:
            print("stale (run `make spack-lock`, commit spack.lock and inputs.sha256): " + ", ".join(stale))
            return 1
        return 0
    except SpackError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
