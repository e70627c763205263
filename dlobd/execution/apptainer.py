"""Apptainer: find it, build the images of containers/ (cached by a hash of their inputs), run
commands inside them.

Everything specific to Apptainer on a given machine is handled here once:
- where Apptainer comes from: $APPTAINER, `apptainer` on PATH, or the relocatable tarball named
  by $DLOBD_APPTAINER_TARBALL (unpacked once under ~/.cache/dlobd/apptainer/);
- root without CAP_SYS_RESOURCE (root inside an unprivileged container): Apptainer asks for its
  default capabilities and fails, so runs drop that one (`--drop-caps CAP_SYS_RESOURCE`);
- builds as root there fail in %post, so they run in a user namespace whose uid/gid maps root
  writes itself (an `unshare --user --mount` child that waits until its maps are in place).

The part the hosts need (finding Apptainer, `run-prefix`) uses the standard library only: the
`apptainer` role runs this file with the host's python3 to write its wrappers.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# The hosts run this file as a script without the dlobd package (the apptainer role's
# run-prefix), so it imports none of the package and finds its checkout from its own path.
ROOT = Path(__file__).resolve().parents[2]
# The shared settings' defaults in a checkout (the role dlobd's, as dlobd.SETTINGS_DEFAULTS names them)
SETTINGS_FILE = Path("playbooks", "roles", "dlobd", "defaults", "main", "settings.yml")
CONTAINERS_DIR = ROOT / "containers"
TARBALL_VAR = "DLOBD_APPTAINER_TARBALL"
BINARY_VAR = "APPTAINER"
# The subordinate id range a build's user namespace maps (root of the namespace = root outside).
BUILD_ID_MAP = "0 0 65536"
CAP_SYS_RESOURCE = 24
# Debian's folder for a site's own CA certificates.
SITE_CA_DIR = Path("/usr/local/share/ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "bookworm"
# What the rootfs needs before %post runs (Ansible's python3, HTTPS to the registries).
ROOTFS_PACKAGES = ("python3", "ca-certificates")


class ApptainerError(Exception):
    """Apptainer is missing or a step failed; the message says which and how to fix it."""


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dlobd" / "apptainer"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def image_sha256(image: Path) -> str:
    """The sha256 of an image file (what run.json records and the hosts' copies are checked by)."""
    return sha256_file(Path(image))


def unpack_tarball(tarball: Path, dest_root: Path) -> Path:
    """Unpack the relocatable Apptainer tarball once (a folder per tarball digest) and return its
    `apptainer` binary."""
    tarball = Path(tarball)
    if not tarball.is_file():
        raise ApptainerError(f"{TARBALL_VAR}={tarball}: no such file")
    dest = dest_root / sha256_file(tarball)[:16]
    if not (dest / ".unpacked").exists():
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(partial, filter="tar")
        (partial / ".unpacked").write_text(str(tarball) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    found = sorted(dest.glob("*/bin/apptainer")) + sorted(dest.glob("bin/apptainer"))
    if not found:
        raise ApptainerError(f"{tarball} holds no bin/apptainer (unpacked in {dest})")
    return found[0]


def find_apptainer(env=None, unpack_root: Path | None = None) -> Path:
    """$APPTAINER, else `apptainer` on PATH, else the tarball named by $DLOBD_APPTAINER_TARBALL."""
    env = os.environ if env is None else env
    if env.get(BINARY_VAR):
        binary = Path(env[BINARY_VAR])
        if not os.access(binary, os.X_OK):
            raise ApptainerError(f"{BINARY_VAR}={binary} is not an executable file")
        return binary
    on_path = shutil.which("apptainer", path=env.get("PATH", os.defpath))
    if on_path:
        return Path(on_path)
    if env.get(TARBALL_VAR):
        return unpack_tarball(Path(env[TARBALL_VAR]), unpack_root or cache_dir())
    raise ApptainerError(
        "Apptainer not found: put `apptainer` on PATH (or name its binary in $APPTAINER), or set "
        f"${TARBALL_VAR} to a relocatable Apptainer tarball (an install prefix packed with tar, "
        "e.g. apptainer-1.4.5-prefix.tar.gz). Apptainer is on no package registry: "
        "https://apptainer.org/docs/admin/main/installation.html"
    )


def effective_caps(status_text: str) -> int:
    """The effective capability set from /proc/<pid>/status."""
    for line in status_text.splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    raise ValueError("no CapEff line in the process status")


def run_options(euid: int, caps: int) -> list[str]:
    """Options every `apptainer exec/run/test` needs here. Root asks for Apptainer's default
    capabilities, CAP_SYS_RESOURCE among them; root of an unprivileged container lacks it, and
    Apptainer then refuses to start. Dropping it is harmless: the stacks never raise limits."""
    if euid == 0 and not caps & (1 << CAP_SYS_RESOURCE):
        return ["--drop-caps", "CAP_SYS_RESOURCE"]
    return []


def this_process_run_options() -> list[str]:
    return run_options(os.geteuid(), effective_caps(Path("/proc/self/status").read_text()))


def run_prefix(image: Path, binds: list[str] = (), apptainer: Path | None = None, gpu: bool = False) -> list[str]:
    """The argv prefix that runs a command inside `image` on this machine (`--nv` for GPUs: the
    host's NVIDIA driver libraries bound in)."""
    argv = [str(apptainer or find_apptainer()), "exec", *this_process_run_options(), *(["--nv"] if gpu else [])]
    for bind in binds:
        argv += ["--bind", bind]
    return argv + [str(image)]


# ------------------------------------------------------------------ image identity


def _committable(root: Path) -> set[Path] | None:
    """The files git would commit under `root` (tracked, or new and not ignored); None outside a
    checkout. Generated inventories, secrets and caches are ignored, so they never enter an image."""
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, timeout=60)
    except FileNotFoundError:
        return None
    if done.returncode != 0:
        return None
    return {root / name for name in done.stdout.decode().split("\0") if name}


def _input_files(root: Path, names) -> list[Path]:
    committable = _committable(root)

    def is_input(p: Path) -> bool:
        if committable is not None:
            return p in committable
        # outside a checkout (an unpacked release): leave out what git would have ignored
        return "__pycache__" not in p.parts and not p.name.endswith(".pyc") and \
            "secrets" not in p.relative_to(root).parts

    files = []
    for name in names:
        path = root / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in path.rglob("*") if p.is_file() and is_input(p)]
        else:
            raise ApptainerError(f"image input {name} does not exist under {root}")
    return sorted(files)


