"""Native distributed TensorFlow 1.x training with parameter servers, configured by TF_CONFIG.

train_distributed.py's counterpart for a TensorFlow 1.x build: the native TensorFlow launcher
(dlobd/stacks/tensorflow.py) runs this program instead whenever the tasks run in a TF 1.x: the
site's build named by DLOBD_TF_RDMA_PYTHON for the verbs and MPI channels (grpc+verbs, grpc+mpi
exist only in TF 1.x-era source builds) and RDMA-gRPC, and for every channel of the paper
profile, whose stacks' Python has no TensorFlow, that build or TensorFlowOnSpark's Python 2.7 with
TensorFlow 1.4. That build cannot run train_distributed.py
(tf.distribute strategies, ClusterCoordinator, Keras 2). This program is written for Python 2.7
and 3.5 alike (no f-strings, no annotations, no reliance on dict order). It prints the same DLOBD
lines as dlobd_tf.py (which needs Python 3.6+, TensorFlow 2 and psutil) through dlobd_tf1.py, the
TensorFlow 1.x programs' shared helpers.

One process per TF task, each with the TF_CONFIG the launcher gives it ({"cluster": {...},
"task": {"type", "index"}, "rpc_layer"}), the tasks of train_distributed.py's ps strategy (the
same names, hosts and ports): `worker` i (the point's workers), `ps` i and one `chief`.
Between-graph replication, asynchronous updates, as distributed TensorFlow 1.x trained:

  ps       starts tf.train.Server(cluster, "ps", i, protocol=--protocol), prints a start line
           with role=server and serves (server.join()) until the launcher ends it.
  worker   starts its tf.train.Server the same way (so grpc, grpc+verbs and grpc+mpi work where
           the build has them), builds the model under tf.train.replica_device_setter
           (variables and the global step on the parameter servers, round-robin), waits for the
           chief to initialize them (tf.train.SessionManager.wait_for_session, polling every
           0.5 s instead of TF's 30 s) and trains in a session on its own server until the
           global step reaches the run's steps; then it exits (the launcher waits for it).
  chief    builds the same graph, initializes the variables (prepare_session) and trains no
           step: it watches the global step (every 20 ms), printing the cluster's step lines,
           evaluates after each epoch (with a data set) and prints the run's summary, as the ps
           strategy's chief of train_distributed.py does; the phases of the run are its.
  no TF_CONFIG  one local process (task `local:0`, no server) that initializes, trains and
           evaluates, for checks without a cluster.

Only --strategy ps exists: TF 1.x has no collective strategy here (MultiWorkerMirroredStrategy is
TensorFlow 2's); the launcher does not run this program for a collective point.

The tasks start together: each worker adds one to a counter on the parameter servers once its
session is ready, and every task waits for all of them, so a worker whose session came later
does not find the steps taken. Steps are the cluster's: every worker's step adds one to the
shared global step, and training ends when it reaches --steps per epoch times --epochs (a worker
stops when it sees the global step there, so a run may end up to N-1 steps beyond it, N workers).
With --warmup-steps every worker first trains that many steps of its own, then every task waits
until all have (the global step at N x warm-up) and starts its clock: warm-up steps are outside
every count. --batch-size is per worker, and one step trains one worker's batch, as with
train_distributed.py's ps strategy. --log-every is the global steps between two step lines of a
task.

Models, in tf.layers (TF 1.4 has no Keras applications to lean on): mnist_softmax (one dense
layer on the pixels) and cifar10_cnn (three 3x3 convolutions of 32, 64, 64 filters, two 2x2
max-poolings, dense 64, dense 10), as dlobd_tf.py's; alexnet, dlobd_tf.py's one-tower layout of
Krizhevsky et al. (2012) layer for layer (convolutions 64 11x11/4, 192 5x5, 384, 256, 256 3x3,
three 3x3/2 max-poolings, dense 4096, 4096 with dropout 0.5); resnet50, ResNet-50 v1 (bottleneck
blocks 3, 4, 6, 3 of 256 to 2048 channels, stride on the first 1x1 of a stage, batch norm after
every convolution) with "same" padding of the 7x7 stem and the first pooling instead of Keras'
explicit zero padding; inception_v3, Inception v3's stem and its eleven mixed blocks (three
35x35, a grid reduction, four 17x17 with factorized 7x7, a reduction, two 8x8 with split 1x3/3x1
branches), every convolution without bias followed by batch norm without scale and ReLU, global
average pooling, no auxiliary head (Keras' InceptionV3 has none either). All with logits as
output, softmax cross-entropy and momentum SGD (0.9). Batch norm's moving averages are updated
with each step (they live on the parameter servers as every variable does).

Data: mnist_softmax reads IDX files (of the image size their header gives), cifar10_cnn CIFAR-10
binary batches (real or synthetic in that format), both from --data-dir with numpy; each worker draws its own shuffle of
the whole training set (seeded by its task) and feeds it batch by batch; the chief computes top-1
accuracy on the test set after each epoch, with the variables as they are then (the workers go on
training meanwhile). resnet50, inception_v3 and alexnet train on one batch of
random ImageNet-shaped images and labels made once in the graph on each worker (a local
variable: no input traffic), as train_distributed.py's synthetic data; --data-dir is refused.

Output: DLOBD lines (dlobd_tf.py's format: `DLOBD event=<e> key=value ...`, read unchanged by
dlobd/stacks/tensorflow.py), from the chief and every worker: `start` (settings; data_loading_s,
the seconds spent reading the data set, when one is read), `warmup`, `step` lines with step =
the global step since the clock started, wall_clock_s (since the task's clock started),
images_per_s and steps_per_s of the cluster over the interval (the global step's advance: all
workers together, as the ps strategy's chief reports them) and, from a worker, loss and
worker_images_per_s (its own images), `epoch` lines with epoch_time_s (and top1_accuracy on the
chief when a data set is read), and a `summary` with train_time_s (the epochs' time; a local
run's without its evaluation), end_to_end_s (from process start, as /proc gives it) and the rates
over train_time_s.

What has run (docs/spack-apptainer-slurm.md, docs/metrics.md): whole runs of the launcher with
it on TensorFlow 1.4.0 under Python 2.7.18 and 3.6.15, a chief, two workers and a parameter server on 127.0.0.1 over grpc
(mnist_softmax on small IDX files, alexnet at 64x64: tests/test_tensorflow_tf1.py, opt-in), and
every model locally (resnet50 at 64x64, inception_v3 at 75x75: their parameter counts are
Keras' 25.6 M and 23.9 M at full size, alexnet's 61.1 M). What has NOT run here: grpc+verbs,
grpc+mpi and RDMA-gRPC (no such build or HCA), several hosts, GPUs, Python 3.5 itself, the models
at their paper sizes in a cluster.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dlobd_tf1 import dlobd_line, idx_array, process_start_time  # noqa: E402

TENSORFLOW_MAJOR = "1."
MODELS = ("mnist_softmax", "cifar10_cnn", "resnet50", "inception_v3", "alexnet")
SYNTHETIC = ("resnet50", "inception_v3", "alexnet")
# (height/width, channels, classes) of each model's input when no size is given
DEFAULT_SHAPE = {
    "mnist_softmax": (28, 1, 10),
    "cifar10_cnn": (32, 3, 10),
    "resnet50": (224, 3, 1000),
    "inception_v3": (299, 3, 1000),
    "alexnet": (224, 3, 1000),
}
MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
CIFAR_FILES = {"train": ["data_batch_%d.bin" % i for i in range(1, 6)], "test": ["test_batch.bin"]}
CIFAR_RECORD = 3073  # a label byte, then 3 x 32 x 32 pixel bytes (channels first)
EVAL_BATCH = 500
SESSION_POLL_S = 0.5
CHIEF_POLL_S = 0.02  # the chief's reads of the global step


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--strategy", choices=("collective", "ps"), default="ps",
                   help="ps only: TensorFlow 1.x has no collective strategy here")
    p.add_argument("--data-dir", help="data set directory (mnist_softmax: IDX, cifar10_cnn: binary "
                                      "batches); without it the data is synthetic")
    p.add_argument("--batch-size", type=int, default=32, help="images per worker per step")
    p.add_argument("--epochs", type=int, default=1, help="passes over the data set (with --data-dir)")
    p.add_argument("--steps", type=int, help="global steps per epoch (default: one pass over the data; "
                                             "required for synthetic data)")
    p.add_argument("--image-size", type=int, help="input height/width of the synthetic models "
                                                  "(default: the model's)")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=1, help="global steps between two step lines of a task")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="steps each task trains before the clock starts; not counted")
    p.add_argument("--protocol", default="grpc",
                   help="tf.train.Server protocol: grpc, or grpc+verbs / grpc+mpi where the build has them")
    a = p.parse_args(argv)
    if a.strategy != "ps":
        p.error("--strategy %s: TensorFlow 1.x has no collective strategy here (MultiWorkerMirroredStrategy "
                "is TensorFlow 2's); this program trains with parameter servers" % a.strategy)
    if a.data_dir is None and a.steps is None:
        p.error("synthetic data needs --steps")
    if a.model in SYNTHETIC and a.data_dir:
        p.error("%s trains on synthetic ImageNet-shaped data only; drop --data-dir" % a.model)
    if a.model not in SYNTHETIC and not a.data_dir:
        p.error("%s reads its data set: give --data-dir" % a.model)
    for name in ("batch_size", "epochs", "log_every"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if (a.steps is not None and a.steps < 1) or a.warmup_steps < 0:
        p.error("--steps must be at least 1 and --warmup-steps not negative")
    return a


# ---------------------------------------------------------------- log lines and clocks

def fail(message):
    sys.stderr.write("error: " + message + "\n")
    sys.stderr.flush()
    sys.exit(2)


def rate(count, seconds):
    return count / seconds if seconds > 0 else None


# ---------------------------------------------------------------- cluster

def task_of(environ=None):
    """(cluster {job: [addresses]}, job, index) from TF_CONFIG; ({}, "local", 0) without it."""
    text = (os.environ if environ is None else environ).get("TF_CONFIG")
    if not text:
        return {}, "local", 0
    config = json.loads(text)
    cluster = dict((job, list(addresses)) for job, addresses in config.get("cluster", {}).items())
    task = config.get("task", {})
    job, index = task.get("type"), int(task.get("index", 0))
    if job not in ("chief", "worker", "ps") or job not in cluster or index >= len(cluster[job]):
        raise SystemExit("TF_CONFIG: task {0}:{1} is not in its cluster {2}".format(job, index, sorted(cluster)))
    if not all(cluster.get(name) for name in ("chief", "worker", "ps")):
        raise SystemExit("TF_CONFIG: the ps strategy needs a chief, workers and parameter servers, the "
                         "cluster has {0}".format(", ".join(sorted(cluster))))
    return cluster, job, index


def training_tasks(cluster):
    """The tasks that train: the workers (1 for a local run)."""
    return len(cluster["worker"]) if cluster else 1


def shard_seed(job, index):
    """Each training task's own shuffle of the data set: worker i i+1, a local run 0."""
    return 0 if job == "local" else index + 1


