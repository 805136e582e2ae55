"""The sweep report's opening: what the wide-area link costs each application and what the
WAN-aware collectives win back, in sentences whose every number comes from the sweep's
points.

Per application and MPI, with native collectives: the time against the one-cluster
baseline at each round trip (median over repetitions, with the range), the round trip at
which the time doubles (interpolated between the measured round trips, or "not within"
them), the share of time inside MPI and of bytes between clusters. Then, per round trip,
WAN-aware against native collectives: the change of the median, and "no significant
difference" where the ranges of the repetitions overlap (one run each has no range: it is
said). Failed points and noisy ones (range over 20 % of the median) are listed.
"""

from __future__ import annotations

import html
import itertools
import statistics
from dataclasses import dataclass
from typing import Any

from isthmus.report.sweep_data import SweepResults, point_time, rtt_ms, series

NOISY = 0.20  # a point's range over its median above which it is called noisy
Values = list[float]


@dataclass(frozen=True)
class Spread:
    """A point's repetitions: median, fastest and slowest."""

    median: float
    low: float
    high: float
    n: int

    @staticmethod
    def of(values: Values) -> Spread:
        return Spread(statistics.median(values), min(values), max(values), len(values))

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high

    @property
    def noisy(self) -> bool:
        return self.n > 1 and self.median > 0 and (self.high - self.low) / self.median > NOISY

    def text(self, unit: str = "s", digits: int = 3) -> str:
        if self.n == 1:
            return f"{self.median:.{digits}g} {unit}"
        return (
            f"{self.median:.{digits}g} {unit} (range {self.low:.{digits}g}-"
            f"{self.high:.{digits}g}, {self.n} runs)"
        )


def _ms(x: float) -> str:
    return f"{x:g} ms"


def doubling_rtt(points: list[tuple[float, float]]) -> float | None:
    """The round trip at which the slowdown reaches 2, linearly between the measured round
    trips; None when it does not within them. points: (RTT ms, slowdown), sorted."""
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if y0 < 2 <= y1:
            return x0 + (2 - y0) * (x1 - x0) / (y1 - y0)
    if points and points[0][1] >= 2:
        return points[0][0]
    return None


def _by_rtt(pts: list[tuple[float | str, Values]]) -> dict[float, Spread]:
    return {float(x): Spread.of(v) for x, v in pts if not isinstance(x, str) and v}


def _share(
    res: SweepResults, app: str, mpi: str, num: str, parts: tuple[str, ...]
) -> dict[float, float]:
    """RTT -> median share num / sum(parts) over the app's native points at that RTT."""
    out: dict[float, list[float]] = {}
    for row in res.rows:
        if (row["app"], row["mpi"], row["status"]) != (app, mpi, "ok") or row["baseline"]:
            continue
        if row["coll"] != "native":
            continue
        total = sum(float(row.get(p) or 0) for p in parts)
        rtt = rtt_ms(row)
        if total > 0 and row.get(num) is not None and rtt is not None:
            out.setdefault(rtt, []).append(float(row[num]) / total)
    return {k: statistics.median(v) for k, v in sorted(out.items())}


def _collectives(native: dict[float, Spread], aware: dict[float, Spread]) -> str:
    """One sentence: what WAN-aware collectives change, per round trip."""
    changes, same = [], []
    for rtt in sorted(set(native) & set(aware)):
        n, a = native[rtt], aware[rtt]
        if n.n > 1 and a.n > 1 and n.overlaps(a):
            same.append(_ms(rtt))
            continue
        delta = (a.median - n.median) / n.median * 100
        runs = "" if n.n > 1 and a.n > 1 else ", one run each: no range to judge by"
        changes.append(
            f"{delta:+.0f} % at {_ms(rtt)} (native {n.text()}, WAN-aware {a.text()}{runs})"
        )
    if not changes and not same:
        return ""
    text = "WAN-aware collectives change its time by " + "; ".join(changes) if changes else ""
    if same:
        text += ("; " if text else "WAN-aware collectives: ") + (
            f"no significant difference at {', '.join(same)} (the runs' ranges overlap)"
        )
    return text + "."


