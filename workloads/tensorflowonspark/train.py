"""TensorFlowOnSpark training: a TF cluster started inside Spark executors by TFCluster.run.

Submit with spark-submit (standalone or YARN); one TF node per executor, the first is
the `chief`, the rest `worker`s, all in MultiWorkerMirroredStrategy (TFoS writes TF_CONFIG).

  --input-mode spark       the driver reads the data set into an RDD and TFCluster.train
                           feeds its partitions to the TF nodes (TFNode.DataFeed).
                           mnist_softmax: IDX files; cifar10_cnn: CIFAR-10 binary batches
                           (sc.binaryRecords); both paths may be hdfs:// URIs, which
                           the executors read (--train-images keeps the first N records).
  --input-mode tensorflow  each TF node reads the data itself from --data-dir (a path every
                           executor can read), sharded by its task index.

Each node prints DLOBD lines (workloads/tensorflow/dlobd_tf.py) to its executor's log (stderr),
and logs `Training <task> starts its first step` through Python logging at the moment its
training clock starts (the DLOBD lines' wall_clock_s counts from there), which places the
training on the application's timeline (docs/metrics.md, phases of a TFoS run). The driver
logs `DLOBD event=...` lines through TFoS's own logging format, so their timestamps line up
with TFoS's "Reserving TFSparkNodes" ... "Shutting down cluster" lines. Every log time this
program writes is UTC, to compare with the ResourceManager's and Spark's epoch times.
With a data set, the chief evaluates top-1 accuracy after each epoch on --eval-dir (local).
"""

import argparse
import logging
import os
import struct
import sys
import time

import numpy as np
from pyspark import SparkConf, SparkContext
from tensorflowonspark import TFCluster

HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = os.path.join(HERE, "..", "tensorflow", "dlobd_tf.py")

# MultiWorkerMirrored needs every node to run the same number of steps, but Spark may feed
# the nodes unequal shares of the partitions: each node stops at this fraction of an even
# share and drains the rest of its feed.
FEED_SAFETY = 0.8

log = logging.getLogger("dlobd")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("mnist_softmax", "cifar10_cnn"), required=True)
    p.add_argument("--input-mode", choices=("spark", "tensorflow"), default="spark")
    p.add_argument("--data-dir", required=True, help="training data (see above)")
    p.add_argument("--eval-dir", help="local test data for the chief's accuracy (default: none)")
    p.add_argument("--cluster-size", type=int, required=True, help="TF nodes = Spark executors")
    p.add_argument("--batch-size", type=int, default=64, help="images per node per step")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--partitions", type=int, help="RDD partitions in spark mode (default: Spark's)")
    p.add_argument("--train-images", type=int,
                   help="spark mode: train on the first N records of the data set (default: all)")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--node-host", help="when every executor runs on one machine: the address the "
                                       "TF nodes use (e.g. 127.0.0.1) instead of the one TFoS picks "
                                       "from the default route")
    p.add_argument("--protocol", default="grpc",
                   help="TF server protocol, put in TF_CONFIG's rpc_layer (grpc; grpc+verbs "
                        "needs a TensorFlow built with the verbs channel)")
    return p.parse_args(argv)


def _idx(data: bytes) -> np.ndarray:
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def training_rdd(sc, a):
    """An RDD of (pixel bytes, label) rows."""
    if a.model == "cifar10_cnn":
        records = sc.binaryRecords(a.data_dir.rstrip("/") + "/data_batch_*.bin", 3073)
        if a.train_images:
            limit = a.train_images
            records = records.zipWithIndex().filter(lambda r: r[1] < limit).keys()
        rdd = records.map(lambda r: (bytes(r[1:]), int(r[0])))
    else:
        files = dict(sc.binaryFiles(a.data_dir.rstrip("/") + "/train-*-ubyte", 1).collect())
        images = _idx(next(v for k, v in files.items() if k.endswith("train-images-idx3-ubyte")))
        labels = _idx(next(v for k, v in files.items() if k.endswith("train-labels-idx1-ubyte")))
        n = min(len(labels), a.train_images or len(labels))
        rows = [(images[i].tobytes(), int(labels[i])) for i in range(n)]
        rdd = sc.parallelize(rows, a.partitions or sc.defaultParallelism)
    if a.partitions and rdd.getNumPartitions() != a.partitions:
        rdd = rdd.repartition(a.partitions)
    return rdd


def set_tf_config(host: str | None, protocol: str) -> None:
    """Adjust the TF_CONFIG TFoS exported: the server protocol (rpc_layer, which
    MultiWorkerMirroredStrategy's cluster resolver reads) and, given a host, every node's
    address (keeping each node's port)."""
    import json

    config = json.loads(os.environ["TF_CONFIG"])
    config["rpc_layer"] = protocol
    if host is None:
        os.environ["TF_CONFIG"] = json.dumps(config)
        return
    hosts = {addr.rsplit(":", 1)[0] for addrs in config["cluster"].values() for addr in addrs}
    if len(hosts) != 1:
        raise SystemExit(f"--node-host {host}: the TF nodes run on {len(hosts)} machines "
                         f"({', '.join(sorted(hosts))}); it applies to one machine only")
    config["cluster"] = {job: [f"{host}:{addr.rsplit(':', 1)[1]}" for addr in addrs]
                         for job, addrs in config["cluster"].items()}
    os.environ["TF_CONFIG"] = json.dumps(config)


