"""What each zipper forwarder carried (`isthmus-forward --stats`, src/forward/forward_stats.c),
merged into a run's profile and shown per forwarder (docs/profile.md).

A forwarder counts per pair of world ranks: frames, payload bytes, how often flow control
held the sender, and the wait it added (a frame's last byte in to its last byte out). The
profile keeps its pairs; direction (cluster to cluster) and source rank are sums over
them, made here with the profile's own map of ranks to clusters. Under time dilation the
forwarder runs in real time: its waits and duration are divided by the factor, as the
layer's own times are; the histogram keeps real microseconds (it says so).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus import records
from isthmus.config.units import format_size
from isthmus.errors import UserError

STATS_SCHEMA = "isthmus-forwarder-stats"


def read_stats(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The stats files the forwarders wrote (those that ended well), in the order given."""
    out = []
    for p in paths:
        if not p.exists():
            continue
        d = records.read_json(p, what="forwarder statistics")
        if not isinstance(d, dict) or d.get("schema") != STATS_SCHEMA:
            raise UserError(f'{p}: not forwarder statistics (expected "schema": "{STATS_SCHEMA}")')
        out.append(d)
    return out


def merged(stats: list[dict[str, Any]], dilation: float) -> list[dict[str, Any]]:
    """The profile's "forwarders": each forwarder's counts, times in virtual seconds."""
    out = []
    for s in stats:
        pairs = [
            {
                **p,
                "wait_seconds": p["wait_seconds"] / dilation,
                "wait_max_seconds": p["wait_max_seconds"] / dilation,
            }
            for p in s["pairs"]
        ]
        out.append(
            {
                "name": s["name"],
                "seconds": s["seconds"] / dilation,
                "dropped_bytes": s["dropped_bytes"],
                "pairs": pairs,
                "connections": s["connections"],
                "wait_histogram_real_us": s["wait_histogram_us"],
                "dilation": dilation,
            }
        )
    return out


def add_to_profile(profile: Path, stats: list[Path], dilation: float = 1.0) -> int:
    """Merge forwarders' stats files into a profile (atomically); how many were merged.
    For real sites, where each forwarder ran with `isthmus forward --stats FILE`."""
    data = records.read_json(profile, what="isthmus profile")
    found = read_stats(stats)
    data["forwarders"] = data.get("forwarders", []) + merged(found, dilation)
    records.write_json(profile, data, "profile")
    return len(found)


def _sums(pairs: list[dict[str, Any]], key: Any) -> list[tuple[Any, int, int, float, float, int]]:
    """(group, frames, bytes, wait sum, wait max, held) per group of pairs."""
    acc: dict[Any, list[Any]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0])
    for p in pairs:
        a = acc[key(p)]
        a[0] += p["frames"]
        a[1] += p["bytes"]
        a[2] += p["wait_seconds"]
        a[3] = max(a[3], p["wait_max_seconds"])
        a[4] += p["held"]
    return [(k, *v) for k, v in sorted(acc.items())]


def on_host(fwd: dict[str, Any]) -> set[int]:
    """The ranks that ran on the forwarder's own (zipper) host."""
    return {c["rank"] for c in fwd["connections"] if c.get("same_host")}


def between_networks(profile: dict[str, Any]) -> int | None:
    """Bytes the forwarders relayed between two ranks neither of which ran on the
    forwarder's host (so they crossed both networks); None when the run had none."""
    if not profile.get("forwarders"):
        return None
    return sum(
        int(p["bytes"])
        for fwd in profile["forwarders"]
        for p in fwd["pairs"]
        if not {p["src"], p["dst"]} & on_host(fwd)
    )


def per_direction(
    fwd: dict[str, Any], rank_cluster: list[int]
) -> list[tuple[tuple[int, int, bool], int, int, float, float, int]]:
    """Per (source cluster, destination cluster, whether a rank on the forwarder's host
    is one end: then the bytes crossed one network, not two): frames, bytes, wait sum,
    max, held."""
    here = on_host(fwd)
    return _sums(
        fwd["pairs"],
        lambda p: (
            rank_cluster[p["src"]],
            rank_cluster[p["dst"]],
            bool({p["src"], p["dst"]} & here),
        ),
    )


def per_source(fwd: dict[str, Any]) -> list[tuple[int, int, int, float, float, int]]:
    """Per source rank: frames, bytes, wait sum, max, held."""
    return _sums(fwd["pairs"], lambda p: p["src"])


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def show(d: dict[str, Any], console: Console) -> None:
    """One table per forwarder: what it relayed per direction and per source rank."""
    clusters: list[str] = d["clusters"]
    rank_cluster = [r["cluster"] for r in d["ranks"]]
    for fwd in d.get("forwarders", []):
        t = Table(
            title=f"Forwarder {fwd['name']}: what it relayed in {fwd['seconds']:.3f} s "
            "(wait: a frame's last byte in to its last byte out; held: senders paused "
            "for a full queue)"
        )
        for col in ("from", "to", "networks", "frames", "bytes", "mean wait us", "max wait us",
                    "held"):  # fmt: skip
            t.add_column(col, justify="left" if col in ("from", "to", "networks") else "right")
        for (src, dst, local), frames, nbytes, wait, wmax, held in per_direction(fwd, rank_cluster):
            t.add_row(
                f"cluster {clusters[src]}", clusters[dst], "one (a rank here)" if local else "both",
                str(frames), format_size(nbytes), _us(wait / frames) if frames else "-",
                _us(wmax), str(held),
            )  # fmt: skip
        t.add_section()
        here = on_host(fwd)
        for rank, frames, nbytes, wait, wmax, held in per_source(fwd):
            t.add_row(
                f"rank {rank} ({clusters[rank_cluster[rank]]})", "any",
                "on this host" if rank in here else "", str(frames), format_size(nbytes),
                _us(wait / frames) if frames else "-", _us(wmax), str(held),
            )  # fmt: skip
        console.print(t)
        if fwd["dropped_bytes"]:
            console.print(
                f"  {format_size(fwd['dropped_bytes'])} dropped: sent to ranks that had ended"
            )
