"""The sweep report's application figures: time, WAN slowdown and scalability against the
round trip, and each figure the application printed."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from isthmus.report.plotting import BASELINE_STYLE, COLL_STYLE, png_base64, pyplot
from isthmus.report.sweep_data import (
    RESERVED,
    SweepResults,
    figure_metric,
    point_time,
    series,
    x_label,
)

# The panels of an application's figure: what is divided by what.
PANELS = (
    ("time (s)", "time"),
    ("slowdown T / T(lowest RTT)", "slowdown"),
    ("scalability T(one cluster) / T", "scalability"),
)


def plot_times(res: SweepResults) -> list[tuple[str, str, str]]:
    """Per app, a row per MPI: time, slowdown and scalability against the round trip,
    then each figure the app printed (collective mode as lines, baseline dashed). Returns
    (anchor "app-NAME", caption, PNG in base64) per app."""
    plt = pyplot()

    times = series(res, point_time)
    figure_names: dict[str, list[str]] = defaultdict(list)
    for row in res.rows:
        for name in row:
            if name in RESERVED or name in res.varied or name in figure_names[row["app"]]:
                continue
            if isinstance(row[name], int | float) and not isinstance(row[name], bool):
                figure_names[row["app"]].append(name)
    out = []
    for app, by_key in times.items():
        mpis = list(dict.fromkeys(m for m, _ in by_key))
        extra = [(n, series(res, figure_metric(n)).get(app, {})) for n in figure_names[app]]
        ncols = len(PANELS) + len(extra)
        fig, grid = plt.subplots(
            len(mpis), ncols, figsize=(4.3 * ncols, 3.3 * len(mpis)), squeeze=False
        )
        fig.suptitle(f"{app}: against the round trip")
        for r, mpi in enumerate(mpis):
            panels = [(label, kind, by_key) for label, kind in PANELS]
            panels += [(name, "value", data) for name, data in extra]
            for c, (label, kind, data) in enumerate(panels):
                _panel(grid[r][c], res, data, mpi, kind)
                grid[r][c].set_title(f"{mpi}: {label}", fontsize=10)
                grid[r][c].set_xlabel(x_label(res))
        fig.tight_layout()
        caption = f"{app}: time, WAN slowdown, scalability and its own figures"
        out.append((f"app-{app}", caption, png_base64(fig)))
    return out


def _panel(
    ax: Any,
    res: SweepResults,
    data: dict[tuple[str, str], list[tuple[float | str, list[float]]]],
    mpi: str,
    kind: str,
) -> None:
    base_pts = data.get((mpi, "baseline"), [])
    base = statistics.median(base_pts[0][1]) if base_pts else None
    for (m, coll), pts in data.items():
        if m != mpi or coll == "baseline" or not pts:
            continue
        first = statistics.median(pts[0][1])
        xs, med, lo, hi = [], [], [], []
        for x, values in pts:
            if kind == "slowdown":
                vals = [v / first for v in values]
            elif kind == "scalability":
                vals = [base / v for v in values] if base else []
            else:
                vals = list(values)
            if not vals:
                continue
            xs.append(x)
            med.append(statistics.median(vals))
            lo.append(med[-1] - min(vals))
            hi.append(max(vals) - med[-1])
        if xs:
            ax.errorbar(xs, med, yerr=[lo, hi], capsize=3, **COLL_STYLE.get(coll, {"label": coll}))
    if kind in ("time", "value") and base is not None:
        ax.axhline(base, **BASELINE_STYLE)
    if kind == "scalability":
        ax.axhline(1.0, ls=":", color="grey")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