def main_fun(a, ctx):
    """Runs on each executor, as TF node `ctx.job_name:ctx.task_index`."""
    import tensorflow as tf

    import dlobd_tf as W

    logging.Formatter.converter = time.gmtime
    # Spark copies a Python worker's stdout and stderr into the executor's log from two
    # threads, so lines of the two streams can splice mid-line: print to stderr, where the
    # logging lines go, so each line reaches the log whole.
    sys.stdout = sys.stderr
    task = f"{ctx.job_name}:{ctx.task_index}"
    set_tf_config(a.node_host, a.protocol)
    size, channels, classes = W.DEFAULT_SHAPE[a.model]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    n_nodes = ctx.num_workers
    global_batch = a.batch_size * n_nodes
    with strategy.scope():
        model = W.build_model(a.model, size, classes)
        optimizer = tf.keras.optimizers.SGD(learning_rate=a.learning_rate, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(y, model(x, training=True)),
                                              global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def train_step(x, y):
        return strategy.reduce(tf.distribute.ReduceOp.SUM,
                               strategy.run(replica_step, args=(x, y)), axis=None)

    def to_arrays(rows):
        x = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.uint8)
        if a.model == "cifar10_cnn":
            x = x.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        else:
            x = x.reshape(-1, 28, 28, 1)
        return x.astype(np.float32) / 255.0, np.array([r[1] for r in rows], dtype=np.int64)

    if a.input_mode == "spark":
        feed = ctx.get_data_feed(train_mode=True)
        steps = int(FEED_SAFETY * a.records / global_batch)

        def next_batch():
            return to_arrays(feed.next_batch(a.batch_size))
    else:
        x_all, y_all = W.load_dataset(a.model, a.data_dir, "train")
        x_all, y_all = x_all[ctx.task_index::n_nodes], y_all[ctx.task_index::n_nodes]
        steps = len(y_all) // a.batch_size
        order = np.random.default_rng(ctx.task_index).permutation(len(y_all))
        cursor = [0]

        def next_batch():
            i = cursor[0] % steps
            cursor[0] += 1
            pick = order[i * a.batch_size:(i + 1) * a.batch_size]
            return x_all[pick], y_all[pick]

    evaluate = a.eval_dir and ctx.job_name == "chief"
    if evaluate:
        x_test, y_test = W.load_dataset(a.model, a.eval_dir, "test")
    W.log("start", task=task, workload="tensorflowonspark", model=a.model,
          input_mode=a.input_mode, num_workers=n_nodes, batch_size=a.batch_size,
          steps_per_epoch=steps, epochs=a.epochs, protocol=a.protocol)
    clock = W.Clock()
    clock.start_training()
    log.info("Training %s starts its first step", task)
    done, train_time = 0, 0.0
    for epoch in range(1, a.epochs + 1):
        epoch_start = time.time()
        for i in range(steps):
            t0 = time.time()
            x, y = next_batch()
            loss = float(train_step(x, y))
            done += 1
            if done % a.log_every == 0 or i == steps - 1:
                dt = time.time() - t0
                W.log("step", task=task, step=done, epoch=epoch, wall_clock_s=clock.wall(),
                      loss=loss, images_per_s=global_batch / dt, steps_per_s=1 / dt)
        epoch_time = time.time() - epoch_start
        train_time += epoch_time
        W.log("epoch", task=task, step=done, epoch=epoch, wall_clock_s=clock.wall(),
              epoch_time_s=epoch_time,
              top1_accuracy=W.top1_accuracy(model, x_test, y_test) if evaluate else None)
    if a.input_mode == "spark":
        feed.terminate()
    W.log("summary", task=task, step=done, epoch=a.epochs, train_time_s=train_time,
          images_per_s=done * global_batch / train_time, steps_per_s=done / train_time,
          end_to_end_s=clock.end_to_end())


def main(argv=None) -> int:
    a = parse_args(argv)
    logging.Formatter.converter = time.gmtime
    # as train_tf1.py: the cached partitions spread over the executors, not gathered beside the data
    conf = SparkConf().setAppName(f"dlobd-tfos-{a.model}-{a.input_mode}")
    sc = SparkContext(conf=conf.setIfMissing("spark.shuffle.reduceLocality.enabled", "false"))
    sc.addPyFile(os.path.abspath(COMMON))
    mode = TFCluster.InputMode.SPARK if a.input_mode == "spark" else TFCluster.InputMode.TENSORFLOW
    rdd = None
    if a.input_mode == "spark":
        rdd = training_rdd(sc, a).cache()
        a.records = rdd.count() * a.epochs
    log.info("DLOBD event=driver_start app_id=%s input_mode=%s cluster_size=%d",
             sc.applicationId, a.input_mode, a.cluster_size)
    cluster = TFCluster.run(sc, main_fun, a, a.cluster_size, num_ps=0, tensorboard=False,
                            input_mode=mode, master_node="chief")
    if rdd is not None:
        cluster.train(rdd, a.epochs)
    cluster.shutdown()
    log.info("DLOBD event=cluster_stopped app_id=%s", sc.applicationId)
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
