"""Small data sets in the formats the launchers read, made by the tests themselves (test
inputs, not measurements)."""

from pathlib import Path

from dlobd.stacks import bigdl


def write_idx(folder: Path, train: int, test: int) -> None:
    """Tiny IDX files in MNIST's layout (4x4 images): image i is all bytes i % 256, its label i % 10."""
    folder.mkdir(parents=True)
    for (images, labels), count in ((bigdl.IDX_TRAIN, train), (bigdl.IDX_TEST, test)):
        pixels = b"".join(bytes([i % 256]) * 16 for i in range(count))
        (folder / images).write_bytes(b"\0\0\x08\x03" + b"".join(n.to_bytes(4, "big") for n in (count, 4, 4)) + pixels)
        (folder / labels).write_bytes(b"\0\0\x08\x01" + count.to_bytes(4, "big") + bytes(i % 10 for i in range(count)))
