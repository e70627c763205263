#!/usr/bin/env bash
# An image's %test: the checks of the smoke tests that need no running cluster, inside the image.
# Each line says what it checked; the first failure stops with its reason.
set -euo pipefail
source /opt/dlobd/etc/dlobd-env.sh
check() { local what=$1; shift; if out=$("$@" 2>&1); then echo "ok: $what"; else echo "FAILED: $what: $out" >&2; exit 1; fi; }
check "Java $(java -version 2>&1 | head -1)" java -version
check "Hadoop $HADOOP_VERSION (hdfs version)" bash -c 'hdfs version | grep -q "^Hadoop $HADOOP_VERSION"'
check "Spark $SPARK_VERSION (spark-submit --version)" bash -c 'spark-submit --version 2>&1 | grep -q "version $SPARK_VERSION"'
check "TensorFlow, TensorFlowOnSpark, mpi4py, psutil in $DLOBD_PYTHON" "$DLOBD_PYTHON" -c '
import tensorflow, tensorflowonspark, mpi4py, psutil
print(tensorflow.__version__, tensorflowonspark.__version__, mpi4py.__version__, psutil.__version__)'
check "BigDL jars" test -s "$DLOBD_BIGDL_JAR" -a -s "$DLOBD_BIGDL_CORE_JAR"
check "BigDL's Engine class in its jar" bash -c 'unzip -l "$DLOBD_BIGDL_JAR" | grep -q "com/intel/analytics/bigdl/dllib/utils/Engine.class"'
check "MPI (mpirun -np 2 hostname)" mpirun --allow-run-as-root --oversubscribe -np 2 hostname
check "data sets (MANIFEST.json of mnist, fashion-mnist)" test -s "$DLOBD_DATA_DIR/mnist/MANIFEST.json" -a -s "$DLOBD_DATA_DIR/fashion-mnist/MANIFEST.json"
