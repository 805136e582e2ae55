"""A sweep's results as the report reads them: its points, their round trips and times, and
series of a metric against the round trip."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isthmus import records
from isthmus.config.units import UnitError, parse_duration
from isthmus.errors import UserError

# Columns of a result row that are not an application's own figures.
RESERVED = {
    "id", "app", "mpi", "coll", "platform", "baseline", "repeat", "status", "exit_code",
    "wall_s", "app_s", "mpi_s", "inter_bytes", "intra_bytes", "wan_coll_bytes",
    "forwarded_bytes", "missing_figures", "command",
}  # fmt: skip


# Benchmark records that carry a point-to-point bandwidth: (record, size key, Mbit/s key).
BANDWIDTH_RECORDS = {
    "pingpong": "throughput_median_mbit",
    "bw": "bandwidth_mbit",
    "bibw": "bandwidth_mbit",
}


@dataclass
class SweepResults:
    out: Path
    sweep: dict[str, Any]
    rows: list[dict[str, Any]]

    @property
    def varied(self) -> list[str]:
        return [k for k, _ in self.sweep.get("vary", [])]


def load(out: Path) -> SweepResults:
    for name in ("sweep.json", "results.json"):
        if not (out / name).is_file():
            raise UserError(f"{out}: no {name}: not a sweep's directory")
    sweep = records.read_json(out / "sweep.json", "sweep", "sweep description")
    rows = records.read_json(out / "results.json", what="sweep table")
    if not isinstance(rows, list):
        raise UserError(f"{out / 'results.json'}: not a list of points: expected a sweep table")
    for n, row in enumerate(rows):
        records.check(row, "sweep-point", f"{out / 'results.json'} point {n}")
    if not rows:
        raise UserError(f"{out}: no finished points yet")
    return SweepResults(out, sweep, rows)


def latency_key(res: SweepResults) -> str | None:
    """The varied link latency the report draws against: wan.latency, else the first
    varied key that is a latency (a zipper link's, say)."""
    keys = res.varied
    if "wan.latency" in keys:
        return "wan.latency"
    return next((k for k in keys if k.endswith(".latency")), None)


def rtt_ms(row: dict[str, Any], key: str = "wan.latency") -> float | None:
    """The round trip the point ran at, 2 x the varied latency `key`, when the sweep
    varied it."""
    if row.get("baseline") or key not in row:
        return None
    try:
        return 2 * parse_duration(row[key]) * 1e3
    except UnitError:
        return None


def x_label(res: SweepResults) -> str:
    key = latency_key(res)
    if key is None:
        return "point"
    return "round trip (ms)" if key == "wan.latency" else f"round trip of {key} (ms)"


def x_value(res: SweepResults, row: dict[str, Any]) -> float | str:
    key = latency_key(res)
    r = rtt_ms(row, key) if key else None
    if r is not None:
        return r
    return ", ".join(f"{k}={row.get(k)}" for k in res.varied) or "-"


def point_time(row: dict[str, Any]) -> float | None:
    """The application's time: MPI_Init to MPI_Finalize, or the whole run without one."""
    if row["status"] != "ok":
        return None
    t = row.get("app_s") or row.get("wall_s")
    return float(t) if t else None


def point_records(path: Path) -> list[dict[str, Any]]:
    """The JSON records an isthmus benchmark printed ({"record": ...} lines); none when
    the file is missing or is another program's output."""
    try:
        return [r for r in records.read_lines(path) if "record" in r]
    except (OSError, UserError):
        return []


Metric = Callable[[dict[str, Any]], float | None]


def series(
    res: SweepResults, metric: Metric
) -> dict[str, dict[tuple[str, str], list[tuple[float | str, list[float]]]]]:
    """app -> (mpi, coll) -> [(x, values over repetitions)]; the baseline under coll
    'baseline'. Points that failed, or lack the value, are left out."""
    groups: dict[tuple[str, str, str, Any], list[float]] = defaultdict(list)
    for row in res.rows:
        v = metric(row) if row["status"] == "ok" else None
        if v is None:
            continue
        coll = "baseline" if row["baseline"] else row["coll"]
        groups[(row["app"], row["mpi"], coll, x_value(res, row))].append(v)
    out: dict[str, dict[tuple[str, str], list[tuple[float | str, list[float]]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (app, mpi, coll, x), values in groups.items():
        out[app][(mpi, coll)].append((x, values))
    for app in out:
        for key in out[app]:
            out[app][key].sort(key=lambda p: (isinstance(p[0], str), p[0]))
    return out


def figure_metric(name: str) -> Metric:
    def value(row: dict[str, Any]) -> float | None:
        v = row.get(name)
        return float(v) if isinstance(v, int | float) else None

    return value
