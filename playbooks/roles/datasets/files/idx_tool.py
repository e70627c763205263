"""Put a data set into a folder as uncompressed IDX files (the form BigDL and TensorFlowOnSpark's
MNIST examples read) with a MANIFEST.json recording origin and SHA-256 of every file.

  idx_tool.py mnist-pickle <mnist.pkl.gz> <out> --name N --origin TEXT [--expect JSON]
  idx_tool.py gunzip <dir with *-ubyte.gz> <out> --name N --origin TEXT [--expect JSON]

The folder is written as <out>.partial and renamed when complete, so a present <out> is whole.
--expect maps file names to SHA-256 digests the output must have; a mismatch stops with an error.
"""

import argparse
import gzip
import hashlib
import json
import os
import pickle
import shutil
import struct
import sys
from pathlib import Path

IMAGES_MAGIC, LABELS_MAGIC = 0x00000803, 0x00000801
FILES = {
    "train-images-idx3-ubyte": IMAGES_MAGIC,
    "train-labels-idx1-ubyte": LABELS_MAGIC,
    "t10k-images-idx3-ubyte": IMAGES_MAGIC,
    "t10k-labels-idx1-ubyte": LABELS_MAGIC,
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def idx_records(path: Path) -> int:
    """Check an IDX file's header against its size; return its number of records."""
    data = path.read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path.name}: too short for an IDX header")
    magic, count = struct.unpack(">II", data[:8])
    if magic != FILES[path.name]:
        raise ValueError(f"{path.name}: magic {magic:#010x}, expected {FILES[path.name]:#010x}")
    if magic == IMAGES_MAGIC:
        rows, cols = struct.unpack(">II", data[8:16])
        expected = 16 + count * rows * cols
    else:
        expected = 8 + count
    if len(data) != expected:
        raise ValueError(f"{path.name}: {len(data)} bytes, header says {expected}")
    return count


def write_images(path: Path, pixels) -> None:
    count, size = pixels.shape
    side = int(round(size ** 0.5))
    with path.open("wb") as f:
        f.write(struct.pack(">IIII", IMAGES_MAGIC, count, side, side))
        f.write(pixels.tobytes())


def write_labels(path: Path, labels) -> None:
    with path.open("wb") as f:
        f.write(struct.pack(">II", LABELS_MAGIC, len(labels)))
        f.write(labels.tobytes())


def from_mnist_pickle(source: Path, out: Path) -> None:
    """The 50k/10k/10k pickle holds the original training set as train + validation (in order) and
    the test set, with pixels scaled to [0, 1] as float32: scale back to bytes."""
    import numpy as np

    with gzip.open(source, "rb") as f:
        (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = pickle.load(f, encoding="latin1")

    def to_bytes(x):
        return np.rint(np.asarray(x, dtype=np.float64) * 255.0).clip(0, 255).astype(np.uint8)

    write_images(out / "train-images-idx3-ubyte", to_bytes(np.concatenate([train_x, valid_x])))
    write_labels(out / "train-labels-idx1-ubyte", np.concatenate([train_y, valid_y]).astype(np.uint8))
    write_images(out / "t10k-images-idx3-ubyte", to_bytes(test_x))
    write_labels(out / "t10k-labels-idx1-ubyte", np.asarray(test_y).astype(np.uint8))


def from_gz(source: Path, out: Path) -> None:
    for name in FILES:
        gz = source / f"{name}.gz"
        if not gz.is_file():
            raise ValueError(f"{gz}: missing")
        with gzip.open(gz, "rb") as src, (out / name).open("wb") as dst:
            shutil.copyfileobj(src, dst)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["mnist-pickle", "gunzip"])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--origin", required=True)
    parser.add_argument("--license", default="unknown")
    parser.add_argument("--expect", default="{}", help="JSON: file name -> SHA-256")
    args = parser.parse_args(argv)
    expect = json.loads(args.expect)

    partial = args.out.with_name(args.out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        (from_mnist_pickle if args.kind == "mnist-pickle" else from_gz)(args.source, partial)
        files = []
        for name in FILES:
            path = partial / name
            entry = {"file": name, "bytes": path.stat().st_size, "records": idx_records(path),
                     "sha256": sha256(path)}
            if name in expect and expect[name] != entry["sha256"]:
                raise ValueError(f"{name}: SHA-256 {entry['sha256']}, expected {expect[name]}")
            files.append(entry)
    except (OSError, ValueError, pickle.UnpicklingError) as err:
        shutil.rmtree(partial, ignore_errors=True)
        print(f"idx_tool: {args.name} from {args.source}: {err}", file=sys.stderr)
        return 1
    sources = [args.source] if args.source.is_file() else sorted(args.source.glob("*.gz"))
    manifest = {
        "name": args.name,
        "origin": args.origin,
        "license": args.license,
        "synthetic": False,
        "format": "IDX (uncompressed)",
        "derived_from": [{"path": str(p), "sha256": sha256(p)} for p in sources],
        "files": files,
    }
    (partial / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(partial, args.out)
    print(json.dumps({"name": args.name, "files": len(files)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