# ---------------------------------------------------------------- data

def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def load_dataset(model, data_dir, split):
    """A split of the model's data set as NHWC float images in [0, 1] and int64 labels."""
    if model == "mnist_softmax":
        images, labels = (idx_array(read_file(os.path.join(data_dir, name))) for name in MNIST_FILES[split])
        x = images.reshape(images.shape + (1,))  # MNIST's 28x28, or whatever size the file gives
        return x.astype(np.float32) / 255.0, labels.astype(np.int64)
    if model == "cifar10_cnn":
        raw = np.concatenate([np.fromfile(os.path.join(data_dir, name), dtype=np.uint8).reshape(-1, CIFAR_RECORD)
                              for name in CIFAR_FILES[split]])
        x = raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return x.astype(np.float32) / 255.0, raw[:, 0].astype(np.int64)
    raise ValueError("model {0} reads no data set from disk".format(model))


def data_label(model, data_dir, classes):
    if data_dir is None:
        return "imagenet-synthetic" if classes == 1000 else model + "-synthetic"
    if model == "mnist_softmax":
        return "mnist"
    return "cifar10-synthetic" if os.path.exists(os.path.join(data_dir, "SYNTHETIC")) else "cifar10"


class Batches(object):
    """Batches of a task's own shuffle of the whole training set, a new shuffle every pass."""

    def __init__(self, x, y, batch, seed):
        if len(y) < batch:
            raise SystemExit("{0} training records, fewer than one batch of {1}".format(len(y), batch))
        self.x, self.y, self.batch = x, y, batch
        self.rng = np.random.RandomState(seed)
        self.order, self.at = self.rng.permutation(len(y)), 0

    def next(self):
        if self.at + self.batch > len(self.order):
            self.order, self.at = self.rng.permutation(len(self.y)), 0
        pick = self.order[self.at:self.at + self.batch]
        self.at += self.batch
        return self.x[pick], self.y[pick]


