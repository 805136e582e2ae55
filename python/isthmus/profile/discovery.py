"""What a profile says of how the layer found the clusters and the link parameters
(layer.clusters = "auto": src/world/discover.c, src/coll/plogp_measure.c), for
`isthmus profile show` and the adaptive experiments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.config.units import format_size


def same_partition(found: Sequence[int | str], expected: Sequence[int | str]) -> bool:
    """Whether two labellings of the ranks group them alike (names aside)."""
    if len(found) != len(expected):
        return False
    there: dict[int | str, int | str] = {}
    back: dict[int | str, int | str] = {}
    for f, e in zip(found, expected, strict=True):
        if there.setdefault(f, e) != e or back.setdefault(e, f) != f:
            return False
    return True


def discovered_clusters(data: dict[str, Any]) -> list[int] | None:
    """Every rank's discovered cluster, or None when the clusters came from the settings."""
    if data.get("clusters_from") != "measured":
        return None
    return [r["cluster"] for r in data["ranks"]]


def matches_platform(data: dict[str, Any]) -> bool | None:
    """Whether the discovered clusters are the platform's (None: nothing to compare)."""
    found = discovered_clusters(data)
    expected = data.get("run", {}).get("platform", {}).get("rank_clusters")
    if found is None or not expected:
        return None
    return same_partition(found, expected)


def show(data: dict[str, Any], console: Console) -> None:
    d = data.get("discovery")
    if data.get("clusters_from") == "measured" and d:
        verdict = matches_platform(data)
        against = (
            ""
            if verdict is None
            else "; the platform's clusters exactly"
            if verdict
            else "; [red]not the platform's clusters[/red]"
        )
        console.print(
            f"clusters measured at MPI_Init in {d['seconds'] * 1e3:.1f} ms: {d['hosts']} hosts, "
            f"{d['pairs']} pairs in {d['rounds']} rounds ({d.get('careful', 0)} measured one "
            f"at a time), local below {d['cut_us']:.0f} us (round trips "
            f"{d['least_rtt_us']:.0f} to {d['largest_rtt_us']:.0f} us){against}"
        )
    p = data.get("plogp")
    if not p or p.get("source") == "none":
        return
    where = {"measured": "measured at MPI_Init", "file": "from a file", "built-in": "built in"}
    t = Table(
        title=f"P-LogP parameters of the WAN-aware collectives ({where.get(p['source'], '?')}"
        + (f", {p['seconds'] * 1e3:.1f} ms)" if p["source"] == "measured" else ")")
    )
    for col in ("class", "L us", "size", "os us", "or us", "g us"):
        t.add_column(col, justify="left" if col == "class" else "right")
    for name in ("lan", "wan"):
        c = p.get(name)
        if not c:
            continue
        for i, (m, os_, or_, g) in enumerate(c["points"] or [[0, 0, 0, 0]]):
            t.add_row(
                name if i == 0 else "",
                f"{c['L_us']:.1f}" if i == 0 else "",
                format_size(m),
                f"{os_:.1f}",
                f"{or_:.1f}",
                f"{g:.1f}",
            )
    console.print(t)
