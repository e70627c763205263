"""The expected (model) speedup of the papers' network comparisons (dlobd/results/expected.py), on the
real specs and two calibration records: the one `make calibrate` wrote on this machine
(tests/data/logs/calibrate/calibration.json: TCP over loopback, no RDMA), and that record with
RDMA results as calibrate.run_probe records them, parsed from perftest output in its source's
format (tests/test_calibrate.py: no HCA here to capture it from)."""

import copy
import json
import re

import pytest

from dlobd import ROOT
from dlobd.cluster import calibrate
from dlobd.results import expected
from dlobd import spec as dspec
from rundirs import LOGS
from test_calibrate import IB_SEND_LAT, IB_WRITE_BW

LOOPBACK = json.loads((LOGS / "calibrate" / "calibration.json").read_text())
SPECS = {eid: s.data for eid, s in dspec.load_all(ROOT).items()}
TCP = (7.215, 20.989)      # the loopback record's sockperf median (us) and iperf3 rate (Gb/s)
RDMA = (1.06, 96.38)       # ib_send_lat's typical latency, ib_write_bw's average


def with_rdma(record: dict) -> dict:
    out = copy.deepcopy(record)
    for name, tool, parsed in (("rdma_latency_us", "perftest ib_send_lat", calibrate.parse_ib_send_lat(IB_SEND_LAT)),
                               ("rdma_bandwidth_gbps", "perftest ib_write_bw", calibrate.parse_ib_write_bw(IB_WRITE_BW))):
        value = parsed.pop("value")
        out["results"][name] = {"tool": tool, "transport": "rdma", "status": "ok", "value": round(value, 3),
                                "details": parsed}
    return out


IB = with_rdma(LOOPBACK)


def entry(eid: str, comparison: str, record) -> dict:
    return next(e for e in expected.expectations(SPECS[eid], record) if e["comparison"] == comparison)


def model(fabric, nbytes):
    return expected.message_us(*fabric, nbytes)


def test_the_alpha_beta_time_of_a_message():
    # 64 KiB over the loopback TCP measured here: 7.215 us + 524288 bits / 20.989 Gb/s
    assert expected.message_us(*TCP, 65536) == pytest.approx(7.215 + 24.979, abs=1e-3)
    assert expected.in_form("ratio", "lower", 6.0, 2.0) == 3.0
    assert expected.in_form("reduction", "lower", 2.0, 8.0) == 0.75
    assert expected.in_form("ratio", "higher", 2.0, 8.0) == 4.0  # a rate goes as 1 / time
    assert expected.in_form("gain", "higher", 2.0, 2.5) == pytest.approx(0.25)


def test_the_bytes_of_a_tf_grpc_bench_rpc():
    fixed = SPECS["tfgrpc-fig8"]["scales"]["paper"]["fixed"]  # 10 buffers of 10 B, 10 KiB, 1 MiB
    assert expected.scheme_bytes("skew", fixed) == 6 * 1048576 + 3 * 10240 + 10
    assert expected.scheme_bytes("uniform", fixed) == 3 * 1048576 + 3 * 10240 + 4 * 10
    assert expected.scheme_bytes("skew", {**fixed, "skew_bias": "medium"}) == 3 * 1048576 + 6 * 10240 + 10
    assert expected.scheme_bytes("random", fixed) is None


def test_a_payload_sweep_gives_the_largest_ratio_as_up_to_reads():
    x = entry("slides-rdma-grpc-latency-small", "ipoib over grpc+rdma", IB)
    sizes = SPECS["slides-rdma-grpc-latency-small"]["scales"]["paper"]["matrix"]["payload_bytes"]
    best = max(model(TCP, m) / model(RDMA, m) for m in sizes)
    assert x["here"] == f"ratio {best:.2f} for payload_bytes 2, 8, 32, 128, 512 (the largest result kept)"
    assert x["stated"] == "ratio up to 2.7" and x["claims"] == ["slides-c26"]
    assert x["inputs"][:2] == [
        "here, ipoib: TCP over loopback (one host: vm): 7.215 µs, 20.989 Gb/s (sockperf, iperf3; "
        "calibration.json of 2026-11-24T14:44:52Z)",
        "here, grpc+rdma: RDMA between 127.0.0.1 and 127.0.0.1: 1.06 µs, 96.38 Gb/s (perftest ib_send_lat, "
        "perftest ib_write_bw; calibration.json of 2026-11-24T14:44:52Z)"]
    # IPoIB and RDMA share Comet's FDR link, whose rate config/clusters.yaml does not even give
    assert x["paper_links"] == "ipoib and grpc+rdma ride the same InfiniBand link: its rate does not separate them"


def test_skewed_rpcs_against_ipoib_and_against_40g_ethernet():
    x = entry("tfgrpc-fig8", "rdma over ipoib at payload_scheme=skew", IB)
    m = 6322186
    assert x["here"] == (f"reduction {1 - model(RDMA, m) / model(TCP, m):.2f} for 6322186 bytes per RPC "
                         "(skew scheme of 10 buffers)")
    assert x["stated"] == "reduction 0.56" and x["claims"] == ["tfgrpc-c05", "tfgrpc-c07"]
    # 40G Ethernet is not measured here; the paper's links bound a bandwidth-bound RPC: 1 - 40/100
    x = entry("tfgrpc-fig8", "rdma over eth-40g at payload_scheme=skew", IB)
    assert x["here"] == ("model needs a measured eth-40g link (make calibrate measures TCP over the "
                         "cluster's addresses: loopback (one host: vm))")
    assert x["paper_links"] == "reduction 0.60 (bandwidth-bound limit)"
    cluster, where = 'RI2-IB-EDR, OSU ("Cluster A" of TF-gRPC-Bench)', "config/clusters.yaml: TF-gRPC-Bench Sec. 4.1, item (1)"
    assert x["inputs"][-2:] == [
        f"paper, rdma: {cluster}'s InfiniBand link, 100 Gb/s ({where}); latency not stated",
        f"paper, eth-40g: {cluster}'s Ethernet link, 40 Gb/s ({where}); latency not stated"]


def test_what_the_model_lacks_is_named():
    # this machine's calibration has TCP over loopback and no RDMA, and says why
    x = entry("tfgrpc-fig7", "rdma over ipoib", LOOPBACK)
    assert x["here"].startswith("no calibration of RDMA: rdma_latency_us not runnable: no HCA with an "
                                "ACTIVE port on vm")
    assert entry("tfgrpc-fig7", "rdma over ipoib", None)["here"].startswith("no calibration (run.json carries none")
    # training runs name no message size
    x = entry("dlobd-fig5a", "rdma over ipoib at model=lenet, device=gpu, nodes=16", IB)
    assert x["here"] == "model needs the bytes a message carries: the experiment names no message size"
    assert x["stated"] == "reduction 0.512" and "dlobd-c31" in x["claims"]


def test_every_network_comparison_of_the_specs_is_expected_or_says_what_it_needs():
    seen = 0
    for eid, data in SPECS.items():
        for record in (IB, LOOPBACK, None):
            for x in expected.expectations(data, record):
                seen += 1
                assert re.match(r"(ratio|reduction|gain) -?\d+\.\d\d for ", x["here"]) or \
                    re.search(r"no calibration|model needs", x["here"]), (eid, x)
                assert re.match(r"(ratio|reduction|gain) -?\d+\.\d\d \(bandwidth-bound limit\)", x["paper_links"]) or \
                    re.search(r"model needs|same \w+ link", x["paper_links"]), (eid, x)
    assert seen > 90  # every experiment comparing networks with a stated number, three times
