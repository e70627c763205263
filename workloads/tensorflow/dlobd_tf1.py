"""The DLOBD lines and the helpers the two TensorFlow 1.x programs share
(workloads/tensorflow/train_tf1.py, workloads/tensorflowonspark/train_tf1.py), in Python 2.7 and
3.5 syntax: dlobd_tf.py, the TensorFlow 2 programs' counterpart, needs Python 3.9. The line format
is dlobd_tf.py's, which the tensorflow and tensorflowonspark parsers read."""

from __future__ import absolute_import, division, print_function

import os
import struct
import sys
import time

import numpy as np


def dlobd_line(event, fields):
    """One DLOBD line (dlobd_tf.py's format): `fields` is a list of (key, value) pairs, in order."""
    parts = ["event=" + event]
    for key, value in fields:
        if value is None:
            continue
        if isinstance(value, float):
            value = "{0:.6g}".format(value)
        text = str(value)
        if not text or any(c.isspace() for c in text):
            raise ValueError("log field {0}={1!r}: values must be non-empty without spaces".format(key, value))
        parts.append("{0}={1}".format(key, text))
    sys.stdout.write("DLOBD " + " ".join(parts) + "\n")
    sys.stdout.flush()


def process_start_time():
    """When the OS started this process (Linux /proc), so the imports count in end_to_end_s;
    this moment where /proc cannot say."""
    try:
        with open("/proc/self/stat") as f:
            after_name = f.read().rsplit(")", 1)[1].split()
        start_ticks = float(after_name[19])  # field 22, starttime; after the name come fields 3..
        with open("/proc/stat") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IOError, IndexError, ValueError, StopIteration):
        return time.time()


def idx_array(data):
    """An IDX file's content (bytes or, on Python 2, str) as a uint8 array of its dimensions."""
    ndim = bytearray(data[:4])[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)
