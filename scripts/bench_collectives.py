#!/usr/bin/env python3
"""libisthmus's WAN-aware collectives against the MPI library's own, measured side by side
in the same runs (`isthmus bench coll --entries mpi,native`) on 4 clusters x 2 ranks
(das-4x2.toml: 10 ms one way, 1 MB/s links between every pair of clusters).

  latency    Barrier, Bcast and Allreduce of 8 bytes, with the wide-area latency as
             configured and at 0: the difference is what the wide-area links cost, in
             units of one latency. Three runs; the median of the runs' medians counts,
             "spread" is the largest minus the smallest over the median.
  bandwidth  Bcast 4 MiB, Allreduce 1 MiB, Alltoall 64 KiB per pair, Allgather 1 MiB per
             rank, against the lower bounds of docs/collectives.md, with 1500-byte packets
             on the wide-area links (wan.mtu). One run of three timed calls per entry (a
             call takes seconds): the median and the range.

  segments   Allreduce 1 MiB and Alltoall 64 KiB per pair on das-4x2 with wide-area
             segments of 16 KiB (the default), 32 KiB and 4 MiB (one message), both MPIs.

  zero       every collective of `coll` from 8 B to 256 KiB where the WAN costs nothing:
             one-cluster.toml, and two-clusters.toml with a 0 ms, 1 Gbit/s WAN (as fast as
             its LAN) with the selector's choice (native: the WAN does not pay), and with
             the hierarchical algorithms forced (MPICH). One run each.

Writes results/collectives/{latency,bandwidth,zero,segments}.{json,png} (or into OUT_DIR).
Usage: scripts/bench_collectives.py [latency|bandwidth|zero|segments|all] [OUT_DIR]
(latency about 3 minutes, bandwidth about 12, zero about 15, on 2 cores)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ISTHMUS = str(ROOT / "bin" / "isthmus")
DAS = str(ROOT / "examples" / "platforms" / "das-4x2.toml")
COLLECTIVES = ("barrier", "bcast", "allreduce")
# what `isthmus bench coll` measures
ZERO_COLLECTIVES = (
    "barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
    "reduce_scatter_block", "scan",
)  # fmt: skip
LATENCY_US = 10000.0
RUNS = 3


# Bandwidth-bound cases: collective, bytes per rank block (coll's --min-size), lower bound
# in seconds on das-4x2 (C = 4 clusters of n = 2 ranks, L = 10 ms, B = 1 MB/s per link).
C, N, L_S, B = 4, 2, 0.010, 1e6
# A native call moves megabytes through 1 MB/s links: the four cases take about 6 minutes
# per MPI. ISTHMUS_BENCH_MPIS=mpich (say) chooses.
BANDWIDTH_MPIS = tuple(os.environ.get("ISTHMUS_BENCH_MPIS", "mpich,openmpi").split(","))
# Wide-area packets of an Ethernet/Internet path, not the emulated devices' 65000 bytes:
# TCP's initial window of 10 such segments (650 KB) overflows a 256 KiB queue at once,
# and every call's transfer started with a burst of losses (results/collectives/README.md).
BANDWIDTH_SETS = ("wan.mtu=1500",)
BANDWIDTH = [
    ("bcast", 4 << 20, L_S + (4 << 20) / B),  # each other cluster gets M over its link
    ("allreduce", 1 << 20, L_S + 2 * (1 << 20) / (C * B)),  # 2M/C per link at least
    ("alltoall", 64 << 10, L_S + N * N * (64 << 10) / B),  # n^2 blocks per pair of clusters
    ("allgather", 1 << 20, L_S + N * (1 << 20) / B),  # n blocks into each cluster per link
]


def records(
    mpi: str,
    latency: str,
    out: Path,
    colls: tuple[str, ...],
    size: int,
    iterations: int,
    wait: str = "auto",
    placement: str = "block",
    sets: tuple[str, ...] = (),
    entries: str = "mpi,native",
) -> dict[tuple[str, str], dict[str, Any]]:
    """The coll records of one `isthmus bench coll` run, by (collective, entry)."""
    cmd = [
        ISTHMUS, "bench", "coll", "-p", DAS, "--set", "layer.collectives=isthmus",
        "--set", f"layer.wait={wait}", "--set", f"layer.placement={placement}",
        "--set", f"wan.latency={latency}", *(x for kv in sets for x in ("--set", kv)),
        "--mpi", mpi, "-o", str(out), "--", "--collectives", ",".join(colls),
        "--min-size", str(size), "--max-size", str(size),
        "--iterations", str(iterations), "--warmup", "1", "--entries", entries,
    ]  # fmt: skip
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    got = {}
    for line in out.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "coll":
            got[(r["collective"], r["entry"])] = r
    return got


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what not in ("latency", "bandwidth", "zero", "segments", "all"):
        sys.exit(
            "bench_collectives.py: expected latency, bandwidth, zero, segments or all, "
            f"got {what!r}"
        )
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "results" / "collectives"
    out_dir.mkdir(parents=True, exist_ok=True)
    if what in ("latency", "all"):
        latency_bound(out_dir)
    if what in ("bandwidth", "all"):
        bandwidth_bound(out_dir)
    if what in ("zero", "all"):
        zero_cost(out_dir)
    if what in ("segments", "all"):
        wan_segments(out_dir)
    return 0


# Wide-area segment sizes (collectives.segment) for Allreduce's split exchange and the
# aggregated Alltoall: 16 KiB (the default), 32 KiB (a rendezvous message for MPICH over
# UCX) and 4 MiB (one message per pair of clusters: what both sent before segments).
SEGMENTS = ("16KiB", "32KiB", "4MiB")
SEGMENT_CASES = [("allreduce", 1 << 20), ("alltoall", 64 << 10)]


def wan_segments(out_dir: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpi in ("mpich", "openmpi"):
            for coll, size in SEGMENT_CASES:
                row: dict[str, Any] = {"mpi": mpi, "collective": coll, "bytes": size}
                for seg in SEGMENTS:
                    out = Path(tmp) / "seg.jsonl"
                    # native once per case: the segment size is not its setting
                    entries = "mpi,native" if seg == SEGMENTS[0] else "mpi"
                    sets = (f"collectives.segment={seg}",)
                    got = records(mpi, "10ms", out, (coll,), size, 3, sets=sets, entries=entries)
                    row[f"isthmus_{seg}_s"] = got[(coll, "mpi")]["latency_median_us"] / 1e6
                    if seg == SEGMENTS[0]:
                        row["native_s"] = got[(coll, "native")]["latency_median_us"] / 1e6
                rows.append(row)
                print(
                    f"{mpi:8} {coll:10} "
                    + "  ".join(f"{seg} {row[f'isthmus_{seg}_s']:.3f} s" for seg in SEGMENTS)
                    + f"  native {row['native_s']:.3f} s"
                )
    doc = {
        "command": "scripts/bench_collectives.py segments",
        "git_revision": revision(),
        "platform": "das-4x2.toml (4 clusters x 2 ranks, 10 ms one way, 1 MB/s)",
        "timed_calls": 3,
        "rows": rows,
    }
    (out_dir / "segments.json").write_text(json.dumps(doc, indent=1) + "\n")
    bar_chart(
        rows,
        [(f"isthmus, {seg} segments", [r[f"isthmus_{seg}_s"] for r in rows]) for seg in SEGMENTS]
        + [("native", [r["native_s"] for r in rows])],
        "median time (s)",
        "das-4x2: wide-area segment size",
        out_dir / "segments.png",
    )


ZERO_CASES = [
    (("mpich", "openmpi"), "one-cluster", "one-cluster.toml", ()),
    (
        ("mpich", "openmpi"),
        "two-clusters, 0 ms WAN",
        "two-clusters.toml",
        ("wan.latency=0", "wan.bandwidth=1Gbit/s"),
    ),
    (
        ("mpich",),
        "two-clusters, 0 ms WAN, hierarchical forced",
        "two-clusters.toml",
        (
            "wan.latency=0",
            "wan.bandwidth=1Gbit/s",
            *(f"collectives.algorithm.{c}=hierarchical" for c in ZERO_COLLECTIVES),
        ),
    ),
]


def zero_cost(out_dir: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpis, name, platform, sets in ZERO_CASES:
            for mpi in mpis:
                out = Path(tmp) / "zero.jsonl"
                cmd = [
                    ISTHMUS, "bench", "coll", "-p", str(ROOT / "examples" / "platforms" / platform),
                    "--set", "layer.collectives=isthmus",
                    *(x for kv in sets for x in ("--set", kv)),
                    "--mpi", mpi, "-o", str(out), "--", "--min-size", "8", "--max-size", "262144",
                    "--iterations", "5", "--warmup", "1", "--entries", "mpi,native",
                ]  # fmt: skip
                print("+", " ".join(cmd), file=sys.stderr, flush=True)
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                got: dict[tuple[str, int, str], float] = {}
                for line in out.read_text().splitlines():
                    r = json.loads(line)
                    if r.get("record") == "coll":
                        got[(r["collective"], r["bytes"], r["entry"])] = r["latency_median_us"]
                ratios = {
                    (c, b): v / got[(c, b, "native")] for (c, b, e), v in got.items() if e == "mpi"
                }
                worst = max(ratios, key=lambda k: ratios[k])
                row: dict[str, Any] = {
                    "mpi": mpi, "case": name, "points": len(ratios),
                    "median_ratio": statistics.median(ratios.values()),
                    "over_3_percent": sum(r > 1.03 for r in ratios.values()),
                    "worst_ratio": ratios[worst], "worst_point": list(worst),
                    "ratios": [[c, b, r] for (c, b), r in sorted(ratios.items())],
                }  # fmt: skip
                rows.append(row)
                print(
                    f"{mpi:8} {name:45} isthmus/native median {row['median_ratio']:.3f}, "
                    f"{row['over_3_percent']}/{len(ratios)} over 1.03, worst "
                    f"{row['worst_ratio']:.2f} at {worst}"
                )
    doc = {
        "command": "scripts/bench_collectives.py zero",
        "git_revision": revision(),
        "rows": rows,
    }
    (out_dir / "zero.json").write_text(json.dumps(doc, indent=1) + "\n")


def revision() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def bandwidth_bound(out_dir: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpi in BANDWIDTH_MPIS:
            got: dict[tuple[str, str], dict[str, float]] = {}
            for coll, size, _ in BANDWIDTH:
                out = Path(tmp) / "bw.jsonl"
                got.update(records(mpi, "10ms", out, (coll,), size, 3, sets=BANDWIDTH_SETS))
            for coll, size, bound in BANDWIDTH:
                mine, theirs = got[(coll, "mpi")], got[(coll, "native")]
                isthmus = mine["latency_median_us"] / 1e6
                native = theirs["latency_median_us"] / 1e6
                row: dict[str, Any] = {
                    "mpi": mpi, "collective": coll, "bytes": size, "lower_bound_s": bound,
                    "isthmus_s": isthmus, "native_s": native,
                    "isthmus_over_bound": isthmus / bound, "native_over_isthmus": native / isthmus,
                    "isthmus_range_s": [mine["latency_min_us"] / 1e6,
                                        mine["latency_max_us"] / 1e6],
                    "native_range_s": [theirs["latency_min_us"] / 1e6,
                                       theirs["latency_max_us"] / 1e6],
                }  # fmt: skip
                rows.append(row)
                print(
                    f"{mpi:8} {coll:10} bound {bound:6.3f} s  isthmus {isthmus:6.3f} s "
                    f"({isthmus / bound:.2f} x bound)  native {native:6.3f} s"
                )
    doc = {
        "command": "scripts/bench_collectives.py bandwidth",
        "git_revision": revision(),
        "platform": "das-4x2.toml (4 clusters x 2 ranks, 10 ms one way, 1 MB/s)",
        "settings": list(BANDWIDTH_SETS),
        "timed_calls": 3,
        "rows": rows,
    }
    (out_dir / "bandwidth.json").write_text(json.dumps(doc, indent=1) + "\n")
    bar_chart(
        rows,
        [(k, [r[f"{key}_s"] for r in rows]) for k, key in
         (("lower bound", "lower_bound"), ("isthmus", "isthmus"), ("native", "native"))],
        "median time (s)",
        "das-4x2, 1 MB/s links: bandwidth-bound collectives",
        out_dir / "bandwidth.png",
    )  # fmt: skip


def bar_chart(
    rows: list[dict[str, Any]],
    series: list[tuple[str, list[float]]],
    ylabel: str,
    title: str,
    path: Path,
    line: tuple[str, float] | None = None,
) -> None:
    """Grouped bars, one group per row (collective and MPI), one bar per series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series):
        offset = (k - (len(series) - 1) / 2) * width
        ax.bar([i + offset for i in range(len(rows))], values, width, label=label)
    if line is not None:
        ax.axhline(line[1], color="gray", linestyle="--", label=line[0])
    labels = [
        f"{r['collective']}\n{r['mpi']}"
        + (f"\n{r['wait']}" if "wait" in r else "")
        + ("\nr-robin" if r.get("placement") == "round-robin" else "")
        for r in rows
    ]
    ax.set_xticks(list(range(len(rows))), labels)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} (scripts/bench_collectives.py)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# (MPI, waiting mode): 8 ranks on 2 cores sleep while they wait (layer.wait=auto), which
