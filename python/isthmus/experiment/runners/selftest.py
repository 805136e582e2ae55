"""Runner `selftest`: the emulated network's fidelity and speed (`isthmus net selftest`).

Each step is one whole selftest (python/isthmus/net_selftest.py) on a fresh network of
its own: RTT ping-pongs (TCP and UDP, 64 B) through one emulated link at each one-way
delay, TCP goodput at each rate, loss, and TCP goodput and RTT with no delay or rate
limit at each MTU, with a direct veth pair measured in the same run as the reference.

[params]
  quick = false                    # the selftest's own quick mode (every other delay)
  dilate = 1                       # the scale model's K: every figure virtual
  busy = 0                         # spinning processes (nice 19) as load
  mpi_job = 0                      # an MPI job of this many ranks beside it
  router_sched = "nice"            # the router's priority: nice (-10) or fifo

Rows, each with every repetition's value:
  kind "delay":      per one-way delay and protocol, the raw RTT error (median RTT - 2 x
                     delay; nothing subtracted), the error less the veth pair's RTT, and
                     the tolerance max(50 us, 2% of 2 x delay);
  kind "rate":       per configured rate, goodput as a fraction of it;
  kind "mtu":        per MTU, goodput through the router with no delay or rate limit,
                     and the veth pair's;
  kind "loss":       lost ping-pongs against the 99% binomial interval of the rate.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from isthmus.emulate import selftest as net_selftest
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step

PARAMS = {"quick", "dilate", "busy", "router_sched", "mpi_job"}


def check(exp: Experiment) -> None:
    p = exp.params
    k = p.get("dilate", 1)
    if not isinstance(k, int | float) or not 1 <= k <= 1000:
        raise UserError(f"{exp.path}: params.dilate: expected a number from 1 to 1000")
    for key in ("busy", "mpi_job"):
        v = p.get(key, 0)
        if not isinstance(v, int) or not 0 <= v <= 64:
            raise UserError(f"{exp.path}: params.{key}: expected 0 to 64")
    if p.get("router_sched", "nice") not in ("nice", "fifo"):
        raise UserError(f"{exp.path}: params.router_sched: expected nice or fifo")


def steps(exp: Experiment) -> list[Step]:
    return [Step(f"r{rep}", f"rep {rep + 1}", {}) for rep in range(exp.repetitions)]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    p = exp.params
    result = net_selftest.measure(
        quick=bool(p.get("quick", False)),
        dilation=float(p.get("dilate", 1)),
        busy=int(p.get("busy", 0)),
        router_sched=str(p.get("router_sched", "nice")),
        mpi_job=int(p.get("mpi_job", 0)),
    )
    raw: dict[str, Any] = result["raw"]
    return raw


def _stats(values: list[float]) -> dict[str, Any]:
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values), "reps": values}


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    raws = [outcomes[s.key] for s in steps_]
    out: list[dict[str, Any]] = []
    for k, d in enumerate(raws[0]["delays_ms"]):
        delay = d["delay_ms"]
        for proto in ("tcp", "udp"):
            rtt = [r["delays_ms"][k][proto]["median_us"] for r in raws]
            veth = [r["veth"]["rtt_median_us"][proto] for r in raws]
            out.append(
                {
                    "kind": "delay",
                    "delay_ms": delay,
                    "proto": proto,
                    "tolerance_us": max(50.0, 0.02 * 2000 * delay),
                    "raw_error_us": _stats([x - 2000 * delay for x in rtt]),
                    "error_less_veth_us": _stats(
                        [x - v - 2000 * delay for x, v in zip(rtt, veth, strict=True)]
                    ),
                    # the router's own lateness (virtual us), where the run measured it
                    "router_late_us": _stats(
                        [
                            r["delays_ms"][k][proto].get("router", {}).get("late_mean_us", 0.0)
                            for r in raws
                        ]
                    ),
                }
            )
    for k, r0 in enumerate(raws[0]["rates_mbit"]):
        fractions = [r["rates_mbit"][k]["goodput_bps"] / (r0["rate_mbit"] * 1e6) for r in raws]
        out.append({"kind": "rate", "rate_mbit": r0["rate_mbit"], "fraction": _stats(fractions)})
    for k, m0 in enumerate(raws[0]["mtus"]):
        out.append(
            {
                "kind": "mtu",
                "mtu": m0["mtu"],
                "goodput_gbps": _stats([r["mtus"][k]["goodput_bps"] / 1e9 for r in raws]),
                "veth_gbps": _stats([r["veth"]["goodput_bps"] / 1e9 for r in raws]),
            }
        )
    loss = raws[0]["loss"]
    out.append(
        {
            "kind": "loss",
            "configured": loss["configured"],
            "sent": loss["sent"],
            "lost": _stats([float(r["loss"]["lost"]) for r in raws]),
            "interval_99": loss["interval_99"],
        }
    )
    return out
