"""What `isthmus model predict` and `isthmus model plot` show: the predicted broadcasts as a
table with the optimizer's choice explained, and predicted time against message size."""

from __future__ import annotations

from rich.table import Table

from isthmus.config.units import format_duration, format_size
from isthmus.model.bcast import Prediction, Shape


def _tree(shape: Shape, name: str) -> str:
    if name == "binomial":
        return f"binomial, height {shape.height}"
    if name.startswith("two-layer"):
        return (
            f"WAN degree {shape.degree} height {shape.height}; "
            f"LAN degree {shape.lan_degree} height {shape.lan_height}"
        )
    return f"degree {shape.degree}, height {shape.height}"


def table(preds: list[Prediction], big_m: int, platform: str, source: str) -> Table:
    t = Table(title=f"MPI_Bcast of {format_size(big_m)} on {platform} (P-LogP from {source})")
    for col in ("broadcast", "spans", "tree", "segment", "k", "predicted"):
        t.add_column(col, justify="right" if col in ("segment", "k", "predicted") else "left")
    best = min(preds, key=lambda p: p.shape.time)
    for p in preds:
        s = p.shape
        t.add_row(
            p.name + (" *" if p is best else ""),
            p.layer,
            _tree(s, p.name),
            format_size(s.segment),
            str(s.segments),
            format_duration(s.time / 1e6),
        )
    return t


def explain(preds: list[Prediction]) -> list[str]:
    """Why the fastest prediction wins, in a few lines."""
    best = min(preds, key=lambda p: p.shape.time)
    s = best.shape
    lines = [
        f"choice: {best.name}: {s.segments} segment(s) of {format_size(s.segment)}, "
        f"{_tree(s, best.name)}; predicted {format_duration(s.time / 1e6)}"
    ]
    if s.segments > 1:
        what = (
            "the gap of the slowest link (the link is the bottleneck)"
            if s.gamma_bound == "gap"
            else "a node's work per segment (receive, then send to each successor)"
        )
        lines.append(
            f"why: segments leave every {format_duration(s.gamma / 1e6)} (gamma, bounded by "
            f"{what}), so the links work in parallel"
        )
    for p in sorted(preds, key=lambda p: p.shape.time):
        if p is not best:
            lines.append(
                f"     {p.name}: {p.shape.time / s.time:.2f}x the time"
                if s.time > 0
                else f"     {p.name}"
            )
    return lines
