#!/usr/bin/env python3
"""Time an Apptainer image build, cold and cached, and print `name: value` lines:

    image_build_cold_s     a build with no cached image (in a fresh folder; the debootstrap
                           rootfs of the images folder is reused, or made first and timed apart
                           as rootfs_debootstrap_s)
    image_build_cached_s   the same build again: the content hash matches, the image is reused
    image_size_mib         the SIF's size

The image built cold is kept in the images folder when that has none of the same hash, so a
later `make image` reuses it. `make bench-image` runs it; `make bench-slurm` calls it too.
"""

import argparse
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dlobd.execution import apptainer  # noqa: E402


def timed(step):
    started = time.monotonic()
    result = step()
    return result, time.monotonic() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, default=apptainer.default_images_dir())
    parser.add_argument("--definition", type=Path, default=apptainer.CONTAINERS_DIR / "modern.def")
    args = parser.parse_args(argv)
    suite = apptainer.definition_suite(args.definition)
    rootfs = args.images / f"rootfs-{suite}"
    # SIGTERM unwinds like Ctrl-C, as `dlobd image build` does: the build stops and cleans up
    signal.signal(signal.SIGTERM, apptainer.interrupted)
    try:
        if not (rootfs / ".dlobd-rootfs").exists():
            _, seconds = timed(lambda: apptainer.make_rootfs(rootfs, suite))
            print(f"rootfs_debootstrap_s: {seconds:.1f}", flush=True)
        bench_dir = args.images / f"bench-{time.strftime('%Y%m%dT%H%M%S')}"
        (image, built), cold = timed(lambda: apptainer.build(args.definition, bench_dir, rootfs))
        (again, rebuilt), cached = timed(lambda: apptainer.build(args.definition, bench_dir, rootfs))
    except apptainer.ApptainerError as err:
        print(f"bench-image: {err}", file=sys.stderr)
        return 1
    if not built or rebuilt or again != image:
        print(f"bench-image: the second build did not reuse the first ({image}, {again})", file=sys.stderr)
        return 1
    print(f"image_build_cold_s: {cold:.1f}")
    print(f"image_build_cached_s: {cached:.2f}")
    print(f"image_size_mib: {image.stat().st_size / 2**20:.1f}")
    kept = args.images / image.name
    if not kept.exists():
        image.rename(kept)
    shutil.rmtree(bench_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
