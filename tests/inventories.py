"""Ansible inventories of bare-metal clusters for the tests of plans and dry runs: the example
IB inventory, and another shaped like it but laid out differently (dlobd.cluster.inventory reads both
through Ansible; nothing is sent to their addresses)."""

from pathlib import Path

import yaml

from dlobd import ROOT

EXAMPLE = ROOT / "playbooks" / "inventories" / "example-ib" / "hosts.yml"


# What write_other's site gives: its RDMA builds, tf_cnn_benchmarks, and the Sparks that CaffeOnSpark's
# and MMLSpark's paper builds run on beside its hosts' Spark 2.1
OTHER_STACK_SETTINGS = {"RDMA_GRPC_HOME": "/sw/rdma-grpc", "DLOBD_TF_RDMA_PYTHON": "/sw/tf1-verbs/bin/python",
                        "TF_CNN_BENCHMARKS_HOME": "/sw/tf-benchmarks", "CAFFEONSPARK_SPARK_HOME": "/sw/spark-1.6.2",
                        "MMLSPARK_SPARK_HOME": "/sw/spark-2.2.0"}


def write_other(root: Path, gpu_hosts=(5, 6, 7), ethernet_hosts=range(1, 8), ethernet_gbps=10, **changes) -> Path:
    """A 7-host cluster: a NameNode and a ResourceManager of their own, five workers on hsn0
    (ibm-a3 to ibm-a7), those of `gpu_hosts` with 8 V100s each, those of `ethernet_hosts` with an
    Ethernet address (10.40.7.<10 + i>) on a link of `ethernet_gbps` beside the IPoIB one;
    settings in group_vars/everyone.yml (`changes` added to them), hardware in host_vars."""
    hosts = {f"ibm-a{i}": {"ansible_host": f"mgmt-a{i}", "dlobd_cluster_interface": "hsn0",
                           "dlobd_cluster_address": f"172.31.7.{10 + i}",
                           **({"dlobd_ethernet_address": f"10.40.7.{10 + i}"} if i in ethernet_hosts else {})}
             for i in range(1, 8)}
    groups = {"namenode": ["ibm-a1"], "resourcemanager": ["ibm-a2"],
              "workers": [f"ibm-a{i}" for i in range(3, 8)], "gpu": [f"ibm-a{i}" for i in gpu_hosts]}
    data = {"all": {"hosts": hosts, "children": {
        **{g: {"hosts": {h: None for h in members}} for g, members in groups.items()},
        "everyone": {"children": {g: None for g in groups}}}}}
    (root / "group_vars").mkdir(parents=True)
    (root / "host_vars").mkdir()
    (root / "hosts.yml").write_text(yaml.safe_dump(data))
    settings = {"dlobd_prefix": "/lustre/dlobd/stack", "dlobd_profile": "paper",
                "dlobd_install_method": "spack",
                "dlobd_stack_settings": OTHER_STACK_SETTINGS,
                **PAPER_DATASETS,
                **changes}
    (root / "group_vars" / "everyone.yml").write_text(yaml.safe_dump(settings))
    for i in range(1, 8):
        gpus = {"gpus": 8, "gpu_model": "V100"} if i in gpu_hosts else {"gpus": 0}
        (root / "host_vars" / f"ibm-a{i}.yml").write_text(yaml.safe_dump(
            {"dlobd_hardware": {"hca": "mlx5", "ib_rate_gbps": 200, **gpus,
                                **({"ethernet_gbps": ethernet_gbps} if i in ethernet_hosts else {})}}))
    return root / "hosts.yml"


# What an inventory sets to have the papers' data sets, the real CIFAR-10 among them (downloaded)
PAPER_DATASETS = {"datasets_names": ["mnist", "fashion-mnist", "cifar10-synthetic", "cifar10"],
                  "datasets_source": "download"}


def write_plain(root: Path, **settings) -> Path:
    """A new user's first inventory: one hosts.yml of an InfiniBand cluster with a head node (ib-head)
    and 6 workers, ib-c1 to ib-c4 without GPUs and ib-g1, ib-g2 (group gpu) with 2 K80s each, every
    host on 1 Gb/s Ethernet beside IPoIB; only the paper profile, the spack method and the prefix
    set under `all: vars:` (`settings` added)."""
    cpu = {"hca": "mlx5", "ib_rate_gbps": 100, "ethernet_gbps": 1, "link_layer": "InfiniBand", "gpus": 0}
    hardware = {**{f"ib-c{i}": cpu for i in range(1, 5)},
                **{f"ib-g{i}": {**cpu, "gpus": 2, "gpu_model": "K80"} for i in (1, 2)}}
    hosts = {name: {"ansible_host": f"10.0.0.{i}", "dlobd_cluster_interface": "ib0",
                    "dlobd_cluster_address": f"192.168.0.{i}", "dlobd_ethernet_address": f"10.0.1.{i}",
                    **({"dlobd_hardware": hardware[name]} if name in hardware else
                       {"dlobd_hardware": {**cpu}})}
             for i, name in enumerate(["ib-head", *hardware], start=1)}
    data = {"all": {"vars": {"dlobd_profile": "paper", "dlobd_install_method": "spack",
                             "dlobd_prefix": "/scratch/dlobd", **settings},
                    "hosts": hosts,
                    "children": {"namenode": {"hosts": {"ib-head": None}},
                                 "resourcemanager": {"hosts": {"ib-head": None}},
                                 "workers": {"hosts": {name: None for name in hardware}},
                                 "gpu": {"hosts": {"ib-g1": None, "ib-g2": None}}}}}
    root.mkdir(parents=True, exist_ok=True)
    (root / "hosts.yml").write_text(yaml.safe_dump(data))
    return root / "hosts.yml"
