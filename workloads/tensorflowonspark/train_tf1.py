"""TensorFlowOnSpark 1.0 training on TensorFlow 1.x: the paper profile's TFoS workload.

The DLoBD paper ran TensorFlowOnSpark 1.0 on Spark 2.1 with parameter servers. This program
is train.py's counterpart for that stack (version set paper-tfos-bigdl: TFoS 1.0.8, and
TensorFlow 1.4.0, the release of the same month, a choice: the paper does not state its
TensorFlow version). It runs in the Python the cluster gives for it (DLOBD_TFOS_PYTHON: a
Python 3.5 or 2.7, the newest Spark 2.1.0's PySpark runs on, SPARK-19019), so it is written
for Python 2.7 and 3.5 alike (no f-strings, no annotations, no reliance on dict order). Of the
project's helpers it imports only workloads/tensorflow/dlobd_tf1.py, written for those Pythons too
(the others need Python 3.9 and TensorFlow 2).

What has run: the whole program under spark-submit on Spark 2.1.2 and YARN in the paper image
(Python 2.7, make test-paper-profile), on one host and on the emulated paper-shape site's hosts,
which have no default route (pin_address); its TF nodes (main_fun) on TensorFlow 1.4.0 with
TensorFlowOnSpark 1.0.8's TFNode under Python 2.7.18 and 3.6.15, given TFoS 1.0.8's node context
and feed queues by tests/tf1_harness.py; its syntax for Python 3.5 (ast). What has NOT run here:
Python 3.5 itself, GPUs, grpc+verbs.

Submit with spark-submit (YARN); one TF node per executor. TFCluster.run(sc, main_fun, args,
workers + ps, ps, tensorboard=False, input_mode) starts them: TFoS 1.0 names its nodes `ps`
and `worker`; this program gives worker 0 TensorFlow's job name `chief` (the worker that
initializes the variables, as TFoS 2.x's master_node and the native TF launcher's ps
strategy name it), so its lines read `chief:0` as train.py's do. Between-graph replication:
each worker builds the model with tf.train.replica_device_setter (variables on the
parameter servers) and trains asynchronously in a tf.train.MonitoredTrainingSession; a
parameter server only serves (server.join()) until TFoS stops its executor.

  --input-mode spark       the driver reads the data set into an RDD and TFCluster.train
                           feeds its partitions to the workers (TFNode.DataFeed).
                           mnist_softmax: IDX files; cifar10_cnn: CIFAR-10 binary batches
                           (sc.binaryRecords); both may be hdfs:// URIs (--train-images keeps
                           the first N records). A worker trains until its feed ends or it has
                           taken its even share of each epoch (records / batch / workers steps).
  --input-mode tensorflow  each worker reads the data itself from --data-dir with tf.gfile (a
                           path every executor sees, or hdfs:// where TensorFlow finds libhdfs),
                           sharded by its worker index.

A worker that is not the chief waits for the chief to initialize the variables, polling every
30 s (TensorFlow 1.x's default for a non-chief session).

Models as train.py's (workloads/tensorflow/dlobd_tf.py), in tf.layers: mnist_softmax (one
dense layer on the 784 pixels) and cifar10_cnn (three 3x3 convolutions of 32, 64, 64 filters,
two 2x2 max-poolings, dense 64, dense 10); momentum SGD (0.9), softmax cross-entropy.

Server: TFNode.start_cluster_server(ctx, num_gpus, rdma) for gRPC, and for grpc+verbs where
TensorFlow has CUDA (TFoS 1.0.8 drops the protocol on a CPU build); otherwise (no GPU asked,
another protocol) the program starts tf.train.Server itself with --protocol. --node-host
replaces every node's address when all executors run on one machine.

Output: the DLOBD lines of dlobd_tf.py's format (`DLOBD event=... key=value ...`, read by
dlobd/stacks/tensorflowonspark.py), printed to the executor's stderr: `start` (a parameter
server's with role=server), `step` every --log-every steps, `epoch`, `summary`. Asynchronous
updates have no common step, so: step = the node's own steps; steps_per_s and
worker_images_per_s = the node's own rate; images_per_s = all workers' images per second, from
the shared global step's advance over the same interval (every worker's step adds one). Each
worker logs `Training <task> starts its first step` through Python logging (TFoS's format) when
its clock starts; the driver logs `DLOBD event=driver_start` and `event=cluster_stopped`. Log
times are UTC.
"""

