"""Provenance helpers that read the provisioned environment."""

from dlobd import provenance


def test_workers_are_read_from_the_space_separated_env_file_list(monkeypatch):
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "10.9.0.2 10.9.0.3"})
    assert provenance.workers() == ["10.9.0.2", "10.9.0.3"]
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": ""})
    assert provenance.workers() == []
