"""The speedup a simple communication model expects for the papers' network comparisons on the
fabric measured here, beside the paper's stated one: an expectation (model), never a measurement.

Which comparisons: the paper values of a spec's paper scale that set one network against
another (`at` and `over` differ in `network` alone; `as` ratio, reduction or gain), with the
claims whose checks read both networks.

The model (alpha-beta): one message of m bytes over a transport takes t = a + 8m / b, a the
transport's latency, b its bandwidth. It is put in the paper value's own form (y[at] / y[over]
as a ratio, 1 - that as a reduction, that - 1 as a gain), y going as t for a metric better when
lower (latency, time) and as 1 / t for one better when higher (bandwidth, rates). The message
sizes are the ones the experiment names: `payload_bytes` (each value of its axis for an
`up_to: payload_bytes` value, the largest result kept, as "up to" reads), or the bytes one RPC
carries under TF-gRPC-Bench's uniform or skew payload scheme.

Its inputs, each with where it comes from:
- here, `make calibrate`'s record (calibration.json, which run.json carries): TCP latency and
  bandwidth over the cluster's addresses for the networks carried by TCP there (ipoib, an
  emulated tier), RDMA's for the others (rdma, verbs, mpi, grpc+rdma). A real Ethernet network
  (eth-1g, eth-10g, eth-40g) is not measured by it.
- the paper's cluster (config/clusters.yaml): the link rates the paper states (ib_rate_gbps for
  the networks on InfiniBand, ethernet_gbps for Ethernet), no latency. Their ratio is the model's
  limit for bandwidth-bound messages where the two networks ride links of different rates.
An input that is missing is named ("no calibration", "model needs ..."); no number stands in.
"""

from __future__ import annotations

from dlobd.cluster import calibrate
from dlobd.spec import networks
from dlobd.spec.claimlang import ClaimSyntaxError, parse_check

MODEL = ("alpha-beta: a message of m bytes takes a + 8m/b over a transport of latency a and "
         "bandwidth b")
FORMS = ("ratio", "reduction", "gain")
# TF-gRPC-Bench's buffer categories, in its order (workloads/tf-grpc-bench/README.md)
CATEGORIES = ("small", "medium", "large")
DEFAULT_SKEW_MIX = (60, 30, 10)


def message_us(latency_us: float, bandwidth_gbps: float, nbytes: float) -> float:
    """The model's time of one message, in microseconds."""
    return latency_us + nbytes * 8 / (bandwidth_gbps * 1e3)


def in_form(form: str, better: str, t_at: float, t_over: float) -> float:
    """A paper value's form of two message times: y[at] / y[over] as ratio, reduction or gain."""
    ratio = t_at / t_over if better == "lower" else t_over / t_at
    return {"ratio": ratio, "reduction": 1 - ratio, "gain": ratio - 1}[form]