from __future__ import absolute_import, division, print_function

import argparse
import errno
import logging
import os
import socket
import sys
import time

import numpy as np

# the DLOBD lines and helpers the TensorFlow 1.x programs share; main() ships the module to the executors
COMMON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tensorflow", "dlobd_tf1.py")
sys.path.insert(0, os.path.dirname(COMMON))
from dlobd_tf1 import dlobd_line, idx_array, process_start_time  # noqa: E402

# The major versions this program is written for (train.py runs TFoS 2.x with TensorFlow 2).
TFOS_MAJOR = "1."
TENSORFLOW_MAJOR = "1."
SHAPES = {"mnist_softmax": (28, 1), "cifar10_cnn": (32, 3)}  # (height/width, channels)
CLASSES = 10
CIFAR_RECORD = 3073  # a label byte, then 3 x 32 x 32 pixel bytes (channels first)
MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
CIFAR_FILES = {"train": ["data_batch_%d.bin" % i for i in range(1, 6)], "test": ["test_batch.bin"]}
EVAL_BATCH = 500


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(SHAPES), required=True)
    p.add_argument("--input-mode", choices=("spark", "tensorflow"), default="spark")
    p.add_argument("--data-dir", required=True, help="training data (see above)")
    p.add_argument("--eval-dir", help="test data for the chief's accuracy (default: none)")
    p.add_argument("--workers", type=int, required=True, help="TF workers (one Spark executor each)")
    p.add_argument("--ps", type=int, default=1, help="parameter servers (one Spark executor each)")
    p.add_argument("--num-gpus", type=int, default=1,
                   help="GPUs per worker where TensorFlow has CUDA (0: CPU only)")
    p.add_argument("--batch-size", type=int, default=64, help="images per worker per step")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--partitions", type=int, help="RDD partitions in spark mode (default: Spark's)")
    p.add_argument("--train-images", type=int,
                   help="spark mode: train on the first N records of the data set (default: all)")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--node-host", help="when every executor runs on one machine: the address the "
                                       "TF nodes use instead of the one TFoS picks from the "
                                       "default route")
    p.add_argument("--protocol", default="grpc", help="TF server protocol (grpc; grpc+verbs needs a "
                                                      "TensorFlow built with the verbs channel)")
    p.add_argument("--address-map", default="",
                   help="FROM=TO,...: the address TFoS registers a node at (its default route's) -> the "
                        "one the TF nodes use instead (the network's, e.g. IPoIB); ports kept")
    a = p.parse_args(argv)
    if a.workers < 1 or a.ps < 1:
        p.error("between-graph replication needs at least one worker and one parameter server")
    return a


# ---------------------------------------------------------------- data

def to_arrays(model, pixels, labels):
    """Pixel bytes of a batch (one string of all records) and its labels as NHWC float images in
    [0, 1] and int64 labels."""
    x = np.frombuffer(pixels, dtype=np.uint8)
    if model == "cifar10_cnn":
        x = x.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    else:
        x = x.reshape(-1, 28, 28, 1)
    return x.astype(np.float32) / 255.0, np.asarray(labels, dtype=np.int64)


def rows_to_arrays(model, rows):
    return to_arrays(model, b"".join(r[0] for r in rows), [r[1] for r in rows])