def stage_inputs(definition: Path, root: Path, into: Path) -> Path:
    """A copy of exactly the files content_hash covers, for the build to copy in (%files' SRC)."""
    for path in _input_files(root, definition_inputs(definition)):
        target = into / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return into


def definition_inputs(definition: Path) -> list[str]:
    """What the build copies in from the checkout: the `{{ SRC }}/<path>` sources of %files."""
    inputs, in_files = [], False
    for line in Path(definition).read_text().splitlines():
        if line.startswith("%"):
            in_files = line.split()[0] == "%files"
        elif in_files and line.strip().startswith("{{ SRC }}/"):
            inputs.append(line.strip().removeprefix("{{ SRC }}/").split()[0])
    return inputs


def content_hash(definition: Path, root: Path = ROOT, inputs=None) -> str:
    """A digest of the definition and every file the build copies in from the checkout (relative
    path + bytes): the image's cache key."""
    digest = hashlib.sha256()
    inputs = definition_inputs(definition) if inputs is None else inputs
    for path in [definition] + _input_files(root, inputs):
        name = path.name if path == definition else str(path.relative_to(root))
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def image_path(images_dir: Path, name: str, digest: str) -> Path:
    return images_dir / f"{name}-{digest[:16]}.sif"


def version_set(profile: str, paper_env: str | None = None) -> str:
    """The version set (`dlobd_profile_versions` of the shared settings) of a profile: the paper
    profile has one per Spack environment, `paper-<paper_env>` (the playbooks' dlobd_paper_env)."""
    if profile != "paper":
        return profile
    if not paper_env:
        raise ApptainerError("the paper profile's versions are those of its Spack environment: "
                             "name it (dlobd_paper_env, e.g. caffeonspark)")
    return f"paper-{paper_env}"