def scheme_bytes(scheme: str, fixed: dict) -> int | None:
    """The bytes one RPC carries under TF-gRPC-Bench's `uniform` or `skew` scheme, from the
    scale's buffer count and category sizes; None for a scheme whose sizes are drawn at run
    time (random) or a scale that does not give them."""
    sizes = [fixed.get(f"{c}_bytes") for c in CATEGORIES]
    buffers = fixed.get("iovec_buffers")
    if None in sizes or not buffers:
        return None
    if scheme == "uniform":  # the categories in turn: counts differ by one at most
        counts = [buffers // 3 + (i < buffers % 3) for i in range(3)]
    elif scheme == "skew":
        # the mix's shares by the largest remainder: the favoured category first, then the
        # others from the largest down
        bias = CATEGORIES.index(fixed.get("skew_bias", "large"))
        order = [bias] + [i for i in (2, 1, 0) if i != bias]
        mix = list(fixed.get("skew_mix") or DEFAULT_SKEW_MIX)
        shares = [buffers * m / sum(mix) for m in mix]
        ranked = [int(s) for s in shares]
        for i in sorted(range(3), key=lambda i: ranked[i] - shares[i])[:buffers - sum(ranked)]:
            ranked[i] += 1
        counts = [0, 0, 0]
        for rank, category in enumerate(order):
            counts[category] = ranked[rank]
    else:
        return None
    return sum(n * size for n, size in zip(counts, sizes))


def message_sizes(scale: dict, value: dict) -> tuple[list[int], str] | str:
    """(sizes in bytes, what they are) of the messages behind a paper value, or what the model
    needs instead."""
    point = {**(scale.get("fixed") or {}), **value["at"]}
    if value.get("up_to") == "payload_bytes":
        sizes = [int(b) for b in (scale.get("matrix") or {}).get("payload_bytes") or []]
        return sizes, f"payload_bytes {', '.join(map(str, sizes))} (the largest result kept)"
    if "payload_bytes" in point:
        return [int(point["payload_bytes"])], f"payload_bytes {point['payload_bytes']}"
    scheme = point.get("payload_scheme")
    if scheme:
        nbytes = scheme_bytes(scheme, point)
        if nbytes is None:
            return f"model needs the bytes of an RPC of the {scheme} payload scheme (drawn at run time, or not in the scale)"
        return [nbytes], f"{nbytes} bytes per RPC ({scheme} scheme of {point['iovec_buffers']} buffers)"
    return "model needs the bytes a message carries: the experiment names no message size"


def measured(calibration: dict | None, transport: networks.Transport) -> dict | str:
    """{latency_us, bandwidth_gbps, source} of the transport measured here, or why not."""
    if not calibration:
        return "no calibration (run.json carries none: `make calibrate` before the runs)"
    if calibration.get("error"):
        return f"no calibration: {calibration['error']}"
    link = calibration.get("link", "?")
    if transport.address == "ethernet":
        return (f"model needs a measured {transport.network} link (make calibrate measures TCP over "
                f"the cluster's addresses: {link})")
    kind = "tcp" if transport.transport == "tcp" else "rdma"
    results = calibration.get("results") or {}
    lat, bw = results.get(f"{kind}_latency_us") or {}, results.get(f"{kind}_bandwidth_gbps") or {}
    for name, r in ((f"{kind}_latency_us", lat), (f"{kind}_bandwidth_gbps", bw)):
        if r.get("status") != "ok":
            return f"no calibration of {kind.upper()}: {name} {r.get('status', 'missing')}: {r.get('reason') or 'not measured'}"
    over = f"over {link}" if kind == "tcp" else f"between {calibration.get('server')} and {calibration.get('client')}"
    return {"latency_us": lat["value"], "bandwidth_gbps": bw["value"],
            "source": (f"{kind.upper()} {over}: {lat['value']:g} µs, {bw['value']:g} Gb/s ({lat.get('tool')}, "
                       f"{bw.get('tool')}; calibration.json of {calibration.get('measured', '?')})")}


def _stated_rate(cluster: dict, transport: networks.Transport) -> tuple[str, float | None, str]:
    """(link, the paper's rate of it or None, where) for the link a network rides."""
    field, link = (("ethernet_gbps", "Ethernet") if transport.address == "ethernet"
                   else ("ib_rate_gbps", "InfiniBand"))
    fact = cluster.get(field)
    return link, (fact["value"] if fact else None), (fact["where"] if fact else "")


def on_paper_links(cluster_id: str | None, better: str, form: str,
                   at: networks.Transport, over: networks.Transport) -> tuple[str, list[str]]:
    """(the bandwidth-bound limit in the value's form, or why there is none; its inputs) from the
    link rates of the paper's cluster."""
    cluster = calibrate.paper_clusters().get(cluster_id or "")
    if cluster is None:
        return f"model needs the paper's cluster ({cluster_id or 'none named'} is not in config/clusters.yaml)", []
    links = [_stated_rate(cluster, t) for t in (at, over)]
    inputs = [f"paper, {t.network}: {cluster['name']}'s {link} link, "
              + (f"{rate:g} Gb/s (config/clusters.yaml: {where}); latency not stated" if rate else "rate not stated")
              for t, (link, rate, where) in zip((at, over), links)]
    if links[0][0] == links[1][0]:
        return (f"{at.network} and {over.network} ride the same {links[0][0]} link: its rate does not "
                "separate them"), inputs
    missing = [link for link, rate, _ in links if not rate]
    if missing:
        return f"model needs the rate of {cluster['name']}'s {' and '.join(missing)} link (not stated)", inputs
    limit = in_form(form, better, 1 / links[0][1], 1 / links[1][1])
    return f"{form} {limit:.2f} (bandwidth-bound limit)", inputs


def stated(value: dict) -> str:
    """A paper value as the paper gives it."""
    number = f"{value['value']:g}" + (f"–{value['high']:g}" if value.get("high") else "")
    return (f"{value['as']} {'up to ' if value.get('up_to') else ''}"
            f"{'about ' if value.get('approx') else ''}{number}")


def network_values(scale: dict) -> list[dict]:
    """The paper values that set one network against another, all else equal."""
    out = []
    for value in scale.get("paper_values") or []:
        at, over = value.get("at") or {}, value.get("over") or {}
        if (value.get("as") in FORMS and not value.get("metric") and set(at) == set(over)
                and {k for k in at if at[k] != over[k]} == {"network"}):
            out.append(value)
    return out


def claims_reading(spec: dict, nets: set) -> list[str]:
    """The ids of the spec's claims whose checks read every network of `nets`."""
    out = []
    for claim in spec.get("claims") or []:
        try:
            selections = parse_check(claim["check"]).selections() if claim.get("check") else []
        except ClaimSyntaxError:
            continue
        read = {str(s.selectors["network"]) for s in selections
                if s.experiment is None and isinstance(s.selectors.get("network"), str)}
        if nets <= read:
            out.append(claim["id"])
    return out


def expectations(spec: dict, calibration: dict | None) -> list[dict]:
    """One entry per paper value comparing networks: what the paper states, what the model
    expects on the fabric measured here and on the paper's cluster's links, and its inputs."""
    scale = (spec.get("scales") or {}).get("paper") or {}
    better = spec["metric"]["better"]
    out = []
    for value in network_values(scale):
        at = networks.resolve(spec["stack"], value["at"]["network"])
        over = networks.resolve(spec["stack"], value["over"]["network"])
        form = value["as"]
        sizes = message_sizes(scale, value)
        ends = [measured(calibration, t) for t in (at, over)]
        inputs = [f"here, {t.network}: {e['source']}" for t, e in zip((at, over), ends) if isinstance(e, dict)]
        problems = list(dict.fromkeys(p for p in (*ends, sizes) if isinstance(p, str)))
        if problems:
            here = "; ".join(problems)
        else:
            (a, b), (nbytes, what) = ends, sizes
            best = max(in_form(form, better, message_us(a["latency_us"], a["bandwidth_gbps"], m),
                               message_us(b["latency_us"], b["bandwidth_gbps"], m)) for m in nbytes)
            here = f"{form} {best:.2f} for {what}"
        paper, paper_inputs = on_paper_links(scale.get("cluster"), better, form, at, over)
        where = {k: v for k, v in value["at"].items() if k != "network"}
        out.append({
            "comparison": f"{at.network} over {over.network}"
                          + (" at " + ", ".join(f"{k}={v}" for k, v in where.items()) if where else ""),
            "claims": claims_reading(spec, {at.network, over.network}),
            "stated": stated(value), "where": value.get("where", ""),
            "here": here, "paper_links": paper, "inputs": inputs + paper_inputs,
        })
    return out