def training_rdd(sc, a):
    """An RDD of (pixel bytes, label) rows (spark mode)."""
    if a.model == "cifar10_cnn":
        records = sc.binaryRecords(a.data_dir.rstrip("/") + "/data_batch_*.bin", CIFAR_RECORD)
        if a.train_images:
            limit = a.train_images
            records = records.zipWithIndex().filter(lambda r: r[1] < limit).keys()
        rdd = records.map(lambda r: (bytes(r[1:]), int(bytearray(r[:1])[0])))
    else:
        files = dict(sc.binaryFiles(a.data_dir.rstrip("/") + "/train-*-ubyte", 1).collect())
        images = idx_array(next(v for k, v in sorted(files.items()) if k.endswith(MNIST_FILES["train"][0])))
        labels = idx_array(next(v for k, v in sorted(files.items()) if k.endswith(MNIST_FILES["train"][1])))
        n = min(len(labels), a.train_images or len(labels))
        rows = [(images[i].tobytes(), int(labels[i])) for i in range(n)]
        rdd = sc.parallelize(rows, a.partitions or sc.defaultParallelism)
    if a.partitions and rdd.getNumPartitions() != a.partitions:
        rdd = rdd.repartition(a.partitions)
    return rdd


def read_dataset(tf, model, data_dir, split):
    """A split of the data set read with tf.gfile (local paths and hdfs:// alike), as arrays."""
    def read(name):
        with tf.gfile.GFile(data_dir.rstrip("/") + "/" + name, "rb") as f:
            return f.read()

    if model == "mnist_softmax":
        images, labels = (idx_array(read(name)) for name in MNIST_FILES[split])
        return to_arrays(model, images.tobytes(), labels)
    raw = np.concatenate([np.frombuffer(read(name), dtype=np.uint8).reshape(-1, CIFAR_RECORD)
                          for name in CIFAR_FILES[split]])
    return to_arrays(model, raw[:, 1:].tobytes(), raw[:, 0])


# ---------------------------------------------------------------- TensorFlow 1.x graph

def build_logits(tf, model, x):
    """The model's logits (no softmax), train.py's models in tf.layers."""
    if model == "mnist_softmax":
        return tf.layers.dense(tf.reshape(x, [-1, 28 * 28]), CLASSES)
    net = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.dense(tf.reshape(net, [-1, 8 * 8 * 64]), 64, activation=tf.nn.relu)
    return tf.layers.dense(net, CLASSES)


def node_cluster(spec, job, index, node_host, address_map=""):
    """TFoS's cluster spec ({job: ["host:port", ...]}) with worker 0 as job `chief`, with
    --node-host every node's address replaced, and with --address-map each address it names
    (ports kept). Returns (spec, job, index)."""
    spec = dict((name, list(addrs)) for name, addrs in spec.items())
    workers = spec.pop("worker")
    spec["chief"] = workers[:1]
    if len(workers) > 1:
        spec["worker"] = workers[1:]
    if job == "worker":
        job, index = ("chief", 0) if index == 0 else ("worker", index - 1)
    if node_host:
        hosts = sorted(set(addr.rsplit(":", 1)[0] for addrs in spec.values() for addr in addrs))
        if len(hosts) != 1:
            raise SystemExit("--node-host {0}: the TF nodes run on {1} machines ({2}); it applies to "
                             "one machine only".format(node_host, len(hosts), ", ".join(hosts)))
        spec = dict((name, [node_host + ":" + addr.rsplit(":", 1)[1] for addr in addrs])
                    for name, addrs in spec.items())
    mapping = dict(pair.split("=", 1) for pair in address_map.split(",") if "=" in pair)
    if mapping:
        spec = dict((name, [mapping.get(addr.rsplit(":", 1)[0], addr.rsplit(":", 1)[0]) + ":" +
                            addr.rsplit(":", 1)[1] for addr in addrs]) for name, addrs in spec.items())
    return spec, job, index


def pin_address(driver_host):
    """TFoS 1.0 takes a host's address to be the source of its route to 8.8.8.8
    (util.get_ip_address), which fails where the host has no default route, as many cluster
    nodes have none. There, the source of its route to the Spark driver serves instead: the
    interface it already reaches the driver by. Patches this process's tensorflowonspark.util,
    once."""
    from tensorflowonspark import util

    found = util.get_ip_address
    if getattr(found, "dlobd_driver_host", None):
        return

    def get_ip_address():
        try:
            return found()
        except socket.error as exc:
            if exc.errno != errno.ENETUNREACH:
                raise
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect((driver_host, 80))  # a UDP connect sends nothing: it picks the route
            return probe.getsockname()[0]
        finally:
            probe.close()

    get_ip_address.dlobd_driver_host = driver_host
    util.get_ip_address = get_ip_address


