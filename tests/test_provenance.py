"""Provenance helpers that read the provisioned environment."""

from dlobd.cluster import provenance


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


def test_run_json_carries_each_hosts_fingerprint_and_the_calibration(tmp_path, monkeypatch):
    """This host's files are read from its prefix; another host's over ssh (faked here: no
    traffic leaves the test), a missing one is null, a damaged one an error naming it."""
    import json
    import subprocess

    prefix = tmp_path / "prefix"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc/fabric.json").write_text(json.dumps({"schema": 1, "host": "vm", "summary": "x"}))
    (prefix / "etc/calibration.json").write_text('{"link": "loopback (one host: vm)"')  # cut short
    monkeypatch.setattr(provenance, "prefix", lambda: prefix)
    monkeypatch.setattr(provenance, "prefix_env", lambda: {"DLOBD_WORKERS": "127.0.0.1 10.9.0.2 10.9.0.3"})
    monkeypatch.setattr(provenance, "is_local_address", lambda host: host.startswith("127."))
    remote = {"10.9.0.2": (0, json.dumps({"schema": 1, "host": "w2"})), "10.9.0.3": (0, "__absent__\n")}
    calls = []
    real_run = subprocess.run

    def fake_ssh(argv, **kwargs):
        if argv[0] != "ssh":
            return real_run(argv, **kwargs)
        calls.append(argv)
        code, out = remote[argv[argv.index("ConnectTimeout=10") + 1]]
        return subprocess.CompletedProcess(argv, code, out, "")

    monkeypatch.setattr(provenance.subprocess, "run", fake_ssh)
    got = provenance.collect({"path": "local", "slurm": None, "image": None})
    host = [h["name"] for h in got["hosts"] if h["address"] == "127.0.0.1"][0]
    assert got["fabric"] == {host: {"schema": 1, "host": "vm", "summary": "x"},
                             "10.9.0.2": {"schema": 1, "host": "w2"}, "10.9.0.3": None}
    assert got["calibration"]["error"].startswith(f"127.0.0.1:{prefix}/etc/calibration.json: not JSON")
    assert [c[-1] for c in calls] == [f"cat {prefix}/etc/fabric.json 2>/dev/null || echo __absent__"] * 2
