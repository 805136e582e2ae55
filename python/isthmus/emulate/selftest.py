"""`isthmus net selftest`: measure a fresh emulated network against its targets.

One network of two single-host clusters joined by one WAN link (LAN not emulated, so the
path is that link alone), plus a direct veth pair between two more namespaces for
comparison, all measured in the same run with isthmus-probe:

- RTT (TCP and UDP ping-pong, 64 B) for one-way delays of 0.5 to 20 ms, against
  2 x delay: within max(50 us, 2%). The error is the RTT the emulated path adds to the
  direct veth path measured in the same run (the endpoints' own wake-up and kernel time,
  present on any network) less 2 x delay; the raw error (RTT - 2 x delay) is reported too;
- TCP goodput for rates of 10 Mbit/s to 1 Gbit/s at 5 ms one-way, socket buffers 4 x the
  bandwidth-delay product: within 90-102% of the rate;
- loss: the fraction of lost ping-pongs with loss on one direction, inside the 99%
  binomial interval of the configured rate;
- with no delay and no rate limit: TCP goodput at least 4 Gbit/s and a third of the veth
  pair's, and the RTT added over the veth pair at most 100 us; for each MTU candidate.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.config.platform import parse
from isthmus.emulate import load, net
from isthmus.emulate.plan import DEFAULT_MTU, netns_name
from isthmus.errors import UserError

SERVER, CLIENT = "b0", "a0"
SERVER_ADDR = "198.18.2.1"
VETH_A, VETH_B = "va", "vb"
VETH_ADDR_A, VETH_ADDR_B = "198.18.254.1", "198.18.254.2"
DELAYS_MS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
RATES_MBIT = (10.0, 100.0, 1000.0)
MTUS = (1500, 9000, 65000)
LOSS = 0.01


@dataclass
class Check:
    name: str
    measured: float
    target: str
    ok: bool
    unit: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def platform_for_selftest() -> Any:
    raw = {
        "name": "selftest",
        "clusters": {
            "a": {"hosts": 1, "lan": {"emulate": False}},
            "b": {"hosts": 1, "lan": {"emulate": False}},
        },
        "wan": {"latency": "0", "bandwidth": "unlimited", "queue": "64MiB"},
    }
    return parse(raw, "selftest", Path("selftest.toml"))


def _probe(ns: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    done = subprocess.run(
        ["ip", "netns", "exec", ns, str(paths.probe()), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if not done.stdout.strip():
        raise UserError(f"isthmus-probe {' '.join(args)} in {ns} failed: {done.stderr.strip()}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@contextmanager
def _server(ns: str, seconds: int = 900) -> Iterator[None]:
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, str(paths.probe()), "serve", "--seconds", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "serving":
            raise UserError(f"the probe server in {ns} did not start")
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def _veth_pair(name: str) -> tuple[str, str]:
    """Two more namespaces joined by a veth pair: the direct path to compare with."""
    a, b = netns_name(name, VETH_A), netns_name(name, VETH_B)
    for ns in (a, b):
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
    subprocess.run(
        ["ip", "-n", a, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", b],
        check=True,
    )
    for ns, dev, addr in ((a, "v0", VETH_ADDR_A), (b, "v1", VETH_ADDR_B)):
        subprocess.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
    return a, b


def _set(name: str, **settings: str) -> None:
    net.set_link(name, "wan:*", settings)


def _count_for(rtt_s: float, budget_s: float, most: int = 300, least: int = 30) -> int:
    return max(least, min(most, int(budget_s / max(rtt_s, 1e-4))))


def _lateness(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """The router's own lateness (virtual us) over the packets it timed between two stats."""
    n = after["timed_packets"] - before["timed_packets"]
    total = (
        after["late_mean_ns"] * after["timed_packets"]
        - before["late_mean_ns"] * before["timed_packets"]
    )
    return {"packets": n, "late_mean_us": total / n / 1e3 if n else 0.0}


