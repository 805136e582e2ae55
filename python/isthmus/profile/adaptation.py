"""What a profile says of live adaptation (collectives.adapt: src/coll/hier_adapt.c): each
switch a communicator made, for `isthmus profile show` and the adaptive/live experiment."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from isthmus.config.units import format_size


def switches(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The switches in the profile, in the order their communicators' rank 0 wrote them."""
    return list(data.get("adaptation", {}).get("switches", []))


def _cause(s: dict[str, Any]) -> str:
    parts = [
        f"{s[way]:.1f}x {word} than usual ({s.get(f'{way}_ranks', 1)} of {s['ranks']} ranks, "
        f"most at rank {s[f'{way}_seen_by']})"
        for way, word in (("slower", "slower"), ("faster", "faster"))
        if s[f"{way}_seen_by"] >= 0
    ]
    return "; ".join(parts) or "-"


def _wan(pair: list[float], segment: int) -> str:
    latency, gap = pair
    return f"L {latency / 1e3:.2f} ms, g({format_size(segment)}) {gap / 1e3:.2f} ms"


def _choice(c: list[Any]) -> str:
    collective, nbytes, before, after = c
    size = "policy" if nbytes < 0 else format_size(nbytes)
    return f"{collective} {size}: {before} -> {after}"


def show(data: dict[str, Any], console: Console) -> None:
    """One row per switch: where and when, why, the wide area before and after, and the
    choices that changed."""
    a = data.get("adaptation")
    if a is None:
        return
    rows = switches(data)
    if not rows:
        console.print(f"live adaptation: on (checked every {a['check_every']} calls), no switch")
        return
    t = Table(
        title=f"Live adaptation: {len(rows)} switch(es) (checked every {a['check_every']} "
        "calls; drift: measured over predicted time, against the first calls of a choice)"
    )
    for col in ("communicator", "call", "cause", "wide area before", "after", "measured in",
                "choices that changed"):  # fmt: skip
        t.add_column(col, justify="right" if col in ("call", "measured in") else "left")
    for s in rows:
        changed = [_choice(c) for c in s["changed"]]
        t.add_row(
            f"{s['ranks']} ranks, {s['clusters']} clusters (rank 0: world {s['rank0']})",
            str(s["call"]),
            _cause(s),
            _wan(s["wan_before"], a["segment_bytes"]),
            _wan(s["wan_after"], a["segment_bytes"]),
            f"{s['measure_seconds'] * 1e3:.1f} ms",
            "\n".join([*changed, f"({s['unchanged']} unchanged)"]),
        )
    console.print(t)
