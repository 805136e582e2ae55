"""The zipper paper's figures set beside ours (results/zipper/README.md, block
zipper/paper): per figure of zipper-forwarder-mmpi's evaluation, what MMPI showed over the
native MPI of one cluster (the paper's words: its network was QDR InfiniBand, so only
ratios compare) and ours, forwarded over a direct link of the same latency and rate, from
the committed results files (zipper/p2p, zipper/collectives-*, zipper/apps)."""

from __future__ import annotations

from typing import Any

from isthmus.report import render_zipper as z
from isthmus.report import render_zipper_apps as zapps
from isthmus.report import results
from isthmus.report.results import table

# (the paper's figures, what MMPI showed in the paper's words, what of ours answers it)
PAPER = (
    ("Figure 6, small-message latency", "more than double the slower cluster's latency (a "
     "7-integer handshake before every message, a serial forwarder)", "latency_ratio"),
    ("Figure 6, bandwidth", "the forwarder's, below either cluster's", "bandwidth_fraction"),
    ("Figure 6, bidirectional bandwidth", "equal to one way: one half-duplex forwarder",
     "bibw_over_bw"),
    ("Figure 7, Barrier", "the expected latency of its handshakes", "barrier"),
    ("Figures 8-9, Bcast", "a drop for small transfers (the handshakes); for 100 B-100 KB and "
     "more than 4 processes about the worse cluster's", "bcast"),
    ("Figures 10-11, Alltoall", "a drop at 4 KiB and at 1 MiB: the half-duplex forwarder",
     "alltoall"),
    ("Figures 12-13, Alltoallv", "as Alltoall", None),
    ("Figures 14-15, Reduce", "serial through the forwarder (blocking receives); a peak at "
     "256 KiB", "reduce"),
    ("Figures 16-17, Allreduce", "about 20 times its interpolated latency at 256 KiB",
     "allreduce"),
    ("Figures 18-22, NAS EP, CG, MG, IS, FT", "EP and MG close to one cluster; CG, IS, FT "
     "bandwidth-bound, scaling worse", "apps"),
)  # fmt: skip


def _check(p2p: dict[str, Any] | None, key: str) -> str:
    c = next(c for c in z.P2P_CHECKS if c.key == key)
    if not p2p:
        return results.missing("zipper/p2p").strip()
    rs, decides = z.worst(p2p, c)
    if decides is None:
        return "-"
    each = ", ".join(f"{r.mpi} {r.median:.2f}" for r in rs)
    return f"{c.what}: {each} (target {c.bound} {c.target:g})"


def _collective(points: list[z.CollPoint], name: str) -> str:
    mine = [p for p in points if p.collective == name]
    if not mine:
        return "not measured yet"
    worst = max(mine, key=lambda p: p.ratio.median)
    at256 = [p for p in mine if p.nbytes == 256 << 10]
    text = (f"forwarded / direct, worst {worst.ratio.median:.2f}x ({worst.mpi}, {worst.ranks}, "
            f"{results.size(worst.nbytes)}) of {len(mine)} points")  # fmt: skip
    if at256:
        text += f"; at 256 KiB at most {max(p.ratio.median for p in at256):.2f}x"
    return text


def _apps(res: dict[str, Any] | None) -> str:
    if not res:
        return results.missing("zipper/apps").strip()
    pairs = [p for p in zapps.pairs(res) if p.against.endswith("-direct")]
    return (
        "; ".join(f"{p.app.removesuffix('-forwarded')} {p.mpi} {p.ratio_text()}" for p in pairs)
        or "-"
    )


def block(p2p: dict[str, Any] | None, colls: dict[str, dict[str, Any] | None],
          apps: dict[str, Any] | None) -> str:  # fmt: skip
    points = [p for res in colls.values() if res for p in z.coll_points(res)]
    rows = []
    for figure, theirs, ours in PAPER:
        if ours is None:
            mine = "not measured (Alltoall only)"
        elif ours == "apps":
            mine = "LAMMPS, HPCC, ScaLAPACK LU forwarded / direct (time): " + _apps(apps)
        elif ours in ("barrier", "bcast", "alltoall", "reduce", "allreduce"):
            mine = _collective(points, ours)
        else:
            mine = _check(p2p, ours)
        rows.append([figure, theirs, mine])
    head = ["the paper", "MMPI over the native MPI of one cluster (the paper's words)",
            "ours: forwarded over a direct link of the same latency and rate "
            "(medians)"]  # fmt: skip
    made = [results.made_by(r) for r in (p2p, *colls.values(), apps) if r]
    return table(head, rows, right_from=3) + "\n" + "\n\n".join(made) + "\n"