# ---------------------------------------------------------------- models (tf.layers)

def flat(tf, net):
    return tf.reshape(net, [-1, int(np.prod(net.get_shape().as_list()[1:]))])


def alexnet(tf, x, classes, training):
    L = tf.layers
    net = L.conv2d(x, 64, 11, strides=4, padding="same", activation=tf.nn.relu)
    net = L.max_pooling2d(net, 3, 2)
    net = L.conv2d(net, 192, 5, padding="same", activation=tf.nn.relu)
    net = L.max_pooling2d(net, 3, 2)
    net = L.conv2d(net, 384, 3, padding="same", activation=tf.nn.relu)
    net = L.conv2d(net, 256, 3, padding="same", activation=tf.nn.relu)
    net = L.conv2d(net, 256, 3, padding="same", activation=tf.nn.relu)
    net = L.max_pooling2d(net, 3, 2)
    net = L.dense(flat(tf, net), 4096, activation=tf.nn.relu)
    net = L.dropout(net, 0.5, training=training)
    net = L.dense(net, 4096, activation=tf.nn.relu)
    net = L.dropout(net, 0.5, training=training)
    return L.dense(net, classes)


def resnet50(tf, x, classes, training):
    L = tf.layers

    def bn(net, relu=True):
        net = L.batch_normalization(net, epsilon=1.001e-5, training=training)
        return tf.nn.relu(net) if relu else net

    def block(net, filters, stride, project):
        shortcut = net
        if project:
            shortcut = bn(L.conv2d(net, 4 * filters, 1, strides=stride), relu=False)
        out = bn(L.conv2d(net, filters, 1, strides=stride))
        out = bn(L.conv2d(out, filters, 3, padding="same"))
        out = bn(L.conv2d(out, 4 * filters, 1), relu=False)
        return tf.nn.relu(out + shortcut)

    net = bn(L.conv2d(x, 64, 7, strides=2, padding="same"))
    net = L.max_pooling2d(net, 3, 2, padding="same")
    for filters, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            net = block(net, filters, stride if i == 0 else 1, i == 0)
    net = tf.reduce_mean(net, [1, 2])
    return L.dense(net, classes)