def versions(version_set: str, root: Path = ROOT, install_method: str | None = None) -> dict[str, str]:
    """Every component version the playbooks pin for a version set: its entry of the shared
    settings' `dlobd_profile_versions`, their other literal `dlobd_<x>_version` values and the
    literal `<role>_..._version` values of the roles' defaults (derived values are left out). With
    the registry method, a paper set's entry of `dlobd_registry_paper_sets` too: each substitute
    release as `<release> (paper: <the set's>)`, each pinned Debian package as `deb.<package>`."""
    import yaml  # here, not at the top: the hosts' Python that runs run-prefix may lack it

    shared = root / SETTINGS_FILE
    shared_settings = yaml.safe_load(shared.read_text()) or {}
    sets = shared_settings.get("dlobd_profile_versions") or {}
    if version_set not in sets:
        raise ApptainerError(f"{shared}: dlobd_profile_versions has no version set {version_set} "
                             f"(known: {', '.join(sets) or 'none'})")
    defaults = [yaml.safe_load(source.read_text()) or {}
                for source in sorted((root / "playbooks/roles").glob("*/defaults/main.yml"))]
    found = {}
    for settings in [shared_settings, *defaults]:
        for key, value in settings.items():
            if key.endswith("_version") and isinstance(value, (str, int, float)) and "{{" not in str(value):
                found[key.removeprefix("dlobd_").removesuffix("_version")] = str(value)
    found.update({name: str(value) for name, value in sets[version_set].items()})
    registry = (shared_settings.get("dlobd_registry_paper_sets") or {}).get(version_set, {}) \
        if install_method == "registry" else {}
    for name, value in (registry.get("substitutes") or {}).items():
        found[name] = f"{value} (paper: {found[name]})"
    found.update({f"deb.{package}": str(value) for package, value in (registry.get("debian") or {}).items()})
    return dict(sorted(found.items()))


def labels(profile: str, commit: str, digest: str, root: Path = ROOT, paper_env: str | None = None,
           install_method: str | None = None) -> dict[str, str]:
    """The image's %labels: profile, project commit, input digest, and every component version of
    the version set the image is built for (the paper profile's: of Spack environment `paper_env`)
    by the install method its build runs."""
    result = {"org.dlobd.profile": profile, "org.dlobd.commit": commit, "org.dlobd.inputs-sha256": digest}
    result.update({f"org.dlobd.version.{name}": value
                   for name, value in versions(version_set(profile, paper_env), root, install_method).items()})
    return result


def project_commit(root: Path = ROOT) -> str:
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if out.returncode != 0:
        return "unknown (not a git checkout)"
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def definition_profile(definition: Path) -> str:
    """The profile a definition builds, from its `# dlobd-profile: <name>` line."""
    for line in definition.read_text().splitlines():
        if line.startswith("# dlobd-profile:"):
            return line.split(":", 1)[1].strip()
    raise ApptainerError(f"{definition}: no `# dlobd-profile: <name>` line")


def definition_paper_env(definition: Path) -> str | None:
    """The Spack environment a paper-profile definition builds: dlobd_paper_env of the settings its
    build provisions with, `<name>.vars.yml` beside it; None for another profile."""
    import yaml

    if definition_profile(definition) != "paper":
        return None
    settings_file = definition.with_name(f"{definition.stem}.vars.yml")
    if not settings_file.is_file():
        raise ApptainerError(f"{definition}: a paper-profile image needs {settings_file.name} beside it, "
                             "naming its Spack environment (dlobd_paper_env)")
    paper_env = (yaml.safe_load(settings_file.read_text()) or {}).get("dlobd_paper_env")
    if not paper_env:
        raise ApptainerError(f"{settings_file}: no dlobd_paper_env (the Spack environment the image is built from)")
    return paper_env


def definition_install_method(definition: Path) -> str | None:
    """The install method a definition's build provisions with, where the settings beside it
    (`<name>.vars.yml`) name one (dlobd_install_method); None where the definition passes it itself."""
    import yaml

    settings_file = definition.with_name(f"{definition.stem}.vars.yml")
    if not settings_file.is_file():
        return None
    return (yaml.safe_load(settings_file.read_text()) or {}).get("dlobd_install_method")


def definition_suite(definition: Path) -> str:
    """The Debian suite of a definition's rootfs: its %arguments default `ROOTFS=rootfs-<suite>`."""
    for line in Path(definition).read_text().splitlines():
        if line.strip().startswith("ROOTFS=rootfs-"):
            return line.strip().removeprefix("ROOTFS=rootfs-")
    return DEBIAN_SUITE


