"""MPI ping-pong bandwidth against message size per RTT, for Open MPI and MPICH, over the
emulated network (the first paper's Figures 4-7), and at the largest RTT with default and
enlarged TCP buffers.

    .venv/bin/python scripts/bench_mpi_bandwidth.py [--seconds-per-size 0.1]

Brings up examples/platforms/pair-wan.toml (two hosts, 1 Gbit/s links) once, sets the
WAN latency to RTT/2 for each point with `isthmus net set`, runs build/bin/MPI/pingpong
through `isthmus run --net`, and writes results/net/mpi-bandwidth.json and
results/net/mpi-bandwidth.png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ISTHMUS = str(ROOT / "bin" / "isthmus")
PLATFORM = str(ROOT / "examples" / "platforms" / "pair-wan.toml")
RTTS_MS = (0.0, 1.0, 2.0, 4.0)
BIG_BUFFER = 8 << 20
# How each MPI is told to use larger TCP socket buffers.
BUFFER_ENV = {
    "openmpi": {
        "OMPI_MCA_btl_tcp_sndbuf": str(BIG_BUFFER),
        "OMPI_MCA_btl_tcp_rcvbuf": str(BIG_BUFFER),
    },
    "mpich": {"UCX_TCP_SNDBUF": str(BIG_BUFFER), "UCX_TCP_RCVBUF": str(BIG_BUFFER)},
}


def run_pingpong(net: str, mpi: str, seconds: float, env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            ISTHMUS,
            "run",
            "-p",
            PLATFORM,
            "--net",
            net,
            "--mpi",
            mpi,
            "--timeout",
            "10min",
            "--",
            str(ROOT / "build" / "bin" / mpi / "pingpong"),
            "--seconds-per-size",
            str(seconds),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds-per-size", type=float, default=0.1)
    args = ap.parse_args()
    net = f"bw{os.getpid() % 100000}"
    subprocess.run([ISTHMUS, "net", "up", "-p", PLATFORM, "--name", net], check=True)
    curves = []
    try:
        for rtt in RTTS_MS:
            subprocess.run(
                [ISTHMUS, "net", "set", "--name", net, "wan:*", f"latency={rtt / 2}ms"],
                check=True,
                capture_output=True,
            )
            for mpi in ("openmpi", "mpich"):
                variants = [("default", {})]
                if rtt == max(RTTS_MS):
                    variants.append((f"buffers {BIG_BUFFER >> 20} MiB", BUFFER_ENV[mpi]))
                for label, env in variants:
                    records = run_pingpong(net, mpi, args.seconds_per_size, env)
                    curves.append(
                        {
                            "mpi": mpi,
                            "rtt_ms": rtt,
                            "tcp_buffers": label,
                            "env": env,
                            "library": records[0]["mpi_library"],
                            "sizes": records[1:],
                        }
                    )
                    peak = max(r["bandwidth_mbit"] for r in records[1:])
                    print(f"RTT {rtt} ms {mpi} ({label}): peak {peak:.0f} Mbit/s")
    finally:
        subprocess.run([ISTHMUS, "net", "down", "--name", net], check=True, capture_output=True)
    out = ROOT / "results" / "net"
    rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    (out / "mpi-bandwidth.json").write_text(
        json.dumps(
            {
                "benchmark": "MPI ping-pong bandwidth per RTT over the emulated network",
                "command": "scripts/bench_mpi_bandwidth.py --seconds-per-size "
                f"{args.seconds_per_size}",
                "platform": "examples/platforms/pair-wan.toml (1 Gbit/s WAN and LAN ports)",
                "git_revision": rev,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "curves": curves,
            },
            indent=1,
        )
        + "\n"
    )
    plot(curves, out / "mpi-bandwidth.png")


def plot(curves: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2), constrained_layout=True, sharey=True)
    for ax, mpi, title in (
        (axes[0], "openmpi", "Open MPI 4.1.4 (btl tcp)"),
        (axes[1], "mpich", "MPICH 4.0.2 (ch4:ucx, tcp)"),
    ):
        for c in (c for c in curves if c["mpi"] == mpi):
            sizes = [r["bytes"] for r in c["sizes"]]
            bw = [r["bandwidth_mbit"] for r in c["sizes"]]
            label = f"RTT {c['rtt_ms']:g} ms" + (
                "" if c["tcp_buffers"] == "default" else f", {c['tcp_buffers']}"
            )
            ax.plot(
                sizes,
                bw,
                marker="o",
                ms=3,
                ls="--" if c["tcp_buffers"] != "default" else "-",
                label=label,
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("ping-pong bandwidth (Mbit/s): 2 x size / round trip")
    fig.suptitle(
        "MPI point-to-point bandwidth across an emulated 1 Gbit/s WAN link "
        "(scripts/bench_mpi_bandwidth.py)"
    )
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
