"""The one matplotlib set-up: every plot of isthmus (the rendered results, profiles, the
model, pio, the sweep report) draws through pyplot() here, to files only."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

# One look for every plot: the collectives mode by colour and marker (the same in every
# figure), the MPI by panel, round trips by a sequential palette (darker: longer).
COLL_STYLE: dict[str, dict[str, Any]] = {
    "native": {"color": "#4c72b0", "marker": "o", "label": "MPI's own collectives"},
    "isthmus": {"color": "#dd8452", "marker": "s", "label": "WAN-aware (isthmus) collectives"},
}
BASELINE_STYLE: dict[str, Any] = {"color": "grey", "ls": "--", "label": "one cluster"}


def rtt_colors(rtts: list[float]) -> dict[float, Any]:
    """A colour per round trip, the same order in every figure: viridis, light to dark."""
    from matplotlib import colormaps

    cmap = colormaps["viridis_r"]
    ordered = sorted(set(rtts))
    n = max(len(ordered) - 1, 1)
    return {r: cmap(0.15 + 0.75 * i / n) for i, r in enumerate(ordered)}


def size_axis(ax: Any, axis: str = "x") -> None:
    """A message-size axis: log2, ticks in bytes with binary prefixes (1KiB, 64KiB)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    from isthmus.config.units import format_size

    scale = ax.set_xscale if axis == "x" else ax.set_yscale
    scale("log", base=2)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(LogLocator(base=4))
    target.set_major_formatter(FuncFormatter(lambda v, _: format_size(v)))


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