def pinning_executors(driver_host):
    """TFSparkNode's functions that make what the executors run (run, train, inference,
    shutdown) made to pin_address in each executor first: TFoS asks for the address there."""
    from tensorflowonspark import TFSparkNode

    def pinned(make):
        def make_pinned(*args, **kwargs):
            partition_fn = make(*args, **kwargs)

            def run_pinned(iterator):
                pin_address(driver_host)
                return partition_fn(iterator)
            return run_pinned
        return make_pinned

    for name in ("run", "train", "inference", "shutdown"):
        setattr(TFSparkNode, name, pinned(getattr(TFSparkNode, name)))


def surplus_executors(executor_ids, wanted):
    """The executors beyond the `wanted` first (by their numeric ids, in the order they started)."""
    return sorted(executor_ids, key=int)[wanted:]


def registered_executors(sc):
    """The ids of the executors registered with the driver."""
    return list(sc._jvm.scala.collection.JavaConversions.seqAsJavaList(sc._jsc.sc().getExecutorIds()))


def drop_surplus_executors(sc, wanted, log, timeout_s=120):
    """Spark 2.1 on YARN may start more executors than it was asked for (SPARK-21383, fixed in
    2.2.1: containers received before the last ones launched are requested again). TFoS 1.0 runs
    its feed and its shutdown on any executor, and each fails on one that holds no TF node, so
    the surplus is killed before the nodes start, while none holds one."""
    surplus = surplus_executors(registered_executors(sc), wanted)
    if not surplus:
        return
    log.info("killing executor(s) %s: Spark started %d for the %d asked (SPARK-21383)",
             ",".join(surplus), wanted + len(surplus), wanted)
    ids = sc._jvm.java.util.ArrayList()
    for executor in surplus:
        ids.add(executor)
    sc._jsc.sc().killExecutors(sc._jvm.scala.collection.JavaConversions.asScalaBuffer(ids).toSeq())
    deadline = time.time() + timeout_s
    while set(surplus) & set(registered_executors(sc)):
        if time.time() > deadline:
            raise SystemExit("executors {0}: Spark started them beyond the {1} asked for (SPARK-21383) and "
                             "they were still there {2} s after being killed".format(",".join(surplus), wanted,
                                                                                     timeout_s))
        time.sleep(0.2)


def start_server(tf, ctx, a):
    """This node's tf.train.Server (TFoS 1.0's TFNode.start_cluster_server where it keeps the
    protocol and GPUs are asked for), and the cluster spec."""
    from tensorflowonspark import TFNode

    tfos_server = a.num_gpus > 0 and (a.protocol == "grpc" or (
        a.protocol == "grpc+verbs" and tf.test.is_built_with_cuda()))
    if tfos_server:
        return TFNode.start_cluster_server(ctx, num_gpus=a.num_gpus, rdma=a.protocol == "grpc+verbs")
    if a.num_gpus == 0 or ctx.job_name == "ps":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    elif tf.test.is_built_with_cuda():
        from tensorflowonspark import gpu_info

        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_info.get_gpus(a.num_gpus)
    cluster = tf.train.ClusterSpec(ctx.cluster_spec)
    return cluster, tf.train.Server(cluster, job_name=ctx.job_name, task_index=ctx.task_index,
                                    protocol=a.protocol)


