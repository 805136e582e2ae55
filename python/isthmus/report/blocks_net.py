"""The emulated network's and the layer's tables and plots: the router's self-test, MPI
bandwidth through it, the waiting modes, and the profiling layer's overhead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isthmus.config.units import parse_duration
from isthmus.report.plotting import pyplot
from isthmus.report.results import made_by, pct, size, table


def _range(s: dict[str, Any], fmt: str = "{:.1f}") -> str:
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])} to {fmt.format(s['max'])})"


def block_selftest(res: dict[str, Any]) -> str:
    rows = res["rows"]
    p = res.get("params", {})
    setting = []
    if p.get("dilate", 1) != 1:
        setting.append(f"time dilation K = {p['dilate']:g}: every figure is virtual")
    if p.get("busy"):
        setting.append(f"{p['busy']} spinning processes (nice 19) as load")
    if p.get("mpi_job"):
        setting.append(f"an MPI job of {p['mpi_job']} ranks running beside it")
    setting.append(f"router at {'SCHED_FIFO' if p.get('router_sched') == 'fifo' else 'nice -10'}")
    delay = [
        [
            f"{r['delay_ms']:g} ms",
            r["proto"],
            _range(r["raw_error_us"]),
            _range(r["error_less_veth_us"]),
            f"{r['tolerance_us']:.0f}",
            "yes" if max(abs(r["raw_error_us"]["min"]), abs(r["raw_error_us"]["max"]))
            <= r["tolerance_us"] else "**no**",
            _range(r["router_late_us"]) if "router_late_us" in r else "-",
        ]
        for r in rows if r["kind"] == "delay"
    ]  # fmt: skip
    text = f"Setting: {'; '.join(setting)}.\n\n"
    text += "RTT error in us (median RTT - 2 x one-way delay; median and range over the runs):\n\n"
    text += table(["one-way delay", "protocol", "raw error", "error less the veth pair's RTT",
                   "tolerance", "raw within in every run", "router's own lateness"], delay,
                  right_from=2)  # fmt: skip
    rate = [[f"{r['rate_mbit']:g} Mbit/s", _range({k: 100 * v for k, v in r["fraction"].items()
                                                   if k != "reps"}) + " %"]
            for r in rows if r["kind"] == "rate"]  # fmt: skip
    text += "\nTCP goodput at 5 ms one way, as a percentage of the configured rate:\n\n"
    text += table(["rate", "goodput"], rate)
    mtu = [[str(r["mtu"]), _range(r["goodput_gbps"], "{:.2f}"), _range(r["veth_gbps"], "{:.1f}")]
           for r in rows if r["kind"] == "mtu"]  # fmt: skip
    text += "\nTCP goodput with no delay and no rate limit, Gbit/s:\n\n"
    text += table(["MTU", "through the router", "direct veth pair"], mtu)
    loss = next(r for r in rows if r["kind"] == "loss")
    lo, hi = loss["interval_99"]
    text += (
        f"\nLoss {loss['configured']:g} on one direction: {_range(loss['lost'], '{:.0f}')} of "
        f"{loss['sent']} ping-pongs lost; the 99% binomial interval is {lo} to {hi}.\n"
    )
    return text + "\n" + made_by(res) + "\n"


def plot_selftest(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    rows = res["rows"]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.5), constrained_layout=True)
    delays = sorted({r["delay_ms"] for r in rows if r["kind"] == "delay"})
    for proto, marker in (("tcp", "o"), ("udp", "s")):
        rs = [r for r in rows if r["kind"] == "delay" and r["proto"] == proto]
        for key, style in (("raw_error_us", "-"), ("error_less_veth_us", ":")):
            med = [r[key]["median"] for r in rs]
            err = [[m - r[key]["min"] for m, r in zip(med, rs, strict=True)],
                   [r[key]["max"] - m for m, r in zip(med, rs, strict=True)]]  # fmt: skip
            label = f"{proto}, {'raw' if key == 'raw_error_us' else 'less veth RTT'}"
            ax1.errorbar(delays, med, yerr=err, marker=marker, ls=style, capsize=3, label=label)
    tol = [max(50.0, 40.0 * d) for d in delays]
    ax1.fill_between(delays, [-t for t in tol], tol, color="green", alpha=0.1, label="target")
    ax1.set_xscale("log")
    ax1.set_xlabel("configured one-way delay (ms)")
    ax1.set_ylabel("RTT - 2 x delay (us)")
    ax1.legend(fontsize=7)
    rates = [r for r in rows if r["kind"] == "rate"]
    ax2.plot([r["rate_mbit"] for r in rates], [100 * r["fraction"]["median"] for r in rates], "o-")
    ax2.axhspan(90, 102, color="green", alpha=0.1)
    ax2.set_xscale("log")
    ax2.set_xlabel("configured rate (Mbit/s)")
    ax2.set_ylabel("TCP goodput (% of rate)")
    mtus = [r for r in rows if r["kind"] == "mtu"]
    xs = range(len(mtus))
    ax3.bar([x - 0.2 for x in xs], [r["goodput_gbps"]["median"] for r in mtus], 0.4, label="router")
    ax3.bar([x + 0.2 for x in xs], [r["veth_gbps"]["median"] for r in mtus], 0.4, label="veth")
    ax3.axhline(4, color="gray", ls="--", label="target: 4 Gbit/s")
    ax3.set_xticks(list(xs), [str(r["mtu"]) for r in mtus])
    ax3.set_xlabel("MTU (bytes)")
    ax3.set_ylabel("TCP goodput, no delay (Gbit/s)")
    ax3.legend(fontsize=7)
    fig.suptitle("isthmus net selftest (isthmus experiment render)")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def block_overhead(res: dict[str, Any]) -> str:
    def cell(m: dict[str, Any]) -> str:
        return (f"{m['median_ns']:.1f} ({m['min_ns']:.1f} to {m['max_ns']:.1f}; "
                f"p10-p90 {m['p10_ns']:.0f} to {m['p90_ns']:.0f})")  # fmt: skip

    rows = [
        [r["mpi"], r["benchmark"], f"{r['pmpi_ns_per_iteration']:.0f}", cell(r["layer_off"]),
         cell(r["layer_on"])]
        for r in res["rows"]
    ]  # fmt: skip
    head = ["MPI", "benchmark", "PMPI ns per iteration", "added ns per call, profiling off",
            "added ns per call, profiling on"]  # fmt: skip
    return table(head, rows, right_from=2) + "\n" + made_by(res) + "\n"


def plot_overhead(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    rows = res["rows"]
    fig, ax = plt.subplots(figsize=(10, 4.2), constrained_layout=True)
    labels = [f"{r['benchmark']}\n{r['mpi']}" for r in rows]
    for k, (mode, name) in enumerate(
        (("layer_off", "profiling off"), ("layer_on", "profiling on"))
    ):
        med = [r[mode]["median_ns"] for r in rows]
        err = [[m - r[mode]["min_ns"] for m, r in zip(med, rows, strict=True)],
               [r[mode]["max_ns"] - m for m, r in zip(med, rows, strict=True)]]  # fmt: skip
        ax.bar([i + (k - 0.5) * 0.4 for i in range(len(rows))], med, 0.4, yerr=err, capsize=3,
               label=name)  # fmt: skip
    for target in (3, 25):
        ax.axhline(target, color="gray", ls="--", lw=0.8)
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("added ns per call (median; range over runs)")
    ax.set_title("libisthmus overhead (isthmus experiment render)", fontsize=10)
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def block_mpi_bandwidth(res: dict[str, Any]) -> str:
    curves: dict[tuple[str, str], dict[int, float]] = {}
    for r in res["rows"]:
        curves.setdefault((r["mpi"], r["point"]["wan.latency"]), {})[r["key"]["bytes"]] = r[
            "median"
        ]
    sizes = [s for s in (1024, 16384, 65536, 1 << 20) if all(s in c for c in curves.values())]
    rows = [
        [mpi, f"{2e3 * parse_duration(lat):g} ms",
         *(f"{c[s]:.0f}" for s in sizes), f"{max(c.values()):.0f}"]
        for (mpi, lat), c in curves.items()
    ]  # fmt: skip
    head = ["MPI", "round trip", *(f"{size(s)}" for s in sizes), "peak"]
    return (
        "Ping-pong throughput in Mbit/s from the fastest round trip of each size (NetPIPE's "
        "method; median over the repetitions) at some sizes, and the curve's peak:\n\n"
        + table(head, rows, right_from=2)
        + "\n"
        + made_by(res)
        + "\n"
    )


def plot_mpi_bandwidth(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    mpis = list(dict.fromkeys(r["mpi"] for r in res["rows"]))
    fig, axes = plt.subplots(1, len(mpis), figsize=(7 * len(mpis), 5), squeeze=False,
                             sharey=True, constrained_layout=True)  # fmt: skip
    for ax, mpi in zip(axes[0], mpis, strict=True):
        for lat in dict.fromkeys(r["point"]["wan.latency"] for r in res["rows"]):
            rs = sorted((r for r in res["rows"] if r["mpi"] == mpi and r["point"]["wan.latency"]
                         == lat), key=lambda r: r["key"]["bytes"])  # fmt: skip
            ax.plot([r["key"]["bytes"] for r in rs], [r["median"] for r in rs], "o-", ms=3,
                    label=f"one way {lat}")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bandwidth (Mbit/s)")
        ax.set_title(f"{mpi}: ping-pong over a 1 Gbit/s emulated WAN", fontsize=10)
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def block_wait_mode(res: dict[str, Any]) -> str:
    rows = [[r["case"], f"{r['median']:.1f} us ({pct(r['spread'])})",
             " ".join(f"{v:.1f}" for v in r["reps"])] for r in res["rows"]]  # fmt: skip
    head = ["case", "time per Allreduce (median, spread)", "every run"]
    return table(head, rows, right_from=1) + "\n" + made_by(res) + "\n"
