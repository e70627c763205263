"""The `network` axis as configuration: what a point's network value means for a stack.

`config/networks.yaml` holds, for each network value, the path the traffic takes (TCP over
loopback, IPoIB, Ethernet or an emulated Ethernet tier; RDMA; MPI) and, per stack, the
setting that selects the stack's TCP or RDMA path (TensorFlow's server protocol, vanilla
Spark or RDMA-Spark for BigDL, ...). Launchers ask `resolve()` and never name a transport
themselves, so a new cluster or stack changes the file, not the code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import yaml

from dlobd import ROOT

CONFIG = ROOT / "config" / "networks.yaml"


class UnknownNetwork(ValueError):
    """A network value or a stack/transport pair the configuration does not define."""


@dataclass(frozen=True)
class Transport:
    network: str          # the axis value, e.g. loopback, ipoib, rdma
    transport: str        # tcp | rdma | mpi | rdma-grpc (OSU gRPC over verbs)
    address: str          # which address the services bind to: loopback | ipoib | ethernet | cluster
    emulated: bool        # a shaped veth link standing in for an Ethernet tier
    settings: dict        # the stack's own switch, e.g. {"protocol": "grpc"}
    needs: tuple          # capabilities (dlobd plan) the cluster must have
    gbps: float | None = None  # an Ethernet tier's link rate, which each worker's link must have


@functools.lru_cache(maxsize=1)
def _config() -> dict:
    with open(CONFIG) as fh:
        return yaml.safe_load(fh)


def resolve(stack: str, network: str) -> Transport:
    config = _config()
    link = config["links"].get(network)
    if link is None:
        raise UnknownNetwork(f"network {network!r} is not defined in {CONFIG.name} "
                             f"(known: {', '.join(sorted(config['links']))})")
    per_stack = config["stacks"].get(stack)
    if per_stack is None:
        raise UnknownNetwork(f"stack {stack!r} has no transport settings in {CONFIG.name}")
    kind = link["transport"]
    setting = per_stack.get(kind)
    if setting is None:
        raise UnknownNetwork(f"stack {stack!r} has no {kind} path (network {network!r}) "
                             f"in {CONFIG.name}")
    settings = {k: v for k, v in setting.items() if k != "needs"}
    needs = tuple(dict.fromkeys([*link.get("needs", []), *setting.get("needs", [])]))
    return Transport(network=network, transport=kind, address=link["address"],
                     emulated=bool(link.get("emulated", False)), settings=settings, needs=needs,
                     gbps=link.get("gbps"))


def emulated_values() -> list[str]:
    """The network values that stand for an emulated Ethernet tier."""
    return [name for name, link in _config()["links"].items() if link.get("emulated")]