# ------------------------------------------------------------------ building


def make_rootfs(dest: Path, suite: str = DEBIAN_SUITE, mirror: str = DEBIAN_MIRROR) -> Path:
    """A Debian rootfs by debootstrap (no container registry needed), once per folder. Its dev/
    device nodes go: a build in a user namespace cannot copy them."""
    if (dest / ".dlobd-rootfs").exists():
        return dest
    if not shutil.which("debootstrap"):
        raise ApptainerError("debootstrap is not installed (Debian package debootstrap)")
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(ROOTFS_PACKAGES),
                    suite, str(partial), mirror], check=True)
    for node in (partial / "dev").rglob("*"):
        if node.is_char_device() or node.is_block_device():
            node.unlink()
    (partial / ".dlobd-rootfs").write_text(f"{suite} {mirror}\n")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    return dest


def userns_command(argv: list[str]) -> list[str]:
    """argv run in a new user + mount namespace once its uid/gid maps exist (a line on stdin)."""
    return ["unshare", "--user", "--mount", "--", "sh", "-c", 'read -r _ && exec "$@"', "sh", *argv]


def run_in_userns(argv: list[str], env=None) -> int:
    """Run argv as root of a user namespace mapping ids 0-65535 onto the same ids outside.
    Apptainer's %post needs real root there; plain root here lacks CAP_SYS_RESOURCE."""
    # a session of its own: an interrupted caller stops the whole build (apptainer, its starter,
    # %post's playbook), not only the process it started
    child = subprocess.Popen(userns_command(argv), stdin=subprocess.PIPE, env=env, start_new_session=True)
    try:
        # the maps can be written only once the child is in its new namespace
        ours = os.readlink("/proc/self/ns/user")
        while os.readlink(f"/proc/{child.pid}/ns/user") == ours:
            if child.poll() is not None:
                raise ApptainerError(f"unshare --user --mount failed (exit {child.returncode})")
            time.sleep(0.01)
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{child.pid}/{name}").write_text(BUILD_ID_MAP + "\n")
        child.stdin.write(b"go\n")
        child.stdin.close()
        return child.wait()
    except BaseException:
        stop_group(child)
        raise


def stop_group(child: subprocess.Popen, grace_s: float = 10) -> None:
    """SIGTERM to the child's process group; SIGKILL to whatever of it is left after grace_s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            child.poll()  # reaps the leader, whose zombie would keep the group
            try:
                os.killpg(child.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
    child.wait()


def build_args(values: dict[str, str]) -> list[str]:
    args = []
    for key, value in sorted(values.items()):
        args += ["--build-arg", f"{key}={value}"]
    return args


def labels_block(values: dict[str, str]) -> str:
    return "\n".join(f"    {key} {value}" for key, value in sorted(values.items()))


def build(definition: Path, images_dir: Path, rootfs_dir: Path, root: Path = ROOT,
          ca_certificates: Path = SITE_CA_DIR) -> tuple[Path, bool]:
    """The image of `definition`: reused when one with the same input digest exists, else built.
    The build host's extra CA certificates (`*.crt` of ca_certificates) go in, so pip and Maven
    in %post trust a site's TLS-inspecting proxy as the host does. Returns (path, built)."""
    definition = Path(definition).resolve()
    digest = content_hash(definition, root)
    name = definition.stem
    image = image_path(images_dir, name, digest)
    if image.exists():
        return image, False
    apptainer = find_apptainer()
    rootfs = make_rootfs(rootfs_dir, definition_suite(definition))
    images_dir.mkdir(parents=True, exist_ok=True)
    work = images_dir / f".build-{name}-{digest[:16]}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "tmp").mkdir(parents=True)
    # The labels are rendered into a copy of the definition: %labels takes no build arguments.
    rendered = work / definition.name
    rendered.write_text(definition.read_text().replace(
        "    # dlobd-labels", labels_block(labels(definition_profile(definition), project_commit(root), digest, root,
                                             definition_paper_env(definition), definition_install_method(definition)))))
    site_cas = work / "ca-certificates"
    site_cas.mkdir()
    for cert in sorted(Path(ca_certificates).glob("*.crt")):
        shutil.copy(cert, site_cas / cert.name)
    env = dict(os.environ, APPTAINER_TMPDIR=str(work / "tmp"), APPTAINER_CACHEDIR=str(work / "cache"))
    partial = work / image.name
    sources = stage_inputs(definition, root, work / "src")
    try:
        status = run_in_userns([str(apptainer), "build", *build_args({"ROOTFS": str(rootfs), "SRC": str(sources), "CA_CERTIFICATES": str(site_cas)}),
                                str(partial), str(rendered)], env=env)
    except BaseException:
        # interrupted (Ctrl-C, SIGTERM): a half build is nothing to inspect, and another digest's
        # next build would never reuse nor remove its folder (gigabytes)
        shutil.rmtree(work, ignore_errors=True)
        raise
    if status != 0:
        raise ApptainerError(f"apptainer build of {definition} failed (exit {status}); its output is above, "
                             f"its work folder {work}")
    partial.rename(image)
    shutil.rmtree(work, ignore_errors=True)
    return image, True


