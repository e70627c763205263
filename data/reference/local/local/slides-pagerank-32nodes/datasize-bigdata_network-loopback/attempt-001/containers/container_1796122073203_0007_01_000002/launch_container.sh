#!/bin/bash

set -o pipefail -e
export PRELAUNCH_OUT="/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/prelaunch.out"
exec >"${PRELAUNCH_OUT}"
export PRELAUNCH_ERR="/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/prelaunch.err"
exec 2>"${PRELAUNCH_ERR}"
echo "Setting up env variables"
export JAVA_HOME=${JAVA_HOME:-"/usr/lib/jvm/java-17-openjdk-amd64"}
export HADOOP_COMMON_HOME=${HADOOP_COMMON_HOME:-"/root/dlobd-stack/hadoop-3.4.1"}
export HADOOP_HDFS_HOME=${HADOOP_HDFS_HOME:-"/root/dlobd-stack/hadoop-3.4.1"}
export HADOOP_CONF_DIR=${HADOOP_CONF_DIR:-"/root/dlobd-stack/hosts/vm/etc/hadoop"}
export HADOOP_YARN_HOME=${HADOOP_YARN_HOME:-"/root/dlobd-stack/hadoop-3.4.1"}
export HADOOP_HOME=${HADOOP_HOME:-"/root/dlobd-stack/hadoop-3.4.1"}
export PATH=${PATH:-"/root/dlobd-stack/bin:/root/dlobd-stack/python/bin:/root/dlobd-stack/python/lib/python3.11/site-packages/pyspark/bin:/usr/lib/jvm/java-17-openjdk-amd64/bin:/work/main/.venv/bin:/usr/local/go/bin:/root/go/bin:/root/.cargo/bin:/root/.cargo/bin:/root/.pyenv/plugins/pyenv-virtualenv/shims:/root/.pyenv/shims:/root/.pyenv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
export LANG=${LANG:-"C.UTF-8"}
export HADOOP_TOKEN_FILE_LOCATION="/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/appcache/application_1796122073203_0007/container_1796122073203_0007_01_000002/container_tokens"
export CONTAINER_ID="container_1796122073203_0007_01_000002"
export NM_PORT="18041"
export NM_HOST="localhost"
export NM_HTTP_PORT="18042"
export LOCAL_DIRS="/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/appcache/application_1796122073203_0007"
export LOCAL_USER_DIRS="/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/"
export LOG_DIRS="/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002"
export USER="root"
export LOGNAME="root"
export HOME="/home/"
export PWD="/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/appcache/application_1796122073203_0007/container_1796122073203_0007_01_000002"
export LOCALIZATION_COUNTERS="0,2668862,0,3,0"
export JVM_PID="$$"
export SPARK_YARN_STAGING_DIR="hdfs://127.0.0.1:19820/user/root/.sparkStaging/application_1796122073203_0007"
export PYTHONPATH="$PWD/pyspark.zip:$PWD/py4j-0.10.9.7-src.zip"
export SPARK_PREFER_IPV6="false"
export CLASSPATH="$PWD:$PWD/__spark_conf__:$PWD/__spark_libs__/*:/root/dlobd-stack/python/lib/python3.11/site-packages/pyspark/jars/*:$PWD/__spark_conf__/__hadoop_conf__"
export PYSPARK_PYTHON="/root/dlobd-stack/python/bin/python"
export SPARK_USER="root"
export MALLOC_ARENA_MAX=""
echo "Setting up job resources"
ln -sf -- "/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/filecache/29/__spark_conf__.zip" "__spark_conf__"
ln -sf -- "/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/filecache/30/py4j-0.10.9.7-src.zip" "py4j-0.10.9.7-src.zip"
ln -sf -- "/root/dlobd-stack/hosts/vm/var/yarn/local/usercache/root/filecache/28/pyspark.zip" "pyspark.zip"
echo "Copying debugging information"
# Creating copy of launch script
cp "launch_container.sh" "/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/launch_container.sh"
chmod 640 "/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/launch_container.sh"
# Determining directory contents
echo "ls -l:" 1>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
ls -l 1>>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
echo "find -L . -maxdepth 5 -ls:" 1>>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
find -L . -maxdepth 5 -ls 1>>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
echo "broken symlinks(find -L . -maxdepth 5 -type l -ls):" 1>>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
find -L . -maxdepth 5 -type l -ls 1>>"/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/directory.info"
echo "Launching container"
exec /bin/bash -c "$JAVA_HOME/bin/java -server -Xmx1024m '-Djava.net.preferIPv6Addresses=false' '-XX:+IgnoreUnrecognizedVMOptions' '--add-opens=java.base/java.lang=ALL-UNNAMED' '--add-opens=java.base/java.lang.invoke=ALL-UNNAMED' '--add-opens=java.base/java.lang.reflect=ALL-UNNAMED' '--add-opens=java.base/java.io=ALL-UNNAMED' '--add-opens=java.base/java.net=ALL-UNNAMED' '--add-opens=java.base/java.nio=ALL-UNNAMED' '--add-opens=java.base/java.util=ALL-UNNAMED' '--add-opens=java.base/java.util.concurrent=ALL-UNNAMED' '--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED' '--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED' '--add-opens=java.base/sun.nio.ch=ALL-UNNAMED' '--add-opens=java.base/sun.nio.cs=ALL-UNNAMED' '--add-opens=java.base/sun.security.action=ALL-UNNAMED' '--add-opens=java.base/sun.util.calendar=ALL-UNNAMED' '--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED' '-Djdk.reflect.useDirectMethodHandle=false' -Djava.io.tmpdir=$PWD/tmp '-Dspark.driver.port=33697' '-Dspark.authenticate=true' -Dspark.yarn.app.container.log.dir=/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002 -XX:OnOutOfMemoryError='kill %p' org.apache.spark.executor.YarnCoarseGrainedExecutorBackend --driver-url spark://CoarseGrainedScheduler@127.0.0.1:33697 --executor-id 1 --hostname localhost --cores 2 --app-id application_1796122073203_0007 --resourceProfileId 0 1>/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/stdout 2>/root/dlobd-stack/hosts/vm/var/yarn/logs/application_1796122073203_0007/container_1796122073203_0007_01_000002/stderr"
