"""Plot `isthmus net selftest --json` results: RTT error against delay, goodput against
rate, and goodput per MTU.   plot_selftest.py RUN1.json [RUN2.json ...] -o OUT.png"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main() -> None:
    files = [Path(a) for a in sys.argv[1:-2]]
    out = Path(sys.argv[-1])
    runs = [json.loads(f.read_text()) for f in files]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(17, 4.8), constrained_layout=True)
    for i, run in enumerate(runs, 1):
        rows = run["raw"]["delays_ms"]
        veth = run["raw"]["veth"]["rtt_median_us"]
        d = [r["delay_ms"] for r in rows]
        for proto, marker in (("tcp", "o"), ("udp", "s")):
            raw = [r[proto]["median_us"] - 2000 * r["delay_ms"] for r in rows]
            corr = [x - veth[proto] for x in raw]
            ax1.plot(d, corr, marker=marker, label=f"run {i} {proto}, less veth RTT")
            ax1.plot(d, raw, marker=marker, ls=":", alpha=0.6, label=f"run {i} {proto}, raw")
    tol = [max(50.0, 0.02 * 2000 * x) for x in (0.5, 1, 2, 5, 10, 20)]
    ax1.fill_between(
        [0.5, 1, 2, 5, 10, 20],
        [-t for t in tol],
        tol,
        color="green",
        alpha=0.1,
        label="target: max(50 us, 2%)",
    )
    ax1.set_xscale("log")
    ax1.set_xlabel("configured one-way delay (ms)")
    ax1.set_ylabel("RTT error (us): measured - 2 x delay")
    ax1.set_title("RTT, 64 B ping-pong")
    ax1.legend(fontsize=7)
    for i, run in enumerate(runs, 1):
        rates = run["raw"]["rates_mbit"]
        ax2.plot(
            [r["rate_mbit"] for r in rates],
            [100 * r["goodput_bps"] / (r["rate_mbit"] * 1e6) for r in rates],
            marker="o",
            label=f"run {i}",
        )
    ax2.axhspan(90, 102, color="green", alpha=0.1, label="target 90-102%")
    ax2.set_xscale("log")
    ax2.set_ylim(80, 105)
    ax2.set_xlabel("configured rate (Mbit/s), 5 ms one-way")
    ax2.set_ylabel("TCP goodput (% of rate)")
    ax2.set_title("TCP goodput")
    ax2.legend()
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        mtus = run["raw"]["mtus"]
        xs = [j + i * width for j in range(len(mtus) + 1)]
        vals = [m["goodput_bps"] / 1e9 for m in mtus] + [run["raw"]["veth"]["goodput_bps"] / 1e9]
        ax3.bar(xs, vals, width, label=f"run {i + 1}")
    ax3.set_xticks(
        [j + 0.4 - width / 2 for j in range(len(runs[0]["raw"]["mtus"]) + 1)],
        [f"router, MTU {m['mtu']}" for m in runs[0]["raw"]["mtus"]] + ["direct veth"],
        fontsize=8,
    )
    ax3.axhline(4, color="red", ls="--", label="target: 4 Gbit/s")
    ax3.set_ylabel("TCP goodput (Gbit/s), no delay, no rate")
    ax3.set_title("Speed of the router")
    ax3.legend()
    fig.suptitle(
        "isthmus net selftest (isthmus net selftest --json results/net/selftest-runN.json)"
    )
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
