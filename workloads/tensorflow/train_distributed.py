"""Native distributed TensorFlow training over gRPC, configured by TF_CONFIG.

One process per TF task; the launcher sets TF_CONFIG for each (cluster + this task).

  --strategy collective  every task is a `worker`; MultiWorkerMirroredStrategy all-reduces
                         the gradients each step (all workers log their steps).
  --strategy ps          tasks `ps`, `worker` run a tf.distribute.Server and wait (the
                         launcher ends them); the `chief` runs ParameterServerStrategy with a
                         ClusterCoordinator that dispatches steps to the workers, and logs.
  no TF_CONFIG           one local process (task `local:0`), for checks without a cluster.

Models: mnist_softmax (IDX files via --data-dir), cifar10_cnn (CIFAR-10 binary batches via
--data-dir, real or synthetic), resnet50 / inception_v3 / alexnet (synthetic ImageNet-shaped
data generated in the graph; --data-dir is refused). --batch-size is per worker.

Output: DLOBD lines (see dlobd_tf.py): `start` (with data_loading_s, the seconds spent
reading the data set, when one is read), with --warmup-steps a `warmup` line (those
steps train but are outside every count and clock: with a data set they take batches
beyond the epochs), one `step` line every --log-every steps with
loss, wall_clock_s (since training start), images_per_s and steps_per_s over that interval,
`epoch` lines with epoch_time_s (and top1_accuracy on the test set when a data set is read),
and a final `summary` with train_time_s (the epochs' step time, evaluation excluded),
end_to_end_s (from process start) and images_per_s, steps_per_s over train_time_s.
images_per_s counts the images of all workers together.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import dlobd_tf as W  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=W.MODELS, required=True)
    p.add_argument("--strategy", choices=("collective", "ps"), default="collective")
    p.add_argument("--data-dir", help="data set directory (mnist_softmax: IDX, cifar10_cnn: binary "
                                      "batches); without it the data is synthetic")
    p.add_argument("--batch-size", type=int, default=32, help="images per worker per step")
    p.add_argument("--epochs", type=int, default=1, help="passes over the data set (with --data-dir)")
    p.add_argument("--steps", type=int, help="steps per epoch (default: one pass over the data; "
                                             "required for synthetic data)")
    p.add_argument("--image-size", type=int, help="input height/width (default: the model's)")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=1, help="steps between two step lines")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="steps trained before the clock starts (graph tracing and first-step "
                        "set-up); not counted in steps, epochs or rates")
    p.add_argument("--protocol", default="grpc",
                   help="TF server protocol of the ps/worker servers (only grpc exists in TF 2.x "
                        "wheels); the launcher also puts it in TF_CONFIG's rpc_layer, which the "
                        "strategies read")
    a = p.parse_args(argv)
    if a.data_dir is None and a.steps is None:
        p.error("synthetic data needs --steps")
    if a.model in ("resnet50", "inception_v3", "alexnet") and a.data_dir:
        p.error(f"{a.model} trains on synthetic ImageNet-shaped data only; drop --data-dir")
    return a


def task_of(resolver) -> str:
    if not os.environ.get("TF_CONFIG"):
        return "local:0"
    return f"{resolver.task_type}:{resolver.task_id}"


def main(argv=None) -> int:
    a = parse_args(argv)
    clock = W.Clock()
    size, channels, classes = W.DEFAULT_SHAPE[a.model]
    size = a.image_size or size

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    task = task_of(resolver)
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    cluster = tf_config.get("cluster", {})
    n_workers = len(cluster.get("worker", [])) or 1

    if a.strategy == "ps" and resolver.task_type in ("ps", "worker"):
        # Servers hold variables (ps) or run dispatched steps (worker) until they are ended.
        W.log("start", task=task, workload="tensorflow", role="server", protocol=a.protocol)
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                      task_index=resolver.task_id, protocol=a.protocol, start=True)
        server.join()
        return 0

    if not cluster:
        strategy = tf.distribute.get_strategy()
    elif a.strategy == "collective":
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    else:
        strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = (tf.distribute.coordinator.ClusterCoordinator(strategy)
                   if cluster and a.strategy == "ps" else None)

    loading = time.time()
    if a.data_dir:
        # the training records are read by the dataset where it runs; the test set here
        n_train = W.record_dataset(a.model, a.data_dir, "train", a.batch_size)[1]
        x_test, y_test = W.load_dataset(a.model, a.data_dir, "test")
        data_label = "mnist" if a.model == "mnist_softmax" else (
            "cifar10-synthetic" if os.path.exists(os.path.join(a.data_dir, "SYNTHETIC")) else "cifar10")
    else:
        n_train = x_test = y_test = None
        data_label = "imagenet-synthetic" if classes == 1000 else f"{a.model}-synthetic"
    # reading the data set from disk (none for data generated in the graph)
    data_loading = time.time() - loading if a.data_dir else None

    # A collective step trains on every worker's batch; a PS step runs on one worker.
    images_per_step = a.batch_size * (n_workers if coordinator is None else 1)
    steps = a.steps or max(1, n_train // images_per_step)

    def dataset_fn(input_context=None):
        if n_train is None:
            x, y = W.synthetic_batch(size, channels, classes, a.batch_size)
            return tf.data.Dataset.from_tensors((x, y)).repeat()
        # each input pipeline draws its own shuffle of the whole set (no shard: the PS
        # strategy's workers have no input context, and a shuffle per pipeline is as good)
        seed = input_context.input_pipeline_id if input_context is not None else 0
        return W.record_dataset(a.model, a.data_dir, "train", a.batch_size, shuffle_seed=seed)[0]

    with strategy.scope():
        model = W.build_model(a.model, size, classes)
        optimizer = tf.keras.optimizers.SGD(learning_rate=a.learning_rate, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=images_per_step)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if coordinator is None:
        iterator = iter(strategy.distribute_datasets_from_function(dataset_fn)
                        if cluster else dataset_fn())

        @tf.function
        def train_step():
            x, y = next(iterator)
            per_replica = strategy.run(replica_step, args=(x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        def run_steps(n):
            loss = None
            for _ in range(n):
                loss = train_step()
            return float(loss)
    else:
        iterator = iter(coordinator.create_per_worker_dataset(lambda: dataset_fn()))

        @tf.function
        def train_step(it):
            x, y = next(it)
            return strategy.run(replica_step, args=(x, y))

        def run_steps(n):
            results = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(n)]
            coordinator.join()
            return float(results[-1].fetch())

    W.log("start", task=task, workload="tensorflow", model=a.model, data=data_label,
          strategy=a.strategy if cluster else "local", num_workers=n_workers,
          batch_size=a.batch_size, steps_per_epoch=steps, epochs=a.epochs, image_size=size,
          protocol=a.protocol, data_loading_s=data_loading)
    if a.warmup_steps:
        t0 = time.time()
        run_steps(a.warmup_steps)
        W.log("warmup", task=task, warmup_steps=a.warmup_steps, warmup_s=time.time() - t0)
    clock.start_training()
    done = 0
    train_time = 0.0  # the steps only, without the evaluation after each epoch
    for epoch in range(1, a.epochs + 1):
        epoch_start = time.time()
        in_epoch = 0
        while in_epoch < steps:
            n = min(a.log_every, steps - in_epoch)
            t0 = time.time()
            loss = run_steps(n)
            dt = time.time() - t0
            in_epoch += n
            done += n
            if not np.isfinite(loss):
                W.fail(f"loss is {loss} at step {done}")
            W.log("step", task=task, step=done, epoch=epoch, wall_clock_s=clock.wall(), loss=loss,
                  images_per_s=n * images_per_step / dt, steps_per_s=n / dt)
        epoch_time = time.time() - epoch_start
        train_time += epoch_time
        accuracy = W.top1_accuracy(model, x_test, y_test) if x_test is not None else None
        W.log("epoch", task=task, step=done, epoch=epoch, wall_clock_s=clock.wall(),
              epoch_time_s=epoch_time, top1_accuracy=accuracy)
    W.log("summary", task=task, step=done, epoch=a.epochs, train_time_s=train_time,
          images_per_s=done * images_per_step / train_time, steps_per_s=done / train_time,
          end_to_end_s=clock.end_to_end())
    return 0


if __name__ == "__main__":
    sys.exit(main())