def inception_v3(tf, x, classes, training):
    L = tf.layers

    def conv(net, filters, kernel, strides=1, padding="same"):
        net = L.conv2d(net, filters, kernel, strides=strides, padding=padding, use_bias=False)
        return tf.nn.relu(L.batch_normalization(net, scale=False, training=training))

    def avg_pool(net):
        return L.average_pooling2d(net, 3, 1, padding="same")

    def concat(branches):
        return tf.concat(branches, 3)

    # stem: 299 -> 35
    net = conv(x, 32, 3, 2, "valid")
    net = conv(net, 32, 3, padding="valid")
    net = conv(net, 64, 3)
    net = L.max_pooling2d(net, 3, 2)
    net = conv(net, 80, 1, padding="valid")
    net = conv(net, 192, 3, padding="valid")
    net = L.max_pooling2d(net, 3, 2)
    # three 35x35 blocks
    for pool_filters in (32, 64, 64):
        net = concat([conv(net, 64, 1),
                      conv(conv(net, 48, 1), 64, 5),
                      conv(conv(conv(net, 64, 1), 96, 3), 96, 3),
                      conv(avg_pool(net), pool_filters, 1)])
    # grid reduction to 17x17
    net = concat([conv(net, 384, 3, 2, "valid"),
                  conv(conv(conv(net, 64, 1), 96, 3), 96, 3, 2, "valid"),
                  L.max_pooling2d(net, 3, 2)])
    # four 17x17 blocks with factorized 7x7 convolutions
    for c in (128, 160, 160, 192):
        seven = conv(conv(conv(net, c, 1), c, (1, 7)), 192, (7, 1))
        double = conv(net, c, 1)
        for filters, kernel in ((c, (7, 1)), (c, (1, 7)), (c, (7, 1)), (192, (1, 7))):
            double = conv(double, filters, kernel)
        net = concat([conv(net, 192, 1), seven, double, conv(avg_pool(net), 192, 1)])
    # grid reduction to 8x8
    net = concat([conv(conv(net, 192, 1), 320, 3, 2, "valid"),
                  conv(conv(conv(conv(net, 192, 1), 192, (1, 7)), 192, (7, 1)), 192, 3, 2, "valid"),
                  L.max_pooling2d(net, 3, 2)])
    # two 8x8 blocks with split 1x3 / 3x1 branches
    for _ in range(2):
        three = conv(net, 384, 1)
        double = conv(conv(net, 448, 1), 384, 3)
        net = concat([conv(net, 320, 1),
                      concat([conv(three, 384, (1, 3)), conv(three, 384, (3, 1))]),
                      concat([conv(double, 384, (1, 3)), conv(double, 384, (3, 1))]),
                      conv(avg_pool(net), 192, 1)])
    net = tf.reduce_mean(net, [1, 2])
    return L.dense(net, classes)


