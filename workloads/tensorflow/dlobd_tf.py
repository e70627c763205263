"""Shared pieces of the project's TensorFlow workloads: models, data, and the log line.

Imported by workloads/tensorflow/train_distributed.py (native distributed TF) and by
workloads/tensorflowonspark/train.py (shipped to the Spark executors with addPyFile).
Runs in the stacks' Python environment (tensorflow-cpu 2.15, Keras 2), not the tooling venv.

The log line is the contract with dlobd/stacks/tensorflow.py and tensorflowonspark.py:
one line per event, `DLOBD ` followed by space-separated key=value pairs, e.g.

    DLOBD event=step task=worker:0 step=20 epoch=1 wall_clock_s=14.2 loss=2.2931 ...

Keys that are metric names of docs/metrics.md carry that metric in its unit; `event`
is start | warmup | step | epoch | summary (start and warmup carry settings, not metrics);
`task` is the TF task (`worker:0`, `chief:0`, `local:0`).
Values never contain spaces.
"""

import os
import struct
import sys
import time

import numpy as np
import psutil
import tensorflow as tf

MODELS = ("mnist_softmax", "cifar10_cnn", "resnet50", "inception_v3", "alexnet")

# (height/width, channels, classes) of each model's input when no size is given.
DEFAULT_SHAPE = {
    "mnist_softmax": (28, 1, 10),
    "cifar10_cnn": (32, 3, 10),
    "resnet50": (224, 3, 1000),
    "inception_v3": (299, 3, 1000),
    "alexnet": (224, 3, 1000),
}


def log(event: str, **fields) -> None:
    """Print one DLOBD line (flushed at once: a killed run keeps every line it printed)."""
    parts = [f"event={event}"]
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, float):
            value = f"{value:.6g}"
        text = str(value)
        if not text or any(c.isspace() for c in text):
            raise ValueError(f"log field {key}={value!r}: values must be non-empty without spaces")
        parts.append(f"{key}={text}")
    print("DLOBD " + " ".join(parts), flush=True)