def main_fun(a, ctx):
    """Runs on each executor as TF node `ctx.job_name:ctx.task_index` (TFoS 1.0's names)."""
    import tensorflow as tf
    from tensorflowonspark import TFNode

    process_start = process_start_time()
    logging.Formatter.converter = time.gmtime
    log = logging.getLogger("dlobd")
    # Spark copies a Python worker's stdout and stderr into the executor's log from two
    # threads: print to stderr, where the logging lines go, so each line reaches it whole.
    sys.stdout = sys.stderr
    if not tf.__version__.startswith(TENSORFLOW_MAJOR):
        raise SystemExit("TensorFlow {0} in {1}: this program is for TensorFlow 1.x (train.py is "
                         "TensorFlow 2's)".format(tf.__version__, sys.executable))
    n_workers = len(ctx.cluster_spec["worker"])
    worker_index = ctx.task_index if ctx.job_name == "worker" else None
    ctx.cluster_spec, ctx.job_name, ctx.task_index = node_cluster(
        ctx.cluster_spec, ctx.job_name, ctx.task_index, a.node_host, a.address_map)
    task = "{0}:{1}".format(ctx.job_name, ctx.task_index)
    cluster, server = start_server(tf, ctx, a)
    if ctx.job_name == "ps":
        dlobd_line("start", [("task", task), ("workload", "tensorflowonspark"), ("role", "server"),
                             ("protocol", a.protocol)])
        server.join()
        return
    is_chief = ctx.job_name == "chief"
    size, channels = SHAPES[a.model]
    device = "/job:{0}/task:{1}".format(ctx.job_name, ctx.task_index)
    with tf.device(tf.train.replica_device_setter(worker_device=device, cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, size, size, channels], name="images")
        y = tf.placeholder(tf.int64, [None], name="labels")
        logits = build_logits(tf, a.model, x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        # tf.train's since TensorFlow 1.2; contrib's before
        get_step = getattr(tf.train, "get_or_create_global_step", None)
        global_step = get_step() if get_step else tf.contrib.framework.get_or_create_global_step()
        train_op = tf.train.MomentumOptimizer(a.learning_rate, 0.9).minimize(loss, global_step=global_step)
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.int64))

    if a.input_mode == "spark":
        feed = TFNode.DataFeed(ctx.mgr, True)
        steps = max(1, a.records // (a.batch_size * n_workers))

        def next_batch():
            # the feed's end (a None in the queue) may close a partial batch; a call after it
            # would wait on the empty queue until the executor is killed, before the node's
            # epoch and summary lines (seen on TFoS 1.0.8 when the other worker took more partitions)
            if feed.should_stop():
                return None
            rows = feed.next_batch(a.batch_size)
            return rows_to_arrays(a.model, rows) if rows else None
    else:
        feed = None
        x_all, y_all = read_dataset(tf, a.model, a.data_dir, "train")
        x_all, y_all = x_all[worker_index::n_workers], y_all[worker_index::n_workers]
        steps = len(y_all) // a.batch_size
        if steps < 1:
            raise SystemExit("worker {0}: {1} records, fewer than one batch of {2}".format(
                task, len(y_all), a.batch_size))
        order = np.random.RandomState(worker_index).permutation(len(y_all))
        cursor = [0]

        def next_batch():
            i = cursor[0] % steps
            cursor[0] += 1
            pick = order[i * a.batch_size:(i + 1) * a.batch_size]
            return x_all[pick], y_all[pick]

    evaluate = bool(a.eval_dir) and is_chief
    if evaluate:
        x_test, y_test = read_dataset(tf, a.model, a.eval_dir, "test")
    dlobd_line("start", [("task", task), ("workload", "tensorflowonspark"), ("model", a.model),
                         ("input_mode", a.input_mode), ("strategy", "ps"), ("num_workers", n_workers),
                         ("num_ps", a.ps), ("batch_size", a.batch_size), ("steps_per_epoch", steps),
                         ("epochs", a.epochs), ("protocol", a.protocol), ("tensorflow", tf.__version__)])
    config = tf.ConfigProto(allow_soft_placement=True, device_filters=["/job:ps", device])
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, config=config) as sess:
        train_start = time.time()
        log.info("Training %s starts its first step", task)
        done, train_time, ended = 0, 0.0, False
        first_global = int(sess.run(global_step))
        # where the last step line left off (a dict: Python 2.7 has no nonlocal)
        last = {"time": train_start, "done": 0, "global": first_global}

        def step_line(epoch, loss_value, now_global):
            now = time.time()
            dt = now - last["time"]
            dlobd_line("step", [
                ("task", task), ("step", done), ("epoch", epoch), ("wall_clock_s", now - train_start),
                ("loss", float(loss_value)),
                ("images_per_s", (int(now_global) - last["global"]) * a.batch_size / dt),
                ("worker_images_per_s", (done - last["done"]) * a.batch_size / dt),
                ("steps_per_s", (done - last["done"]) / dt)])
            last["time"], last["done"], last["global"] = now, done, int(now_global)

        for epoch in range(1, a.epochs + 1):
            epoch_start = time.time()
            for i in range(steps):
                batch = None if sess.should_stop() else next_batch()
                if batch is None:
                    ended = True
                    break
                _, loss_value, now_global = sess.run([train_op, loss, global_step],
                                                     feed_dict={x: batch[0], y: batch[1]})
                done += 1
                if done % a.log_every == 0 or i == steps - 1:
                    step_line(epoch, loss_value, now_global)
            if ended and done > last["done"]:
                # the feed ended before the epoch's last step (the other workers took more of
                # it): the line of the last step taken, so that every node that trained has one
                step_line(epoch, loss_value, now_global)
            epoch_time = time.time() - epoch_start
            train_time += epoch_time
            accuracy = None
            if evaluate:
                hits = sum(int(sess.run(correct, feed_dict={x: x_test[j:j + EVAL_BATCH], y: y_test[j:j + EVAL_BATCH]}))
                           for j in range(0, len(y_test), EVAL_BATCH))
                accuracy = hits / float(len(y_test))
            dlobd_line("epoch", [("task", task), ("step", done), ("epoch", epoch),
                                 ("wall_clock_s", time.time() - train_start), ("epoch_time_s", epoch_time),
                                 ("top1_accuracy", accuracy)])
            if ended:
                break
        end_global = int(sess.run(global_step))
    if feed is not None and not feed.should_stop():
        feed.terminate()  # drop what is left of this node's feed, so the feeding job ends
    dlobd_line("summary", [
        ("task", task), ("step", done), ("epoch", epoch), ("train_time_s", train_time),
        ("images_per_s", (end_global - first_global) * a.batch_size / train_time if train_time else None),
        ("worker_images_per_s", done * a.batch_size / train_time if train_time else None),
        ("steps_per_s", done / train_time if train_time else None),
        ("end_to_end_s", time.time() - process_start)])