# runs a native blocking collective as its nonblocking form plus tests; Open MPI's own
# blocking algorithms (which yield the core when oversubscribed) are also measured spinning.
# (MPI, layer.wait, layer.placement): round-robin puts consecutive ranks in different
# clusters, which changes the native algorithms' wide-area steps, not isthmus's.
LATENCY_CASES = [
    ("mpich", "auto", "block"),
    ("openmpi", "auto", "block"),
    ("openmpi", "spin", "block"),
    ("mpich", "auto", "round-robin"),
    ("openmpi", "auto", "round-robin"),
]


def latency_bound(out_dir: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpi, wait, placement in LATENCY_CASES:
            runs: dict[str, list[dict[tuple[str, str], float]]] = {"10ms": [], "0ms": []}
            for i in range(RUNS):
                for lat in runs:
                    out = Path(tmp) / f"{mpi}-{wait}-{placement}-{lat}-{i}.jsonl"
                    got = records(mpi, lat, out, COLLECTIVES, 8, 10, wait, placement)
                    runs[lat].append({k: r["latency_median_us"] for k, r in got.items()})
            for coll in COLLECTIVES:
                row: dict[str, Any] = {
                    "mpi": mpi,
                    "wait": wait,
                    "placement": placement,
                    "collective": coll,
                    "bytes": 0 if coll == "barrier" else 8,
                }
                for entry, name in (("mpi", "isthmus"), ("native", "native")):
                    for lat in runs:
                        vals = [r[(coll, entry)] for r in runs[lat]]
                        row[f"{name}_{lat}_us"] = statistics.median(vals)
                        row[f"{name}_{lat}_spread"] = (max(vals) - min(vals)) / statistics.median(
                            vals
                        )
                    wan = float(row[f"{name}_10ms_us"]) - float(row[f"{name}_0ms_us"])
                    row[f"{name}_wan_latencies"] = wan / LATENCY_US
                row["speedup"] = float(row["native_10ms_us"]) / float(row["isthmus_10ms_us"])
                rows.append(row)
                print(
                    f"{mpi:8} {wait:5} {placement:11} {coll:10} "
                    f"isthmus {row['isthmus_10ms_us']:9.0f} us "
                    f"({row['isthmus_wan_latencies']:.2f} WAN latencies)  native "
                    f"{row['native_10ms_us']:9.0f} us ({row['native_wan_latencies']:.2f})  "
                    f"speedup {row['speedup']:.2f}"
                )
    doc = {
        "command": "scripts/bench_collectives.py latency",
        "git_revision": revision(),
        "platform": "das-4x2.toml (4 clusters x 2 ranks, 10 ms one way, 1 MB/s)",
        "runs": RUNS,
        "rows": rows,
    }
    (out_dir / "latency.json").write_text(json.dumps(doc, indent=1) + "\n")
    bar_chart(
        rows,
        [(k, [r[f"{k}_10ms_us"] / 1e3 for r in rows]) for k in ("native", "isthmus")],
        "median latency (ms)",
        "4 clusters x 2 ranks, 10 ms WAN: 8-byte collectives",
        out_dir / "latency.png",
        ("one WAN latency", LATENCY_US / 1e3),
    )


if __name__ == "__main__":
    sys.exit(main())
