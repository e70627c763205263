"""LeNet on MNIST with Caffe's own SGD solver through pycaffe (CPU).

The net is defined here with caffe.NetSpec: conv(20, 5x5) - maxpool - conv(50, 5x5) -
maxpool - fc(500) - ReLU - fc(10) - softmax loss, plus top-1 accuracy on the test net.
Data come from IDX files (workloads/data/make_datasets.py mnist-idx) through MemoryData
layers. Caffe's solver logs through glog to stderr (GLOG_logtostderr=1 is set here):
the `Iteration N (... iter/s ...), loss = x` and `Test net output #k: accuracy = a`
lines that dlobd/stacks/caffe.py reads.
"""

import argparse
import os
import struct
import sys
import tempfile

os.environ.setdefault("GLOG_logtostderr", "1")

import numpy as np  # noqa: E402


def read_idx(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        magic, = struct.unpack(">I", f.read(4))
        ndim = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load(data_dir: str, prefix: str, batch: int):
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte")).astype(np.float32) / 255.0
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte")).astype(np.float32)
    n = len(y) // batch * batch  # MemoryData takes whole batches only
    return np.ascontiguousarray(x[:n, None, :, :]), np.ascontiguousarray(y[:n])


def lenet(batch: int, with_accuracy: bool):
    import caffe
    from caffe import layers as L
    from caffe import params as P

    n = caffe.NetSpec()
    n.data, n.label = L.MemoryData(batch_size=batch, channels=1, height=28, width=28, ntop=2)
    xavier = dict(type="xavier")
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20, weight_filler=xavier)
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50, weight_filler=xavier)
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.fc1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=xavier)
    n.relu1 = L.ReLU(n.fc1, in_place=True)
    n.score = L.InnerProduct(n.relu1, num_output=10, weight_filler=xavier)
    n.loss = L.SoftmaxWithLoss(n.score, n.label)
    if with_accuracy:
        n.accuracy = L.Accuracy(n.score, n.label)
    return n.to_proto()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True, help="MNIST IDX files (train-*, t10k-*)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-iter", type=int, default=500)
    p.add_argument("--display", type=int, default=20, help="iterations between two loss lines")
    p.add_argument("--test-interval", type=int, default=100)
    p.add_argument("--learning-rate", type=float, default=0.01)
    a = p.parse_args(argv)

    import caffe
    from caffe.proto import caffe_pb2

    caffe.set_mode_cpu()
    x_train, y_train = load(a.data_dir, "train", a.batch_size)
    x_test, y_test = load(a.data_dir, "t10k", a.batch_size)
    with tempfile.TemporaryDirectory(prefix="dlobd-caffe-") as tmp:
        train_net, test_net = os.path.join(tmp, "train.prototxt"), os.path.join(tmp, "test.prototxt")
        with open(train_net, "w") as f:
            f.write(str(lenet(a.batch_size, with_accuracy=False)))
        with open(test_net, "w") as f:
            f.write(str(lenet(a.batch_size, with_accuracy=True)))
        solver = caffe_pb2.SolverParameter(
            train_net=train_net, test_net=[test_net], test_iter=[len(y_test) // a.batch_size],
            test_interval=a.test_interval, base_lr=a.learning_rate, momentum=0.9,
            weight_decay=0.0005, lr_policy="inv", gamma=0.0001, power=0.75, display=a.display,
            max_iter=a.max_iter, snapshot=0, snapshot_after_train=False,
            solver_mode=caffe_pb2.SolverParameter.CPU)
        solver_path = os.path.join(tmp, "solver.prototxt")
        with open(solver_path, "w") as f:
            f.write(str(solver))
        s = caffe.SGDSolver(solver_path)
        s.net.set_input_arrays(x_train, y_train)
        s.test_nets[0].set_input_arrays(x_test, y_test)
        s.solve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