# ------------------------------------------------------------------ the `dlobd image` command


def default_images_dir() -> Path:
    return Path(os.environ.get("DLOBD_PREFIX", Path.home() / "dlobd-stack")) / "images"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=Path, default=None,
                        help="where images are cached (default: $DLOBD_PREFIX/images)")
    sub = parser.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="build the image of a definition, or reuse the cached one")
    b.add_argument("definition", type=Path, nargs="?", default=CONTAINERS_DIR / "modern.def")
    b.add_argument("--rootfs", type=Path, default=None,
                   help="the debootstrap rootfs (default: <images>/rootfs-<the definition's suite>)")
    p = sub.add_parser("path", help="print the cached image path of a definition (built or not)")
    p.add_argument("definition", type=Path, nargs="?", default=CONTAINERS_DIR / "modern.def")
    e = sub.add_parser("exec", help="run a command inside an image")
    e.add_argument("image", type=Path)
    e.add_argument("--bind", action="append", default=[])
    e.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND")
    i = sub.add_parser("info", help="an image's sha256, size and labels")
    i.add_argument("image", type=Path)
    r = sub.add_parser("run-prefix", help="print, as JSON, the argv prefix that runs a command in an image")
    r.add_argument("image", type=Path)
    r.add_argument("--bind", action="append", default=[])
    r.add_argument("--nv", action="store_true", help="GPUs: bind the host's NVIDIA driver in")


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    images = args.images or default_images_dir()
    try:
        if args.action == "build":
            # SIGTERM (a batch system's or a test's timeout) unwinds like Ctrl-C: the build cleans up
            signal.signal(signal.SIGTERM, interrupted)
            started = time.monotonic()
            rootfs = args.rootfs or images / f"rootfs-{definition_suite(args.definition)}"
            image, built = build(args.definition, images, rootfs)
            print(f"{'built' if built else 'reused'}: {image} ({time.monotonic() - started:.1f} s)")
        elif args.action == "path":
            definition = args.definition.resolve()
            print(image_path(images, definition.stem, content_hash(definition)))
        elif args.action == "exec":
            command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
            if not command:
                raise ApptainerError("dlobd image exec: no command given")
            return subprocess.run(run_prefix(args.image, args.bind) + command).returncode
        elif args.action == "info":
            argv = run_prefix(args.image)
            inspect = [argv[0], "inspect", "--json", "--labels", str(args.image)]
            found = json.loads(subprocess.run(inspect, check=True, capture_output=True, text=True).stdout)
            print(json.dumps({"image": str(args.image), "sha256": image_sha256(args.image),
                              "size_mib": round(args.image.stat().st_size / 2**20, 1),
                              "labels": found["data"]["attributes"]["labels"]}, indent=2))
        elif args.action == "run-prefix":
            print(json.dumps(run_prefix(args.image, args.bind, gpu=args.nv)))
    except (ApptainerError, subprocess.CalledProcessError) as err:
        print(f"dlobd image: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # The hosts run this file directly (no dlobd package there): `python3 apptainer.py run-prefix IMAGE`.
    top = argparse.ArgumentParser(prog="apptainer.py")
    register(top)
    sys.exit(run(top.parse_args()))