def build_model(name: str, size: int, classes: int) -> tf.keras.Model:
    """Return the model with logits as output (no final softmax)."""
    if name == "mnist_softmax":
        return tf.keras.Sequential([
            tf.keras.layers.Input((size, size, 1)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(classes),
        ])
    if name == "cifar10_cnn":
        return tf.keras.Sequential([
            tf.keras.layers.Input((size, size, 3)),
            tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(classes),
        ])
    if name == "resnet50":
        return tf.keras.applications.ResNet50(
            weights=None, input_shape=(size, size, 3), classes=classes, classifier_activation=None)
    if name == "inception_v3":
        return tf.keras.applications.InceptionV3(
            weights=None, input_shape=(size, size, 3), classes=classes, classifier_activation=None)
    if name == "alexnet":
        # Keras has no AlexNet; this is the one-tower layout of Krizhevsky et al. (2012).
        L = tf.keras.layers
        return tf.keras.Sequential([
            L.Input((size, size, 3)),
            L.Conv2D(64, 11, strides=4, padding="same", activation="relu"),
            L.MaxPooling2D(3, 2),
            L.Conv2D(192, 5, padding="same", activation="relu"),
            L.MaxPooling2D(3, 2),
            L.Conv2D(384, 3, padding="same", activation="relu"),
            L.Conv2D(256, 3, padding="same", activation="relu"),
            L.Conv2D(256, 3, padding="same", activation="relu"),
            L.MaxPooling2D(3, 2),
            L.Flatten(),
            L.Dense(4096, activation="relu"),
            L.Dropout(0.5),
            L.Dense(4096, activation="relu"),
            L.Dropout(0.5),
            L.Dense(classes),
        ])
    raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def _read_idx(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        magic, = struct.unpack(">I", f.read(4))
        ndim = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load_mnist_idx(data_dir: str, split: str):
    """MNIST in IDX files (train-* / t10k-*): images scaled to [0,1] as NHWC, int labels."""
    prefix = "train" if split == "train" else "t10k"
    x = _read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"))
    y = _read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"))
    return (x.astype(np.float32) / 255.0)[..., None], y.astype(np.int64)


def load_cifar10_bin(data_dir: str, split: str):
    """CIFAR-10 binary batches (real or synthetic in the same format) as NHWC in [0,1]."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train" else ["test_batch.bin"]
    raw = np.concatenate([
        np.fromfile(os.path.join(data_dir, n), dtype=np.uint8).reshape(-1, 3073) for n in names])
    x = raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).astype(np.float32) / 255.0
    return x, raw[:, 0].astype(np.int64)


def _records(paths, header: int, size: int):
    """A file's fixed-size records after its header, and how many there are (from its size)."""
    count = sum((os.path.getsize(p) - header) // size for p in paths)
    return tf.data.FixedLengthRecordDataset(paths, size, header_bytes=header), count


def record_dataset(model: str, data_dir: str, split: str, batch: int, shuffle_seed: int = 0):
    """(batched dataset read from the files by TF's own ops, number of records).

    Unlike load_dataset this reads the files where the dataset runs: on a parameter-server
    run, on each worker, instead of shipping the arrays from the chief inside the graph.
    """
    if model == "mnist_softmax":
        prefix = "train" if split == "train" else "t10k"
        images, n = _records([os.path.join(data_dir, f"{prefix}-images-idx3-ubyte")], 16, 28 * 28)
        labels, _ = _records([os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte")], 8, 1)
        ds = tf.data.Dataset.zip((images, labels))

        def decode(x, y):
            x = tf.reshape(tf.io.decode_raw(x, tf.uint8), (-1, 28, 28, 1))
            return tf.cast(x, tf.float32) / 255.0, tf.reshape(tf.cast(tf.io.decode_raw(y, tf.uint8), tf.int64), (-1,))
    elif model == "cifar10_cnn":
        names = [f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train" else ["test_batch.bin"]
        records, n = _records([os.path.join(data_dir, name) for name in names], 0, 3073)
        ds = records.map(lambda r: (r, r))

        def decode(x, _):
            raw = tf.io.decode_raw(x, tf.uint8)
            image = tf.transpose(tf.reshape(raw[:, 1:], (-1, 3, 32, 32)), (0, 2, 3, 1))
            return tf.cast(image, tf.float32) / 255.0, tf.cast(raw[:, 0], tf.int64)
    else:
        raise ValueError(f"model {model} reads no data set from disk")
    ds = ds.shuffle(4096, seed=shuffle_seed).repeat().batch(batch, drop_remainder=True)
    return ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2), n


def load_dataset(model: str, data_dir: str, split: str):
    if model == "mnist_softmax":
        return load_mnist_idx(data_dir, split)
    if model == "cifar10_cnn":
        return load_cifar10_bin(data_dir, split)
    raise ValueError(f"model {model} reads no data set from disk: run it without --data-dir "
                     "(synthetic ImageNet-shaped data)")


def synthetic_batch(size: int, channels: int, classes: int, batch: int, seed: int = 0):
    """One fixed batch of random images and labels: ImageNet-shaped SYNTHETIC data."""
    # Stateless ops: a dataset_fn run by a ParameterServerStrategy may create no variables.
    x = tf.random.stateless_uniform((batch, size, size, channels), seed=(seed, 0), dtype=tf.float32)
    y = tf.random.stateless_uniform((batch,), seed=(seed, 1), minval=0, maxval=classes, dtype=tf.int64)
    return x, y


def top1_accuracy(model: tf.keras.Model, x: np.ndarray, y: np.ndarray, batch: int = 500) -> float:
    correct = 0
    for i in range(0, len(y), batch):
        logits = model(x[i:i + batch], training=False)
        correct += int(np.sum(np.argmax(logits.numpy(), axis=1) == y[i:i + batch]))
    return correct / len(y)


class Clock:
    """Wall clock of a run: process start (end_to_end_s) and training start (wall_clock_s)."""

    def __init__(self):
        # The OS's start time of this process, so TF's own import and set-up count too.
        self.process_start = psutil.Process().create_time()
        self.train_start = None

    def start_training(self):
        self.train_start = time.time()

    def wall(self) -> float:
        return time.time() - self.train_start

    def end_to_end(self) -> float:
        return time.time() - self.process_start


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(2)
