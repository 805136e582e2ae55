"""Rendering of zipper/apps (experiments/zipper/apps.toml): applications through a zipper
host against the same over a direct link, and a placement `isthmus profile advise` chose
against the default one.

Each app of the experiment's sweep that names another (`against`) is set beside it at
every MPI and setting: the ratio of their times (MPI_Init to MPI_Finalize of the slowest
rank, app_s) taken repetition by repetition (the two ran back to back), then its median
and range; and the bytes the forwarders relayed between two networks, of each.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from isthmus.report.results import made_by, size_or_dash, table


@dataclass(frozen=True)
class AppPair:
    app: str
    against: str
    mpi: str
    point: dict[str, str]
    ratios: list[float]  # app's time over against's, per repetition
    time: float  # medians, seconds
    against_time: float
    forwarded: float | None  # median bytes between networks, app's
    against_forwarded: float | None
    runs: str  # "ok of runs" for both

    def ratio_text(self) -> str:
        r = self.ratios
        return f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"


def _by_repeat(row: dict[str, Any]) -> dict[int, float]:
    t = row.get("app_s")
    return dict(zip(row.get("repeats", []), t["reps"], strict=True)) if t else {}


def pairs(res: dict[str, Any]) -> list[AppPair]:
    rows: list[dict[str, Any]] = res["rows"]

    def find(app: str, mpi: str, point: dict[str, str]) -> dict[str, Any] | None:
        return next((r for r in rows if (r["app"], r["mpi"], r["point"]) == (app, mpi, point)),
                    None)  # fmt: skip

    out = []
    for r in rows:
        other = find(r["against"], r["mpi"], r["point"]) if r.get("against") else None
        if other is None:
            continue
        mine, theirs = _by_repeat(r), _by_repeat(other)
        ratios = [mine[k] / theirs[k] for k in mine if theirs.get(k)]
        if not ratios:
            continue

        def fwd(row: dict[str, Any]) -> float | None:
            f = row.get("forwarded_bytes")
            return float(f["median"]) if f else None

        out.append(AppPair(
            r["app"], r["against"], r["mpi"], r["point"], ratios,
            statistics.median(mine.values()), statistics.median(theirs.values()),
            fwd(r), fwd(other), f"{r['ok']}/{r['runs']}, {other['ok']}/{other['runs']}",
        ))  # fmt: skip
    return out


def block(res: dict[str, Any]) -> str:
    head = ["application", "against", "MPI", "setting", "time (s)", "against (s)",
            "ratio (range)", "forwarded between networks", "against: forwarded",
            "runs ok"]  # fmt: skip
    body = [
        [p.app, p.against, p.mpi, ", ".join(f"{k}={v}" for k, v in p.point.items()) or "-",
         f"{p.time:.3f}", f"{p.against_time:.3f}",
         p.ratio_text(),
         size_or_dash(p.forwarded), size_or_dash(p.against_forwarded), p.runs]
        for p in pairs(res)
    ]  # fmt: skip
    intro = (
        "Each application's time (MPI_Init to MPI_Finalize, slowest rank) over the one it is "
        "set against, per repetition (the two ran back to back), median and range; the "
        "bytes the forwarders relayed between two networks (ranks on a zipper host reach "
        "the other site through their own host's forwarder: one network)"
    )
    return intro + ":\n\n" + table(head, body, right_from=4) + "\n" + made_by(res) + "\n"
