"""Provenance helpers that read the provisioned environment."""

from dlobd import provenance


def test_workers_are_read_from_the_space_separated_env_file_list(monkeypatch):
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "10.9.0.2 10.9.0.3"})
    assert provenance.workers() == ["10.9.0.2", "10.9.0.3"]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": ""})
    assert provenance.workers() == []


def test_hosts_of_an_emulated_cluster_carry_its_link(monkeypatch):
    hosts = [{"name": "10.77.0.2", "address": "10.77.0.2", "roles": ["worker"]},
             {"name": "vm", "address": "127.0.0.1", "roles": ["worker:0", "ps:0"]}]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_EMULATED_LINK": "emulated Ethernet eth-1g"})
    assert provenance.with_link(hosts) == [{**hosts[0], "link": "emulated Ethernet eth-1g"}, hosts[1]]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {})
    monkeypatch.delenv("DLOBD_EMULATED_LINK", raising=False)
    assert provenance.with_link(hosts) == hosts
