"""Run workloads/tensorflowonspark/train_tf1.py's TF nodes (main_fun) without Spark, in a Python with
TensorFlow 1.x and TensorFlowOnSpark 1.0.8 (2.7 or 3.x): one parameter server and two workers as
processes on 127.0.0.1, each given a TFNodeContext as TFoS 1.0.8's TFSparkNode.run builds it and,
in spark mode, a TFManager whose input queue a thread per worker fills the way TFSparkNode.train
does (records, then None at the end of the feed). The driver side (TFCluster.run, the RDDs) is not
run: that needs Spark 2.1 and its Java 8.

    python tf1_harness.py MODEL MODE OUT_DIR DATA_DIR [GPUS]

writes a small data set of the model's format into DATA_DIR, the nodes' logs into OUT_DIR
(ps-0.log, worker-0.log, worker-1.log) and exits non-zero when a worker fails.
Python 2.7 and 3.x syntax, like the program it runs.
"""

from __future__ import absolute_import, division, print_function

import imp
import multiprocessing
import os
import socket
import struct
import sys
import threading
import uuid

import numpy as np

TRAIN_TF1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "tensorflowonspark",
                         "train_tf1.py")
RECORDS = {"mnist_softmax": 1200, "cifar10_cnn": 600}


def make_data(model, folder):
    """A learnable stand-in in the model's file format (IDX, or CIFAR-10's binary batches)."""
    if not os.path.isdir(folder):
        os.makedirs(folder)
    rng = np.random.RandomState(0)
    n = RECORDS[model]
    if model == "mnist_softmax":
        for prefix, count in (("train", n), ("t10k", 500)):
            labels = rng.randint(0, 10, count).astype(np.uint8)
            images = (rng.rand(count, 28, 28) * 50).astype(np.uint8)
            for i, label in enumerate(labels):
                images[i, 2 * label + 3, :] = 250  # a bright row per class
            with open(os.path.join(folder, prefix + "-images-idx3-ubyte"), "wb") as f:
                f.write(bytes(bytearray([0, 0, 8, 3])) + struct.pack(">III", count, 28, 28) + images.tobytes())
            with open(os.path.join(folder, prefix + "-labels-idx1-ubyte"), "wb") as f:
                f.write(bytes(bytearray([0, 0, 8, 1])) + struct.pack(">I", count) + labels.tobytes())
    else:
        for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
            records = rng.randint(0, 256, (n // 5, 3073)).astype(np.uint8)
            records[:, 0] = rng.randint(0, 10, len(records))
            records.tofile(os.path.join(folder, name))


def training_rows(w, model, folder):
    """The rows train_tf1.training_rdd would make of the files: (pixel bytes, label)."""
    def read(name):
        with open(os.path.join(folder, name), "rb") as f:
            return f.read()

    if model == "mnist_softmax":
        images, labels = w.idx_array(read("train-images-idx3-ubyte")), w.idx_array(read("train-labels-idx1-ubyte"))
        return [(images[i].tobytes(), int(labels[i])) for i in range(len(labels))]
    rows = []
    for i in range(1, 6):
        raw = read("data_batch_%d.bin" % i)
        for at in range(0, len(raw), 3073):
            record = raw[at:at + 3073]
            rows.append((bytes(record[1:]), int(bytearray(record[:1])[0])))
    return rows


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def node(job, index, worker_num, spec, args, mgr_address, authkey, log):
    from tensorflowonspark import TFManager, TFSparkNode

    w = imp.load_source("train_tf1", TRAIN_TF1)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    mgr = TFManager.connect(mgr_address, authkey) if mgr_address else None
    ctx = TFSparkNode.TFNodeContext(worker_num, job, index, spec, "file://", os.getcwd(), mgr)
    w.main_fun(args, ctx)


def feed(mgr, rows, epochs):
    """What TFSparkNode.train does with the partitions an executor gets, then TFCluster.shutdown's None."""
    queue = mgr.get_queue("input")
    for _ in range(epochs):
        if str(mgr.get("state")) == "'terminating'":
            break
        for row in rows:
            queue.put(row, block=True)
        queue.join()
    queue.put(None, block=True)


def main(argv):
    model, mode, out, data = argv[:4]
    gpus = argv[4] if len(argv) > 4 else "0"
    from tensorflowonspark import TFManager

    w = imp.load_source("train_tf1", TRAIN_TF1)
    make_data(model, data)
    if not os.path.isdir(out):
        os.makedirs(out)
    spec = {"ps": ["127.0.0.1:%d" % free_port()],
            "worker": ["127.0.0.1:%d" % free_port(), "127.0.0.1:%d" % free_port()]}
    args = w.parse_args(["--model", model, "--input-mode", mode, "--data-dir", data, "--eval-dir", data,
                         "--workers", "2", "--ps", "1", "--num-gpus", gpus, "--batch-size", "32",
                         "--epochs", "2", "--log-every", "5", "--node-host", "127.0.0.1"])
    rows = training_rows(w, model, data)
    args.records = len(rows)
    ps = multiprocessing.Process(target=node, args=("ps", 0, 0, spec, args, None, None,
                                                    os.path.join(out, "ps-0.log")))
    ps.daemon = True
    ps.start()
    workers, feeders, managers = [], [], []
    for i in range(2):
        authkey = uuid.uuid4().bytes
        mgr = TFManager.start(authkey, ["input", "output"])
        mgr.set("state", "running")
        managers.append(mgr)  # a manager no longer referenced shuts its server down (TFoS keeps its own)
        p = multiprocessing.Process(target=node, args=(
            "worker", i, i + 1, spec, args, mgr.address if mode == "spark" else None, authkey,
            os.path.join(out, "worker-%d.log" % i)))
        p.start()
        workers.append(p)
        if mode == "spark":
            t = threading.Thread(target=feed, args=(mgr, rows[i::2], args.epochs))
            t.daemon = True
            t.start()
            feeders.append(t)
    codes = []
    for p in workers:
        p.join(600)
        codes.append(p.exitcode)
    ps.terminate()
    print("workers exited with", codes)
    return 0 if codes == [0, 0] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