def app_findings(res: SweepResults, app: str) -> list[str]:
    """The sentences about one application, as HTML list items' contents."""
    times = series(res, point_time).get(app, {})
    out = []
    for mpi in dict.fromkeys(m for m, _ in times):
        base_pts = times.get((mpi, "baseline"), [])
        native = _by_rtt(times.get((mpi, "native"), []))
        aware = _by_rtt(times.get((mpi, "isthmus"), []))
        if not native and not aware:
            continue
        head = f"<b>{html.escape(app)}, {html.escape(mpi)}</b>: "
        base = Spread.of(base_pts[0][1]) if base_pts else None
        parts = []
        if base is not None and native:
            slow = [(rtt, s.median / base.median) for rtt, s in sorted(native.items())]
            worst_rtt, worst = slow[-1]
            parts.append(
                f"on one cluster it takes {base.text()}; across the WAN at {_ms(worst_rtt)} "
                f"round trip {native[worst_rtt].text()}, {worst:.2f} times as long"
            )
            if len(slow) > 1:
                each = ", ".join(f"{x:.2f}x at {_ms(rtt)}" for rtt, x in slow)
                parts.append(f"against one cluster: {each}")
            double = doubling_rtt(slow)
            first_rtt, first = slow[0]
            if first >= 2:
                parts.append(
                    f"it already takes {first:.2f} times as long at {_ms(first_rtt)} round trip: "
                    "there the cost is the wide-area link's bandwidth, not its latency"
                )
            elif double is not None:
                parts.append(f"its time doubles at about {double:.2g} ms round trip")
            elif max(abs(s - 1) for _, s in slow) < 0.1:
                parts.append(
                    "its time hardly changes with the round trip (it runs for a set time, "
                    "or hides the latency)"
                )
            else:
                parts.append(
                    f"its time does not double within the round trips measured "
                    f"(up to {_ms(worst_rtt)})"
                )
        elif native:
            parts.append("no one-cluster baseline ran, so no slowdown can be given")
        mpi_share = _share(res, app, mpi, "mpi_s", ("app_s",))
        if mpi_share:
            lo_rtt, hi_rtt = min(mpi_share), max(mpi_share)
            parts.append(
                f"MPI takes {mpi_share[lo_rtt]:.0%} of its time at {_ms(lo_rtt)} and "
                f"{mpi_share[hi_rtt]:.0%} at {_ms(hi_rtt)}"
            )
        inter = _share(res, app, mpi, "inter_bytes", ("inter_bytes", "intra_bytes"))
        if inter:
            parts.append(f"{statistics.median(inter.values()):.0%} of its bytes cross clusters")
        text = head + "; ".join(parts) + "."
        coll = _collectives(native, aware)
        out.append(text + (" " + coll if coll else ""))
    return out


def problems(res: SweepResults) -> list[str]:
    """Failed points and noisy ones, by id."""
    failed = [r for r in res.rows if r["status"] != "ok"]
    out = []
    if failed:
        ids = ", ".join(f"{html.escape(r['id'])} ({html.escape(r['status'])})" for r in failed)
        out.append(f"{len(failed)} of {len(res.rows)} points did not run to the end: {ids}.")
    groups: dict[tuple[Any, ...], Values] = {}
    for r in res.rows:
        t = point_time(r)
        if t is not None:
            key = (r["app"], r["mpi"], r["coll"], r["baseline"], rtt_ms(r))
            groups.setdefault(key, []).append(t)
    noisy = [(k, s) for k, v in groups.items() if (s := Spread.of(v)).noisy]
    for (app, mpi, coll, base, rtt), s in noisy:
        where = "one cluster" if base else (_ms(rtt) if rtt is not None else "its point")
        out.append(
            f"Noisy: {html.escape(app)}, {mpi}, {coll} collectives at {where}: "
            f"{s.text()}, a range of {(s.high - s.low) / s.median:.0%} of the median."
        )
    return out


def render(res: SweepResults) -> str:
    """The findings section's HTML: a list per application, then the problems, each linked
    to the figure and the table behind it."""
    apps = list(dict.fromkeys(r["app"] for r in res.rows))
    items = []
    for app in apps:
        for sentence in app_findings(res, app):
            link = f' <a href="#app-{html.escape(app)}">figure</a>, <a href="#points">table</a>'
            items.append(f"<li>{sentence}{link}</li>")
    items += [f'<li class="problem">{p} <a href="#points">table</a></li>' for p in problems(res)]
    if not items:
        return "<p>No point ran to the end: nothing to report but the table below.</p>"
    return f'<ul class="findings">{"".join(items)}</ul>'
