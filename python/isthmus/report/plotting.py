"""The one matplotlib set-up: every plot of isthmus (the rendered results, profiles, the
model, pio, the sweep report) draws through pyplot() here, to files only."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib's pyplot, drawing to files only (no display on these machines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bars(
    labels: list[str],
    series: list[tuple[str, list[float]]],
    ylabel: str,
    title: str,
    path: Path,
    line_at: float | None = None,
) -> None:
    """Grouped bars, one group per label, one bar per series."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(9.0, 0.75 * len(labels)), 4.5))
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series):
        offset = (k - (len(series) - 1) / 2) * width
        ax.bar([i + offset for i in range(len(labels))], values, width, label=label)
    if line_at is not None:
        ax.axhline(line_at, color="gray", linestyle="--", label="one WAN latency")
    ax.set_xticks(list(range(len(labels))), labels, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} (isthmus experiment render)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def png_base64(fig: Any) -> str:
    plt = pyplot()

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def figure_row(ncols: int, title: str) -> tuple[Any, list[Any]]:
    plt = pyplot()

    fig, axes = plt.subplots(1, ncols, figsize=(5.2 * ncols, 3.9), squeeze=False)
    fig.suptitle(title)
    return fig, list(axes[0])
