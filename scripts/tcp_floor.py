"""What TCP itself achieves for Allgather's wide-area exchange on das-4x2, without MPI: the
floor under `scripts/bench_collectives.py bandwidth`'s Allgather row.

    .venv/bin/python scripts/tcp_floor.py [OUT_DIR]

For each wide-area MTU (1500, the benchmark's, and 9000) and each setting of the hosts'
TCP (the machine's default; Reno, with and without slow start after idle, through the
platform's [tcp] table) it brings up das-4x2.toml (`isthmus net up`, a network of its
own), starts one process per cluster in the first host's namespace (the coordinator's),
connects every pair both ways with plain sockets, and repeats REPS times, a few seconds
apart: at a common start every process sends 2 MiB (the n M = 2 x 1 MiB a cluster
contributes) to each of the three others and receives theirs. A repetition takes as
long as its slowest flow. The lower bound of docs/collectives.md is L + nM/B = 2.107 s.
Writes OUT_DIR/tcp-floor.json (default results/collectives); about 3 minutes.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from isthmus import net as isthmus_net

ROOT = Path(__file__).resolve().parents[1]
ISTHMUS = str(ROOT / "bin" / "isthmus")
DAS = ROOT / "examples" / "platforms" / "das-4x2.toml"
CLUSTERS = ("ams", "delft", "leiden", "utrecht")  # das-4x2's, in its order
BYTES = 2 << 20  # n M: 2 ranks x 1 MiB
BOUND_S = 0.010 + BYTES / 1e6
REPS = 5
SPACING_S = 4.0  # between repetitions' starts: longer than one, as between MPI calls
MTUS = (1500, 9000)
# The hosts' TCP ([tcp] table settings); default: the machine's (BBR on our VMs)
TCP_VARIANTS = {
    "default": (),
    "reno": ("tcp.congestion_control=reno",),
    "reno, no slow start after idle": (
        "tcp.congestion_control=reno",
        "tcp.slow_start_after_idle=false",
    ),
}
PORT = 5701


def worker(me: int, addresses: list[str], start: float) -> None:
    """One cluster's coordinator: prints, per repetition, its three receive times."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addresses[me], PORT))
    listener.listen(len(addresses))
    incoming: list[socket.socket] = []

    def accept() -> None:
        for _ in range(len(addresses) - 1):
            incoming.append(listener.accept()[0])

    acceptor = threading.Thread(target=accept)
    acceptor.start()
    time.sleep(1.0)  # every listener is up
    outgoing = [socket.create_connection((a, PORT)) for k, a in enumerate(addresses) if k != me]
    acceptor.join()
    data = b"\0" * BYTES
    for rep in range(REPS):
        t0 = start + rep * SPACING_S
        time.sleep(max(0.0, t0 - time.time()))
        took = [0.0] * len(incoming)

        def receive(s: socket.socket, i: int, t0: float = t0, took: list[float] = took) -> None:
            got = 0
            while got < BYTES:
                got += len(s.recv(1 << 20))
            took[i] = time.time() - t0

        threads = [threading.Thread(target=s.sendall, args=(data,)) for s in outgoing]
        threads += [threading.Thread(target=receive, args=(s, i)) for i, s in enumerate(incoming)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps({"rep": rep, "cluster": CLUSTERS[me], "receive_s": took}), flush=True)


def addresses(net: str) -> dict[str, str]:
    state = json.loads(
        subprocess.run(
            [ISTHMUS, "net", "status", "--name", net, "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    return {h["netns"]: h["address"] for h in state["hosts"]}


def measure(mtu: int, congestion: str) -> dict[str, Any]:
    net = f"tcpf{os.getpid() % 100000}"
    tcp = [x for kv in TCP_VARIANTS[congestion] for x in ("--set", kv)]
    subprocess.run(
        [ISTHMUS, "net", "up", "-p", str(DAS), "--set", f"wan.mtu={mtu}", *tcp, "--name", net],
        check=True,
        capture_output=True,
    )
    try:
        hosts = addresses(net)
        spaces = [isthmus_net.netns_name(net, f"{c}0") for c in CLUSTERS]
        addr = [hosts[ns] for ns in spaces]
        args = [str(time.time() + 3.0), *addr]  # the common start, then every address
        procs = [
            subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, __file__, "--worker", str(k), *args],
                stdout=subprocess.PIPE,
                text=True,
            )
            for k, ns in enumerate(spaces)
        ]
        lines = [json.loads(x) for p in procs for x in p.communicate(timeout=120)[0].splitlines()]
        if any(p.returncode for p in procs):
            raise SystemExit(f"tcp_floor: a worker failed at MTU {mtu}, {congestion}")
    finally:
        subprocess.run([ISTHMUS, "net", "down", "--name", net], capture_output=True)
    reps = [max(max(x["receive_s"]) for x in lines if x["rep"] == r) for r in range(REPS)]
    return {
        "wan_mtu": mtu,
        "tcp": congestion,
        "slowest_flow_s": reps,
        "median_s": statistics.median(reps),
        "median_over_bound": statistics.median(reps) / BOUND_S,
        "flows_s": lines,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[4:], float(sys.argv[3]))
        return 0
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "collectives"
    rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    result = {
        "command": "scripts/tcp_floor.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_revision": rev,
        "platform": "das-4x2",
        "bytes_per_flow": BYTES,
        "lower_bound_s": BOUND_S,
        "default_congestion_control": Path("/proc/sys/net/ipv4/tcp_congestion_control")
        .read_text()
        .strip(),
        "runs": [],
    }
    for mtu, congestion in ((m, c) for c in TCP_VARIANTS for m in MTUS):
        r = measure(mtu, congestion)
        result["runs"].append(r)
        print(
            f"MTU {mtu}, {congestion}: slowest flow per repetition "
            + " ".join(f"{x:.3f}" for x in r["slowest_flow_s"])
            + f" s; median {r['median_s']:.3f} s = {r['median_over_bound']:.2f} x the bound"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "tcp-floor.json.tmp"
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(out_dir / "tcp-floor.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
