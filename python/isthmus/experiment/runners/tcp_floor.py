"""Runner `tcp_floor`: what plain TCP achieves on the wide-area links, without MPI.

The floor under a bandwidth-bound collective: the link loads that meet its lower bound
(bounds.flows: bytes from each cluster to each other) moved by plain TCP sockets, all
flows started at once, on the same emulated network. Each step brings the platform's
network up (its own name), starts one process per cluster in the namespace of the
cluster's first host, connects every pair that carries bytes, and times `transfers`
transfers `spacing` seconds apart (idle gaps, as between MPI calls). A transfer takes as
long as its slowest flow. No ordering between flows is imposed, so this is below any
algorithm's time; it measures what the links and TCP give, which the bound leaves out
(headers, acknowledgements sharing the link, congestion control).

[params]
  platform = "examples/platforms/das-4x2.toml"
  set = ["wan.mtu=1500"]           # --set on the platform
  transfers = 5                    # timed transfers per step
  spacing = "4s"
  [[params.groups]] collective = "allgather", sizes = ["1MiB"]   # block sizes (M)

A row per (collective, size): the median, smallest and largest transfer over all
repetitions, the spread, every transfer's time, and the bound.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from isthmus.config import paths
from isthmus.config import platform as platform_mod
from isthmus.config.units import UnitError, parse_duration, parse_size
from isthmus.emulate import net
from isthmus.errors import UserError
from isthmus.experiment import Experiment, Step
from isthmus.experiment.runners import require_platform
from isthmus.model import bounds

PARAMS = {"platform", "set", "transfers", "spacing", "groups"}
PORT = 5701


def _platform(exp: Experiment) -> platform_mod.Platform:
    return platform_mod.load(paths.ROOT / exp.params["platform"], exp.params.get("set", []))


def cases(exp: Experiment) -> list[tuple[str, int]]:
    return [
        (g["collective"], parse_size(s)) for g in exp.params.get("groups", []) for s in g["sizes"]
    ]


def check(exp: Experiment) -> None:
    p = exp.params
    require_platform(exp)
    try:
        plat = _platform(exp)
        for coll, size in cases(exp):
            bounds.lower_bound_s(coll, plat, size)
        parse_duration(p.get("spacing", "4s"))
    except (KeyError, TypeError) as e:
        raise UserError(f"{exp.path}: params.groups: missing or wrong key {e}") from None
    except UnitError as e:
        raise UserError(f"{exp.path}: params: {e}") from None
    if not cases(exp):
        raise UserError(f"{exp.path}: params.groups: expected at least one collective and size")


def steps(exp: Experiment) -> list[Step]:
    return [
        Step(f"r{rep}-{coll}-{size}", f"rep {rep + 1}, {coll} {size} B", {"case": k})
        for rep in range(exp.repetitions)
        for k, (coll, size) in enumerate(cases(exp))
    ]


def run_step(exp: Experiment, step: Step, work: Path) -> dict[str, Any]:
    coll, size = cases(exp)[step.spec["case"]]
    plat = _platform(exp)
    c, n, _, _ = bounds.shape(plat)
    matrix = bounds.flows(coll, c, n, size)
    transfers = int(exp.params.get("transfers", 5))
    spacing = parse_duration(exp.params.get("spacing", "4s"))
    name = f"tcpf{os.getpid() % 100000}"
    state = net.up(plat, name, list(exp.params.get("set", [])))
    try:
        spaces = [
            next(h["netns"] for h in state.hosts if h["cluster"] == cl.name) for cl in plat.clusters
        ]
        addrs = [next(h["address"] for h in state.hosts if h["netns"] == ns) for ns in spaces]
        spec = json.dumps(
            {
                "start": time.time() + 3.0,
                "addresses": addrs,
                "matrix": matrix,
                "transfers": transfers,
                "spacing": spacing,
            }
        )
        procs = [
            subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-m", __name__, str(k), spec],
                stdout=subprocess.PIPE,
                text=True,
            )
            for k, ns in enumerate(spaces)
        ]
        limit = 30 + transfers * (spacing + 10 * bounds.lower_bound_s(coll, plat, size))
        lines = [json.loads(x) for p in procs for x in p.communicate(timeout=limit)[0].splitlines()]
        if any(p.returncode for p in procs):
            raise UserError(f"{step.label}: a TCP worker failed")
    finally:
        net.down(name)
    times = [
        max(max(x["receive_s"], default=0.0) for x in lines if x["transfer"] == t)
        for t in range(transfers)
    ]
    return {"collective": coll, "bytes": size, "transfers_s": times}


def rows(exp: Experiment, steps_: list[Step], outcomes: dict[str, Any]) -> list[dict[str, Any]]:
    plat = _platform(exp)
    out = []
    for k, (coll, size) in enumerate(cases(exp)):
        times = [t for s in steps_ if s.spec["case"] == k for t in outcomes[s.key]["transfers_s"]]
        med = statistics.median(times)
        out.append(
            {
                "collective": coll,
                "bytes": size,
                "median_s": med,
                "min_s": min(times),
                "max_s": max(times),
                "spread": (max(times) - min(times)) / med,
                "transfers_s": times,
                "lower_bound_s": bounds.lower_bound_s(coll, plat, size),
            }
        )
    return out


def worker(me: int, spec: dict[str, Any]) -> None:
    """One cluster's process: sends its row of the matrix, receives its column, and prints
    per transfer how long each incoming flow took."""
    addrs, matrix = spec["addresses"], spec["matrix"]
    senders = [s for s in range(len(addrs)) if matrix[s][me]]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addrs[me], PORT))
    listener.listen(len(addrs))
    incoming: list[socket.socket] = []

    def accept() -> None:
        for _ in senders:
            incoming.append(listener.accept()[0])

    acceptor = threading.Thread(target=accept)
    acceptor.start()
    time.sleep(1.0)  # every listener is up
    outgoing = [
        (socket.create_connection((a, PORT)), matrix[me][d])
        for d, a in enumerate(addrs)
        if matrix[me][d]
    ]
    acceptor.join()
    expected = max((matrix[s][me] for s in senders), default=0)
    for t in range(spec["transfers"]):
        t0 = spec["start"] + t * spec["spacing"]
        time.sleep(max(0.0, t0 - time.time()))
        took = [0.0] * len(incoming)

        def receive(s: socket.socket, i: int, t0: float = t0, took: list[float] = took) -> None:
            got = 0
            while got < expected:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise SystemExit("tcp_floor: a peer closed its connection early")
                got += len(chunk)
            took[i] = time.time() - t0

        threads = [
            threading.Thread(target=s.sendall, args=(b"\0" * nbytes,)) for s, nbytes in outgoing
        ]
        threads += [threading.Thread(target=receive, args=(s, i)) for i, s in enumerate(incoming)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        print(json.dumps({"transfer": t, "cluster": me, "receive_s": took}), flush=True)


if __name__ == "__main__":
    worker(int(sys.argv[1]), json.loads(sys.argv[2]))