def build_logits(tf, model, x, classes, training=True):
    """The model's logits (no softmax)."""
    if model == "mnist_softmax":
        return tf.layers.dense(flat(tf, x), classes)
    if model == "cifar10_cnn":
        L = tf.layers
        net = L.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu)
        net = L.max_pooling2d(net, 2, 2)
        net = L.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu)
        net = L.max_pooling2d(net, 2, 2)
        net = L.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu)
        net = L.dense(flat(tf, net), 64, activation=tf.nn.relu)
        return L.dense(net, classes)
    return {"alexnet": alexnet, "resnet50": resnet50, "inception_v3": inception_v3}[model](
        tf, x, classes, training)


# ---------------------------------------------------------------- training

def serve(tf, cluster, job, index, a):
    dlobd_line("start", [("task", "{0}:{1}".format(job, index)), ("workload", "tensorflow"), ("role", "server"),
                         ("protocol", a.protocol), ("tensorflow", tf.__version__)])
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=index,
                             protocol=a.protocol, start=True)
    server.join()


def wait_for(sess, variable, value, poll_s=0.05):
    """Until a variable of the parameter servers reaches `value` (a barrier of the tasks)."""
    while int(sess.run(variable)) < value:
        time.sleep(poll_s)


def train(tf, cluster, job, index, a, process_start):
    """A worker (it trains), the chief (it initializes the variables and watches the global step,
    evaluating after each epoch) or a local run (it does both)."""
    task = "{0}:{1}".format(job, index)
    n_workers = training_tasks(cluster)
    size, channels, classes = DEFAULT_SHAPE[a.model]
    if a.model in SYNTHETIC and a.image_size:
        size = a.image_size
    is_chief = job in ("chief", "local")
    trains = job in ("worker", "local")

    if cluster:
        spec = tf.train.ClusterSpec(cluster)
        server = tf.train.Server(spec, job_name=job, task_index=index, protocol=a.protocol, start=True)
        target = server.target
        device = "/job:{0}/task:{1}".format(job, index)
        placement = tf.train.replica_device_setter(worker_device=device, cluster=spec)
        config = tf.ConfigProto(device_filters=["/job:ps", device])
    else:
        target, device, placement, config = "", None, None, tf.ConfigProto()

    loading = time.time()
    batches = x_test = y_test = n_train = None
    if a.data_dir:
        x_train, y_train = load_dataset(a.model, a.data_dir, "train")
        if trains:
            batches = Batches(x_train, y_train, a.batch_size, shard_seed(job, index))
        if is_chief:
            x_test, y_test = load_dataset(a.model, a.data_dir, "test")
        n_train = len(y_train)
        size, channels = x_train.shape[1], x_train.shape[3]
    data_loading = time.time() - loading if a.data_dir else None
    # one step trains one worker's batch (as train_distributed.py's ps strategy)
    steps = a.steps or max(1, n_train // a.batch_size)

    # Every task builds the same graph in the same order, so that the variables the parameter
    # servers hold have one name and place for all.
    with tf.device(device):
        if a.data_dir is None:
            # one batch of random images and labels, made once on this task (a local variable)
            local = [tf.GraphKeys.LOCAL_VARIABLES]
            x = tf.Variable(tf.random_uniform([a.batch_size, size, size, channels], seed=1),
                            trainable=False, collections=local, name="synthetic_images")
            y = tf.Variable(tf.random_uniform([a.batch_size], maxval=classes, dtype=tf.int64, seed=2),
                            trainable=False, collections=local, name="synthetic_labels")
        else:
            x = tf.placeholder(tf.float32, [None, size, size, channels], name="images")
            y = tf.placeholder(tf.int64, [None], name="labels")
    with tf.device(placement):
        global_step = tf.train.get_or_create_global_step()
        logits = build_logits(tf, a.model, tf.identity(x), classes, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.identity(y), logits=logits))
        optimizer = tf.train.MomentumOptimizer(a.learning_rate, 0.9)
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train_op = optimizer.minimize(loss, global_step=global_step)
        with tf.control_dependencies([train_op]):
            # read after this step's own increment: strictly increasing from step to step of a task
            step_after = tf.identity(global_step.read_value())
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.int64))
        # the start barrier: every worker adds one once its session is ready
        joined = tf.Variable(0, trainable=False, dtype=tf.int64, name="dlobd_workers_joined")
        join = joined.assign_add(1)
        init_op = tf.global_variables_initializer()
        manager = tf.train.SessionManager(
            local_init_op=tf.local_variables_initializer(), ready_op=tf.report_uninitialized_variables(),
            ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()),
            recovery_wait_secs=SESSION_POLL_S)

    if is_chief:
        sess = manager.prepare_session(target, init_op=init_op, config=config)
    else:
        sess = manager.wait_for_session(target, config=config)

    def step():
        feed = None
        if batches is not None:
            bx, by = batches.next()
            feed = {x: bx, y: by}
        _, loss_value, now = sess.run([train_op, loss, step_after], feed_dict=feed)
        return float(loss_value), int(now)

    dlobd_line("start", [
        ("task", task), ("workload", "tensorflow"), ("model", a.model),
        ("data", data_label(a.model, a.data_dir, classes)), ("strategy", "ps" if cluster else "local"),
        ("num_workers", n_workers), ("num_ps", len(cluster.get("ps", []))), ("batch_size", a.batch_size),
        ("steps_per_epoch", steps), ("epochs", a.epochs), ("image_size", size), ("protocol", a.protocol),
        ("tensorflow", tf.__version__), ("data_loading_s", data_loading)])
    # start together: a worker whose session came later would find the steps taken
    if trains:
        sess.run(join)
    wait_for(sess, joined, n_workers)
    base = n_workers * a.warmup_steps  # the global step once every worker has warmed up
    if a.warmup_steps:
        t0 = time.time()
        if trains:
            for _ in range(a.warmup_steps):
                step()
        wait_for(sess, global_step, base)
        dlobd_line("warmup", [("task", task), ("warmup_steps", a.warmup_steps), ("warmup_s", time.time() - t0)])

    train_start = epoch_end = time.time()
    first = seen = line_at = int(sess.run(global_step))
    line_time, own, line_own = train_start, 0, 0
    train_time = 0.0  # the steps only, without the evaluation after each epoch (that of a local run)
    for epoch in range(1, a.epochs + 1):
        # the chief's evaluation overlaps the workers' steps: its epochs follow one another
        epoch_start = time.time() if trains else epoch_end
        end = base + epoch * steps
        while seen < end:
            loss_value = None
            if trains:
                loss_value, seen = step()
                own += 1
                if not np.isfinite(loss_value):
                    fail("loss is {0} at step {1}".format(loss_value, seen - base))
            else:
                time.sleep(CHIEF_POLL_S)
                now_at = int(sess.run(global_step))
                if now_at == seen:
                    continue
                seen = now_at
            if seen - line_at >= a.log_every or seen >= end:
                now = time.time()
                dt = now - line_time
                dlobd_line("step", [
                    ("task", task), ("step", seen - base), ("epoch", epoch), ("wall_clock_s", now - train_start),
                    ("loss", loss_value), ("images_per_s", rate((seen - line_at) * a.batch_size, dt)),
                    ("worker_images_per_s", rate((own - line_own) * a.batch_size, dt) if trains else None),
                    ("steps_per_s", rate(seen - line_at, dt))])
                line_at, line_time, line_own = seen, now, own
        epoch_end = time.time()
        epoch_time = epoch_end - epoch_start
        train_time += epoch_time
        accuracy = None
        if x_test is not None:
            hits = sum(int(sess.run(correct, feed_dict={x: x_test[i:i + EVAL_BATCH], y: y_test[i:i + EVAL_BATCH]}))
                       for i in range(0, len(y_test), EVAL_BATCH))
            accuracy = hits / float(len(y_test))
        dlobd_line("epoch", [("task", task), ("step", seen - base), ("epoch", epoch),
                             ("wall_clock_s", time.time() - train_start), ("epoch_time_s", epoch_time),
                             ("top1_accuracy", accuracy)])
    dlobd_line("summary", [
        ("task", task), ("step", seen - base), ("epoch", a.epochs), ("train_time_s", train_time),
        ("images_per_s", rate((seen - first) * a.batch_size, train_time)),
        ("worker_images_per_s", rate(own * a.batch_size, train_time) if trains else None),
        ("steps_per_s", rate(seen - first, train_time)), ("end_to_end_s", time.time() - process_start)])
    sess.close()


def main(argv=None):
    process_start = process_start_time()
    a = parse_args(argv)
    cluster, job, index = task_of()
    import tensorflow as tf

    if not tf.__version__.startswith(TENSORFLOW_MAJOR):
        raise SystemExit("TensorFlow {0} in {1}: this program is for TensorFlow 1.x (train_distributed.py is "
                         "TensorFlow 2's)".format(tf.__version__, sys.executable))
    if job == "ps":
        serve(tf, cluster, job, index, a)
    else:
        train(tf, cluster, job, index, a, process_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
