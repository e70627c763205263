"""The network axis configuration: every value the specs use means something for their stack."""

import pytest

from dlobd import ROOT, spec
from dlobd.execution import plan
from dlobd.spec import networks
from dlobd.cluster import capabilities
from dlobd import NotRunnable

SPECS = spec.load_all(ROOT)
# stacks whose launchers take their transport from config/networks.yaml
CONFIGURED = set(networks._config()["stacks"])


def _uses():
    for sid, s in sorted(SPECS.items()):
        for scale in ("paper", "local"):
            try:
                matrix = s.scale(scale).get("matrix") or {}
            except KeyError:
                continue
            stack = s.stack(scale)
            for value in matrix.get("network", []):
                if stack in CONFIGURED:
                    yield sid, scale, stack, value


@pytest.mark.parametrize("sid,scale,stack,network", list(_uses()))
def test_every_network_value_of_a_spec_resolves_for_its_stack(sid, scale, stack, network):
    transport = networks.resolve(stack, network)
    assert transport.transport in {"tcp", "rdma", "mpi", "rdma-grpc"}
    assert transport.settings, f"{sid}: no {transport.transport} setting for {stack}"


def test_tcp_and_rdma_paths_differ_for_the_papers_stacks():
    assert networks.resolve("tensorflow", "ipoib").settings == {"protocol": "grpc"}
    assert networks.resolve("tensorflow", "rdma").settings == {"protocol": "grpc+verbs"}
    assert networks.resolve("bigdl", "ipoib").settings == {"spark": "vanilla"}
    assert networks.resolve("bigdl", "rdma").settings == {"spark": "rdma-spark"}


def test_rdma_needs_infiniband_and_the_stacks_rdma_build():
    needs = networks.resolve("bigdl", "rdma").needs
    assert {"infiniband", "rdma", "rdma-spark"} <= set(needs)
    assert networks.resolve("tensorflow", "loopback").needs == ()


def test_emulated_links_are_marked_emulated():
    assert networks.resolve("bigdl", "eth-1g-emulated").emulated
    assert not networks.resolve("bigdl", "eth-1g").emulated


def test_an_emulated_tier_is_a_capability_specs_may_name():
    import json

    schema = json.loads(spec.SCHEMA_PATH.read_text())
    assert set(networks.emulated_values()) <= set(schema["$defs"]["capability"]["enum"])
    for sid, s in sorted(SPECS.items()):
        try:
            scale = s.scale("local")
        except KeyError:
            continue
        # a point on a tier names that tier among its needs, so `dlobd plan` tells it apart
        for value in set((scale.get("matrix") or {}).get("network", [])) & set(networks.emulated_values()):
            entries = [e for e in scale.get("point_needs") or [] if e["at"].get("network") == value]
            assert entries and value in entries[0]["needs"], (sid, value)


def test_unknown_network_names_the_value_and_the_file():
    with pytest.raises(networks.UnknownNetwork, match=r"'tcp-1GigE' is not defined in networks.yaml"):
        networks.resolve("bigdl", "tcp-1GigE")
    with pytest.raises(networks.UnknownNetwork, match=r"stack 'nosuch'"):
        networks.resolve("nosuch", "loopback")


def test_missing_gives_reasons_on_a_machine_without_infiniband():
    if capabilities.capabilities()["infiniband"][0]:
        pytest.skip("this machine has InfiniBand")
    reasons = capabilities.network_missing("bigdl", "rdma")
    assert any(r.startswith("needs infiniband") for r in reasons)
    assert capabilities.network_missing("bigdl", "loopback") == []



@pytest.fixture
def fresh_capabilities():
    capabilities.local_capabilities.cache_clear()
    yield
    capabilities.local_capabilities.cache_clear()


def test_an_emulated_tier_runs_only_on_a_cluster_linked_by_it(monkeypatch, fresh_capabilities):
    assert set(networks.emulated_values()) == {"eth-1g-emulated", "eth-10g-emulated"}
    env = {"DLOBD_WORKERS": "10.77.0.2 10.77.0.3", "DLOBD_EMULATED_NETWORK": "eth-10g-emulated",
           "DLOBD_EMULATED_LINK": "emulated Ethernet eth-10g (veth + tbf 10000mbit)"}
    monkeypatch.setattr(plan.provenance, "prefix_env", lambda: env)
    assert capabilities.network_missing("tensorflow", "eth-10g-emulated") == []
    assert capabilities.network_missing("tensorflow", "eth-1g-emulated") == [
        "needs eth-1g-emulated: the hosts are linked by emulated Ethernet eth-10g (veth + tbf 10000mbit)"]
    monkeypatch.setattr(plan.provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "127.0.0.1"})
    capabilities.local_capabilities.cache_clear()
    reasons = capabilities.network_missing("bigdl", "eth-10g-emulated")
    assert any("multi-host" in r for r in reasons)
    assert any(r.startswith("needs eth-10g-emulated: no emulated link") for r in reasons)


def test_ethernet_points_reach_the_workers_at_their_ethernet_addresses(monkeypatch):
    """A provisioned cluster's dlobd-env.sh maps each worker's cluster address to its Ethernet
    one: Ethernet links use those, IPoIB and RDMA links the cluster addresses; a worker without
    one is named by its address, as is one whose link is not of the tier's rate."""
    env = {"DLOBD_WORKERS": "10.1.0.2 10.1.0.3", "DLOBD_WORKERS_ETHERNET": "10.1.0.2=10.2.0.2 10.1.0.3=10.2.0.3",
           "DLOBD_WORKERS_ETHERNET_GBPS": "10.1.0.2=1 10.1.0.3=1"}
    monkeypatch.setattr(plan.provenance, "prefix_env", lambda: env)
    workers = ["10.1.0.2", "10.1.0.3"]
    assert capabilities.worker_addresses(networks.resolve("tensorflow", "eth-1g"), workers) == ["10.2.0.2", "10.2.0.3"]
    for network in ("ipoib", "rdma", "eth-1g-emulated"):
        assert capabilities.worker_addresses(networks.resolve("tensorflow", network), workers) == workers
    with pytest.raises(NotRunnable, match=r"^network eth-10g: its points need a 10 Gb/s Ethernet link on every "
                                               r"worker; 10\.1\.0\.2 declares 1 Gb/s, 10\.1\.0\.3 declares 1 Gb/s \("):
        capabilities.worker_addresses(networks.resolve("tensorflow", "eth-10g"), workers)
    env["DLOBD_WORKERS_ETHERNET_GBPS"] = "10.1.0.2=1"
    with pytest.raises(NotRunnable, match=r"10\.1\.0\.3 declares none \(dlobd_hardware\.ethernet_gbps"):
        capabilities.worker_addresses(networks.resolve("tensorflow", "eth-1g"), workers)
    env["DLOBD_WORKERS_ETHERNET"] = "10.1.0.3=10.2.0.3"
    with pytest.raises(NotRunnable, match=r"^network eth-40g: worker\(s\) 10\.1\.0\.2 have no Ethernet "
                                               r"address: set dlobd_ethernet_address"):
        capabilities.worker_addresses(networks.resolve("grpcbench", "eth-40g"), workers)
