"""The sweep report's apps set beside each other (an app's `against`, docs/sweep.md): the
same program forwarded through a zipper host and over a direct link of the same latency
and rate, say. Per MPI and collective mode: both times against the round trip, their
ratio (per repetition, then the median and range), and the bytes the forwarders relayed
between two networks."""

from __future__ import annotations

import html
import statistics
from collections import defaultdict
from typing import Any

from isthmus.report.plotting import png_base64, pyplot
from isthmus.report.results import size_or_dash
from isthmus.report.sweep_data import SweepResults, point_time, x_label, x_value

Key = tuple[str, str, float | str]  # mpi, coll, x


def pairs(res: SweepResults) -> list[tuple[str, str]]:
    """(app, the app it is set against), in the sweep's order."""
    return [(a["name"], a["against"]) for a in res.sweep.get("apps", []) if a.get("against")]


def _by_point(res: SweepResults, app: str, metric: Any) -> dict[Key, dict[int, float]]:
    out: dict[Key, dict[int, float]] = defaultdict(dict)
    for row in res.rows:
        if row["app"] != app or row["baseline"] or row["status"] != "ok":
            continue
        v = metric(row)
        if v is not None:
            out[(row["mpi"], row["coll"], x_value(res, row))][int(row["repeat"])] = float(v)
    return out


def _forwarded(row: dict[str, Any]) -> float | None:
    v = row.get("forwarded_bytes")
    return float(v) if isinstance(v, int | float) else None


def comparison(res: SweepResults, app: str, other: str) -> list[dict[str, Any]]:
    """Per (mpi, coll, x): both medians, the per-repetition ratio's median and range,
    and the median bytes forwarded between networks."""
    mine, theirs = _by_point(res, app, point_time), _by_point(res, other, point_time)
    fwd = _by_point(res, app, _forwarded)
    rows = []
    for key in sorted(mine, key=lambda k: (k[0], k[1], isinstance(k[2], str), k[2])):
        there = theirs.get(key, {})
        ratios = [v / there[r] for r, v in mine[key].items() if there.get(r)]
        if not ratios:
            continue
        rows.append({
            "mpi": key[0], "coll": key[1], "x": key[2],
            "time": statistics.median(mine[key].values()),
            "against": statistics.median(there.values()),
            "ratio": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
            "forwarded": statistics.median(fwd[key].values()) if fwd.get(key) else None,
        })  # fmt: skip
    return rows


def plot(res: SweepResults) -> list[tuple[str, str, str]]:
    """A figure per pair: a row per MPI and collective mode, times and their ratio."""
    plt = pyplot()
    out = []
    for app, other in pairs(res):
        rows = comparison(res, app, other)
        groups = list(dict.fromkeys((r["mpi"], r["coll"]) for r in rows))
        if not groups:
            continue
        fig, grid = plt.subplots(len(groups), 2, figsize=(9, 3.3 * len(groups)), squeeze=False)
        for i, (mpi, coll) in enumerate(groups):
            pts = [r for r in rows if (r["mpi"], r["coll"]) == (mpi, coll)]
            xs = [r["x"] for r in pts]
            grid[i][0].plot(xs, [r["time"] for r in pts], "o-", label=app)
            grid[i][0].plot(xs, [r["against"] for r in pts], "s--", label=other)
            grid[i][0].set_ylabel("time (s)")
            grid[i][0].legend(fontsize=7)
            lo = [r["ratio"] - r["low"] for r in pts]
            hi = [r["high"] - r["ratio"] for r in pts]
            grid[i][1].errorbar(xs, [r["ratio"] for r in pts], yerr=[lo, hi], capsize=3, fmt="o-")
            grid[i][1].axhline(1.0, ls=":", color="grey")
            grid[i][1].set_ylabel(f"{app} / {other}")
            for c in (0, 1):
                grid[i][c].set_title(f"{mpi}, {coll} collectives", fontsize=10)
                grid[i][c].set_xlabel(x_label(res))
                grid[i][c].grid(alpha=0.3)
        fig.suptitle(f"{app} against {other}")
        fig.tight_layout()
        out.append((f"against-{app}", f"{app} against {other}: times and ratio", png_base64(fig)))
    return out


def table(res: SweepResults) -> str:
    """Per pair and point: both times, the ratio, the bytes forwarded between networks."""
    parts = []
    for app, other in pairs(res):
        head = ["MPI", "collectives", x_label(res), f"{app} (s)", f"{other} (s)",
                "ratio (range)", "forwarded between networks"]  # fmt: skip
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
                r["mpi"], r["coll"], f"{r['x']:g}" if isinstance(r["x"], float) else r["x"],
                f"{r['time']:.3f}", f"{r['against']:.3f}",
                f"{r['ratio']:.2f} ({r['low']:.2f}-{r['high']:.2f})",
                size_or_dash(r["forwarded"]),
            )) + "</tr>"
            for r in comparison(res, app, other)
        )  # fmt: skip
        heads = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        parts.append(f"<table><tr>{heads}</tr>{body}</table>")
    return "".join(parts)