def tfos_version():
    import pkg_resources

    return pkg_resources.get_distribution("tensorflowonspark").version


def main(argv=None):
    a = parse_args(argv)
    from pyspark import SparkConf, SparkContext
    from tensorflowonspark import TFCluster

    version = tfos_version()
    if not version.startswith(TFOS_MAJOR):
        raise SystemExit("TensorFlowOnSpark {0} in {1}: this program is for TensorFlowOnSpark 1.x "
                         "(train.py is 2.x's)".format(version, sys.executable))
    logging.Formatter.converter = time.gmtime
    log = logging.getLogger("dlobd")
    # TFoS feeds each cached partition of the training RDD to the TF worker of the executor that
    # holds it. Spark places a repartition's reduce tasks beside their map output: where the data
    # sat on one DataNode, one executor would hold every partition and its worker take the epoch.
    conf = SparkConf().setAppName("dlobd-tfos1-{0}-{1}".format(a.model, a.input_mode))
    sc = SparkContext(conf=conf.setIfMissing("spark.shuffle.reduceLocality.enabled", "false"))
    sc.addPyFile(os.path.abspath(COMMON))
    driver_host = sc.getConf().get("spark.driver.host")
    pin_address(driver_host)
    pinning_executors(driver_host)
    mode = TFCluster.InputMode.SPARK if a.input_mode == "spark" else TFCluster.InputMode.TENSORFLOW
    rdd = None
    a.records = 0
    if a.input_mode == "spark":
        rdd = training_rdd(sc, a).cache()
        a.records = rdd.count()
    executors = a.workers + a.ps
    drop_surplus_executors(sc, executors, log)
    log.info("DLOBD event=driver_start app_id=%s input_mode=%s cluster_size=%d num_ps=%d tensorflowonspark=%s",
             sc.applicationId, a.input_mode, executors, a.ps, version)
    cluster = TFCluster.run(sc, main_fun, a, executors, a.ps, tensorboard=False, input_mode=mode)
    if rdd is not None:
        cluster.train(rdd, a.epochs)
    cluster.shutdown()
    log.info("DLOBD event=cluster_stopped app_id=%s", sc.applicationId)
    sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