def measure(
    quick: bool = False,
    progress: Callable[[str], None] = lambda s: None,
    dilation: float = 1.0,
    busy: int = 0,
    router_sched: str = "nice",
    mpi_job: int = 0,
) -> dict[str, Any]:
    """Every figure of the self-test. With dilation K the network runs K times slower and
    every figure is virtual (real RTT / K, bytes per real second x K); busy adds that many
    spinning processes (nice 19) as load, mpi_job an MPI job of that many ranks (Open MPI,
    8-byte Allreduces, at the same dilation); router_sched is the router's priority."""
    net.require_privileges()
    name = f"self{os.getpid() % 100000}"
    k = dilation
    checks: list[Check] = []
    raw: dict[str, Any] = {"delays_ms": [], "rates_mbit": [], "mtus": []}
    # --quick (make test's smoke run): every kind of figure, fewer and shorter probes
    delays = DELAYS_MS[::3] if quick else DELAYS_MS
    pings = "500" if quick else "2000"
    stream_s = "1" if quick else "3"
    try:
        net.up(platform_for_selftest(), name, dilation=k, router_sched=router_sched)
        va, vb = _veth_pair(name)
        client, server = netns_name(name, CLIENT), netns_name(name, SERVER)
        with _server(server), _server(vb), load.busy_loops(busy), load.mpi_job(mpi_job, k):
            # -- no delay, no rate: speed and added RTT, per MTU, against the veth pair
            progress("veth pair and zero-delay router path")
            veth_rtt = {
                p: _probe(
                    va, "rtt", VETH_ADDR_B, *(["--udp"] if p == "udp" else []), "--count", pings
                )["median_us"]
                for p in ("tcp", "udp")
            }
            veth_gp = _probe(va, "stream", VETH_ADDR_B, "--seconds", stream_s)["goodput_bps"]
            raw["veth"] = {"rtt_median_us": veth_rtt, "goodput_bps": veth_gp}
            for mtu in MTUS:
                for ns in (client, server):
                    subprocess.run(
                        ["ip", "-n", ns, "link", "set", "ist0", "mtu", str(mtu)], check=True
                    )
                gp = _probe(client, "stream", SERVER_ADDR, "--seconds", stream_s)["goodput_bps"]
                rtts = {
                    p: _probe(
                        client,
                        "rtt",
                        SERVER_ADDR,
                        *(["--udp"] if p == "udp" else []),
                        "--count",
                        pings,
                    )["median_us"]
                    for p in ("tcp", "udp")
                }
                raw["mtus"].append({"mtu": mtu, "goodput_bps": gp, "rtt_median_us": rtts})
                progress(f"MTU {mtu}: {gp / 1e9:.2f} Gbit/s, RTT tcp {rtts['tcp']:.0f} us")
            best = max(raw["mtus"], key=lambda m: m["goodput_bps"])
            for ns in (client, server):
                subprocess.run(
                    ["ip", "-n", ns, "link", "set", "ist0", "mtu", str(DEFAULT_MTU)], check=True
                )
            default = next(m for m in raw["mtus"] if m["mtu"] == DEFAULT_MTU)
            gp = default["goodput_bps"]
            checks.append(
                Check(
                    f"goodput, no delay, no rate (MTU {DEFAULT_MTU})",
                    gp / 1e9,
                    f">= 4 and >= veth/3 ({veth_gp / 3e9:.2f})",
                    gp >= 4e9 and gp >= veth_gp / 3,
                    "Gbit/s",
                    {"veth_gbps": veth_gp / 1e9, "best_mtu": best["mtu"]},
                )
            )
            for p in ("tcp", "udp"):
                added = default["rtt_median_us"][p] - veth_rtt[p]
                checks.append(
                    Check(f"added RTT over veth, {p}", added, "<= 100", added <= 100, "us")
                )
            base = veth_rtt

            # -- RTT against the configured delay
            for d in delays:
                _set(name, latency=f"{d}ms")
                want_us = 2 * d * 1000
                tol = max(50.0, 0.02 * want_us)
                row: dict[str, Any] = {"delay_ms": d}
                for p in ("tcp", "udp"):
                    # the same real-time budget dilated: fewer, longer ping-pongs
                    n = _count_for(2 * d * k / 1000, 2.0 if quick else 8.0)
                    before = net.stats(name)
                    r = _probe(
                        client,
                        "rtt",
                        SERVER_ADDR,
                        *(["--udp"] if p == "udp" else []),
                        "--count",
                        str(n),
                        "--timeout-ms",
                        str(int(1000 * k)),
                    )
                    r["router"] = _lateness(before, net.stats(name))
                    for key in ("median_us", "min_us", "mean_us", "p90_us"):
                        if isinstance(r.get(key), int | float):
                            r[key] /= k  # virtual
                    row[p] = r
                    err_raw = r["median_us"] - want_us
                    err = r["median_us"] - base[p] - want_us
                    checks.append(
                        Check(
                            f"RTT {p} at {d:g} ms one-way",
                            err_raw,
                            f"|error| <= {tol:.0f}",
                            abs(err_raw) <= tol,
                            "us",
                            {
                                "median_us": r["median_us"],
                                "raw_error_us": err_raw,
                                "error_less_veth_us": err,
                                "raw_ok": abs(err_raw) <= tol,
                                "router_late_mean_us": r["router"]["late_mean_us"],
                            },
                        )
                    )
                raw["delays_ms"].append(row)
                progress(
                    f"RTT at {d:g} ms: tcp {row['tcp']['median_us']:.0f} us, "
                    f"udp {row['udp']['median_us']:.0f} us (router late "
                    f"{row['udp']['router']['late_mean_us']:.1f} us)"
                )

            # -- goodput against the rate, at 5 ms one-way
            delay_s = 0.005
            for mbit in RATES_MBIT[1:2] if quick else RATES_MBIT:
                rate = mbit * 1e6 / 8
                bdp = rate * 2 * delay_s
                queue = int(max(2 * bdp, 256 * 1024))
                _set(name, latency="5ms", bandwidth=f"{mbit}Mbit/s", queue=f"{queue}B")
                buf = int(max(4 * bdp, 1 << 20))
                seconds = 2 if quick else 6 if mbit < 50 else 4
                r = _probe(
                    client, "stream", SERVER_ADDR, "--seconds", str(seconds), "--buffer", str(buf)
                )
                r["goodput_bps"] *= k  # virtual
                ratio = r["goodput_bps"] / (mbit * 1e6)
                checks.append(
                    Check(
                        f"goodput at {mbit:g} Mbit/s, 5 ms",
                        100 * ratio,
                        "90-102",
                        0.90 <= ratio <= 1.02,
                        "% of rate",
                        {"goodput_bps": r["goodput_bps"], "buffer": buf, "queue": queue},
                    )
                )
                raw["rates_mbit"].append({"rate_mbit": mbit, **r})
                progress(f"goodput at {mbit:g} Mbit/s: {r['goodput_bps'] / 1e6:.2f} Mbit/s")
            _set(name, bandwidth="unlimited", latency="1ms")

            # -- loss on one direction: lost ping-pongs follow Binomial(n, p)
            net.set_link(name, "wan:a->b", {"loss": str(LOSS)})
            n = 500 if quick else 3000
            r = _probe(
                client,
                "rtt",
                SERVER_ADDR,
                "--udp",
                "--count",
                str(n),
                "--timeout-ms",
                str(int(100 * k)),
            )
            lost = r["lost"]
            lo, hi = binomial_interval(n, LOSS, 0.99)
            checks.append(
                Check(
                    f"loss {LOSS:g} on one direction",
                    lost / n,
                    f"{lo / n:.4f}-{hi / n:.4f}",
                    lo <= lost <= hi,
                    "fraction",
                    {"sent": n, "lost": lost},
                )
            )
            raw["loss"] = {"configured": LOSS, "sent": n, "lost": lost, "interval_99": [lo, hi]}
            progress(f"loss: {lost} of {n}")
            st = net.stats(name)
            raw["router_lateness"] = {
                k: st[k] for k in ("timed_packets", "late_mean_ns", "late_max_ns")
            }
    finally:
        net.down(name)
    options = (" --quick" if quick else "") + (f" --dilate {k:g}" if k != 1 else "")
    options += (f" --busy {busy}" if busy else "") + (f" --mpi-job {mpi_job}" if mpi_job else "")
    options += f" --router-sched {router_sched}" if router_sched != "nice" else ""
    return {
        "command": "isthmus net selftest" + options,
        "dilation": k,
        "busy": busy,
        "mpi_job": mpi_job,
        "router_sched": router_sched,
        "git_revision": paths.git_revision(),
        "checks": [asdict(c) for c in checks],
        "raw": raw,
        "passed": all(c.ok for c in checks),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def binomial_interval(n: int, p: float, level: float) -> tuple[int, int]:
    """The central interval of Binomial(n, p) holding at least `level` of the mass."""
    tail = (1 - level) / 2
    log_pmf = [
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
        for k in range(n + 1)
    ]
    pmf = [math.exp(v) for v in log_pmf]
    acc, lo = 0.0, 0
    while acc + pmf[lo] <= tail:
        acc += pmf[lo]
        lo += 1
    acc, hi = 0.0, n
    while acc + pmf[hi] <= tail:
        acc += pmf[hi]
        hi -= 1
    return lo, hi
